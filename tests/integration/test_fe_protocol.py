"""The front-end's MCP surface over Streamable HTTP, against real Redis and real ZeroMQ with the
broker stand-in answering from directives in the code (fake_broker.py). What a client sees:
lifecycle, sessions, tools and their result contract, progress, cancellation, tasks, history,
resources, prompts."""
import base64
import json
import threading
import time

import msgpack
import pytest

from fe_harness import Client, Frontend, wait_for

CONTRACT = {"execution_id", "status", "stdout", "stderr", "truncated", "result", "variables", "error", "timings",
            "resources", "exit",
            "images", "files",  # figures and workspace files, empty lists elsewhere
            "outputs",  # display() and the last expression, rendered by type
            "security_events",  # what the sandbox refused, caught or not (empty here)
            "profile", "profile_reason"}  # where it ran and why (limits_adjusted only when one was lowered)


@pytest.fixture(scope="module")
def fe():
    f = Frontend(extra=["--page-size", "3"])
    yield f
    f.stop()


@pytest.fixture
def key(fe):
    return fe.add_tenant("alice", "alice-key", rate="1000", burst="1000")


@pytest.fixture
def client(fe, key):
    c = Client(fe.url, key)
    c.initialize()
    yield c
    c.close()


def test_healthz_says_ok(fe):
    h = fe.health()
    assert h["ok"] is True and h["redis_connected"] is True
    wait_for(lambda: fe.health()["bus_connected"], 10, "the bus to subscribe")


@pytest.mark.parametrize("version,expect", [("2025-11-25", "2025-11-25"), ("2025-06-18", "2025-06-18"),
                                            ("2025-03-26", "2025-03-26"), ("2024-11-05", "2024-11-05"),
                                            ("1999-01-01", "2025-11-25")])
def test_initialize_negotiates_the_version(fe, key, version, expect):
    c = Client(fe.url, key)
    r = c.initialize(version)
    assert r["result"]["protocolVersion"] == expect
    caps = r["result"]["capabilities"]
    assert {"tools", "resources", "prompts", "logging", "completions", "tasks"} <= set(caps)
    assert caps["resources"]["subscribe"] is True
    assert caps["tasks"]["requests"]["tools"]["call"] == {}
    assert r["result"]["serverInfo"]["name"] == "snakepit"
    assert len(c.session) == 32


def test_every_tool_declares_schemas(client):
    names = []
    cursor = None
    while True:  # --page-size 3: the tools come in pages
        r = client.request("tools/list", {"cursor": cursor} if cursor else {})["result"]
        names += [t["name"] for t in r["tools"]]
        for t in r["tools"]:
            assert t["description"] and t["inputSchema"]["type"] == "object"
            assert t["outputSchema"]["type"] == "object"
        cursor = r.get("nextCursor")
        if not cursor:
            break
    assert names[:6] == ["execute_code", "validate_code", "get_sandbox_info", "get_execution", "list_executions",
                         "get_usage"]
    assert sorted(names[6:]) == ["close_session", "create_session", "create_state_snapshot",  # the session tools
                                 "delete_state_snapshot", "fork_session", "list_sessions",
                                 "list_state_snapshots", "map_session", "restore_state_snapshot"]


def test_execute_code_result_has_exactly_the_contract_fields(client, fe):
    r = client.call("execute_code", {"code": "print(1)", "timeout": 5, "memory_limit": "300m"})["result"]
    sc = r["structuredContent"]
    assert set(sc) == CONTRACT
    assert sc["status"] == "ok" and r["isError"] is False
    assert set(sc["timings"]) == {"queue_ms", "wall_ms", "cpu_ms"}
    assert set(sc["truncated"]) == {"stdout", "stderr", "images", "files", "outputs",
                                    "security_events"}
    assert set(sc["exit"]) == {"reason", "signal", "syscall", "code"}
    assert sc["images"] == [] and sc["files"] == [] and sc["outputs"] == []
    assert sc["security_events"] == [] and sc["exit"]["code"] == 0
    assert r["content"][0]["type"] == "text" and "status: ok" in r["content"][0]["text"]
    route = fe.broker_stats()["routes"][-1]
    spec = fe.broker_stats()["specs"][-1]
    assert route["tenant"] == "alice" and route["max_inflight"] == 4
    assert spec["limits"]["wall_ms"] == 5000 and spec["limits"]["memory_mb"] == 300


