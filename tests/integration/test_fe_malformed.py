"""Malformed input, as a careless or hostile client sends it: each case gets the right HTTP status
and JSON-RPC error, the rejection is counted (and logged), and the server keeps serving."""
import http.client

import pytest

from fe_harness import argument_error, Client, Frontend, ModernClient, mirrored_name, modern_meta

MAX_BODY = 65536


@pytest.fixture(scope="module")
def fe():
    f = Frontend(extra=["--max-body", str(MAX_BODY)])
    f.key = f.add_tenant("mal", "mal-key", rate="100000", burst="100000")
    yield f
    f.stop()


@pytest.fixture(scope="module")
def client(fe):
    c = Client(fe.url, fe.key)
    c.initialize()
    return c


def errors_seen(fe):
    return fe.metric("snakepit_mcp_rejections_total") + fe.metric("snakepit_mcp_requests_total", outcome="error")


def req(id_=7, method="ping", **kw):
    m = {"jsonrpc": "2.0", "id": id_, "method": method}
    m.update(kw)
    return m


def call(args, name="execute_code"):
    return req(method="tools/call", params={"name": name, "arguments": args})


# (name, body, extra headers, expected HTTP status, expected JSON-RPC error code or None)
SESSION = "<session>"
CASES = [
    ("broken json", b"{", {}, 400, -32700),
    ("empty body", b"", {}, 400, -32700),
    ("trailing garbage", b'{"jsonrpc":"2.0","id":1,"method":"ping"} x', {}, 400, -32700),
    ("json null", b"null", {}, 400, -32600),
    ("bare string", b'"ping"', {}, 400, -32600),
    ("bare number", b"42", {}, 400, -32600),
    ("empty batch", b"[]", {}, 400, -32600),
    ("batch", b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]', {}, 400, -32600),
    ("no jsonrpc member", b'{"id":1,"method":"ping"}', {}, 400, -32600),
    ("jsonrpc 1.0", b'{"jsonrpc":"1.0","id":1,"method":"ping"}', {}, 400, -32600),
    ("jsonrpc as number", b'{"jsonrpc":2.0,"id":1,"method":"ping"}', {}, 400, -32600),
    ("method is a number", b'{"jsonrpc":"2.0","id":1,"method":5}', {}, 400, -32600),
    ("method is empty", b'{"jsonrpc":"2.0","id":1,"method":""}', {}, 400, -32600),
    ("id is an object", b'{"jsonrpc":"2.0","id":{},"method":"ping"}', {}, 400, -32600),
    ("id is a float", b'{"jsonrpc":"2.0","id":1.5,"method":"ping"}', {}, 400, -32600),
    ("id is null", b'{"jsonrpc":"2.0","id":null,"method":"ping"}', {}, 400, -32600),
    ("id is a boolean", b'{"jsonrpc":"2.0","id":true,"method":"ping"}', {}, 400, -32600),
    ("params is an array", b'{"jsonrpc":"2.0","id":1,"method":"ping","params":[1]}', {}, 400, -32600),
    ("params is a string", b'{"jsonrpc":"2.0","id":1,"method":"ping","params":"x"}', {}, 400, -32600),
    ("result and error together", b'{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"x"}}', {}, 400,
     -32600),
    ("neither method nor id", b'{"jsonrpc":"2.0"}', {}, 400, -32600),
    ("response without id", b'{"jsonrpc":"2.0","result":{}}', {}, 400, -32600),
    ("duplicate keys", b'{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}', {}, 400, -32700),
    ("invalid utf-8", b'{"jsonrpc":"2.0","id":1,"method":"p\xffing"}', {}, 400, -32700),
    ("overlong utf-8", b'{"jsonrpc":"2.0","id":1,"method":"\xc0\xafping"}', {}, 400, -32700),
    ("lone surrogate escape", b'{"jsonrpc":"2.0","id":1,"method":"\\ud800"}', {}, 400, -32700),
    ("raw NUL byte", b'{"jsonrpc":"2.0","id":1,\x00"method":"ping"}', {}, 400, -32700),
    ("escaped NUL in a string", b'{"jsonrpc":"2.0","id":1,"method":"pi\\u0000ng"}', {}, 400, -32700),
    ("nesting bomb", b"[" * 5000 + b"]" * 5000, {}, 400, -32700),
    ("body over --max-body", b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"' + b"a" * MAX_BODY + b'"}}', {},
     413, -32600),
    ("wrong content type", b'{"jsonrpc":"2.0","id":1,"method":"ping"}', {"Content-Type": "text/plain"}, 415, -32600),
    ("no content type", b'{"jsonrpc":"2.0","id":1,"method":"ping"}', {"Content-Type": None}, 415, -32600),
    ("accept excludes json and sse", b'{"jsonrpc":"2.0","id":1,"method":"ping"}', {"Accept": "text/html"}, 406, -32600),
    ("unsupported legacy protocol version header", req(), {"MCP-Protocol-Version": "2024-01-01"}, 400, -32600),
    # a version at or after 2026-07-28 is the modern era, where a request without its _meta is malformed
    ("modern protocol version header without _meta", req(), {"MCP-Protocol-Version": "2099-01-01"}, 400, -32602),
    ("no session id", req(), {"Mcp-Session-Id": None}, 400, -32600),
    ("unknown session id", req(), {"Mcp-Session-Id": "0" * 32}, 404, -32600),
    ("hostile Origin", req(), {"Origin": "http://evil.example"}, 403, -32600),
    ("rebinding Host", req(), {"Host": "evil.example:80"}, 403, -32600),
    ("unknown method", req(method="tools/explode"), {}, 200, -32601),
    ("very long method name", req(method="x" * 20000), {}, 200, -32601),
    ("second initialize on a session", req(method="initialize", params={"protocolVersion": "2025-11-25",
                                                                          "capabilities": {}, "clientInfo": {}}), {},
     200, -32600),
    ("tools/call without name", req(method="tools/call", params={}), {}, 200, -32602),
    ("tools/call arguments is an array", req(method="tools/call", params={"name": "execute_code", "arguments": []}),
     {}, 200, -32602),
    ("unknown tool", call({}, name="rm_rf"), {}, 200, -32602),
    ("task is not an object", req(method="tools/call", params={"name": "execute_code", "arguments": {"code": "1"},
                                                                "task": 5}), {}, 200, -32602),
    ("resources/read without uri", req(method="resources/read", params={}), {}, 200, -32602),
    ("resources/read unknown uri", req(method="resources/read", params={"uri": "file:///etc/passwd"}), {}, 200,
     -32002),
    ("tasks/get with a bad id", req(method="tasks/get", params={"taskId": "x"}), {}, 200, -32602),
    ("prompts/get unknown prompt", req(method="prompts/get", params={"name": "nope"}), {}, 200, -32602),
    ("logging/setLevel bad level", req(method="logging/setLevel", params={"level": "shout"}), {}, 200, -32602),
    ("tools/list bad cursor", req(method="tools/list", params={"cursor": "zzz"}), {}, 200, -32602),
    ("completion without ref", req(method="completion/complete", params={}), {}, 200, -32602),
]


