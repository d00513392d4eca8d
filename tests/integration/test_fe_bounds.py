"""What one tenant may hold of what the front-ends and Redis have for everyone , with the broker stand-in (fake_broker.py: `#files N BYTES` makes a job that
wrote N files of BYTES bytes, `#sleep S` one that runs S seconds).

Linked files: a tenant's are bounded by its max_linked_mb and max_linked_files, and all
tenants' together by --file-share-pct of Redis's maxmemory, so a tenant writing large files
cannot fill a small Redis and have it evict another tenant's records (before: ten executions of
8 MiB each did, in a 64 MB Redis). Files past a bound come back with a note instead of a link.

Listen streams, legacy GET streams and tasks: each tenant's are capped by its own quota,
counted in Redis across every front-end (before: listen streams were capped per front-end only,
so one tenant holding the cap refused every other tenant's listen, -31031), released when
closed, and lapse when the front-end holding them dies."""
import json
import signal
import socket

import pytest

from fe_harness import Client, Frontend, ModernClient, modern_meta, wait_for

TASKS = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
MiB = 1 << 20


def tenant(fe, name, **quotas):
    return fe.add_tenant(name, rate="1000", burst="1000", **quotas)


def legacy(fe, key, url=None):
    c = Client(url or fe.url, key)
    c.initialize()
    return c


def structured(reply):
    assert "error" not in reply, reply
    return reply["result"]["structuredContent"]


# ---- linked files ---------------------------------------------------------------------------


@pytest.fixture
def small_redis():
    """A Redis as production keeps one (volatile-lru), with a 64 MB maxmemory."""
    f = Frontend(redis_args=("--maxmemory", "64mb", "--maxmemory-policy", "volatile-lru"))
    yield f
    f.stop()


def test_one_tenants_linked_files_do_not_evict_another_tenants_records(small_redis):
    fe = small_redis
    victim = legacy(fe, tenant(fe, "victim"))
    ids, uris = [], []
    for i in range(3):
        sc = structured(victim.call("execute_code", {"code": "#files 1 200000\nprint(%d)" % i}))
        ids.append(sc["execution_id"])
        uris.append(sc["files"][0]["uri"])
    flooder = legacy(fe, tenant(fe, "flooder"))
    notes = []
    for i in range(12):  # 96 MiB of files into a 64 MB Redis
        sc = structured(flooder.call("execute_code", {"code": "#files 4 2097152\nprint(%d)" % i}))
        assert [f["path"] for f in sc["files"]].count("out0.bin") == 1
        notes += [f["note"] for f in sc["files"] if "note" in f]
    for eid in ids:  # every record of the other tenant is still there, and its files
        got = victim.call("get_execution", {"execution_id": eid})["result"]
        assert not got.get("isError") and got["structuredContent"]["status"] == "ok", got
    for uri in uris:
        got = victim.request("resources/read", {"uri": uri})
        assert "error" not in got and got["result"]["contents"][0]["blob"], got
    assert fe.redis().info("stats")["evicted_keys"] == 0
    # the files past the farm's share were not kept, and each answer said why
    assert notes and all("share" in n for n in notes), notes[:2]
    assert fe.metric("snakepit_mcp_linked_files_total", outcome="farm_share") == len(notes)
    assert "event=linked_file_refused" in fe.log() and "reason=farm_share" in fe.log()
    share = int(fe.redis().get("sp:linked_bytes"))
    assert share * 5 / 4 <= 64 * MiB * 25 / 100


@pytest.fixture(scope="module")
def fe():
    f = Frontend(extra=["--task-after-ms", "300", "--hold-lease-ms", "1500", "--max-listen-streams", "2"])
    yield f
    f.stop()