def test_use_container_from_older_clients_is_accepted(client):
    r = client.call("execute_code", {"code": "1", "use_container": True})["result"]
    assert r["structuredContent"]["status"] == "ok"


def test_limits_are_clamped_to_the_tenant(fe):
    k = fe.add_tenant("small", max_timeout_s="2", max_memory_mb="100", max_concurrency="1")
    c = Client(fe.url, k)
    c.initialize()
    c.call("execute_code", {"code": "x", "timeout": 60, "memory_limit": 1024})
    spec, route = fe.broker_stats()["specs"][-1], fe.broker_stats()["routes"][-1]
    assert spec["limits"]["wall_ms"] == 2000 and spec["limits"]["memory_mb"] == 100 and route["max_inflight"] == 1


def test_failed_execution_is_a_result_with_is_error(client):
    r = client.call("execute_code", {"code": "#status error\n1/0"})["result"]
    assert r["isError"] is True and r["structuredContent"]["status"] == "error"
    assert r["structuredContent"]["error"]["type"] == "FakeError"


def test_invalid_utf8_output_becomes_replacement_characters(client):
    r = client.call("execute_code", {"code": "#stdout-hex 61c3"})["result"]
    assert r["structuredContent"]["stdout"] == "a\ufffd"


def test_progress_streams_queued_output_and_done_before_the_result(client):
    r = client.send("tools/call", {"name": "execute_code", "arguments": {"code": "#progress 2\n#sleep 0.2"},
                                   "_meta": {"progressToken": "tok"}})
    assert r.status == 200 and r.header("Content-Type").startswith("text/event-stream")
    notes = [m for m in r.messages if m.get("method") == "notifications/progress"]
    msgs = [n["params"]["message"] for n in notes]
    assert msgs[0] == "queued" and "running" in msgs and msgs[-1] == "done"
    assert any(m.startswith("stdout: line") for m in msgs)
    values = [n["params"]["progress"] for n in notes]
    assert values == sorted(values) and len(set(values)) == len(values)
    assert all(n["params"]["progressToken"] == "tok" for n in notes)
    assert r.messages[-1]["result"]["structuredContent"]["status"] == "ok"


def test_a_json_only_client_gets_json_without_notifications(fe, key):
    c = Client(fe.url, key, accept="application/json")
    c.initialize()
    r = c.send("tools/call", {"name": "execute_code", "arguments": {"code": "#progress 2"},
                              "_meta": {"progressToken": 1}})
    assert r.header("Content-Type") == "application/json" and len(r.messages) == 1


def test_cancelled_call_sends_no_result_and_cancels_the_job(fe, client):
    before = fe.broker_stats()["cancels"]
    out = {}

    def run():
        out["r"] = client.send("tools/call", {"name": "execute_code", "arguments": {"code": "#sleep 5"}})

    t = threading.Thread(target=run)
    t.start()
    wait_for(lambda: fe.health()["jobs_in_flight"] == 1, 5, "the job to be in flight")
    other = Client(fe.url, client.key)
    other.session = client.session
    n = other.send("notifications/cancelled", {"requestId": client.next_id - 1, "reason": "test"}, notify=True)
    assert n.status == 202
    t.join(10)
    assert not t.is_alive()
    assert not any("result" in m for m in out["r"].messages)
    # the POST of a request gets an SSE stream or a JSON object (2025-11-25 transports), never a
    # bodiless 204: here a stream that ends with nothing on it
    assert out["r"].status == 200 and out["r"].header("Content-Type") == "text/event-stream"
    assert out["r"].messages == []
    wait_for(lambda: fe.broker_stats()["cancels"] == before + 1, 5, "the broker to see the cancel")
    wait_for(lambda: fe.health()["jobs_in_flight"] == 0, 5, "the job to end")


def test_a_cancelled_call_of_a_json_only_client_gets_one_json_object(fe, key):
    c = Client(fe.url, key, accept="application/json")
    c.initialize()
    out = {}

    def run():
        out["r"] = c.send("tools/call", {"name": "execute_code", "arguments": {"code": "#sleep 5"}})

    t = threading.Thread(target=run)
    t.start()
    wait_for(lambda: fe.health()["jobs_in_flight"] == 1, 5, "the job to be in flight")
    other = Client(fe.url, key)
    other.session = c.session
    assert other.send("notifications/cancelled", {"requestId": c.next_id - 1}, notify=True).status == 202
    t.join(10)
    assert not t.is_alive()
    r = out["r"]
    assert r.status == 200 and r.header("Content-Type") == "application/json", (r.status, r.body)
    assert r.json["id"] == c.next_id - 1 and r.json["error"]["message"] == "request cancelled"
    wait_for(lambda: fe.health()["jobs_in_flight"] == 0, 5, "the job to end")


