"""Atomic cells and fan-out forks on one executor node, driven the way the broker drives it.

An atomic cell runs in the session's own process while a copy-on-write backup of it waits
aside: ended ok, the backup goes; otherwise (an exception, its timeout, its memory limit, a
crash, a refused operation) the backup becomes the session and its workspace's files are put
back, so the session is exactly as it was before the cell. A fork_session job may make many
clones at once, each a session of its own."""
import uuid

import pytest

from harness import Executor

FS = "python.filesystem"


@pytest.fixture(scope="module")
def node():
    ex = Executor(slots=2, profiles="python.basic,python.filesystem",
                  extra=("--session-grace-ms", "300"))
    yield ex
    ex.close()


def _ok(ex, sid, code, service="python.basic"):
    r = ex.run(code, session=sid, service=service)
    assert r["status"] == "ok", r.get("error")
    return r["stdout"]


def _atomic(ex, sid, code, service="python.basic", **kw):
    return ex.run(code, session=sid, service=service, atomic=True, **kw)


def test_an_atomic_cell_that_raises_after_assigning_leaves_the_session_as_it_was(node):
    sid = node.new_session()
    _ok(node, sid, "x = 1")
    r = _atomic(node, sid, "x = 2\nraise ValueError('half done')")
    assert r["status"] == "error" and r["error"]["type"] == "ValueError", r
    assert r["session"]["alive"] is True and r["session"]["rolled_back"] is True
    assert _ok(node, sid, "print(x)") == "1\n"


def test_a_successful_atomic_cell_commits(node):
    sid = node.new_session()
    _ok(node, sid, "x = 1")
    r = _atomic(node, sid, "x = 2\nprint('done')")
    assert r["status"] == "ok" and r["stdout"] == "done\n", r
    assert r["session"]["atomic"] is True and r["session"]["rolled_back"] is False
    assert _ok(node, sid, "print(x)") == "2\n"


def test_an_atomic_cell_over_its_memory_limit_leaves_the_session_alive_and_unchanged(node):
    sid = node.new_session(memory_mb=128)
    _ok(node, sid, "small = bytearray(10 << 20)\nx = 1")
    r = _atomic(node, sid, "x = 2\nbig = bytearray(400 << 20)")
    assert r["status"] == "memory_limit" and r["session"]["alive"] is True, r
    assert r["session"]["rolled_back"] is True
    assert _ok(node, sid, "print(x, len(small), 'big' in globals())") == "1 10485760 False\n"
    # the same cell without atomic ends the session, as it always did
    r = node.run("big = bytearray(400 << 20)", session=sid)
    assert r["status"] == "memory_limit" and r["session"]["alive"] is False


@pytest.mark.parametrize("crash", [
    # C recursion with no Python frame in between: the interpreter's stack overflows (SIGSEGV)
    "import json, sys\nsys.setrecursionlimit(10**8)\nl = []\nfor _ in range(10**6): l = [l]\n"
    "json.dumps(l)",
    "import os\nos.abort()",
], ids=["segfault", "abort"])
def test_a_crashing_atomic_cell_leaves_the_session_alive(node, crash):
    sid = node.new_session()
    _ok(node, sid, "x = 1")
    r = _atomic(node, sid, "x = 2\n" + crash, wall_ms=20000)
    assert r["status"] == "error" and r["exit"]["reason"] == "signal", r
    assert r["session"]["alive"] is True and r["session"]["rolled_back"] is True
    assert _ok(node, sid, "print(x)") == "1\n"


@pytest.mark.parametrize("code", [
    "x = 2\nwhile True:\n    pass",
    # swallows the KeyboardInterrupt: killed after the grace
    "x = 2\nn = 0\nwhile True:\n    try:\n        while n >= 0: n += 1\n"
    "    except KeyboardInterrupt:\n        pass",
], ids=["interrupted", "killed"])
def test_an_atomic_cell_past_its_timeout_is_rolled_back(node, code):
    sid = node.new_session()
    _ok(node, sid, "x = 1")
    r = _atomic(node, sid, code, wall_ms=500, cpu_ms=5000)
    assert r["status"] == "timeout" and r["session"]["alive"] is True, r
    assert r["session"]["rolled_back"] is True
    assert _ok(node, sid, "print(x)") == "1\n"


