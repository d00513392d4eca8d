"""The security corpus extended to sessions. A session is a pooled child kept alive,
every layer in place: every attack of the corpus must still be contained when it runs as a
session's cell; a cell cannot reach another session's or tenant's state, and fork_session's
two sides cannot reach each other's files or process, not even with the Python layer out of
the way (the OS layers alone: Landlock, the mount namespace, seccomp, rlimits); user code
cannot fork even though the session's own C loop may clone itself."""
import secrets
import uuid

import pytest

from corpus import CASES, E, WORKSPACE_CASES, assert_contained
from harness import Executor

DS = "python.data_science"
FS = DS  # the bare tests' profile: a workspace, and ctypes for raw syscalls
MATRIX = [("python.basic",) + c for c in CASES] + [(DS,) + c for c in WORKSPACE_CASES]


def attack_in_session(executor, listener, profile, name, code, expected, **run):
    """Runs an attack of the corpus as a cell of a fresh session holding kept = 41 (run: more
    of the job, atomic=True); checks it was contained (a session's memory limit is the
    session's: an attack that wants memory meets it there). The cell's result and the
    session's id."""
    sid = executor.new_session(profile, memory_mb=256)
    warm = executor.run("kept = 41", service=profile, session=sid)
    assert warm["status"] == "ok", warm.get("error")
    pwn = "/tmp/sp-pwned-" + secrets.token_hex(6)
    src = code.format(pwn=pwn, canary=executor.canary_path, port=listener.port)
    if name == "kill_pid_2":  # a session is pid 2 of its lineage (pidns.h): that is itself
        expected = expected | {"error"}
    r = executor.run(src, service=profile, session=sid, wall_ms=3000, cpu_ms=2000,
                     output_bytes=65536, **run)
    assert_contained(executor, listener, r, pwn, expected | {"memory_limit"}
                     if E in expected else expected)
    return r, sid


@pytest.mark.parametrize("profile,name,code,expected", MATRIX,
                         ids=["%s-%s" % (c[0].split(".")[1], c[1]) for c in MATRIX])
def test_attack_is_contained_in_a_session(executors, listener, profile, name, code, expected):
    executor = executors(profile)
    r, sid = attack_in_session(executor, listener, profile, name, code, expected)
    after = executor.run("print(kept + 1)", service=profile, session=sid)
    if r["session"]["alive"]:
        assert after["status"] == "ok" and after["stdout"] == "42\n", after.get("error")
    else:  # the session ended with the attack, and says why
        assert r["session"]["end_reason"]
        assert after["status"] == "rejected" and after["error"]["type"] == "SessionEnded"


def test_another_tenants_session_is_unknown_to_a_job(executor):
    sid = executor.new_session(tenant="alice")
    assert executor.run("secret = 'alice'", session=sid, tenant="alice")["status"] == "ok"
    theirs = executor.run("print(secret)", session=sid, tenant="mallory")
    other = uuid.uuid4().bytes
    unknown = executor.run("print(secret)", session=other, tenant="mallory")
    assert theirs["status"] == unknown["status"] == "rejected"
    assert theirs["error"] == dict(unknown["error"], message=unknown["error"]["message"].replace(
        str(uuid.UUID(bytes=other)), str(uuid.UUID(bytes=sid))))
    for kind in ("session_fork", "session_snapshot", "session_close", "session_info"):
        r = executor.run("", kind=kind, session=sid, tenant="mallory", new_session=uuid.uuid4().bytes)
        assert r["status"] == "rejected" and r["error"]["type"] == "SessionUnknown", (kind, r)
    r = executor.run("print(secret)", session=sid, tenant="alice")
    assert r["stdout"] == "alice\n"


# ---- the OS layers alone: the Python layer switched off, so the cells use os freely --------


@pytest.fixture(scope="module")
def bare_python():
    """Every layer but the Python one: what a cell that disarmed it could do (numpy can, see
    the corpus). python.data_science, for its workspace and ctypes."""
    ex = Executor(disable=("python",), slots=2, profiles=DS)
    yield ex
    ex.close()


def _ok(ex, sid, code, tenant="attacker"):
    r = ex.run(code, service=FS, session=sid, tenant=tenant)
    assert r["status"] == "ok", (r.get("error"), r.get("exit"))
    return r["stdout"]