def test_task_augmented_call_returns_a_task_then_its_result(client):
    r = client.request("tools/call", {"name": "execute_code", "arguments": {"code": "#sleep 0.3"},
                                      "task": {"ttl": 60000}})["result"]
    task = r["task"]
    assert task["status"] == "working" and task["ttl"] == 60000
    tid = task["taskId"]
    got = client.request("tasks/get", {"taskId": tid})["result"]
    assert got["taskId"] == tid and got["status"] in ("working", "completed")
    res = client.request("tasks/result", {"taskId": tid})["result"]  # waits for the job
    assert res["structuredContent"]["execution_id"] == tid
    assert res["_meta"]["io.modelcontextprotocol/related-task"]["taskId"] == tid
    wait_for(lambda: client.request("tasks/get", {"taskId": tid})["result"]["status"] == "completed", 5,
             "the task to complete")
    again = client.request("tasks/result", {"taskId": tid})["result"]  # now from the Redis record
    assert again["structuredContent"]["status"] == "ok"
    listed = client.request("tasks/list")["result"]["tasks"]
    assert tid in [t["taskId"] for t in listed]


def test_tasks_cancel_stops_a_running_task_and_refuses_a_finished_one(fe, client):
    tid = client.request("tools/call", {"name": "execute_code", "arguments": {"code": "#sleep 5"},
                                        "task": {}})["result"]["task"]["taskId"]
    c = client.request("tasks/cancel", {"taskId": tid})["result"]
    assert c["status"] == "cancelled"
    wait_for(lambda: client.request("tasks/get", {"taskId": tid})["result"]["status"] == "cancelled", 5,
             "the cancelled task to settle")
    again = client.request("tasks/cancel", {"taskId": tid})
    assert again["error"]["code"] == -32602


def test_unknown_task_is_invalid_params(client):
    r = client.request("tasks/get", {"taskId": "01234567-89ab-7def-8123-456789abcdef"})
    assert r["error"]["code"] == -32602


def test_history_shows_own_executions_only(fe, client):
    eid = client.call("execute_code", {"code": "print('mine')"})["result"]["structuredContent"]["execution_id"]
    wait_for(lambda: fe.redis().hget("sp:exec:" + eid, "status") == "ok", 5, "the record")
    got = client.call("get_execution", {"execution_id": eid})["result"]
    assert got["isError"] is False and got["structuredContent"]["code"] == "print('mine')"
    assert got["structuredContent"]["result"]["execution_id"] == eid
    listed = client.call("list_executions", {"limit": 5})["result"]["structuredContent"]
    assert eid in [e["execution_id"] for e in listed["executions"]]
    bob = Client(fe.url, fe.add_tenant("bob"))
    bob.initialize()
    assert bob.call("get_execution", {"execution_id": eid})["result"]["isError"] is True
    assert bob.call("list_executions")["result"]["structuredContent"]["executions"] == []


def test_list_executions_pages_and_filters(fe):
    c = Client(fe.url, fe.add_tenant("pager", rate="1000", burst="1000"))
    c.initialize()
    for i in range(5):
        c.call("execute_code", {"code": "#status timeout" if i % 2 else "ok %d" % i})
    wait_for(lambda: fe.redis().zcard("sp:t:pager:execs") == 5, 5, "five records")
    time.sleep(0.2)
    seen, cursor = [], None
    while True:
        a = {"limit": 2}
        if cursor:
            a["cursor"] = cursor
        page = c.call("list_executions", a)["result"]["structuredContent"]
        seen += [e["execution_id"] for e in page["executions"]]
        cursor = page["next_cursor"]
        if not cursor:
            break
    assert len(seen) == 5 and len(set(seen)) == 5
    timeouts = c.call("list_executions", {"status": "timeout"})["result"]["structuredContent"]["executions"]
    assert len(timeouts) == 2 and all(e["status"] == "timeout" for e in timeouts)


