"""MCP 2026-07-28 over Streamable HTTP and stdio, beside the legacy revisions on the same endpoints,
against real Redis and real ZeroMQ with the broker stand-in answering from directives in the code
(fake_broker.py): discovery, the result decorations the revision asks for, per-request log levels and
capabilities, subscriptions/listen, the tasks extension, multi round-trip requests, cancellation by
closing the stream, and what legacy clients keep seeing."""
import json
import socket
import subprocess
import time

import pytest

from fe_harness import Client, Frontend, ModernClient, assert_no_type_unions, modern_meta, wait_for

TASKS = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
SERVER_INFO = "io.modelcontextprotocol/serverInfo"


@pytest.fixture(scope="module")
def fe():
    f = Frontend(extra=["--task-after-ms", "300"])
    f.key = f.add_tenant("modern", rate="100000", burst="100000")
    yield f
    f.stop()


@pytest.fixture
def c(fe):
    client = ModernClient(fe.url, fe.key)
    yield client
    client.close()


def ok(reply):
    assert reply.status == 200, (reply.status, reply.body[:300])
    assert "error" not in reply.json, reply.json
    return reply.json["result"]


def test_server_discover_names_versions_capabilities_and_the_server(c):
    r = ok(c.send("server/discover"))
    assert r["resultType"] == "complete"
    assert r["supportedVersions"] == ["2026-07-28"]
    assert r["capabilities"]["extensions"] == {"io.modelcontextprotocol/tasks": {}}
    assert r["capabilities"]["resources"]["subscribe"] is True
    assert "tasks" not in r["capabilities"]  # the 2025-11-25 slot: an extension now
    assert r["_meta"][SERVER_INFO]["name"] == "snakepit"
    assert "serverInfo" not in r  # it moved to _meta
    assert isinstance(r["ttlMs"], int) and r["cacheScope"] == "public"
    assert "execute_code" in r["instructions"]


def test_every_result_names_its_type_and_lists_carry_caching_hints(c):
    for method in ("tools/list", "resources/list", "resources/templates/list", "prompts/list"):
        r = ok(c.send(method))
        assert r["resultType"] == "complete" and r["cacheScope"] == "public" and r["ttlMs"] >= 0, method
        assert r["_meta"][SERVER_INFO]["version"]
    read = ok(c.send("resources/read", {"uri": "sandbox://info"}))
    assert read["cacheScope"] == "private" and read["ttlMs"] == 0  # yours, and it changes
    call = ok(c.send("tools/call", {"name": "execute_code", "arguments": {"code": "print(1)"}}))
    assert call["resultType"] == "complete" and "ttlMs" not in call


def test_tools_carry_no_execution_slot_and_no_type_unions(c):
    tools = ok(c.send("tools/list"))["tools"]
    assert all("execution" not in t for t in tools)  # tasks are the server's call now
    for t in tools:
        assert_no_type_unions(t["inputSchema"])
        assert_no_type_unions(t["outputSchema"])
    size = [t for t in tools if t["name"] == "execute_code"][0]["inputSchema"]["properties"]["memory_limit"]
    assert [b["type"] for b in size["anyOf"]] == ["integer", "string"]


def test_the_same_endpoint_still_serves_legacy_sessions(fe):
    legacy = Client(fe.url, fe.key)
    init = legacy.initialize()["result"]
    assert init["protocolVersion"] == "2025-11-25" and "tasks" in init["capabilities"]
    r = legacy.request("tools/call", {"name": "execute_code", "arguments": {"code": "print(2)"}})["result"]
    assert "resultType" not in r  # legacy results stay as they were
    assert legacy.request("ping")["result"] == {}
    assert "execution" in legacy.request("tools/list")["result"]["tools"][0]


def test_a_session_id_on_a_modern_request_is_ignored_and_never_echoed(fe, c):
    r = c.send("tools/list", headers={"Mcp-Session-Id": "0" * 32})
    assert ok(r)["tools"] and "mcp-session-id" not in r.headers


def test_log_messages_only_for_a_request_that_names_a_level(c):
    quiet = c.send("tools/call", {"name": "execute_code", "arguments": {"code": "print(1)"}})
    assert not [m for m in quiet.messages if m.get("method") == "notifications/message"]
    loud = c.send("tools/call", {"name": "execute_code", "arguments": {"code": "#status error\n1"}},
                  meta={"io.modelcontextprotocol/logLevel": "debug"})
    logs = [m for m in loud.messages if m.get("method") == "notifications/message"]
    assert logs and logs[0]["params"]["level"] == "warning"


