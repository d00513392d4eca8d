"""Two front-ends, one farm: any front-end answers any request of either revision.

Front-ends A and B listen on different ports and share the broker (and its executor) and Redis.
Clients alternate between them: a legacy session initialized on A is served by B; tasks created on
one are read, awaited and cancelled on the other; a legacy stream cut on A is resumed on B with
Last-Event-ID; a cancellation sent to B stops a call running on A; a listen stream on B hears an
execution that ends on A. Then A is SIGKILLed while clients load B, and B's clients see nothing of
it (and A's legacy session carries on on B)."""
import json
import os
import signal
import socket
import threading
import time

import pytest

from fe_harness import Client, Frontend, ModernClient, modern_meta, parse_sse, wait_for

TASKS = {"extensions": {"io.modelcontextprotocol/tasks": {}}}


@pytest.fixture(scope="module")
def farm():
    """A (the harness's front-end, spawned as "mcp") and B ("mcp2"): same broker, same Redis."""
    f = Frontend(executor=True, extra=["--task-after-ms", "300"],
                 profiles="python.basic,python.filesystem")  # the secure-sandbox workspace's
    f.key = f.add_tenant("multi", rate="100000", burst="100000")
    f.url2, f.port2 = f.spawn_peer("mcp2")
    yield f
    f._stop("mcp2")
    f.stop()


def legacy_pair(farm):
    a = Client(farm.url, farm.key)
    a.initialize()
    b = Client(farm.url2, farm.key)
    b.session = a.session
    return a, b


def result(reply):
    assert reply.status == 200, (reply.status, reply.body[:300])
    assert "error" not in reply.json, reply.json
    return reply.json["result"]


def test_a_legacy_session_is_served_by_either_front_end(farm):
    a, b = legacy_pair(farm)
    for i, c in enumerate((a, b) * 3):
        r = result(c.send("tools/call", {"name": "execute_code", "arguments": {"code": "print(%d)" % i}}))
        assert r["structuredContent"]["stdout"] == "%d\n" % i
    assert result(b.send("logging/setLevel", {"level": "debug"})) == {}
    info = result(a.send("resources/read", {"uri": "sandbox://info"}))
    assert json.loads(info["contents"][0]["text"])["profiles"]
    # ended on B: A answers 404 at once (the bus carries the deletion), and so does B
    assert b.raw("DELETE").status == 200
    assert a.send("ping").status == 404
    assert b.send("ping").status == 404


def test_a_request_running_when_its_session_ends_on_the_other_front_end_is_answered(farm):
    a, b = legacy_pair(farm)
    out = {}

    def slow():
        out["r"] = a.send("tools/call", {"name": "execute_code",
                                         "arguments": {"code": "import time\ntime.sleep(30)", "timeout": 60}})
    t = threading.Thread(target=slow, daemon=True)
    t.start()
    wait_for(lambda: farm.health()["jobs_in_flight"] >= 1, 15, "the call to run on A")
    assert b.raw("DELETE").status == 200
    t.join(15)
    assert not t.is_alive(), "the request of the ended session was never answered"
    assert out["r"].status == 404 and out["r"].json["error"]["code"] == -32600
    wait_for(lambda: farm.health()["jobs_in_flight"] == 0, 15, "its job to be cancelled")


def test_legacy_tasks_created_on_one_front_end_are_read_and_awaited_on_the_other(farm):
    a, b = legacy_pair(farm)
    created = result(a.send("tools/call", {"name": "execute_code", "task": {},
                                            "arguments": {"code": "import time\ntime.sleep(1)\nprint('t')"}}))
    tid = created["task"]["taskId"]
    assert result(b.send("tasks/get", {"taskId": tid}))["status"] == "working"
    done = result(b.send("tasks/result", {"taskId": tid}))  # waits on B for a task running on A
    assert done["structuredContent"]["stdout"] == "t\n"
    assert result(a.send("tasks/get", {"taskId": tid}))["status"] == "completed"


def test_a_legacy_task_running_on_one_front_end_is_cancelled_from_the_other(farm):
    a, b = legacy_pair(farm)
    created = result(a.send("tools/call", {"name": "execute_code", "task": {},
                                            "arguments": {"code": "while True: pass", "timeout": 60}}))
    tid = created["task"]["taskId"]
    assert result(b.send("tasks/cancel", {"taskId": tid}))["status"] == "cancelled"
    wait_for(lambda: result(a.send("tasks/get", {"taskId": tid}))["status"] == "cancelled", 20,
             "the task to be cancelled on the front-end that runs it")


