"""Sessions end to end through a real farm (`snakepit up`: real Redis, broker,
executor node, sandboxed CPython): state that persists from cell to cell, fork_session's
copy-on-write clones isolated both ways, snapshots that round-trip files (text and binary,
mtimes) and variables into the same and into a new session, the resource, and the records."""
import base64
import hashlib
import time

import pytest

from fe_harness import argument_error
from sessions_util import add_tenant, cell, close_opened, new, out, sc, wait_for

DS = "python.data_science"


@pytest.fixture(autouse=True)
def _close_sessions():
    yield
    close_opened()


def test_variables_imports_functions_classes_and_files_persist(mcp):
    sid = new(mcp)
    r = cell(mcp, sid, "import json\nx = 41\ndef inc(v):\n    return v + 1\n"
                       "class Box:\n    def __init__(self, v): self.v = v\n"
                       "b = Box(inc(x))\nopen('notes.txt', 'w').write('kept')")
    assert r["status"] == "ok" and r["session_id"] == sid and r["cell"] == 1
    assert r["session"]["alive"] is True
    r = cell(mcp, sid, "print(json.dumps({'x': inc(x), 'b': b.v}), open('notes.txt').read())")
    assert r["stdout"] == '{"x": 42, "b": 42} kept\n' and r["cell"] == 2
    # the last expression of a cell is its result, as without a session
    assert cell(mcp, sid, "b.v * 2")["result"] == "84"


def test_a_pandas_dataframe_persists_in_data_science(mcp):
    sid = new(mcp, DS)
    out(mcp, sid, "import pandas as pd\ndf = pd.DataFrame({'a': [1, 2, 3], 'b': [4.0, 5.0, 6.0]})")
    assert out(mcp, sid, "df['c'] = df.a * df.b\nprint(df.c.sum())") == "32.0\n"
    assert out(mcp, sid, "print(list(df.columns), len(df))") == "['a', 'b', 'c'] 3\n"


def test_a_failing_cell_keeps_the_state(mcp):
    sid = new(mcp)
    out(mcp, sid, "x = 1")
    r = cell(mcp, sid, "x = 2\nraise ValueError('no')")
    assert r["status"] == "error" and r["error"]["type"] == "ValueError"
    assert r["session"]["alive"] is True
    assert out(mcp, sid, "print(x)") == "2\n"


def test_a_fork_is_a_copy_and_changes_never_cross_either_way(mcp):
    sid = new(mcp)
    out(mcp, sid, "data = list(range(5))\nopen('f.txt', 'w').write('parent')")
    f = sc(mcp, "fork_session", {"session_id": sid})
    fid = f["session_id"]
    assert fid != sid and f["parent_session_id"] == sid and f["profile"] == "python.filesystem"
    assert out(mcp, fid, "print(data, open('f.txt').read())") == "[0, 1, 2, 3, 4] parent\n"
    # the fork changes memory and files: the parent sees none of it
    out(mcp, fid, "data.append('fork')\nopen('f.txt', 'w').write('fork')\nopen('new.txt', 'w').write('x')")
    assert out(mcp, sid, "from pathlib import Path\nprint(data, open('f.txt').read(), Path('new.txt').exists())") \
        == "[0, 1, 2, 3, 4] parent False\n"
    # and the other way round
    out(mcp, sid, "data.append('parent')\nPath('f.txt').unlink()")
    assert out(mcp, fid, "print(data, open('f.txt').read())") == "[0, 1, 2, 3, 4, 'fork'] fork\n"
    # a fork of a fork
    g = sc(mcp, "fork_session", {"session_id": fid})["session_id"]
    assert out(mcp, g, "from pathlib import Path\nprint(data[-1], sorted(p.name for p in Path('.').iterdir()))") \
        == "fork ['f.txt', 'new.txt']\n"


