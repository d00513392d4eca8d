"""Atomic cells and fan-out through a real farm (`snakepit up`): execute_code's atomic (and the
session default create_session sets), fork_session's count within the tenant's quotas, and
map_session's branches, each a fresh fork, their results in order."""
import pytest

from fe_harness import argument_error
from sessions_util import add_tenant, cell, close_opened, new, out, sc


@pytest.fixture(autouse=True)
def _close_sessions():
    yield
    close_opened()


@pytest.fixture(scope="module")
def fan(farm):
    return add_tenant(farm, "fanout", "--max-sessions", "40", "--max-session-memory", "100000")


def test_an_atomic_cell_that_raises_leaves_x_as_it_was(mcp):
    sid = new(mcp, "python.basic")
    out(mcp, sid, "x = 1")
    r = cell(mcp, sid, "x = 2\nprint('before')\nraise ValueError('no')", atomic=True)
    assert r["status"] == "error" and r["stdout"] == "before\n", r  # its output still comes back
    assert r["error"]["type"] == "ValueError"
    assert r["session"]["alive"] is True and r["session"]["rolled_back"] is True
    assert out(mcp, sid, "print(x)") == "1\n"
    r = cell(mcp, sid, "x = 3", atomic=True)
    assert r["status"] == "ok" and r["session"]["rolled_back"] is False
    assert out(mcp, sid, "print(x)") == "3\n"


def test_a_session_made_atomic_rolls_back_every_failed_cell_and_files_follow(mcp):
    made = sc(mcp, "create_session", {"profile": "python.filesystem", "atomic": True})
    assert made["atomic"] is True, made
    sid = made["session_id"]
    out(mcp, sid, "open('a.txt', 'w').write('1')\nn = 1")
    r = cell(mcp, sid, "open('a.txt', 'w').write('2')\nopen('b.txt', 'w').write('b')\nn = 2\n"
                       "raise KeyError('k')")
    assert r["session"]["rolled_back"] is True, r
    assert out(mcp, sid, "import os\nprint(n, open('a.txt').read(), sorted(os.listdir('.')))") \
        == "1 1 ['a.txt']\n"
    # a call may still say otherwise
    r = cell(mcp, sid, "n = 5\nraise KeyError('k')", atomic=False)
    assert r["session"].get("rolled_back") is None
    assert out(mcp, sid, "print(n)") == "5\n"


def test_an_atomic_cell_over_its_memory_limit_keeps_the_session(mcp):
    sid = new(mcp, "python.basic", memory_limit=128)
    out(mcp, sid, "x = 1")
    r = cell(mcp, sid, "x = 2\nbig = bytearray(400 << 20)", atomic=True)
    assert r["status"] == "memory_limit" and r["session"]["alive"] is True, r
    assert out(mcp, sid, "print(x)") == "1\n"


def test_atomic_without_a_session_is_an_argument_error(mcp):
    r = mcp.request("tools/call", {"name": "execute_code", "arguments": {"code": "1", "atomic": True}})
    assert "session_id" in argument_error(r, "atomic")


def test_fork_session_with_count_gives_independent_sessions(fan):
    sid = new(fan, "python.filesystem")
    out(fan, sid, "data = []\nopen('f.txt', 'w').write('parent')")
    f = sc(fan, "fork_session", {"session_id": sid, "count": 8})
    ids = f["session_ids"]
    assert len(ids) == 8 == len(set(ids)) and f["session_id"] == ids[0], f
    for i, fid in enumerate(ids):
        out(fan, fid, "data.append(%d)\nopen('f.txt', 'w').write('fork %d')" % (i, i))
    for i, fid in enumerate(ids):
        assert out(fan, fid, "print(data, open('f.txt').read())") == "[%d] fork %d\n" % (i, i)
    assert out(fan, sid, "print(data, open('f.txt').read())") == "[] parent\n"


def test_fork_session_count_is_bounded_by_the_quota(farm):
    c = add_tenant(farm, "fewforks", "--max-sessions", "4")
    sid = new(c, "python.basic")
    f = sc(c, "fork_session", {"session_id": sid, "count": 4})  # 5 in all: one too many
    assert f.get("isError") and "max_sessions" in f["error_text"], f
    assert len(sc(c, "list_sessions", {})["sessions"]) == 1  # all or none
    f = sc(c, "fork_session", {"session_id": sid, "count": 3})
    assert len(f["session_ids"]) == 3
    r = c.request("tools/call", {"name": "fork_session", "arguments": {"session_id": sid, "count": 65}})
    assert "count" in argument_error(r, "count")


def test_map_session_returns_every_result_in_order_and_closes_the_forks(fan):
    sid = new(fan, "python.basic")
    out(fan, sid, "base = 10")
    before = len(sc(fan, "list_sessions", {})["sessions"])
    codes = ["print(base + %d)" % i for i in range(8)]
    m = sc(fan, "map_session", {"session_id": sid, "codes": codes})
    assert m["kept"] is False and [r["index"] for r in m["results"]] == list(range(8)), m
    assert [r["stdout"] for r in m["results"]] == ["%d\n" % (10 + i) for i in range(8)]
    assert all(r["status"] == "ok" for r in m["results"])
    assert len(sc(fan, "list_sessions", {})["sessions"]) == before  # closed afterwards
    assert out(fan, sid, "print(base)") == "10\n"


def test_map_session_branches_are_isolated_and_may_be_kept(fan):
    sid = new(fan, "python.basic")
    out(fan, sid, "seen = []")
    m = sc(fan, "map_session", {"session_id": sid, "keep": True,
                                "codes": ["seen.append(%d)\nprint(seen)" % i for i in range(4)]
                                + ["raise KeyError('branch')"]})
    assert "results" in m, m
    assert [r["stdout"] for r in m["results"][:4]] == ["[%d]\n" % i for i in range(4)], m
    assert m["results"][4]["status"] == "error"
    ids = m["session_ids"]
    assert len(ids) == 5 and m["results"][2]["session_id"] == ids[2]
    assert out(fan, ids[2], "print(seen)") == "[2]\n"
    assert out(fan, sid, "print(seen)") == "[]\n"


def test_a_fan_out_right_after_a_fan_out_was_closed_succeeds(fan):
    """Closed sessions' processes still count against the sandbox uid's process limit until
    they are reaped: a fork made at once after closing nine must still find room."""
    for _ in range(6):
        sid = new(fan, "python.basic")
        out(fan, sid, "x = 1")
        f = sc(fan, "fork_session", {"session_id": sid, "count": 8})
        assert len(f.get("session_ids", [])) == 8, f
        for s in [sid] + f["session_ids"]:
            fan.call("close_session", {"session_id": s})
        sid = new(fan, "python.basic")
        out(fan, sid, "y = 2")
        m = sc(fan, "map_session", {"session_id": sid, "codes": ["print(y + %d)" % i for i in range(5)]})
        assert "results" in m, m
        assert [r["stdout"] for r in m["results"]] == ["%d\n" % (2 + i) for i in range(5)], m
        fan.call("close_session", {"session_id": sid})
