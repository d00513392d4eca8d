"""A session whose executor dies resumes from its latest checkpoint (the executor takes one once
a session has been idle a while after a cell: --session-checkpoint-s, here 1 s through the
environment), under the same id, and the answer says which cell the checkpoint followed; a
session without a checkpoint is still answered lost, never rerun (test_session_brokers.py)."""
import os
import signal
import sys
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
import chaoslib  # noqa: E402
from chaoslib import McpHttp, component_pid, sigkill  # noqa: E402
from sessions_util import cell, sc, wait_for  # noqa: E402

PATIENCE_S = 90  # the executor restarts and re-registers; the broker's grace passes


@pytest.fixture(scope="module")
def farm():
    os.environ["SNAKEPIT_SESSION_CHECKPOINT_S"] = "1"
    try:
        f = chaoslib.Farm(slots=2, extra=("--profiles", "python.basic"))
    finally:
        del os.environ["SNAKEPIT_SESSION_CHECKPOINT_S"]
    f.chaos_key = chaoslib.add_tenant(f.dir, "chaos")
    yield f
    f.stop()


def _checkpoint(mcp, sid):
    rows = [s for s in sc(mcp, "list_sessions", {})["sessions"] if s["session_id"] == sid]
    return rows and rows[0].get("checkpoint")


def test_a_session_whose_executor_died_resumes_from_its_checkpoint(farm):
    mcp = McpHttp(farm.url, farm.chaos_key)
    mcp.initialize()
    sid = sc(mcp, "create_session", {"profile": "python.basic"})["session_id"]
    r = cell(mcp, sid, "x = 1\ndef f():\n    return x + 1")
    assert r["status"] == "ok", r
    taken = wait_for(lambda: _checkpoint(mcp, sid), 30, "the session's checkpoint")
    assert taken["after_cell"] == 1
    sigkill(component_pid(farm, "executor"))

    deadline = time.time() + PATIENCE_S
    while True:  # the cell waits out the broker's grace, then the session resumes
        r = cell(mcp, sid, "print(x, f())")
        if r.get("status") == "ok" or time.time() > deadline:
            break
        time.sleep(0.5)
    assert r["status"] == "ok" and r["stdout"] == "1 2\n", r
    resumed = r["session"]["resumed"]
    assert resumed["from_cell"] == 1 and resumed["reason"] == "its executor went away", resumed
    assert r["session_id"] == sid and r["cell"] == 2
    sc(mcp, "close_session", {"session_id": sid})


def test_a_session_on_a_draining_executor_is_checkpointed_before_it_leaves_and_resumes(farm):
    """SIGTERM drains the executor: it checkpoints its sessions and frees them (hibernated, the
    reason says the drain) before it exits, so the next cell resumes from the last cell, not
    from an older periodic checkpoint."""
    mcp = McpHttp(farm.url, farm.chaos_key)
    mcp.initialize()
    sid = sc(mcp, "create_session", {"profile": "python.basic"})["session_id"]
    assert cell(mcp, sid, "x = 41")["status"] == "ok"
    r = cell(mcp, sid, "x += 1")  # the drain comes right after: no idle checkpoint of cell 2 yet
    assert r["status"] == "ok", r
    pid = component_pid(farm, "executor")
    os.kill(pid, signal.SIGTERM)

    def hibernated():
        rows = [s for s in sc(mcp, "list_sessions", {})["sessions"] if s["session_id"] == sid]
        return rows and rows[0].get("state") == "hibernated" and rows[0]
    row = wait_for(hibernated, 60, "the session hibernated by the drain")
    assert "drain" in row["hibernated_because"], row
    assert row["checkpoint"]["after_cell"] == 2, row

    deadline = time.time() + PATIENCE_S
    while True:  # the executor restarts and registers again; the session resumes there
        r = cell(mcp, sid, "print(x)")
        if r.get("status") == "ok" or time.time() > deadline:
            break
        time.sleep(0.5)
    assert r["status"] == "ok" and r["stdout"] == "42\n", r
    resumed = r["session"]["resumed"]
    assert resumed["from_cell"] == 2 and "drain" in resumed["reason"], resumed
    assert r["session_id"] == sid and r["cell"] == 3
    sc(mcp, "close_session", {"session_id": sid})
