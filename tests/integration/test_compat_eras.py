"""The drop-in endpoints (/mcp/compat/NAME, --stdio --compat NAME) speak both protocol eras the way /mcp
does, on a real farm with two front-ends sharing its broker and Redis: MCP 2026-07-28 per request
(server/discover as the drop-in server, the replaced servers' tools and answer shapes with the revision's result
decorations, no session), and legacy sessions, which live in Redis and belong to the endpoint that
opened them — any front-end serves one there, and every front-end refuses it (404) anywhere else."""
import json
import subprocess

import pytest

from fe_harness import Client, Frontend, ModernClient, assert_no_type_unions, modern_meta

SERVER_INFO = "io.modelcontextprotocol/serverInfo"
TOOLS = {
    "python-sandbox": ["execute_code", "validate_code", "get_sandbox_info"],
    "py-sandbox": ["run_python"],
    "secure-sandbox": ["run_sandbox_code", "validate_json_data", "validate_csv_data", "create_state_snapshot",
                       "restore_state_snapshot", "list_state_snapshots", "delete_state_snapshot",
                       "get_sandbox_metrics"],
    "exec-sandbox": ["execute_python", "check_environment", "validate_script"],
    "code-sandbox": ["check_syntax", "test_code"],
}


# What each server replaced declared: tools and logging, and secure-sandbox its own resources and
# prompts too (fixed lists, nothing to subscribe to)
CAPABILITIES = {name: {"tools": {"listChanged": False}, "logging": {}} for name in TOOLS}
CAPABILITIES["secure-sandbox"].update({"resources": {"subscribe": False, "listChanged": False},
                                       "prompts": {"listChanged": False}})
SECURE_RESOURCES = ["sandbox://status", "sandbox://logs", "sandbox://schemas"]
SECURE_PROMPTS = ["generate_secure_script", "diagnose_validation_error"]


@pytest.fixture(scope="module")
def farm():
    """Front-end A (the harness's "mcp") and B ("mcp2"), one broker with a real executor, one Redis."""
    f = Frontend(executor=True)
    f.key = f.add_tenant("eras", rate="100000", burst="100000")
    f.url2, _ = f.spawn_peer("mcp2")
    yield f
    f._stop("mcp2")
    f.stop()


def ok(reply):
    assert reply.status == 200, (reply.status, reply.body[:300])
    assert "error" not in reply.json, reply.json
    return reply.json["result"]


def modern(farm, name, url=None):
    return ModernClient((url or farm.url) + "/compat/" + name, farm.key)


def legacy(farm, name, url=None):
    c = Client((url or farm.url) + ("/compat/" + name if name else ""), farm.key)
    c.initialize()
    return c


@pytest.mark.parametrize("name", sorted(TOOLS))
def test_server_discover_on_a_compat_endpoint_is_the_drop_in_server(farm, name):
    r = ok(modern(farm, name).send("server/discover"))
    assert r["supportedVersions"] == ["2026-07-28"]
    assert r["capabilities"] == CAPABILITIES[name]  # no subscriptions, completions or tasks there
    assert any(t in r["instructions"] for t in TOOLS[name]), r["instructions"]
    assert r["_meta"][SERVER_INFO]["name"] == "snakepit"
    assert r["_meta"][SERVER_INFO]["title"].startswith("snakepit, as ")
    assert r["resultType"] == "complete" and r["cacheScope"] == "public"


@pytest.mark.parametrize("name", sorted(TOOLS))
def test_legacy_initialize_declares_the_same_capabilities_as_discover(farm, name):
    c = Client(farm.url + "/compat/" + name, farm.key)
    assert c.initialize()["result"]["capabilities"] == CAPABILITIES[name]


# the methods behind a capability the endpoint does not declare, with the params /mcp would take
UNDECLARED = [("resources/list", {}), ("resources/templates/list", {}),
              ("resources/read", {"uri": "sandbox://info"}), ("prompts/list", {}),
              ("prompts/get", {"name": "write_sandbox_code", "arguments": {"task": "x"}}),
              ("completion/complete", {"ref": {"type": "ref/prompt", "name": "write_sandbox_code"},
                                       "argument": {"name": "profile", "value": "py"}})]