# Tries every way from one side to the other's files: listings up the tree, the other's
# absolute path, '..' walks, a symlink and a hard link to it, a rename into it, and the other
# process through /proc. Prints one line per try: what it got.
PROBE = r'''
import os
other, other_pid = {other!r}, {other_pid}
def attempt(name, fn):
    try:
        print(name, 'GOT', repr(fn())[:300])
    except Exception as e:
        print(name, 'DENIED', type(e).__name__)
attempt('read_abs', lambda: open(other + '/secret.txt').read())
attempt('list_abs', lambda: os.listdir(other))
attempt('write_abs', lambda: open(other + '/planted.txt', 'w').write('x'))
attempt('read_dotdot', lambda: open(os.path.relpath(other + '/secret.txt')).read())
attempt('up_1', lambda: os.listdir('..'))
attempt('up_2', lambda: os.listdir('../..'))
attempt('up_3', lambda: os.listdir('../../..'))
attempt('up_work', lambda: os.listdir('/work'))
attempt('symlink', lambda: (os.symlink(other + '/secret.txt', 'ln'), open('ln').read()))
attempt('hardlink', lambda: (os.link(other + '/secret.txt', 'hl'), open('hl').read()))
attempt('rename_into', lambda: (open('mine.txt', 'w').write('m'), os.rename('mine.txt', other + '/moved.txt')))
attempt('proc_mem', lambda: open('/proc/%d/mem' % other_pid, 'rb').read(16))
attempt('proc_cwd', lambda: os.listdir('/proc/%d/cwd' % other_pid))
attempt('proc_root', lambda: os.listdir('/proc/%d/root' % other_pid))
'''


def _assert_unreachable(ex, sid, other_dir, other_pid, tenant="attacker"):
    """Every way to the other side is denied; going up the tree shows at most this side's own
    directories (never a file of the other's)."""
    out = _ok(ex, sid, PROBE.format(other=other_dir, other_pid=other_pid), tenant)
    seen = {line.split(" ", 1)[0]: line for line in out.splitlines()}
    for name, line in seen.items():
        if name.startswith("up_"):
            assert "secret.txt" not in line and "planted" not in line, line
        else:
            assert " DENIED " in line, line


def _where(ex, sid, secret, tenant="attacker"):
    """Writes the side's secret; its directory and pid."""
    d, pid = _ok(ex, sid, "import os\nopen('secret.txt', 'w').write(%r)\n"
                          "print(os.getcwd(), os.getpid())" % secret, tenant).split()
    return d, int(pid)


def test_a_fork_and_its_parent_cannot_reach_each_other(bare_python):
    ex = bare_python
    a = ex.new_session(FS)
    _ok(ex, a, "open('secret.txt', 'w').write('before-fork')")
    b = ex.fork_session(a, FS)
    a_dir, a_pid = _where(ex, a, "parent-secret")
    b_dir, b_pid = _where(ex, b, "fork-secret")
    assert a_dir != b_dir and a_pid != b_pid
    _assert_unreachable(ex, a, b_dir, b_pid)
    _assert_unreachable(ex, b, a_dir, a_pid)
    # each side still has its own file, unchanged, and nothing planted or moved in
    listing = "import os\nprint(open('secret.txt').read(), sorted(os.listdir('.')))"
    assert _ok(ex, a, listing) == "parent-secret ['mine.txt', 'secret.txt']\n"
    assert _ok(ex, b, listing) == "fork-secret ['mine.txt', 'secret.txt']\n"
    # and a fork of the fork is walled off from both
    c = ex.fork_session(b, FS)
    c_dir, c_pid = _where(ex, c, "grandchild")
    for other_dir, other_pid in ((a_dir, a_pid), (b_dir, b_pid)):
        _assert_unreachable(ex, c, other_dir, other_pid)
    _assert_unreachable(ex, b, c_dir, c_pid)


def test_a_session_cannot_reach_another_tenants_session(bare_python):
    ex = bare_python
    victim = ex.new_session(FS, tenant="victim")
    v_dir, v_pid = _where(ex, victim, "victim-secret", tenant="victim")
    spy = ex.new_session(FS, tenant="spy")
    _assert_unreachable(ex, spy, v_dir, v_pid, tenant="spy")
    assert _ok(ex, victim, "print(open('secret.txt').read())", tenant="victim") == "victim-secret\n"


def test_a_cell_cannot_signal_another_session(bare_python):
    ex = bare_python
    a = ex.new_session(FS)
    _, a_pid = _where(ex, a, "x")
    b = ex.new_session(FS)
    r = ex.run("import os, signal\nos.kill(%d, signal.SIGKILL)" % a_pid, service=FS, session=b)
    assert r["status"] in ("error", "security_violation"), r
    assert _ok(ex, a, "print('alive')") == "alive\n"


