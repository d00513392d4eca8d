"""Sandbox sessions in a two-broker farm. A session lives in one
executor's zygote, and the executor tells every broker where its sessions are (READY, SESSIONS):
so when the broker the front-end uses dies, the session's next cell reaches it through the
other broker, its globals intact; when the executor dies, the session's next cell is answered
with why (lost: restore a snapshot), never run elsewhere, and the snapshot, kept in Redis,
restores into a new session."""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
from chaoslib import McpHttp, component_pid, sigkill  # noqa: E402
from sessions_util import cell, sc  # noqa: E402

PATIENCE_S = 60  # a loaded machine: the killed component restarts, executors re-register


def _client(farm):
    c = McpHttp(farm.url, farm.chaos_key)
    c.initialize()
    return c


def _new(mcp):
    s = sc(mcp, "create_session", {"profile": "python.basic"})
    assert "session_id" in s, s
    return s["session_id"]


def _until(fn, what):
    """fn() until it returns something true (a cell caught in the kill may be answered lost)."""
    deadline = time.time() + PATIENCE_S
    last = None
    while time.time() < deadline:
        last = fn()
        if last[0]:
            return last[1]
        time.sleep(0.2)
    raise AssertionError("%s: %r" % (what, last[1]))


def test_a_sessions_cells_reach_it_through_the_other_broker(farm):
    mcp = _client(farm)
    sid = _new(mcp)
    assert cell(mcp, sid, "x = 41")["status"] == "ok"
    sigkill(component_pid(farm, "broker"))

    def next_cell():
        r = cell(mcp, sid, "print(x + 1)")
        return (r.get("status") == "ok", r)

    r = _until(next_cell, "the session's next cell through the other broker")
    assert r["stdout"] == "42\n", r  # the same process: its globals survived the broker
    sc(mcp, "close_session", {"session_id": sid})


def test_a_session_whose_executor_died_fails_clearly_and_its_snapshot_restores(farm):
    mcp = _client(farm)
    sid = _new(mcp)
    assert cell(mcp, sid, "y = 7")["status"] == "ok"
    snap = sc(mcp, "create_state_snapshot", {"session_id": sid})
    assert "snapshot_id" in snap, snap
    sigkill(component_pid(farm, "executor"))
    r = cell(mcp, sid, "print(y)")
    assert r.get("status") in ("lost", "rejected"), r  # never rerun elsewhere
    text = str(r)
    assert "lost" in text or "ended" in text or "session" in text, r

    def restore():
        s = sc(mcp, "restore_state_snapshot", {"snapshot_id": snap["snapshot_id"]})
        return ("session_id" in s, s)

    nid = _until(restore, "restoring the snapshot once the executor is back")["session_id"]
    assert nid != sid
    r = cell(mcp, nid, "print(y)")
    assert r["status"] == "ok" and r["stdout"] == "7\n", r
    sc(mcp, "close_session", {"session_id": nid})