def test_our_own_error_codes_leave_the_reserved_range(fe):
    slow = ModernClient(fe.url, fe.add_tenant("slowmo", rate="0.01", burst="1"))
    ok(slow.send("tools/call", {"name": "get_sandbox_info", "arguments": {}}))
    r = slow.send("tools/call", {"name": "get_sandbox_info", "arguments": {}})
    assert r.status == 429 and r.json["error"]["code"] == -31029
    assert r.json["error"]["data"]["retry_after_ms"] > 0
    gone = ModernClient(fe.url, fe.key).send("resources/read", {"uri": "sandbox://executions/0190a5b0-0000-7000-8000-000000000000"})
    assert gone.json["error"]["code"] == -32602 and gone.json["error"]["data"]["uri"]  # not -32002


def listen(fe, params, rid="L1"):
    body = json.dumps({"jsonrpc": "2.0", "id": rid, "method": "subscriptions/listen",
                       "params": dict(params, _meta=modern_meta(TASKS))})
    s = socket.create_connection(("127.0.0.1", fe.port), timeout=30)
    s.sendall(("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
               "Accept: application/json, text/event-stream\r\nAuthorization: Bearer %s\r\n"
               "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: subscriptions/listen\r\nContent-Length: %d\r\n"
               "\r\n%s" % (fe.key, len(body), body)).encode())
    return s


def frames(s, until):
    buf = ""
    while until not in buf:
        chunk = s.recv(65536).decode()
        assert chunk, buf
        buf += chunk
    return [json.loads(line[6:]) for line in buf.split("\n") if line.startswith("data: ")]


def test_listen_acknowledges_then_delivers_resource_updates_and_task_status(fe):
    tasked = ModernClient(fe.url, fe.key, caps=TASKS)
    created = ok(tasked.send("tools/call", {"name": "execute_code", "arguments": {"code": "#sleep 1.5\n1"}}))
    assert created["resultType"] == "task"
    uri = "sandbox://executions/" + created["taskId"]
    s = listen(fe, {"notifications": {"resourceSubscriptions": [uri], "taskIds": [created["taskId"]],
                                      "toolsListChanged": True}})
    got = frames(s, "notifications/tasks")
    s.close()
    ack = got[0]
    assert ack["method"] == "notifications/subscriptions/acknowledged"
    assert ack["params"]["notifications"] == {"resourceSubscriptions": [uri], "taskIds": [created["taskId"]]}
    assert all(m["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "L1" for m in got)
    methods = [m["method"] for m in got]
    assert "notifications/resources/updated" in methods
    task = [m for m in got if m["method"] == "notifications/tasks"][0]["params"]
    assert task["status"] == "completed" and task["result"]["isError"] is False


def test_listen_for_task_ids_needs_the_tasks_extension(c):
    r = c.send("subscriptions/listen", {"notifications": {"taskIds": ["x"]}})
    assert r.status == 400 and r.json["error"]["code"] == -32021


def test_a_call_still_running_becomes_a_task_only_for_clients_that_declared_the_extension(fe):
    plain = ModernClient(fe.url, fe.key)
    r = ok(plain.send("tools/call", {"name": "execute_code", "arguments": {"code": "#sleep 0.8\n1"}}))
    assert r["resultType"] == "complete" and r["structuredContent"]["status"] == "ok"
    quick = ok(ModernClient(fe.url, fe.key, caps=TASKS).send("tools/call", {
        "name": "execute_code", "arguments": {"code": "1"}, "task": {"ttl": 5}}))  # task param: ignored
    assert quick["resultType"] == "complete"


def test_tasks_get_update_cancel(fe):
    t = ModernClient(fe.url, fe.key, caps=TASKS)
    created = ok(t.send("tools/call", {"name": "execute_code", "arguments": {"code": "#sleep 30\n1"}}))
    tid = created["taskId"]
    assert set(created) >= {"taskId", "status", "createdAt", "lastUpdatedAt", "ttlMs", "pollIntervalMs"}
    assert "ttl" not in created and "pollInterval" not in created
    assert ok(t.send("tasks/get", {"taskId": tid}))["status"] == "working"
    assert ok(t.send("tasks/update", {"taskId": tid, "inputResponses": {"nothing": {}}}))["resultType"] == "complete"
    assert set(ok(t.send("tasks/cancel", {"taskId": tid}))) == {"resultType", "_meta"}
    wait_for(lambda: ok(t.send("tasks/get", {"taskId": tid}))["status"] == "cancelled", 20, "the cancel")
    assert set(ok(t.send("tasks/cancel", {"taskId": tid}))) == {"resultType", "_meta"}  # idempotent
    unknown = t.send("tasks/get", {"taskId": "0190a5b0-0000-7000-8000-000000000000"})
    assert unknown.json["error"]["code"] == -32602


def test_the_prompt_asks_for_its_task_when_the_client_can_be_asked(fe):
    asker = ModernClient(fe.url, fe.key, caps={"elicitation": {}})
    first = ok(asker.send("prompts/get", {"name": "write_sandbox_code", "arguments": {}}))
    assert first["resultType"] == "input_required"
    assert first["inputRequests"]["task"]["method"] == "elicitation/create"
    state = first["requestState"]
    done = ok(asker.send("prompts/get", {"name": "write_sandbox_code", "arguments": {}, "requestState": state,
                                         "inputResponses": {"task": {"action": "accept",
                                                                     "content": {"task": "sum a list"}}}}))
    assert done["resultType"] == "complete" and "sum a list" in done["messages"][0]["content"]["text"]
    # a state minted for one request cannot complete another
    other = asker.send("prompts/get", {"name": "write_sandbox_code", "arguments": {"profile": "python.basic"},
                                       "requestState": state, "inputResponses": {"task": {"action": "accept",
                                                                                          "content": {"task": "x"}}}})
    assert other.json["error"]["code"] == -32602 and "another request" in other.json["error"]["message"]
    # nobody to ask: refused as before
    assert ModernClient(fe.url, fe.key).send("prompts/get", {"name": "write_sandbox_code"}).json["error"]["code"] == -32602


def test_the_key_sealing_request_states_never_expires_and_comes_back_if_redis_loses_it(fe):
    r = fe.redis()
    wait_for(lambda: r.get("sp:mrtr:key"), 10, "the shared key")
    key = r.get("sp:mrtr:key")
    assert r.ttl("sp:mrtr:key") == -1  # no TTL: never evictable (docs/operating.md "Redis")
    asker = ModernClient(fe.url, fe.key, caps={"elicitation": {}})
    state = ok(asker.send("prompts/get", {"name": "write_sandbox_code", "arguments": {}}))["requestState"]
    r.delete("sp:mrtr:key")  # lost, as by a Redis restarted without persistence...
    r.client_kill_filter(_type="normal", skipme=True)  # ...which the front-end reconnects to
    wait_for(lambda: r.get("sp:mrtr:key") == key, 15, "the front-end to put its key back")
    assert r.ttl("sp:mrtr:key") == -1
    done = ok(asker.send("prompts/get", {"name": "write_sandbox_code", "arguments": {}, "requestState": state,
                                         "inputResponses": {"task": {"action": "accept",
                                                                     "content": {"task": "sum a list"}}}}))
    assert done["resultType"] == "complete"  # the state sealed before still opens


def test_closing_a_modern_requests_stream_cancels_its_job(fe):
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "execute_code", "arguments": {"code": "#sleep 20\n1"}, "_meta": modern_meta()}})
    before = fe.broker_stats()
    s = socket.create_connection(("127.0.0.1", fe.port), timeout=10)
    s.sendall(("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
               "Accept: application/json\r\nAuthorization: Bearer %s\r\nMCP-Protocol-Version: 2026-07-28\r\n"
               "Mcp-Method: tools/call\r\nMcp-Name: execute_code\r\nContent-Length: %d\r\n\r\n%s"
               % (fe.key, len(body), body)).encode())
    wait_for(lambda: fe.broker_stats()["submits"] > before["submits"], 10, "the job to be submitted")
    s.close()
    wait_for(lambda: fe.broker_stats()["cancels"] > before["cancels"], 10, "the job to be cancelled")


