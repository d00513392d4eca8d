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
