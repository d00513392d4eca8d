"""The security corpus, and the isolation of sessions, for atomic cells, fan-out forks and
checkpoints. An atomic cell runs beside a backup of its session (the same Landlock domain, the
same lineage's pid namespace): every attack of the corpus must still be contained when it runs
atomically, the backup must be out of the cell's reach (it cannot be signalled, its copy of the
files is out of every session's Landlock rule), the clones one fork_session job makes must not
reach each other, and a snapshot's pickles — the tenant's bytes — must construct at restore
nothing a cell could not: no code from bytes, no function with other globals."""
import ctypes
import os
import pickle
import secrets
import uuid

import msgpack
import pytest

from corpus import CASES, WORKSPACE_CASES
from harness import Executor
from test_sessions import FS, _assert_unreachable, _ok, _pids, _where, attack_in_session

DS = "python.data_science"
MATRIX = [("python.basic",) + c for c in CASES] + [(DS,) + c for c in WORKSPACE_CASES]


@pytest.mark.parametrize("profile,name,code,expected", MATRIX,
                         ids=["%s-%s" % (c[0].split(".")[1], c[1]) for c in MATRIX])
def test_attack_is_contained_in_an_atomic_cell(executors, listener, profile, name, code, expected):
    executor = executors(profile)
    r, sid = attack_in_session(executor, listener, profile, name, code, expected, atomic=True)
    assert r["session"]["atomic"] is True
    # whatever the attack did to its own process, the session is there, as it was or as the
    # cell left it when it ended ok
    assert r["session"]["alive"] is True, r["session"]
    # (a cell that ends its own process, os._exit(0), is rolled back however it ended)
    assert r["status"] == "ok" or r["session"]["rolled_back"] is True
    after = executor.run("print(kept + 1)", service=profile, session=sid)
    assert after["status"] == "ok" and after["stdout"] == "42\n", after.get("error")
    executor.run("", service=profile, kind="session_close", session=sid)


# ---- the OS layers alone: the Python layer switched off ------------------------------------


@pytest.fixture(scope="module")
def bare():
    ex = Executor(disable=("python",), slots=2, profiles=DS)
    yield ex
    ex.close()


def test_an_atomic_cell_cannot_reach_its_backup(bare):
    """The backup waits in the lineage's pid namespace: a signal to it traps (the cell's seccomp
    program lets it signal only itself) and the session is put back from the backup; the
    backup's copy of the workspace is nowhere the cell can list or open."""
    ex = bare
    sid = ex.new_session(FS)
    _ok(ex, sid, "open('secret.txt', 'w').write('before')\nx = 1")
    own = _pids(ex, sid)[0]
    r = ex.run("import os, signal\nx = 2\nfor pid in range(1, 64):\n"
               "    if pid != %d: os.kill(pid, signal.SIGKILL)" % own,
               service=FS, session=sid, atomic=True)
    assert r["status"] == "security_violation" and r["session"]["rolled_back"] is True, r
    assert _ok(ex, sid, "print(x, open('secret.txt').read())") == "1 before\n"
    r = ex.run("import os\nopen('secret.txt', 'w').write('changed')\nprint(os.listdir('/work'))",
               service=FS, session=sid, atomic=True)
    assert r["status"] != "ok" and "secret" not in r["stdout"], r
    assert _ok(ex, sid, "print(open('secret.txt').read())") == "before\n"


def test_the_clones_of_one_fork_job_cannot_reach_each_other(bare):
    ex = bare
    sid = ex.new_session(FS)
    _ok(ex, sid, "open('secret.txt', 'w').write('parent')")
    ids = [uuid.uuid4().bytes for _ in range(3)]
    r = ex.run("", service=FS, kind="session_fork", session=sid, new_session=ids[0],
               more_sessions=ids[1:])
    assert r["status"] == "ok", r.get("error")
    where = [_where(ex, c, "clone-%d" % i) for i, c in enumerate(ids)]
    p_dir, p_pid = _where(ex, sid, "parent-secret")
    for i, c in enumerate(ids):
        for j, (d, pid) in enumerate(where):
            if i != j:
                _assert_unreachable(ex, c, d, pid)
        _assert_unreachable(ex, c, p_dir, p_pid)
    for d, pid in where:
        _assert_unreachable(ex, sid, d, pid)
    for i, c in enumerate(ids):
        assert _ok(ex, c, "print(open('secret.txt').read())") == "clone-%d\n" % i


def test_a_clone_cannot_signal_its_sibling(bare):
    ex = bare
    sid = ex.new_session(FS)
    ids = [uuid.uuid4().bytes for _ in range(2)]
    ex.run("", service=FS, kind="session_fork", session=sid, new_session=ids[0],
           more_sessions=ids[1:])
    sibling = _pids(ex, ids[1])[0]
    r = ex.run("import os, signal\nos.kill(%d, signal.SIGKILL)" % sibling, service=FS, session=ids[0])
    assert r["status"] == "security_violation", r
    assert _ok(ex, ids[1], "print('alive')") == "alive\n"


# ---- what a snapshot may construct at restore ----------------------------------------------


def _global(module, name):
    """A pickle that is just find_class(module, name)."""
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n."


def _call(module, name, args):
    """A pickle calling module.name(*args) at load."""
    body = pickle.dumps(tuple(args), protocol=2)[2:-1]
    return b"\x80\x02" + _global(module, name)[:-1] + body + b"R."