def test_a_fork_in_data_science_keeps_the_dataframe(mcp):
    sid = new(mcp, DS)
    out(mcp, sid, "import pandas as pd\ndf = pd.DataFrame({'a': range(1000)})")
    fid = sc(mcp, "fork_session", {"session_id": sid})["session_id"]
    out(mcp, fid, "df['a'] = 0")
    assert out(mcp, sid, "print(df.a.sum())") == "499500\n"
    assert out(mcp, fid, "print(df.a.sum())") == "0\n"


def test_forks_run_out_with_a_clear_answer(farm):
    """Each fork stacks one Landlock layer on both sides: a lineage forks at most 15 deep,
    then the answer says to go through a snapshot (a restore starts from a fresh child)."""
    mcp = add_tenant(farm, "forker", "--max-sessions", "4")
    made = sc(mcp, "create_session", {"profile": "python.basic"})
    cur, left = made["session_id"], made["forks_left"]
    assert left >= 1
    out(mcp, cur, "depth = 0")
    for i in range(left):
        f = sc(mcp, "fork_session", {"session_id": cur})
        assert f["forks_left"] == left - i - 1, f
        sc(mcp, "close_session", {"session_id": cur})  # only the newest is kept
        cur = f["session_id"]
        out(mcp, cur, "depth += 1")
    assert out(mcp, cur, "print(depth)") == "%d\n" % left
    f = sc(mcp, "fork_session", {"session_id": cur})
    assert f.get("isError") and "snapshot" in f["error_text"], f


def test_a_session_forked_over_and_over_runs_out_too(farm):
    """The parent takes a layer at each of its forks as well: the same session forked 15 times
    (each fork closed again) is refused the 16th, and the answer counts its forks, not a depth."""
    mcp = add_tenant(farm, "reforker", "--max-sessions", "4")
    made = sc(mcp, "create_session", {"profile": "python.basic"})
    sid, left = made["session_id"], made["forks_left"]
    for i in range(left):
        f = sc(mcp, "fork_session", {"session_id": sid})
        assert f["forks_left"] == left - i - 1, f
        sc(mcp, "close_session", {"session_id": f["session_id"]})
    f = sc(mcp, "fork_session", {"session_id": sid})
    assert f.get("isError"), f
    assert "used the %d forks" % left in f["error_text"] and "snapshot" in f["error_text"], f
    assert out(mcp, sid, "print('still here')") == "still here\n"


FILES = {
    "a.txt": b"hello\n",
    "dir/b.bin": bytes(range(256)) * 40,
    "dir/deep/c.txt": "naïve ☃\n".encode(),
}


def _write_files(mcp, sid):
    code = ["import base64\nfrom pathlib import Path"]
    for path, data in FILES.items():
        code.append("Path(%r).parent.mkdir(parents=True, exist_ok=True)" % path)
        code.append("Path(%r).write_bytes(base64.b64decode(%r))" % (path, base64.b64encode(data).decode()))
    out(mcp, sid, "\n".join(code))
    time.sleep(1.1)  # so that a rewrite would show in the mtimes


# every file with its digest and its mtime to the nanosecond
LISTING = ("import hashlib\nfrom pathlib import Path\n"
           "def walk(d):\n"
           "    for q in sorted(d.iterdir()):\n"
           "        yield from walk(q) if q.is_dir() else [q]\n"
           "for p in walk(Path('.')):\n"
           "    print(p, hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)\n")