def test_record_and_usage_are_written(fe, client):
    eid = client.call("execute_code", {"code": "print(2)"})["result"]["structuredContent"]["execution_id"]
    r = fe.redis()
    wait_for(lambda: r.hget("sp:exec:" + eid, "status") == "ok", 5, "the record")
    rec = r.hgetall("sp:exec:" + eid)
    assert rec["tenant"] == "alice" and rec["profile"] == "python.basic" and rec["code"] == "print(2)"
    assert 0 < r.ttl("sp:exec:" + eid) <= 7 * 86400
    # a plain result is all in the flat fields (records.h); one with variables keeps the Result
    # itself, base64 of its msgpack, and both render back to what the call returned
    assert "result" not in rec and rec["stdout"] == "ran 8 bytes\n" and rec["result_repr"] == "42"
    full = client.call("execute_code", {"code": "x = 6 * 7", "inspect_variables": ["x"]})
    sc = full["result"]["structuredContent"]
    wait_for(lambda: r.hget("sp:exec:" + sc["execution_id"], "status") == "ok", 5, "the record")
    kept = msgpack.unpackb(base64.b64decode(r.hget("sp:exec:" + sc["execution_id"], "result")))
    assert kept["status"] == "ok" and "x" in kept["variables"]
    for i, want in ((eid, None), (sc["execution_id"], sc)):
        got = client.call("get_execution", {"execution_id": i})["result"]["structuredContent"]
        assert got["result"]["execution_id"] == i and got["result"]["status"] == "ok"
        if want:
            assert got["result"]["variables"] == want["variables"]
    assert r.zscore("sp:t:alice:execs", eid) is not None
    day = time.strftime("%Y%m%d", time.gmtime())
    use = r.hgetall("sp:t:alice:use:" + day)
    assert int(use["executions"]) >= 1 and int(use["status:ok"]) >= 1


def test_validate_code_returns_the_validation(client):
    r = client.call("validate_code", {"code": "print(1)"})["result"]
    assert r["isError"] is False and r["structuredContent"]["valid"] is True


def test_get_sandbox_info_publishes_profiles_and_the_tenants_limits(client):
    sc = client.call("get_sandbox_info")["result"]["structuredContent"]
    basic = [p for p in sc["profiles"] if p["name"] == "python.basic"][0]
    assert "math" in basic["modules"] and basic["max_limits"]["timeout_s"] == 300
    assert sc["tenant"]["name"] == "alice"


def test_resources_list_read_and_not_found(client):
    r = client.request("resources/list")["result"]["resources"]
    assert [x["uri"] for x in r] == ["sandbox://info"]
    t = client.request("resources/templates/list")["result"]["resourceTemplates"]
    assert t[0]["uriTemplate"] == "sandbox://executions/{id}"
    info = client.request("resources/read", {"uri": "sandbox://info"})["result"]["contents"][0]
    assert json.loads(info["text"])["profiles"]
    eid = client.call("execute_code", {"code": "1"})["result"]["structuredContent"]["execution_id"]
    time.sleep(0.1)
    ex = client.request("resources/read", {"uri": "sandbox://executions/" + eid})["result"]["contents"][0]
    assert json.loads(ex["text"])["execution_id"] == eid
    nf = client.request("resources/read", {"uri": "sandbox://nothing"})
    assert nf["error"]["code"] == -32002


def test_subscribed_execution_update_arrives_on_the_get_stream(fe, client):
    got = []
    conn_client = Client(fe.url, client.key, accept="text/event-stream")
    conn_client.session = client.session
    import http.client as hc
    conn = hc.HTTPConnection("127.0.0.1", fe.port, timeout=10)
    conn.request("GET", "/mcp", headers={"Accept": "text/event-stream", "Authorization": "Bearer " + client.key,
                                         "Mcp-Session-Id": client.session})
    resp = conn.getresponse()
    assert resp.status == 200

    def reader():
        buf = b""
        while b"resources/updated" not in buf:
            chunk = resp.read1(4096)
            if not chunk:
                break
            buf += chunk
        got.append(buf)

    t = threading.Thread(target=reader, daemon=True)
    t.start()
    r = client.request("tools/call", {"name": "execute_code", "arguments": {"code": "#sleep 0.3"}, "task": {}})
    uri = "sandbox://executions/" + r["result"]["task"]["taskId"]
    assert client.request("resources/subscribe", {"uri": uri})["result"] == {}
    t.join(5)
    conn.close()
    assert got and uri.encode() in got[0]