def test_a_refused_operation_in_an_atomic_cell_is_rolled_back(node):
    sid = node.new_session()
    _ok(node, sid, "x = 1")
    r = _atomic(node, sid, "x = 2\nimport socket\nsocket.socket().connect(('127.0.0.1', 1))")
    assert r["status"] == "security_violation", r
    assert r["session"]["alive"] is True and r["session"]["rolled_back"] is True
    assert _ok(node, sid, "print(x)") == "1\n"


def test_a_rolled_back_session_keeps_its_random_state(node):
    """The backup runs none of CPython's after-fork work: random is not reseeded, so the
    session continues the stream it was seeded with."""
    sid = node.new_session()
    _ok(node, sid, "import random\nrandom.seed(7)")
    _atomic(node, sid, "random.random()\nraise RuntimeError")
    expected = _ok(node, sid, "import random as r2\nr2.seed(7)\nprint(r2.random())")
    _ok(node, sid, "random.seed(7)")
    _atomic(node, sid, "raise RuntimeError")
    assert _ok(node, sid, "print(random.random())") == expected


def test_files_follow_an_atomic_cell(node):
    sid = node.new_session(service=FS)
    _ok(node, sid, "import os\nos.makedirs('d/e')\nopen('d/e/f.txt', 'w').write('one')\n"
                   "open('keep.txt', 'w').write('k')\nfh = open('d/e/f.txt')", FS)
    r = _atomic(node, sid, "open('d/e/f.txt', 'w').write('two!')\nos.remove('keep.txt')\n"
                           "os.makedirs('new/dir')\nopen('new/dir/n.txt', 'w').write('n')\n"
                           "raise SystemExit(3)", FS)
    assert r["status"] == "error" and r["session"]["rolled_back"] is True, r
    # the same files, the same bytes; a file the session had open reads as it did
    assert _ok(node, sid, "print(sorted(os.listdir('.')), open('d/e/f.txt').read(), "
                          "open('keep.txt').read(), fh.read())", FS) == \
        "['d', 'keep.txt'] one k one\n"
    r = _atomic(node, sid, "open('added.txt', 'w').write('a')", FS)
    assert r["status"] == "ok" and r["session"]["rolled_back"] is False
    assert _ok(node, sid, "print(sorted(os.listdir('.')))", FS) == "['added.txt', 'd', 'keep.txt']\n"


def test_an_atomic_cell_in_an_empty_workspace_leaves_it_empty(node):
    sid = node.new_session(service=FS)
    r = _atomic(node, sid, "open('x.txt', 'w').write('x')\n1/0", FS)
    assert r["session"]["rolled_back"] is True
    assert _ok(node, sid, "import os\nprint(os.listdir('.'))", FS) == "[]\n"


def test_atomic_needs_a_session(node):
    r = node.run("1", atomic=True)
    assert r["status"] == "rejected" and "atomic" in r["error"]["message"], r


# ---- fan-out -------------------------------------------------------------------------------


@pytest.mark.parametrize("service", ["python.basic", FS])
def test_one_fork_job_makes_eight_independent_sessions(node, service):
    sid = node.new_session(service=service)
    _ok(node, sid, "data = [0]", service)
    ids = [uuid.uuid4().bytes for _ in range(8)]
    r = node.run("", service=service, kind="session_fork", session=sid, new_session=ids[0],
                 more_sessions=ids[1:])
    assert r["status"] == "ok", r.get("error")
    assert [bytes(c) for c in r["session"]["clones"]] == ids
    for i, c in enumerate(ids):
        _ok(node, c, "data.append(%d)" % i, service)
    for i, c in enumerate(ids):
        assert _ok(node, c, "print(data)", service) == "[0, %d]\n" % i
    assert _ok(node, sid, "print(data)", service) == "[0]\n"
    # the parent took one Landlock layer for the eight, not eight
    again = node.run("", service=service, kind="session_fork", session=sid,
                     new_session=uuid.uuid4().bytes)
    assert again["session"]["forks_left"] == r["session"]["forks_left"] - 1
    for c in ids + [bytes(again["session"]["id"]), sid]:
        node.run("", service=service, kind="session_close", session=c)


def test_a_fork_job_naming_a_session_twice_is_malformed(node):
    sid = node.new_session()
    a = uuid.uuid4().bytes
    r = node.run("", kind="session_fork", session=sid, new_session=a, more_sessions=[a])
    assert r["status"] == "rejected" and "twice" in r["error"]["message"] or \
        "repeats" in r["error"]["message"], r
    node.run("", kind="session_close", session=sid)