def test_a_snapshot_round_trips_files_and_variables_into_the_same_session(mcp):
    sid = new(mcp)
    _write_files(mcp, sid)
    out(mcp, sid, "import math\ntotal = 17\nitems = {'k': [1, 2.5, None]}\nblob = b'\\x00\\xff'")
    before = out(mcp, sid, LISTING)
    snap = sc(mcp, "create_state_snapshot", {"session_id": sid, "description": "before damage"})
    assert snap["description"] == "before damage" and snap["session_id"] == sid
    assert set(snap["variables"]) >= {"total", "items", "blob"}
    files = {f["path"]: f for f in snap["files"]}
    assert set(files) == set(FILES)
    for path, data in FILES.items():
        assert files[path]["size"] == len(data)
        assert files[path]["sha256"] == hashlib.sha256(data).hexdigest()
    assert all(f["mtime"] for f in snap["files"])
    # damage: change, delete, add; rebind variables
    out(mcp, sid, "Path('a.txt').write_text('changed')\nPath('dir/b.bin').unlink()\n"
                  "Path('extra.txt').write_text('x')\ntotal = 0\nitems = None")
    r = sc(mcp, "restore_state_snapshot", {"snapshot_id": snap["snapshot_id"], "session_id": sid})
    assert r["session_id"] == sid and r["new_session"] is False and not r["failed"]
    assert out(mcp, sid, LISTING) == before
    assert out(mcp, sid, "print(total, items, blob, math.pi > 3)") == "17 {'k': [1, 2.5, None]} b'\\x00\\xff' True\n"


def test_a_snapshot_restores_into_a_new_session(mcp):
    sid = new(mcp)
    _write_files(mcp, sid)
    out(mcp, sid, "counter = 5\ndef f(): return counter + 1")
    before = out(mcp, sid, LISTING)
    snap = sc(mcp, "create_state_snapshot", {"session_id": sid})
    assert "f" in snap["variables"]  # a function defined in the session is saved by value
    sc(mcp, "close_session", {"session_id": sid})
    r = sc(mcp, "restore_state_snapshot", {"snapshot_id": snap["snapshot_id"]})
    nid = r["session_id"]
    assert r["new_session"] is True and nid != sid and {"counter", "f"} <= set(r["restored"])
    assert out(mcp, nid, LISTING) == before
    assert out(mcp, nid, "print(counter, f())") == "5 6\n"


def test_snapshots_are_listed_and_deleted(mcp):
    sid = new(mcp, "python.basic")
    out(mcp, sid, "v = 1")
    a = sc(mcp, "create_state_snapshot", {"session_id": sid})["snapshot_id"]
    b = sc(mcp, "create_state_snapshot", {"session_id": sid})["snapshot_id"]
    listed = [s["snapshot_id"] for s in sc(mcp, "list_state_snapshots", {"session_id": sid})["snapshots"]]
    assert set(listed) == {a, b}
    assert sc(mcp, "delete_state_snapshot", {"snapshot_id": a})["deleted"] is True
    listed = [s["snapshot_id"] for s in sc(mcp, "list_state_snapshots", {"session_id": sid})["snapshots"]]
    assert listed == [b]
    r = sc(mcp, "restore_state_snapshot", {"snapshot_id": a})
    assert r.get("isError") and "no snapshot" in r["error_text"]


def test_list_sessions_and_close(mcp):
    sid = new(mcp, "python.basic")
    out(mcp, sid, "x = 1")
    out(mcp, sid, "x += 1")
    row = [s for s in sc(mcp, "list_sessions", {})["sessions"] if s["session_id"] == sid][0]
    assert row["profile"] == "python.basic" and row["cells"] == 2
    assert {"created", "last_used", "memory_in_use_mb"} <= set(row)
    assert sc(mcp, "close_session", {"session_id": sid})["closed"] is True
    assert sid not in [s["session_id"] for s in sc(mcp, "list_sessions", {})["sessions"]]
    r = cell(mcp, sid, "print(x)")
    assert r["status"] == "rejected" and r["session_id"] == sid
    assert r["session"]["alive"] is False and "closed" in r["session"]["end_reason"]


