"""Sessions on one executor node, driven the way the broker drives it: the node's
limits on sessions (how many, idle expiry, eviction of the least recently used idle ones when
they hold more than the node's budget), and what each job kind on a session answers."""
import time
import uuid

import pytest

from harness import Executor


@pytest.fixture(scope="module")
def node():
    # (info: the test reads the node's session_ending line rather than touch a session)
    ex = Executor(slots=2, extra=("--max-sessions", "4", "--session-memory-mb", "100",
                                  "--log-level", "info"))
    yield ex
    ex.close()


def _cell(ex, sid, code, **kw):
    r = ex.run(code, session=sid, **kw)
    return r


def _close(ex, *sids):
    for sid in sids:
        r = ex.run("", kind="session_close", session=sid)
        assert r["status"] == "ok", r.get("error")


def test_a_session_answers_every_kind_of_job(node):
    sid = node.new_session()
    r = _cell(node, sid, "x = [1, 2]\nx")
    assert r["status"] == "ok" and r["result"] == "[1, 2]" and r["session"]["cell"] == 1
    info = node.run("", kind="session_info", session=sid)
    assert info["status"] == "ok" and '"name": "x"' in info["session"]["summary"]
    snap = node.run("", kind="session_snapshot", session=sid)
    assert snap["status"] == "ok" and "x" in snap["snapshot"]["variables"]
    r = node.run("", kind="session_close", session=sid)
    assert r["status"] == "ok" and r["session"]["alive"] is False
    r = _cell(node, sid, "x")
    assert r["status"] == "rejected" and r["error"]["type"] == "SessionEnded"
    assert r["error"]["message"].endswith("ended: closed by the client")


def test_an_idle_session_expires_with_its_reason(node):
    sid = node.new_session(idle_timeout_s=1)
    assert _cell(node, sid, "y = 1")["status"] == "ok"
    time.sleep(2.5)
    r = _cell(node, sid, "y")
    assert r["status"] == "rejected" and r["error"]["message"].endswith("session expired after 1 s idle")


def test_sessions_over_the_budget_lose_the_least_recently_used_idle_first(node):
    """The node keeps at most 100 MB in sessions: three that hold ~42 MB each are one too many,
    and the one used longest ago goes; two stay under the budget (~84 MB)."""
    ids = [node.new_session(memory_mb=256) for _ in range(3)]
    try:
        _over_the_budget(node, ids)
    finally:  # a failure here must not leave the next tests a node full of sessions
        _close_quietly(node, *ids[1:])


def _close_quietly(ex, *sids):
    for sid in sids:
        ex.run("", kind="session_close", session=sid)


def _own_mb(node, sid):
    """What a session holds with nothing of its own (its Pss as the node measured it after a
    cell): a few MB, ~11 and more under ASan, and not the same from one build to the next."""
    assert _cell(node, sid, "pass")["status"] == "ok"
    deadline = time.time() + 10
    while time.time() < deadline:
        kb = node.run("", kind="session_info", session=sid)["session"]["memory_kb"]
        if kb:
            return kb / 1024
        time.sleep(0.1)
    raise AssertionError("the node never measured the session")


def _over_the_budget(node, ids):
    # each session ends up at ~42 MB whatever its own share is: three are 125 MB, two 83 MB,
    # ~8 MB of room per session on either side of the 100 MB budget
    own = max(_own_mb(node, sid) for sid in ids)
    held = max(1, round(125 / 3 - own))
    for sid in ids:  # bytes written, so the pages count (Pss)
        assert _cell(node, sid, f"held = b'x' * ({held} << 20)")["status"] == "ok"
        time.sleep(0.2)
    first = str(uuid.UUID(bytes=ids[0]))
    deadline = time.time() + 30  # any job would make it recently used: watch the log instead
    while time.time() < deadline and "event=session_ending session=" + first not in node.output():
        time.sleep(0.2)
    r = node.run("", kind="session_info", session=ids[0])
    assert r["status"] == "rejected" and r["error"]["type"] == "SessionEnded", r
    assert "evicted: node memory pressure (sessions hold" in r["error"]["message"]
    for sid in ids[1:]:  # the two used since stay (under the budget)
        r = _cell(node, sid, "print(len(held) >> 20)")
        assert r["stdout"] == f"{held}\n", (own, held, r.get("error"))


def test_the_node_keeps_at_most_its_maximum_of_sessions(node):
    ids = [node.new_session() for _ in range(4)]
    r = node.run("", kind="session_new", new_session=uuid.uuid4().bytes)
    assert r["status"] == "rejected" and "sessions" in r["error"]["message"], r
    _close(node, *ids)
    node.new_session()  # room again


def test_a_plain_job_still_runs_beside_sessions(node):
    sid = node.new_session()
    r = node.run("print(6 * 7)")
    assert r["status"] == "ok" and r["stdout"] == "42\n" and "session" not in r or not r.get("session")
    _close(node, sid)


def test_a_sessions_cells_keep_their_own_main_beside_prepared_jobs(node):
    """Issue 16's zygote prepares every one-off job's __main__ and streams ahead; a session's
    cells keep their own globals (a real __main__: pickle finds what a cell defines), and
    neither side sees the other's names, its stdin or its leftover output."""
    sid = node.new_session()
    r = _cell(node, sid, "import sys\nclass Point: pass\nkept = sys.modules['__main__'].__dict__ is globals()\nprint('one')")
    assert r["status"] == "ok" and r["stdout"] == "one\n", r
    r = node.run("print('kept' in globals(), __name__)", stdin="ignored")
    assert r["status"] == "ok" and r["stdout"] == "False __main__\n", r
    r = _cell(node, sid, "import pickle, sys\nprint(kept, type(pickle.loads(pickle.dumps(Point()))).__name__, sys.stdin.read() == '')")
    assert r["status"] == "ok" and r["stdout"] == "True Point True\n", r  # no stdout of cell 1 either
    _close(node, sid)