def test_modern_tasks_created_on_one_front_end_are_polled_on_the_other(farm):
    a, b = ModernClient(farm.url, farm.key, caps=TASKS), ModernClient(farm.url2, farm.key, caps=TASKS)
    created = result(a.send("tools/call", {"name": "execute_code",
                                            "arguments": {"code": "import time\ntime.sleep(1.5)\nprint('m')"}}))
    assert created["resultType"] == "task"
    tid = created["taskId"]
    # durable before it was handed out: B finds it at once
    assert result(b.send("tasks/get", {"taskId": tid}))["status"] == "working"
    wait_for(lambda: result(b.send("tasks/get", {"taskId": tid}))["status"] == "completed", 30, "the task")
    got = result(a.send("tasks/get", {"taskId": tid}))
    assert got["result"]["structuredContent"]["stdout"] == "m\n"
    # requests alternate freely: nothing ties a modern client to a front-end
    for i, c in enumerate((a, b) * 2):
        r = result(c.send("tools/call", {"name": "execute_code", "arguments": {"code": "print(%d)" % i}}))
        assert r["structuredContent"]["stdout"] == "%d\n" % i


def post_stream(port, key, session, body):
    """A legacy POST whose SSE answer is read by hand: the socket and what came so far."""
    data = json.dumps(body)
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    s.sendall(("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
               "Accept: application/json, text/event-stream\r\nAuthorization: Bearer %s\r\n"
               "Mcp-Session-Id: %s\r\nMCP-Protocol-Version: 2025-11-25\r\nContent-Length: %d\r\n\r\n%s"
               % (key, session, len(data), data)).encode())
    return s


def read_events(s, n):
    buf = b""
    while buf.count(b"\n\n") < n + 1:  # the headers' blank line, then n events
        chunk = s.recv(65536)
        if not chunk:
            break
        buf += chunk
    return buf.decode()


def test_a_legacy_stream_cut_on_one_front_end_is_resumed_on_the_other(farm):
    a, b = legacy_pair(farm)
    code = "import time\nfor i in range(5):\n    print('line', i, flush=True)\n    time.sleep(0.3)\n"
    s = post_stream(farm.port, farm.key, a.session, {
        "jsonrpc": "2.0", "id": 77, "method": "tools/call",
        "params": {"name": "execute_code", "arguments": {"code": code}, "_meta": {"progressToken": "p"}}})
    text = read_events(s, 3)
    s.close()  # the connection is lost mid-job (a disconnect is not a cancellation)
    ids = [line[4:] for line in text.split("\n") if line.startswith("id: ")]
    assert ids, text
    r = b.raw("GET", headers={"Accept": "text/event-stream", "Last-Event-ID": ids[-1],
                              "MCP-Protocol-Version": "2025-11-25"})
    assert r.status == 200
    events = r.messages
    final = [m for m in events if m.get("id") == 77]
    assert len(final) == 1, events
    assert final[0]["result"]["structuredContent"]["stdout"] == "".join("line %d\n" % i for i in range(5))
    # what followed the last event the client had, and nothing before it
    progress = [m["params"]["progress"] for m in events if m.get("method") == "notifications/progress"]
    assert progress == sorted(progress) and len(progress) >= 1
    seen_before = [json.loads(line[6:]) for line in text.split("\n") if line.startswith("data: ")]
    last_before = max(m["params"]["progress"] for m in seen_before if m.get("method") == "notifications/progress")
    assert min(progress) > last_before