def test_stdio_serves_both_eras_in_one_process(fe):
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": modern_meta()}},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": modern_meta()}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {"_meta": {}}},  # legacy, uninitialized
        {"jsonrpc": "2.0", "id": 4, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
                                                                       "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
        {"jsonrpc": "2.0", "id": 5, "method": "ping"},
        {"jsonrpc": "2.0", "id": 6, "method": "ping", "params": {"_meta": modern_meta()}},
        {"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {"_meta": modern_meta(**{
            "io.modelcontextprotocol/protocolVersion": "1999-01-01"})}},
    ]
    p = subprocess.run(fe.stdio_args(), input="\n".join(json.dumps(m) for m in lines) + "\n",
                       capture_output=True, text=True, timeout=30)
    out = {m["id"]: m for m in map(json.loads, p.stdout.splitlines()) if "id" in m}
    assert out[1]["result"]["supportedVersions"] == ["2026-07-28"]
    assert out[2]["result"]["resultType"] == "complete"
    assert out[3]["error"]["code"] == -32600  # legacy: initialize first
    assert out[4]["result"]["protocolVersion"] == "2025-11-25"
    assert out[5]["result"] == {}
    assert out[6]["error"]["code"] == -32601  # removed in 2026-07-28
    assert out[7]["error"]["code"] == -32022 and out[7]["error"]["data"]["requested"] == "1999-01-01"


def test_a_listen_stream_ends_with_its_result_when_the_server_stops():
    f = Frontend()
    try:
        f.key = f.add_tenant("bye", rate="100", burst="100")
        s = listen(f, {"notifications": {"resourceSubscriptions": ["sandbox://info"]}}, rid=41)
        frames(s, "acknowledged")
        f._stop("mcp")  # SIGTERM: a graceful end
        got = frames(s, '"result"')
        s.close()
        end = got[-1]
        assert end["id"] == 41 and end["result"]["resultType"] == "complete"
        assert end["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == 41
    finally:
        f.stop()