# The raw clone a session's C loop uses for fork_session (CLONE_PARENT | SIGCHLD), and plain
# forks, from user code: seccomp allows that clone only from the loop's own call site.
FORKS = [
    ("os_fork", "import os\npid = os.fork()\nprint('forked', pid)"),
    ("clone_parent_flags", "import ctypes\nlibc = ctypes.CDLL(None)\n"
                           "print('clone', libc.syscall(56, 0x8000 | 17, 0, 0, 0, 0))"),
    ("vfork", "import ctypes\nprint('vfork', ctypes.CDLL(None).syscall(58))"),
    ("thread", "import threading\nt = threading.Thread(target=print)\nt.start()"),
]


@pytest.mark.parametrize("name,code", FORKS, ids=[f[0] for f in FORKS])
def test_user_code_cannot_fork_in_a_session(bare_python, name, code):
    ex = bare_python
    sid = ex.new_session(FS)
    r = ex.run(code, service=FS, session=sid)
    assert "forked" not in r["stdout"] and "clone " not in r["stdout"].replace("clone -1", ""), r
    assert r["status"] in ("error", "security_violation"), (r["status"], r.get("error"))
    if name == "thread":  # threads fail cleanly and the session lives on
        assert r["session"]["alive"] is True
    else:
        assert r["status"] == "security_violation" and r["session"]["alive"] is False


def test_the_process_limit_is_back_to_zero_after_a_fork(bare_python):
    """The zygote raises RLIMIT_NPROC on the idle session for the one clone and lowers it
    after: the fork and its parent both run their cells with a soft limit of 0."""
    ex = bare_python
    a = ex.new_session(FS)
    b = ex.fork_session(a, FS)
    for sid in (a, b):
        soft = _ok(ex, sid, "import ctypes\nlim = (ctypes.c_ulong * 2)()\n"
                            "ctypes.CDLL(None).getrlimit(6, lim)\nprint(lim[0])")  # RLIMIT_NPROC
        assert soft == "0\n"


# ---- the pid view: a lineage's namespace (executor-node/sandbox/pidns.h) -------------------------

PIDS = ("import os\nlive = []\nfor pid in range(1, 512):\n    try:\n        os.getpgid(pid)\n"
        "        live.append(pid)\n    except OSError:\n        pass\nprint(os.getpid(), live)")


def _pids(ex, sid, tenant="attacker"):
    own, live = _ok(ex, sid, PIDS, tenant).split(" ", 1)
    return int(own), eval(live)


def test_a_lineage_sees_only_its_own_processes(bare_python):
    """A job is pid 1 of a pid namespace of its own; a session cannot be (fork_session is a
    clone(CLONE_PARENT), which the kernel refuses to a namespace's init), so a session and its
    forks share one namespace per lineage under a holder (pid 1): each sees its lineage and
    nothing else — no other session, tenant, job or the zygote — and the forks work with every
    layer on."""
    ex = bare_python
    a = ex.new_session(FS)
    b = ex.fork_session(a, FS)
    c = ex.fork_session(b, FS)
    other = ex.new_session(FS, tenant="victim")
    a_pid, a_live = _pids(ex, a)
    b_pid, b_live = _pids(ex, b)
    c_pid, c_live = _pids(ex, c)
    assert a_pid == 2 and len({a_pid, b_pid, c_pid}) == 3
    assert a_live == b_live == c_live == sorted([1, a_pid, b_pid, c_pid])
    # another lineage: its own namespace, where only its holder and itself exist
    assert _pids(ex, other, "victim") == (2, [1, 2])
    # the holder cannot be signalled from inside (a trapped kill to another pid)
    r = ex.run("import os, signal\nos.kill(1, signal.SIGKILL)", service=FS, session=c)
    assert r["status"] == "security_violation" and r["exit"]["syscall"] == "kill", r
    assert _pids(ex, a)[1] == [1, a_pid, b_pid]  # c is gone, a and b live on
    # a plain job beside them still sees itself alone
    r = ex.run(PIDS, service=FS)
    assert r["status"] == "ok" and r["stdout"] == "1 [1]\n", r


def test_a_fork_cannot_signal_its_parent(bare_python):
    """The fork inherits its parent's seccomp program, whose 'itself' is the parent's pid: a
    signal from the fork to that pid still traps and ends the fork, never the parent."""
    ex = bare_python
    a = ex.new_session(FS)
    b = ex.fork_session(a, FS)
    a_pid = _pids(ex, a)[0]
    r = ex.run("import os, signal\nos.kill(%d, signal.SIGKILL)" % a_pid, service=FS, session=b)
    assert r["status"] == "security_violation", r
    assert _ok(ex, a, "print('alive')") == "alive\n"