def test_a_tenants_linked_files_stop_at_its_own_quota_with_a_note(fe):
    few = legacy(fe, tenant(fe, "few-files", max_linked_files="2"))
    r = few.call("execute_code", {"code": "#files 3 100000"})
    files = structured(r)["files"]
    kept = [f for f in files if f.get("uri")]
    unkept = [f for f in files if f.get("note")]
    assert len(kept) == 2 and len(unkept) == 1
    assert unkept[0]["content"] is None and "uri" not in unkept[0] and unkept[0]["bytes"] == 100000
    assert "max_linked_files 2" in unkept[0]["note"] and "few-files" in unkept[0]["note"]
    texts = [b["text"] for b in r["result"]["content"] if b["type"] == "text"]
    assert any("max_linked_files" in t for t in texts)  # a model reading only text sees it too
    assert [b for b in r["result"]["content"] if b["type"] == "resource_link"].__len__() == 2
    for f in kept:
        assert "error" not in few.request("resources/read", {"uri": f["uri"]})

    small = legacy(fe, tenant(fe, "few-mb", max_linked_mb="1"))
    before = fe.metric("snakepit_mcp_tenant_cap_refusals_total", cap="max_linked_mb")
    files = structured(small.call("execute_code", {"code": "#files 4 300000"}))["files"]
    assert [bool(f.get("uri")) for f in files] == [True, True, True, False]
    assert "1 MB (max_linked_mb)" in files[3]["note"]
    assert fe.metric("snakepit_mcp_tenant_cap_refusals_total", cap="max_linked_mb") == before + 1
    # what was not kept was never stored: its would-be link finds nothing
    gone = small.request("resources/read", {"uri": files[0]["uri"].replace("out0.bin", "out3.bin")})
    assert gone["error"]["code"] == -32002


# ---- listen streams -------------------------------------------------------------------------


def listen(port, key):
    """A subscriptions/listen request; the socket, once its first message (or error) is in."""
    body = json.dumps({"jsonrpc": "2.0", "id": "L", "method": "subscriptions/listen",
                       "params": {"notifications": {"resourceSubscriptions": ["sandbox://info"]},
                                  "_meta": modern_meta(TASKS)}})
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    s.sendall(("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
               "Accept: application/json, text/event-stream\r\nAuthorization: Bearer %s\r\n"
               "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: subscriptions/listen\r\n"
               "Content-Length: %d\r\n\r\n%s" % (key, len(body), body)).encode())
    buf = b""
    while b"acknowledged" not in buf and b'"error"' not in buf:
        chunk = s.recv(65536)
        assert chunk, buf
        buf += chunk
    return s, buf.decode()


def first_error(text):
    """The error of a refused listen: its JSON-RPC message, whether the answer is JSON or SSE."""
    return json.loads(text[text.index('{"'):text.rindex("}") + 1])["error"]


def test_a_tenant_holding_its_listen_cap_leaves_the_front_ends_to_others(fe):
    """Both front-ends take two listen streams each (--max-listen-streams 2); the tenant "hog"
    may hold two across the farm. Before: hog took both of front-end A's, and every other
    tenant's listen there was refused."""
    url2, port2 = fe.spawn_peer("mcp2")
    try:
        hog = tenant(fe, "hog", max_listen_streams="2")
        opened = []
        for port in (fe.port, port2):
            s, text = listen(port, hog)
            assert "acknowledged" in text, text
            opened.append(s)
        s, text = listen(fe.port, hog)  # a third, on a front-end that has room for it
        s.close()
        assert "acknowledged" not in text
        err = first_error(text)
        assert err["code"] == -31031 and "max_listen_streams 2" in err["message"], err
        assert "hog" in err["message"] and err["data"]["held"] == 2
        # each front-end renews the leases of the streams it holds, so they go on counting
        held_key = "sp:t:{hog}:hold:listen"
        leases = dict(fe.redis().zrange(held_key, 0, -1, withscores=True))
        assert len(leases) == 2
        wait_for(lambda: all((fe.redis().zscore(held_key, m) or 0) > t for m, t in leases.items()),
                 10, "both front-ends to renew their streams' leases")
        # another tenant listens on either front-end all the same
        for port in (fe.port, port2):
            s, text = listen(port, tenant(fe, "other-%d" % port))
            assert "acknowledged" in text, text
            s.close()
        assert fe.metric("snakepit_mcp_tenant_cap_refusals_total", cap="max_listen_streams") >= 1
        assert "event=tenant_cap_refused cap=max_listen_streams tenant=hog" in fe.log()
        # a stream closed gives its place back
        for s in opened:
            s.close()

        def relisten(port):
            s, text = listen(port, hog)
            s.close()
            return "acknowledged" in text
        wait_for(lambda: relisten(fe.port), 10, "a closed stream's place to come back")
        # a front-end that dies holding streams does not keep them: their leases lapse
        # (the relisten's stream above is released a moment after its close: until then a
        # second stream on B may be refused, and is asked for again)
        kept = []

        def two_on_b():
            while len(kept) < 2:
                s, text = listen(port2, hog)
                if "acknowledged" not in text:
                    s.close()
                    return False
                kept.append((s, text))
            return True
        wait_for(two_on_b, 10, "two streams on B")
        fe.procs["mcp2"].send_signal(signal.SIGKILL)
        fe.procs["mcp2"].wait()
        wait_for(lambda: relisten(fe.port), 15, "the dead front-end's streams to lapse")
        for s, _ in kept:
            s.close()
    finally:
        fe._stop("mcp2")