@pytest.mark.parametrize("name", sorted(n for n in TOOLS if n != "secure-sandbox"))
def test_a_tools_only_drop_in_has_no_resources_prompts_or_completions_in_either_era(farm, name):
    answers = []
    for method, params in UNDECLARED:
        old = legacy(farm, name).send(method, params).json
        new = modern(farm, name).send(method, params).json
        assert old["error"]["code"] == new["error"]["code"] == -32601, (method, old, new)
        answers += [old, new]
    # never /mcp's items through a drop-in endpoint
    assert not [a for a in answers if "result" in a or "write_sandbox_code" in json.dumps(a.get("error", {}).get("data"))]


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_secure_sandbox_serves_its_own_resources_and_prompts_and_not_mcps(farm, era):
    c = legacy(farm, "secure-sandbox") if era == "legacy" else modern(farm, "secure-sandbox")
    listed = ok(c.send("resources/list"))["resources"]
    assert [r["uri"] for r in listed] == SECURE_RESOURCES
    assert all(r["mimeType"] == "application/json" for r in listed)
    assert ok(c.send("resources/templates/list"))["resourceTemplates"] == []
    for uri in ("sandbox://info", "sandbox://executions/0190a0a0-0000-7000-8000-000000000000"):
        r = c.send("resources/read", {"uri": uri}).json
        # "Resource not found" as /mcp answers it in each era
        assert r["error"]["code"] == (-32002 if era == "legacy" else -32602) and r["error"]["data"]["uri"] == uri, r
    prompts = ok(c.send("prompts/list"))["prompts"]
    assert [p["name"] for p in prompts] == SECURE_PROMPTS
    assert all(not a["required"] for p in prompts for a in p["arguments"])
    assert c.send("prompts/get", {"name": "write_sandbox_code"}).json["error"]["code"] == -32602
    for method, params in [("completion/complete", UNDECLARED[-1][1]),
                           ("resources/subscribe", {"uri": "sandbox://status"})]:
        if era == "legacy" or method != "resources/subscribe":  # subscribe is legacy-only anyway
            assert c.send(method, params).json["error"]["code"] == -32601, method


def test_secure_sandbox_prompts_carry_their_arguments_into_the_text(farm):
    c = modern(farm, "secure-sandbox")
    r = ok(c.send("prompts/get", {"name": "generate_secure_script",
                                  "arguments": {"task_description": "sum the numbers in data.csv"}}))
    text = r["messages"][0]["content"]["text"]
    assert r["messages"][0]["role"] == "user" and "sum the numbers in data.csv" in text
    assert "relative paths" in text and "run_sandbox_code" in text and "300 s" in text
    assert "imports of os, sys, subprocess" in text and "eval()" in text  # what run_sandbox_code refuses
    r = ok(c.send("prompts/get", {"name": "diagnose_validation_error", "arguments": {
        "data": '{"id": 0}', "schema_name": "user", "error_message": "/id: 0 is less than the minimum of 1"}}))
    text = r["messages"][0]["content"]["text"]
    assert '{"id": 0}' in text and "0 is less than the minimum of 1" in text
    assert '"email"' in text  # the predefined schema itself, for the model to correct against
    # no argument is required, and one this server does not know is ignored
    r = ok(c.send("prompts/get", {"name": "generate_secure_script", "arguments": {"other": "x"}}))
    assert "no task was given" in r["messages"][0]["content"]["text"]


@pytest.mark.parametrize("name", sorted(TOOLS))
def test_modern_tools_list_is_the_servers_list_with_portable_schemas(farm, name):
    r = ok(modern(farm, name).send("tools/list"))
    assert [t["name"] for t in r["tools"]] == TOOLS[name]
    assert r["resultType"] == "complete" and r["ttlMs"] >= 0
    for t in r["tools"]:
        assert "execution" not in t
        assert_no_type_unions(t["inputSchema"])
        assert_no_type_unions(t.get("outputSchema", {}))
    legacy_tools = legacy(farm, name).request("tools/list")["result"]["tools"]
    assert [t["name"] for t in legacy_tools] == TOOLS[name]


def test_a_modern_call_answers_in_the_servers_shape_with_the_revisions_decorations(farm):
    c = modern(farm, "py-sandbox")
    reply = c.send("tools/call", {"name": "run_python", "arguments": {"code": "x = 42", "inspect_variables": ["x"]}})
    r = ok(reply)
    assert "mcp-session-id" not in reply.headers
    assert r["resultType"] == "complete" and "ttlMs" not in r
    assert r["_meta"][SERVER_INFO]["title"] == "snakepit, as py-sandbox"
    assert json.loads(r["content"][0]["text"]) == r["structuredContent"]
    assert r["structuredContent"]["variables"] == {"x": 42} and r["structuredContent"]["return_code"] == 0
    t = ok(modern(farm, "code-sandbox").send("tools/call", {"name": "test_code", "arguments": {
        "code": "print('Hello, world!')\nx = 1 / 0", "timeout": 10, "memory_limit_mb": 50}}))
    assert json.loads(t["content"][0]["text"]) == {"stdout": "Hello, world!\n",
                                                  "stderr": "ZeroDivisionError: division by zero\n",
                                                  "exit_code": 1, "phase": "execution", "platform_warning": ""}
    assert t["isError"] is False and t["resultType"] == "complete"