def test_prompt_and_completion(client):
    p = client.request("prompts/list")["result"]["prompts"]
    assert p[0]["name"] == "write_sandbox_code"
    g = client.request("prompts/get", {"name": "write_sandbox_code", "arguments": {"task": "sum a list"}})["result"]
    assert "sum a list" in g["messages"][0]["content"]["text"]
    c = client.request("completion/complete", {"ref": {"type": "ref/prompt", "name": "write_sandbox_code"},
                                               "argument": {"name": "profile", "value": "python.b"}})["result"]
    assert c["completion"]["values"] == ["python.basic"]


def test_logging_set_level_filters_log_notifications(fe, key):
    c = Client(fe.url, key)
    c.initialize()
    assert c.request("logging/setLevel", {"level": "loud"})["error"]["code"] == -32602
    r = c.send("tools/call", {"name": "execute_code", "arguments": {"code": "#status error"}})
    assert not [m for m in r.messages if m.get("method") == "notifications/message"]  # no level set yet
    assert c.request("logging/setLevel", {"level": "warning"})["result"] == {}
    r = c.send("tools/call", {"name": "execute_code", "arguments": {"code": "#status error"}})
    logs = [m["params"] for m in r.messages if m.get("method") == "notifications/message"]
    assert logs and logs[0]["level"] == "warning" and logs[0]["data"]["status"] == "error"
    r = c.send("tools/call", {"name": "execute_code", "arguments": {"code": "ok"}})
    assert not [m for m in r.messages if m.get("method") == "notifications/message"]  # debug < warning


def test_delete_ends_the_session(fe, key):
    c = Client(fe.url, key)
    c.initialize()
    assert c.raw("DELETE").status == 200
    assert c.send("ping").status == 404


def test_metrics_count_requests_and_tool_calls(fe, client):
    client.request("ping")
    text = fe.metrics()
    for name in ("snakepit_mcp_requests_total", "snakepit_mcp_tool_calls_total", "snakepit_mcp_request_duration_seconds",
                 "snakepit_mcp_rate_limit_rejections_total", "snakepit_mcp_auth_failures_total", "snakepit_mcp_sessions",
                 "snakepit_mcp_redis_errors_total", "snakepit_build_info", "process_start_time_seconds"):
        assert name in text
    assert fe.metric("snakepit_mcp_requests_total", method="ping", outcome="ok") >= 1


def test_metrics_pass_promtool(fe):
    import shutil
    import subprocess
    if not shutil.which("promtool"):
        pytest.skip("promtool (Debian package prometheus) is not installed")
    p = subprocess.run(["promtool", "check", "metrics"], input=fe.metrics(), capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr


def test_the_documented_file_limits_fit_the_http_body_limit(client):
    """Issue 14: the description promised 4 MiB per file and 6 MiB in all while the HTTP body
    may hold 4 MiB: a call within the documented limits was refused with 413. Whatever the
    description says now (N MiB in all) goes through, as text and as base64."""
    import base64
    import re
    tools = client.request("tools/list")["result"]["tools"]
    desc = next(t for t in tools if t["name"] == "execute_code")["inputSchema"]["properties"]["files"]["description"]
    total = int(re.search(r"(\d+) MiB in all", desc).group(1)) << 20
    body_cap = int(re.search(r"(\d+) MiB body limit", desc).group(1)) << 20
    assert body_cap == 4 << 20  # the front-end's --max-body default
    text = {"a.txt": "x" * (total // 2), "b.txt": "y" * (total - total // 2)}
    binary_size = (total * 3 // 4) - 64 * 1024  # base64 is 4/3 of its data, plus the JSON around it
    binary = {"c.bin": {"content": base64.b64encode(b"\0" * binary_size).decode(), "encoding": "base64"}}
    for files in (text, binary):
        r = client.send("tools/call", {"name": "execute_code", "arguments": {
            "code": "print('fits')", "profile": "python.filesystem", "files": files}})
        assert r.status == 200, (r.status, r.body[:300])
        assert "error" not in r.json, r.json["error"]
    over = {"a.txt": "x" * (total + 1)}
    r = client.send("tools/call", {"name": "execute_code", "arguments": {
        "code": "1", "profile": "python.filesystem", "files": over}})
    # an argument error the model can act on: a tool result naming the argument
    res = r.json["result"]
    assert r.status == 200 and res["isError"] is True and "`files`" in res["content"][0]["text"], res
    assert res["_meta"]["snakepit/error"] == {"kind": "invalid_argument", "argument": "files"}