@pytest.mark.parametrize("name,body,headers,status,code", CASES, ids=[c[0] for c in CASES])
def test_malformed_input_is_refused_and_the_server_keeps_serving(fe, client, name, body, headers, status, code):
    before = errors_seen(fe)
    r = client.raw(body=body, headers=headers)
    assert r.status == status, (r.status, r.body[:300])
    if code is not None:
        err = r.json["error"]
        assert err["code"] == code, err
        assert isinstance(err["message"], str) and err["message"]
    assert errors_seen(fe) > before
    assert client.request("ping")["result"] == {}
    assert fe.mcp_alive()


# Arguments a call got wrong are tool results with isError that name the argument, what it takes and
# what was sent (MCP 2025-11-25 tools, "Error Handling": input validation errors are tool execution
# errors, so that the model reads and fixes them); JSON-RPC errors stay for the request itself above.
# (name, tool, arguments, the argument named, words the text must hold)
ARGUMENT_CASES = [
    ("execute_code without code", "execute_code", {}, "code", "`code` is required"),
    ("source instead of code", "execute_code", {"source": "print(1)"}, "code", "did you mean `code`?"),
    ("code is a number", "execute_code", {"code": 5}, "code", "it was sent 5 (an integer)"),
    ("timeout is negative", "execute_code", {"code": "1", "timeout": -1}, "timeout", "positive number of seconds"),
    ("timeout is a string", "execute_code", {"code": "1", "timeout": "soon"}, "timeout",
     '"soon" (a string)'),
    ("memory_limit nonsense", "execute_code", {"code": "1", "memory_limit": "lots"}, "memory_limit", "256m"),
    ("memory_limit zero", "execute_code", {"code": "1", "memory_limit": 0}, "memory_limit", "positive"),
    ("unknown argument", "execute_code", {"code": "1", "use_gpu": True}, "use_gpu",
     "`use_gpu` is not an argument of execute_code"),
    ("import outside the profile", "execute_code", {"code": "1", "allowed_imports": ["ctypes"]},
     "allowed_imports", "'ctypes' is not available"),
    ("allowed_imports not a list", "execute_code", {"code": "1", "allowed_imports": "math"}, "allowed_imports",
     "must be an array"),
    ("unknown profile", "execute_code", {"code": "1", "profile": "python.root"}, "profile",
     'got "python.root"'),
    ("bad variable name", "execute_code", {"code": "1", "inspect_variables": ["a b"]}, "inspect_variables",
     "not a valid variable name"),
    ("capture_output not a boolean", "execute_code", {"code": "1", "capture_output": "yes"}, "capture_output",
     "must be a boolean"),
    ("get_execution with a bad id", "get_execution", {"execution_id": "../../etc"}, "execution_id", "UUID"),
    ("list_executions limit too big", "list_executions", {"limit": 100000}, "limit", "got 100000"),
    ("get_usage days too many", "get_usage", {"days": 1000}, "days", "got 1000"),
]