def test_the_resource_shows_variables_and_files(mcp):
    sid = new(mcp)
    out(mcp, sid, "answer = 42\nopen('r.txt', 'w').write('x' * 10)")
    r = mcp.request("resources/read", {"uri": "sandbox://sessions/" + sid})["result"]
    import json
    doc = json.loads(r["contents"][0]["text"])
    assert doc["session"]["session_id"] == sid and doc["session"]["cells"] == 1
    assert {"name": "answer", "type": "int", "repr": "42"} in doc["variables"]
    assert [f["path"] for f in doc["files"]] == ["r.txt"] and doc["files"][0]["size"] == 10
    templates = mcp.request("resources/templates/list", {})["result"]["resourceTemplates"]
    assert "sandbox://sessions/{id}" in [t["uriTemplate"] for t in templates]


def test_validate_code_and_get_execution_work_on_session_cells(farm, mcp):
    sid = new(mcp, "python.basic")
    v = sc(mcp, "validate_code", {"session_id": sid, "code": "import ctypes"})  # in no profile
    assert v["valid"] is False
    r = cell(mcp, sid, "print('recorded')")
    eid = r["execution_id"]
    rec = wait_for(lambda: sc(mcp, "get_execution", {"execution_id": eid}).get("status") == "ok"
                   and sc(mcp, "get_execution", {"execution_id": eid}), 10, "the record")
    assert rec["result"]["stdout"] == "recorded\n" and rec["session_id"] == sid and rec["cell"] == 1
    day = time.strftime("%Y%m%d", time.gmtime())
    use = farm.redis().hgetall("sp:t:local:use:" + day)
    assert int(use.get("cells", 0)) >= 1 and "session_memory_mb_cells" in use


def test_bad_arguments_are_argument_errors(mcp):
    r = mcp.request("tools/call", {"name": "execute_code", "arguments": {"session_id": "nope", "code": "1"}})
    assert "`session_id`" in argument_error(r, "session_id")
    r = mcp.request("tools/call", {"name": "create_session", "arguments": {"profile": "python.nope"}})
    assert "python.nope" in argument_error(r, "profile")
    r = mcp.request("tools/call", {"name": "fork_session", "arguments": {}})
    assert "`session_id` is required" in argument_error(r, "session_id")


def test_an_unknown_session_is_said_to_be_unknown(mcp):
    """Not an internal error: the id names no session of the tenant, and the answer says where
    the live ones are."""
    unknown = "01234567-89ab-7def-8123-456789abcdef"
    for tool, args in (("execute_code", {"session_id": unknown, "code": "1"}),
                       ("close_session", {"session_id": unknown}), ("fork_session", {"session_id": unknown})):
        r = mcp.request("tools/call", {"name": tool, "arguments": args})
        text = argument_error(r, "session_id", kind="not_found")
        assert unknown in text and "list_sessions" in text, text


def test_sandbox_info_describes_sessions(mcp):
    info = sc(mcp, "get_sandbox_info", {})
    s = info["sessions"]
    assert s["your_limits"]["max_sessions"] >= 1 and "fork_session" in s["tools"]


@pytest.mark.parametrize("profile", ["python.basic", "python.filesystem", DS])
def test_every_profile_keeps_its_sandbox_in_a_session(mcp, profile):
    sid = new(mcp, profile)
    # refused in every profile: an exception where the Python layer raises one (the session goes
    # on), a security_violation where the audit hook stops the job (workspace profiles: the
    # session ends and says why); never the file's content
    r = cell(mcp, sid, "print(open('/etc/passwd').read())")
    assert r["status"] in ("error", "security_violation") and "root:" not in r["stdout"], r
    if not r["session"]["alive"]:
        assert r["status"] == "security_violation" and r["session"]["end_reason"], r
        return
    assert out(mcp, sid, "print('still here')") == "still here\n"


def test_create_session_takes_files_like_execute_code(mcp):
    sid = new(mcp, files={"in.csv": "a,b\n1,2\n", "bin.dat": {"content": "AAEC", "encoding": "base64"}})
    assert out(mcp, sid, "print(open('in.csv').read().split(), open('bin.dat', 'rb').read())") \
        == "['a,b', '1,2'] b'\\x00\\x01\\x02'\n"