def test_a_cancellation_sent_to_one_front_end_stops_the_call_on_the_other(farm):
    a, b = legacy_pair(farm)
    marker = "cancel-across-%d" % time.time_ns()
    s = post_stream(farm.port, farm.key, a.session, {
        "jsonrpc": "2.0", "id": 88, "method": "tools/call",
        "params": {"name": "execute_code", "arguments": {"code": "# %s\nwhile True: pass" % marker, "timeout": 60},
                   "_meta": {"progressToken": "c"}}})
    read_events(s, 1)  # queued: the job runs on A's side of the farm
    assert b.send("notifications/cancelled", {"requestId": 88, "reason": "stop"}, notify=True).status == 202

    def cancelled():
        execs = result(b.send("tools/call", {"name": "list_executions", "arguments": {"limit": 5}}))
        for e in execs["structuredContent"]["executions"]:
            rec = result(b.send("tools/call", {"name": "get_execution", "arguments": {"execution_id": e["execution_id"]}}))
            if marker in (rec["structuredContent"].get("code") or ""):
                return rec["structuredContent"]["status"] == "cancelled"
        return False
    wait_for(cancelled, 30, "the call on A to be cancelled")
    s.close()


def test_a_listen_stream_on_one_front_end_hears_an_execution_that_ends_on_the_other(farm):
    a = ModernClient(farm.url, farm.key, caps=TASKS)
    created = result(a.send("tools/call", {"name": "execute_code",
                                            "arguments": {"code": "import time\ntime.sleep(1.5)"}}))
    uri = "sandbox://executions/" + created["taskId"]
    body = json.dumps({"jsonrpc": "2.0", "id": "listen-1", "method": "subscriptions/listen",
                       "params": {"_meta": modern_meta(), "notifications": {"resourceSubscriptions": [uri]}}})
    s = socket.create_connection(("127.0.0.1", farm.port2), timeout=30)
    s.sendall(("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
               "Accept: application/json, text/event-stream\r\nAuthorization: Bearer %s\r\n"
               "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: subscriptions/listen\r\nContent-Length: %d\r\n"
               "\r\n%s" % (farm.key, len(body), body)).encode())
    buf = ""
    while "notifications/resources/updated" not in buf:
        chunk = s.recv(65536)
        assert chunk, buf
        buf += chunk.decode()
    s.close()
    msgs = parse_sse(buf.split("\r\n\r\n", 1)[1].replace("\r\n", "\n").split("\n", 1)[1])
    assert msgs[0]["method"] == "notifications/subscriptions/acknowledged"
    update = [m for m in msgs if m.get("method") == "notifications/resources/updated"][0]
    assert update["params"]["uri"] == uri
    assert update["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "listen-1"


def test_one_front_end_killed_mid_load_and_the_other_carries_on(farm):
    a_legacy, b_legacy = legacy_pair(farm)  # a session initialized on A
    failures, done = [], []
    stop = threading.Event()

    def load(kind):
        c = ModernClient(farm.url2, farm.key) if kind == "modern" else Client(farm.url2, farm.key)
        if kind == "legacy":
            c.initialize()
        n = 0
        while not stop.is_set():
            r = c.send("tools/call", {"name": "execute_code", "arguments": {"code": "print(%d)" % n}})
            if r.status != 200 or "error" in r.json or r.json["result"]["structuredContent"]["stdout"] != "%d\n" % n:
                failures.append((kind, r.status, r.body[:200]))
            n += 1
        done.append((kind, n))

    threads = [threading.Thread(target=load, args=(k,)) for k in ("modern", "legacy", "modern")]
    for t in threads:
        t.start()
    time.sleep(1)
    victim = farm.procs["mcp"]
    victim.send_signal(signal.SIGKILL)  # A dies without a word
    victim.wait()
    time.sleep(1.5)
    stop.set()
    for t in threads:
        t.join(60)
    assert not failures, failures[:5]
    assert all(n > 0 for _, n in done) and len(done) == 3
    # A's session lives on in Redis: its client carries on through B
    r = result(b_legacy.send("tools/call", {"name": "execute_code", "arguments": {"code": "print('after')"}}))
    assert r["structuredContent"]["stdout"] == "after\n"
    # and A comes back, losing nothing but the connections it had
    farm._spawn("mcp", farm.mcp_args)
    wait_for(lambda: farm.health()["broker_connected"], 20, "A to come back")
    assert a_legacy.send("ping").status == 200


def get_stream(port, key, session, last=None):
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    s.sendall(("GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\nAuthorization: Bearer %s\r\n"
               "Mcp-Session-Id: %s\r\nMCP-Protocol-Version: 2025-11-25\r\n%s\r\n"
               % (key, session, "Last-Event-ID: %s\r\n" % last if last else "")).encode())
    return s


def test_a_sessions_get_stream_hears_updates_raised_on_the_other_front_end(farm):
    a, b = legacy_pair(farm)
    s = get_stream(farm.port, farm.key, a.session)  # the GET stream is held by A
    assert s.recv(4096).startswith(b"HTTP/1.1 200")
    created = result(b.send("tools/call", {"name": "execute_code", "task": {},
                                            "arguments": {"code": "import time\ntime.sleep(0.5)"}}))
    uri = "sandbox://executions/" + created["task"]["taskId"]
    assert result(b.send("resources/subscribe", {"uri": uri})) == {}  # through B
    buf = b""
    while b"notifications/resources/updated" not in buf:
        chunk = s.recv(65536)
        assert chunk, buf
        buf += chunk
    s.close()
    text = buf.decode()
    assert uri in text and "\nid: g." in "\n" + text  # an event of the session's GET stream log


def test_a_newer_get_stream_replaces_the_older_one_on_another_front_end(farm):
    a, b = legacy_pair(farm)
    old = get_stream(farm.port, farm.key, a.session)
    assert old.recv(4096).startswith(b"HTTP/1.1 200")
    new = get_stream(farm.port2, farm.key, a.session)
    assert new.recv(4096).startswith(b"HTTP/1.1 200")
    rest = b""
    while True:  # the older stream ends (chunked: the last chunk)
        chunk = old.recv(65536)
        if not chunk or b"0\r\n\r\n" in rest + chunk:
            break
        rest += chunk
    old.close()
    new.close()


def test_sandbox_sessions_are_served_by_either_front_end_in_the_stateless_era(farm):
    """A sandbox session's id is an explicit handle held in Redis: 2026-07-28 requests (no MCP
    session at all) alternate between the front-ends for every call of its life."""
    a, b = ModernClient(farm.url, farm.key), ModernClient(farm.url2, farm.key)
    tool = lambda c, name, args: result(c.send("tools/call", {"name": name, "arguments": args}))
    cell = lambda c, sid, code: tool(c, "execute_code", {"session_id": sid, "code": code})["structuredContent"]
    sid = tool(a, "create_session", {"profile": "python.basic"})["structuredContent"]["session_id"]
    assert cell(b, sid, "x = 41")["status"] == "ok"
    assert cell(a, sid, "print(x + 1)")["stdout"] == "42\n"
    fid = tool(b, "fork_session", {"session_id": sid})["structuredContent"]["session_id"]
    assert cell(a, fid, "x = 0; print(x)")["stdout"] == "0\n"
    assert cell(b, sid, "print(x)")["stdout"] == "41\n"
    listed = {s["session_id"] for s in tool(a, "list_sessions", {})["structuredContent"]["sessions"]}
    assert {sid, fid} <= listed
    snap = tool(b, "create_state_snapshot", {"session_id": sid})["structuredContent"]["snapshot_id"]
    assert snap in [x["snapshot_id"] for x in tool(a, "list_state_snapshots", {})["structuredContent"]["snapshots"]]
    new = tool(a, "restore_state_snapshot", {"snapshot_id": snap})["structuredContent"]["session_id"]
    assert cell(b, new, "print(x)")["stdout"] == "41\n"
    for s in (fid, new):
        assert tool(b, "close_session", {"session_id": s})["isError"] is False
    closed = tool(a, "close_session", {"session_id": sid})
    assert closed["isError"] is False
    gone = tool(b, "execute_code", {"session_id": sid, "code": "print(x)"})
    assert gone["isError"] is True and gone["structuredContent"]["status"] == "rejected"
    assert tool(b, "delete_state_snapshot", {"snapshot_id": snap})["structuredContent"]["deleted"] is True


def test_the_secure_sandbox_workspace_is_the_same_on_either_front_end(farm):
    a = ModernClient(farm.url.replace("/mcp", "/mcp/compat/secure-sandbox"), farm.key)
    b = ModernClient(farm.url2.replace("/mcp", "/mcp/compat/secure-sandbox"), farm.key)
    run = lambda c, code: result(c.send("tools/call", {"name": "run_sandbox_code",
                                                       "arguments": {"code": code}}))["structuredContent"]
    assert run(a, "open('from-a.txt', 'w').write('a')\nseen = 'a'")["success"] is True
    r = run(b, "print(open('from-a.txt').read(), seen)")
    assert r["stdout"] == "a a\n", r