# ---- legacy GET streams ---------------------------------------------------------------------


def get_stream(port, key, session):
    """A legacy GET stream: the socket and its status line; for a refusal, its JSON-RPC error."""
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    s.sendall(("GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n"
               "Authorization: Bearer %s\r\nMcp-Session-Id: %s\r\nMCP-Protocol-Version: 2025-11-25\r\n\r\n"
               % (key, session)).encode())
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = s.recv(65536)
        assert chunk, buf
        buf += chunk
    head, _, body = buf.partition(b"\r\n\r\n")
    status = head.split(b"\r\n")[0].decode()
    if " 200 " in status:
        return s, status, None
    length = int([l.split(b":")[1] for l in head.split(b"\r\n") if l.lower().startswith(b"content-length")][0])
    while len(body) < length:
        body += s.recv(65536)
    s.close()
    return None, status, json.loads(body)["error"]


def test_a_tenants_get_streams_stop_at_its_cap(fe):
    key = tenant(fe, "streamer", max_sse_streams="1")
    a, b = legacy(fe, key), legacy(fe, key)
    sa, status, _ = get_stream(fe.port, key, a.session)
    assert " 200 " in status
    _, status, err = get_stream(fe.port, key, b.session)
    assert " 429 " in status, status
    assert err["code"] == -32031 and "max_sse_streams 1" in err["message"], err
    # the same session's newer GET replaces its older one: one stream, not two
    sa2, status, _ = get_stream(fe.port, key, a.session)
    assert " 200 " in status
    sa.close()
    sa2.close()

    def b_gets_one():
        s, status, _ = get_stream(fe.port, key, b.session)
        if s:
            s.close()
        return " 200 " in status
    wait_for(b_gets_one, 10, "the closed stream's place to come back")
    assert fe.metric("snakepit_mcp_rejections_total", reason="tenant_cap") >= 1


# ---- tasks ----------------------------------------------------------------------------------


def test_a_tenants_running_tasks_stop_at_its_cap(fe):
    c = legacy(fe, tenant(fe, "tasker", max_tasks="1"))
    first = c.request("tools/call", {"name": "execute_code", "arguments": {"code": "#sleep 2"},
                                     "task": {}})["result"]["task"]["taskId"]
    second = c.request("tools/call", {"name": "execute_code", "arguments": {"code": "#sleep 0.1"},
                                      "task": {}})
    assert second["error"]["code"] == -32031 and "max_tasks 1" in second["error"]["message"]
    # without a task the call runs as ever
    assert structured(c.call("execute_code", {"code": "print(1)"}))["status"] == "ok"
    c.request("tasks/result", {"taskId": first})  # waits for it to end
    wait_for(lambda: "task" in c.request("tools/call", {
        "name": "execute_code", "arguments": {"code": "#sleep 0.1"}, "task": {}}).get("result", {}),
        10, "the finished task's place to come back")


def test_a_modern_call_past_the_task_cap_stays_a_call(fe):
    key = tenant(fe, "modern-tasker", max_tasks="1")
    m = ModernClient(fe.url, key, caps=TASKS)
    r = m.send("tools/call", {"name": "execute_code", "arguments": {"code": "#sleep 2"}})
    assert r.json["result"]["resultType"] == "task"
    r = m.send("tools/call", {"name": "execute_code", "arguments": {"code": "#sleep 1"}})
    res = r.json["result"]
    assert res.get("resultType") != "task" and res["structuredContent"]["status"] == "ok"
    assert "event=task_not_created" in fe.log() and "reason=max_tasks" in fe.log()
