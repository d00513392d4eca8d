"""A session's answers are the zygote's own account, and a fork shares nothing with its parent.

Each attack here worked before the walls it tests: a cell that wrote its own done byte was
answered `ok` at once and ran on without a deadline or a slot; a file, an anonymous shared
mapping, a socketpair or a directory opened before fork_session stayed shared between the fork
and its parent."""
import os
import uuid

import pytest

from harness import Executor

DS = "python.data_science"

# Forges the end of the cell: the runner's own finish, then a done byte on every descriptor the
# process holds (one of them is the socket the zygote listens to), then runs on.
FORGE = r'''
import os, sys, time
snk = sys.modules.get("_snakepit")
if snk is not None:
    try:
        snk.finish("ok", result="'forged'")
    except Exception:
        pass
for fd in range(3, 64):
    try:
        {write}
    except OSError:
        pass
t = time.time()
while time.time() - t < 2.5:
    pass
print("ran on after the forged answer")
'''

WRITES = {
    "write": "os.write(fd, b'd')",
    "dup_then_write": "os.write(os.dup(fd), b'd')",
    "sendmsg": "__import__('socket').socket(fileno=os.dup(fd)).sendmsg([b'd'])",
}


@pytest.fixture(scope="module")
def ex():
    e = Executor(slots=2, profiles=DS)
    yield e
    e.close()


@pytest.fixture(scope="module")
def bare():
    """Every layer but the Python one: the forgery meets seccomp alone."""
    e = Executor(disable=("python",), slots=2, profiles=DS)
    yield e
    e.close()


@pytest.mark.parametrize("layers", ["all", "os_only"])
@pytest.mark.parametrize("how", sorted(WRITES))
def test_a_cell_cannot_forge_its_own_answer(ex, bare, layers, how):
    e = ex if layers == "all" else bare
    sid = e.new_session(DS, memory_mb=256)
    assert e.run("kept = 41", service=DS, session=sid)["status"] == "ok"
    r = e.run(FORGE.replace("{write}", WRITES[how]), service=DS, session=sid, wall_ms=1000,
              cpu_ms=1000)
    # the answer is the zygote's: the forgery is the attack it is, and nothing ran on after it
    assert r["status"] == "security_violation", (r["status"], r.get("error"), r.get("exit"))
    assert "ran on" not in r["stdout"] and not r["session"]["alive"]
    after = e.run("print(kept + 1)", service=DS, session=sid)
    if r["session"]["alive"]:  # a cell that timed out keeps its session (KeyboardInterrupt)
        assert after["status"] == "ok" and after["stdout"] == "42\n"
    else:
        assert after["status"] == "rejected" and after["error"]["type"] == "SessionEnded"


def test_a_one_off_job_cannot_forge_its_answer(bare):
    r = bare.run(FORGE.replace("{write}", WRITES["write"]), service=DS, wall_ms=1000, cpu_ms=1000)
    assert r["status"] == "security_violation", (r["status"], r.get("error"))
    assert "ran on" not in r["stdout"]


def test_answers_on_a_session_come_in_request_order(ex):
    """A cell, then a snapshot sent while it runs: the snapshot is answered after the cell."""
    sid = ex.new_session(DS, memory_mb=256)
    cell = ex.submit("import time\nt = time.time()\nwhile time.time() - t < 0.5: pass\nx = 1",
                     service=DS, session=sid)
    snap = ex.submit("", service=DS, kind="session_snapshot", session=sid)
    ex.wait(snap, 30)
    ex.wait(cell, 30)
    assert ex.answered.index(cell) < ex.answered.index(snap)


# ---- fork_session: nothing open before the fork is shared after it ----------------------------

SETUP = r'''
import mmap, os, socket
f = open("shared.txt", "w+")
f.write("parent")
f.flush()
m = mmap.mmap(-1, 4096)
m[:6] = b"parent"
a, b = socket.socketpair()
b.setblocking(False)
d = os.open(".", os.O_RDONLY)
print("ready")
'''

# In the fork: write through each of them, as hard as it can.
IN_FORK = r'''
import os
def attempt(name, fn):
    try:
        fn()
        print(name, "done")
    except Exception as e:
        print(name, "refused", type(e).__name__)
attempt("file", lambda: (f.seek(0), f.write("FORKED"), f.flush()))
attempt("mmap", lambda: m.__setitem__(slice(0, 6), b"FORKED"))
attempt("socket", lambda: a.send(b"FORKED"))
attempt("dir", lambda: print("listing", sorted(os.listdir(d))))
'''

# Back in the parent: nothing of the fork's arrived.
IN_PARENT = r'''
import os
open("later.txt", "w").write("made after the fork")
print("file", open("shared.txt").read())
print("mmap", bytes(m[:6]).decode())
try:
    print("socket", b.recv(64))
except BlockingIOError:
    print("socket nothing")
'''


@pytest.mark.parametrize("layers", ["all", "os_only"])
def test_a_fork_shares_no_descriptor_or_mapping_with_its_parent(ex, bare, layers):
    e = ex if layers == "all" else bare
    sid = e.new_session(DS, memory_mb=256)
    r = e.run(SETUP, service=DS, session=sid)
    assert r["status"] == "ok" and r["stdout"] == "ready\n", (r["status"], r.get("error"))
    fid = e.fork_session(sid, service=DS)
    parent = e.run(IN_PARENT.replace("later.txt", "before.txt"), service=DS, session=sid)
    assert parent["status"] == "ok", parent.get("error")
    forked = e.run(IN_FORK, service=DS, session=fid)
    assert forked["status"] == "ok", (forked.get("error"), forked["stdout"])
    # what the parent made after the fork is not in the fork's directory listing
    assert "before.txt" not in forked["stdout"], forked["stdout"]
    parent = e.run(IN_PARENT, service=DS, session=sid)
    assert parent["status"] == "ok", parent.get("error")
    lines = dict(l.split(" ", 1) for l in parent["stdout"].splitlines())
    assert lines == {"file": "parent", "mmap": "parent", "socket": "nothing"}, parent["stdout"]