@pytest.mark.parametrize("name,tool,arguments,argument,words", ARGUMENT_CASES, ids=[c[0] for c in ARGUMENT_CASES])
def test_argument_errors_are_tool_results_naming_the_argument(fe, client, name, tool, arguments, argument, words):
    before = fe.metric("snakepit_mcp_rejections_total", reason="invalid_params")
    r = client.raw(body=call(arguments, name=tool))
    assert r.status == 200, (r.status, r.body[:300])
    text = argument_error(r.json, argument)
    assert words in text and argument in text, text
    assert fe.metric("snakepit_mcp_rejections_total", reason="invalid_params") > before


def test_a_limit_above_the_maximum_is_lowered_and_said(fe, client):
    r = client.call("execute_code", {"code": "1", "timeout": 500, "memory_limit": "64g"})["result"]
    adjusted = r["structuredContent"]["limits_adjusted"]
    assert adjusted["timeout"]["requested"] == 500 and adjusted["timeout"]["used"] == 300
    assert adjusted["memory_limit"]["used"] < adjusted["memory_limit"]["requested"]
    assert "note: timeout 500 s asked for, 300 s used" in r["content"][0]["text"]


def test_other_http_methods_and_paths(fe, client):
    assert client.raw("PUT", b"{}").status == 405
    assert client.raw("POST", b"{}", path="/nope").status == 404
    assert client.raw("GET", b"", headers={"Accept": "application/json"}).status == 406


def test_a_client_that_sends_half_a_request_and_leaves(fe, client):
    conn = http.client.HTTPConnection("127.0.0.1", fe.port, timeout=5)
    conn.putrequest("POST", "/mcp")
    conn.putheader("Content-Type", "application/json")
    conn.putheader("Content-Length", "1000")
    conn.endheaders()
    conn.send(b'{"jsonrpc":')
    conn.close()
    assert client.request("ping")["result"] == {}


def test_rejections_are_logged(fe):
    log = fe.log()
    assert "event=message_rejected" in log and "event=http_refused" in log


def test_a_caller_without_a_key_is_refused_before_its_body_is_read(fe):
    conn = http.client.HTTPConnection("127.0.0.1", fe.port, timeout=5)
    conn.putrequest("POST", "/mcp")
    conn.putheader("Content-Type", "application/json")
    conn.putheader("Accept", "application/json")
    conn.putheader("Content-Length", str(MAX_BODY))
    conn.endheaders()  # and no body at all: the answer must not wait for it
    r = conn.getresponse()
    assert r.status == 401
    conn.close()


def test_a_client_leaving_during_its_key_lookup(fe, client):
    for i in range(20):
        conn = http.client.HTTPConnection("127.0.0.1", fe.port, timeout=5)
        conn.putrequest("POST", "/mcp")
        conn.putheader("Authorization", "Bearer unknown-%d" % i)  # not cached: Redis is asked
        conn.putheader("Content-Type", "application/json")
        conn.putheader("Content-Length", "100")
        conn.endheaders()
        conn.close()
    assert client.request("ping")["result"] == {}
    assert fe.mcp_alive()