def test_a_modern_call_of_another_endpoints_tool_is_an_unknown_tool(farm):
    r = modern(farm, "py-sandbox").send("tools/call", {"name": "execute_code", "arguments": {"code": "1"}})
    assert r.status == 200 and r.json["error"]["code"] == -32602 and "unknown tool" in r.json["error"]["message"]


def test_a_legacy_session_from_mcp_is_refused_on_a_compat_endpoint_by_every_front_end(farm):
    own = legacy(farm, None)
    for url in (farm.url, farm.url2):
        other = Client(url + "/compat/py-sandbox", farm.key)
        other.session = own.session
        r = other.send("tools/call", {"name": "run_python", "arguments": {"code": "print(1)"}})
        assert r.status == 404, (r.status, r.body[:300])
        assert r.json["id"] == 1 and "opened on /mcp;" in r.json["error"]["message"]
        for method in ("GET", "DELETE"):
            assert other.raw(method, headers={"Accept": "text/event-stream"}).status == 404, method
    # still the session it was, where it was opened
    r = own.request("tools/call", {"name": "execute_code", "arguments": {"code": "print(2)"}})["result"]
    assert r["structuredContent"]["stdout"] == "2\n"
    assert "event=session_wrong_endpoint" in farm.log() + farm.log("mcp2")


def test_a_compat_session_lives_in_redis_with_its_endpoint_and_is_served_there_by_either_front_end(farm):
    a = legacy(farm, "py-sandbox")
    stored = farm.redis().hgetall("sp:t:{eras}:sess:" + a.session)
    assert stored["ep"] == "py-sandbox" and stored["proto"] == "2025-11-25"
    b = Client(farm.url2 + "/compat/py-sandbox", farm.key)
    b.session = a.session
    assert [t["name"] for t in b.request("tools/list")["result"]["tools"]] == ["run_python"]
    for i, c in enumerate((a, b, a, b)):
        r = c.request("tools/call", {"name": "run_python", "arguments": {"code": "print(%d)" % i}})["result"]
        assert r["structuredContent"]["stdout"] == "%d\n" % i and "resultType" not in r
    # refused on /mcp and on another drop-in endpoint, by both front-ends
    for url in (farm.url, farm.url2):
        for path in ("", "/compat/code-sandbox"):
            c = Client(url + path, farm.key)
            c.session = a.session
            r = c.send("tools/list")
            assert r.status == 404 and "opened on /mcp/compat/py-sandbox" in r.json["error"]["message"], path
    assert b.raw("DELETE").status == 200  # ends it everywhere, from its own endpoint
    assert a.send("tools/list").status == 404


def test_stdio_compat_serves_both_eras_in_one_process(farm):
    def rq(rid, method, params=None):
        return dict({"jsonrpc": "2.0", "id": rid, "method": method}, **({"params": params} if params else {}))
    lines = [rq(1, "server/discover", {"_meta": modern_meta()}), rq(2, "tools/list", {"_meta": modern_meta()}),
             rq(3, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                  "clientInfo": {"name": "t", "version": "1"}}),
             rq(4, "tools/list"),
             rq(5, "tools/call", {"name": "check_syntax", "arguments": {"code": "x = 1"}, "_meta": modern_meta()})]
    p = subprocess.Popen(farm.stdio_args("--compat", "code-sandbox"), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True)
    try:
        p.stdin.write("\n".join(json.dumps(m) for m in lines) + "\n")
        p.stdin.flush()
        out = {}
        while len(out) < len(lines):  # the job's answer may come after stdin's end would be read
            line = p.stdout.readline()
            assert line, "stdout closed early: %s" % sorted(out)
            m = json.loads(line)
            if "id" in m:
                out[m["id"]] = m
        p.stdin.close()
        assert p.wait(30) == 0
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert out[1]["result"]["capabilities"] == CAPABILITIES["code-sandbox"]
    assert [t["name"] for t in out[2]["result"]["tools"]] == ["check_syntax", "test_code"]
    assert out[2]["result"]["resultType"] == "complete"
    init = out[3]["result"]
    assert init["capabilities"] == CAPABILITIES["code-sandbox"] and init["serverInfo"]["title"].endswith("Sandbox")
    assert [t["name"] for t in out[4]["result"]["tools"]] == ["check_syntax", "test_code"]
    assert out[5]["result"]["content"][0]["text"] == '{"valid": true}' and out[5]["result"]["resultType"] == "complete"