@pytest.fixture(scope="module")
def node():
    ex = Executor(slots=2)
    yield ex
    ex.close()


def _restore(ex, variables):
    snap = msgpack.packb({"v": 1, "variables": variables, "imports": {}, "skipped": [],
                          "files": []})
    nid = uuid.uuid4().bytes
    r = ex.run("", kind="session_restore", new_session=nid, snapshot=snap)
    return nid, r


HOSTILE = {
    # what byvalue.py's reconstructors reach beyond themselves, and what a by-value pickle might
    # want to name but must not
    "globals_of_a_reconstructor": _global("_snakepit_byvalue", "_sp_code.__globals__"),
    "its_module_state": _global("_snakepit_byvalue", "use_globals"),
    "cloudpickle": _global("_snakepit_byvalue", "_cp"),
    "function_type": _global("types", "FunctionType"),
    "code_type": _global("types", "CodeType"),
    "getattr": _global("builtins", "getattr"),
    "marshal": _global("marshal", "loads"),
    # code from bytes: the bytes must be what the source compiles to, else nothing is made (the
    # bytes are only compared: these, which no source compiles to, would crash the interpreter)
    "code_from_bytes": _call("_snakepit_byvalue", "_sp_code",
                             ["def f():\n    return 1\n", "f", 1, b"\x64\xff" * 8]),
}


def test_a_restore_constructs_nothing_a_cell_could_not(node):
    nid, r = _restore(node, HOSTILE)
    assert r["status"] == "ok", r.get("error")
    import json
    summary = json.loads(r["session"]["summary"])
    assert summary["restored"] == [], summary
    assert {f["name"] for f in summary["failed"]} == set(HOSTILE), summary
    after = node.run("print([n for n in %r if n in globals()])" % list(HOSTILE), session=nid)
    assert after["stdout"] == "[]\n", after


def test_a_pickle_that_runs_code_at_restore_meets_the_layers_of_a_cell(node):
    """Code compiled from source and called while unpickling runs as the session's own code,
    under the audit hook and every OS layer: a refused operation is refused as in a cell."""
    pwn = "/tmp/sp-pwned-" + secrets.token_hex(6)
    src = "def f():\n    import os\n    os.system('touch %s')\n" % pwn
    compiled = compile(src, "<snakepit>", "exec").co_consts[0]
    code = _call("_snakepit_byvalue", "_sp_code", [src, "f", 1, compiled.co_code])
    # _sp_function(code, 0)() : a function bound to the session's globals, then called
    fn = b"\x80\x02" + _global("_snakepit_byvalue", "_sp_function")[:-1] + b"(" + code[2:-1] + \
        b"K\x00tR)R."
    nid, r = _restore(node, {"run_at_load": fn})
    import os
    assert not os.path.exists(pwn)
    assert r["status"] in ("ok", "security_violation"), r



def _tree(root):
    """pid -> ppid of root's descendants (read from /proc, outside the sandboxes)."""
    parent = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open("/proc/%s/stat" % d) as f:
                    parent[int(d)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except OSError:
                pass
    out, todo = {}, [root]
    while todo:
        p = todo.pop()
        for c, pp in parent.items():
            if pp == p and c not in out:
                out[c] = p
                todo.append(c)
    return out


def _same_memory(a, b):
    """kcmp(KCMP_VM): whether two processes share one address space."""
    libc = ctypes.CDLL(None, use_errno=True)
    return libc.syscall(312, a, b, 1, 0, 0) == 0  # SYS_kcmp on x86_64, KCMP_VM


def _shared_areas(pid):
    try:
        with open("/proc/%d/maps" % pid) as f:
            lines = f.read().splitlines()
    except OSError:
        return None, None
    return lines, sum("snakepit-area" in l and l.split()[1][3] == "s" for l in lines)


def test_a_sandbox_forked_after_a_fan_out_shares_no_clones_area(bare):
    """The zygote maps each clone's area to set it up; children it forks later (pooled ones,
    for any tenant's next job or session) must not inherit those mappings: every sandbox shares
    one area, its own, with the zygote. Read from outside (a sandbox has no /proc)."""
    ex = bare
    sid = ex.new_session(FS)
    _ok(ex, sid, "x = 1")
    for _ in range(2):
        ids = [uuid.uuid4().bytes for _ in range(4)]
        r = ex.run("", service=FS, kind="session_fork", session=sid, new_session=ids[0],
                   more_sessions=ids[1:])
        assert r["status"] == "ok", r.get("error")
    for _ in range(3):  # pooled children are forked since, for jobs and for sessions
        assert ex.run("print(1)", service=FS, tenant="other")["status"] == "ok"
    other = ex.new_session(FS, tenant="other")
    assert _ok(ex, other, "print(2)", "other") == "2\n"
    tree = _tree(ex.proc.pid)
    zygotes = {p for p, pp in tree.items() if pp == ex.proc.pid}
    seen = 0
    for pid, pp in tree.items():
        lines, n = _shared_areas(pid)
        if pid in zygotes or lines is None or any(_same_memory(pid, z) for z in zygotes):
            continue  # a zygote, or a lineage's holder (CLONE_VM: the zygote's own memory)
        seen += 1
        assert n <= 1, (pid, [l for l in lines if "snakepit-area" in l])
    assert seen >= 6, tree  # the sessions, the clones and the pooled children were looked at