# ---- MCP 2026-07-28: the per-request envelope, the headers that mirror the body, the revision named


def modern(method="tools/list", params=None, meta=None, drop=(), id_="m-1"):
    """A modern request: the envelope in _meta (minus the keys in drop), and its headers."""
    m = modern_meta()
    m.update(meta or {})
    for k in drop:
        m.pop(k, None)
    p = dict(params or {})
    p["_meta"] = m
    body = {"jsonrpc": "2.0", "id": id_, "method": method, "params": p}
    headers = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method}
    name = mirrored_name(method, p)
    if name is not None:
        headers["Mcp-Name"] = name
    return body, headers


PV, CAPS, INFO, LEVEL = ("io.modelcontextprotocol/protocolVersion", "io.modelcontextprotocol/clientCapabilities",
                         "io.modelcontextprotocol/clientInfo", "io.modelcontextprotocol/logLevel")
CALL = ("tools/call", {"name": "get_sandbox_info", "arguments": {}})
# (name, body and headers, header changes, HTTP status, JSON-RPC code, rejection reason counted or None)
MODERN_CASES = [
    ("no _meta under a modern header", ({"jsonrpc": "2.0", "id": "m-1", "method": "tools/list", "params": {}},
                                        {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"}),
     {}, 400, -32602, "invalid_meta"),
    ("no params at all under a modern header", ({"jsonrpc": "2.0", "id": 5, "method": "server/discover"},
                                                {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "server/discover"}),
     {}, 400, -32602, "invalid_meta"),
    ("_meta without protocolVersion", modern(drop=(PV,)), {}, 400, -32602, "invalid_meta"),
    ("protocolVersion not a string", modern(meta={PV: 20260728}), {"MCP-Protocol-Version": None}, 400, -32602,
     "invalid_meta"),
    ("clientCapabilities missing", modern(drop=(CAPS,)), {}, 400, -32602, "invalid_meta"),
    ("clientCapabilities not an object", modern(meta={CAPS: ["tools"]}), {}, 400, -32602, "invalid_meta"),
    ("clientInfo without version", modern(meta={INFO: {"name": "x"}}), {}, 400, -32602, "invalid_meta"),
    ("unknown logLevel", modern(meta={LEVEL: "shout"}), {}, 400, -32602, "invalid_meta"),
    ("header version contradicts the body", modern(), {"MCP-Protocol-Version": "2025-11-25"}, 400, -32020,
     "header_mismatch"),
    ("Mcp-Method contradicts the body", modern(), {"Mcp-Method": "prompts/list"}, 400, -32020, "header_mismatch"),
    ("Mcp-Method in another case", modern(), {"Mcp-Method": "TOOLS/LIST"}, 400, -32020, "header_mismatch"),
    ("Mcp-Method missing", modern(), {"Mcp-Method": None}, 400, -32020, "header_mismatch"),
    ("MCP-Protocol-Version missing", modern(), {"MCP-Protocol-Version": None}, 400, -32020, "header_mismatch"),
    ("Mcp-Name missing on tools/call", modern(*CALL), {"Mcp-Name": None}, 400, -32020, "header_mismatch"),
    ("Mcp-Name contradicts params.name", modern(*CALL), {"Mcp-Name": "execute_code"}, 400, -32020,
     "header_mismatch"),
    ("Mcp-Name sentinel of another name", modern(*CALL), {"Mcp-Name": "=?base64?ZXhlY3V0ZV9jb2Rl?="}, 400, -32020,
     "header_mismatch"),
    ("Mcp-Name sentinel badly padded", modern(*CALL), {"Mcp-Name": "=?base64?Z2V0X3NhbmRib3hfaW5mbw?="}, 400,
     -32020, "header_mismatch"),
    ("Mcp-Name with a control character", modern(*CALL), {"Mcp-Name": "get_sandbox\x01info"}, 400, -32020,
     "header_mismatch"),
    ("Mcp-Name on resources/read contradicts uri", modern("resources/read", {"uri": "sandbox://info"}),
     {"Mcp-Name": "sandbox://other"}, 400, -32020, "header_mismatch"),
    ("an unknown revision", modern(meta={PV: "2099-01-01"}), {"MCP-Protocol-Version": "2099-01-01"}, 400,
     -32022, "unsupported_version"),
    ("a legacy revision named per request", modern(meta={PV: "2025-11-25"}),
     {"MCP-Protocol-Version": "2025-11-25"}, 400, -32022, "unsupported_version"),
    ("initialize with an envelope", modern("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}}),
     {}, 404, -32601, None),
    ("ping, removed", modern("ping"), {}, 404, -32601, None),
    ("logging/setLevel, removed", modern("logging/setLevel", {"level": "info"}), {}, 404, -32601, None),
    ("resources/subscribe, removed", modern("resources/subscribe", {"uri": "sandbox://info"}), {}, 404, -32601,
     None),
    ("tasks/result, removed", modern("tasks/result", {"taskId": "x"}), {}, 404, -32601, None),
    ("an unknown method", modern("tools/explode"), {}, 404, -32601, None),
    ("tasks/get without the tasks extension", modern("tasks/get", {"taskId": "0190a5b0-0000-7000-8000-000000000000"}),
     {}, 400, -32021, None),
    ("subscriptions/listen without a filter", modern("subscriptions/listen"), {}, 200, -32602, None),
    ("subscriptions/listen with a malformed filter",
     modern("subscriptions/listen", {"notifications": {"resourceSubscriptions": "sandbox://info"}}), {}, 200,
     -32602, None),
    ("an unknown tool", modern("tools/call", {"name": "rm_rf", "arguments": {}}), {}, 200, -32602, None),
    ("an unknown resource", modern("resources/read", {"uri": "sandbox://nothing"}), {}, 200, -32602, None),
    ("a requestState that is not ours", modern("prompts/get", {"name": "write_sandbox_code",
                                                                 "requestState": "forged.00"}), {}, 200, -32602, None),
]


@pytest.mark.parametrize("name,req_,changes,status,code,reason", MODERN_CASES, ids=[c[0] for c in MODERN_CASES])
def test_malformed_modern_requests_get_the_errors_the_revision_names(fe, name, req_, changes, status, code, reason):
    body, headers = req_
    headers = dict(headers, Authorization="Bearer " + fe.key, **{"Mcp-Session-Id": None})
    headers.update(changes)
    c = Client(fe.url, fe.key, protocol=None)
    before = fe.metric("snakepit_mcp_rejections_total", reason=reason) if reason else errors_seen(fe)
    r = c.raw(body=body, headers=headers)
    assert r.status == status, (r.status, r.body[:300])
    err = r.json["error"]
    assert err["code"] == code, err
    assert r.json["id"] == body["id"]  # every error carries the request's id (basic/index)
    assert "Mcp-Session-Id" not in r.headers  # no sessions in this revision
    if code == -32022:
        assert err["data"]["requested"] == body["params"]["_meta"][PV]
        assert err["data"]["supported"] == ["2026-07-28"]
    if code == -32021:
        assert err["data"]["requiredCapabilities"] == {"extensions": {"io.modelcontextprotocol/tasks": {}}}
    if "requestState" in body.get("params", {}):
        assert "requestState" in err["message"]
    if reason:
        assert fe.metric("snakepit_mcp_rejections_total", reason=reason) > before
    else:
        assert errors_seen(fe) > before
    assert ModernClient(fe.url, fe.key).request("tools/list")["result"]["resultType"] == "complete"


def test_a_modern_argument_error_is_a_tool_result_naming_the_argument(fe):
    """The same rule under 2026-07-28: the model reads what to fix; an unknown tool stays -32602."""
    c = ModernClient(fe.url, fe.key)
    r = c.request("tools/call", {"name": "execute_code", "arguments": {"source": "print(1)"}})
    text = argument_error(r, "code")
    assert "`code` is required" in text and "did you mean `code`?" in text
    assert r["result"]["resultType"] == "complete"


def test_modern_rejections_are_logged_with_their_reason(fe):
    log = fe.log()
    for reason in ("invalid_meta", "header_mismatch", "unsupported_version"):
        assert "era=modern reason=%s" % reason in log


def test_a_modern_notification_is_accepted_without_a_session(fe):
    body, headers = modern()
    body = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9, "_meta": body["params"]["_meta"]}}
    r = Client(fe.url, fe.key, protocol=None).raw(body=body, headers=dict(headers, Authorization="Bearer " + fe.key))
    assert r.status == 202 and not r.body
