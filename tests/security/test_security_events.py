"""What the sandbox refused, and what it made of the run: a refusal the code catches leaves the
status to the code (an offline fallback is not a failure) and is listed in the Result's
security_events — the operation, its target, the layer — and in the audit log; a refusal that
ends the code is a security_violation as before; an operation only the OS layers see (a
seccomp trap) ends the process whatever the code meant to catch. None of it lets an attack's
effect through."""
import os
import secrets
import time

import pytest

from harness import Executor

V = "security_violation"
FS = "python.filesystem"


def events(r):
    return [(e["operation"], e["target"], e["layer"]) for e in r.get("security_events") or ()]


@pytest.fixture(scope="module")
def fs_executor():
    ex = Executor(slots=2, profiles=FS)
    yield ex
    ex.close()


@pytest.fixture(scope="module")
def seccomp_only():
    """The Python layer off: what is left to refuse is the OS layers'."""
    ex = Executor(disable=("python",), slots=1)
    yield ex
    ex.close()


def test_a_caught_refusal_is_listed_and_the_status_is_the_codes(executor):
    pwn = "/tmp/sp-pwned-" + secrets.token_hex(6)
    r = executor.run("import subprocess\ntry:\n    subprocess.run(['touch', %r])\n"
                     "except PermissionError as e:\n    print('offline:', e)" % pwn)
    assert r["status"] == "ok", (r["status"], r.get("error"))
    assert r["stdout"].startswith("offline: [sandbox] the sandbox cannot start processes")
    assert events(r) == [("subprocess.Popen", "touch", "python")]
    assert r["exit"]["reason"] == "exit" and not r["exit"]["syscall"]
    assert not os.path.exists(pwn)


def test_an_offline_fallback_ends_ok(executor, listener):
    r = executor.run("import socket\ntry:\n    socket.create_connection(('127.0.0.1', %d), 1)\n"
                     "except OSError:\n    print('cached answer')" % listener.port)
    assert r["status"] == "ok" and r["stdout"] == "cached answer\n"
    # the target is the destination the code reached for (the refusal's message names it too)
    assert events(r) == [("socket.getaddrinfo", "127.0.0.1", "python")]
    assert not listener.contacted()


def test_an_uncaught_refusal_is_still_a_violation(executor):
    r = executor.run("import os\nos.system('id')")
    assert r["status"] == V
    assert r["exit"]["reason"] == "audit" and r["exit"]["syscall"] == "os.system id"
    assert events(r) == [("os.system", "id", "python")]


def test_a_refusal_that_leads_to_the_error_ending_the_code_is_a_violation(executor):
    r = executor.run("import subprocess\ntry:\n    subprocess.check_output(['id'])\n"
                     "except PermissionError:\n    raise RuntimeError('no tool')")
    assert r["status"] == V and r["exit"]["syscall"] == "subprocess.Popen id"
    assert events(r) == [("subprocess.Popen", "id", "python")]


def test_a_path_refusal_caught_or_not(fs_executor):
    caught = fs_executor.run("try:\n    open('/etc/shadow')\nexcept PermissionError:\n    print('no')",
                             service=FS)
    assert caught["status"] == "ok" and caught["stdout"] == "no\n"
    assert events(caught) == [("open", "/etc/shadow", "python")]
    r = fs_executor.run("print(open('/etc/passwd').read())", service=FS)
    assert r["status"] == V and "root:x:0:0" not in r["stdout"]
    assert events(r) == [("open", "/etc/passwd", "python")]


def test_repeats_are_counted_and_the_list_is_capped(executor):
    r = executor.run("import os\nfor i in range(5):\n    try:\n        os.system('id')\n"
                     "    except PermissionError:\n        pass\n"
                     "for i in range(20):\n    try:\n        os.system('id %d' % i)\n"
                     "    except PermissionError:\n        pass\nprint('done')")
    assert r["status"] == "ok" and r["stdout"] == "done\n"
    listed = r["security_events"]
    assert listed[0] == {"operation": "os.system", "target": "id", "layer": "python", "count": 5}
    assert len(listed) == 8 and r["truncated_media"] & 8  # the rest are counted as left out


def test_each_refusal_has_an_audit_line(executor):
    marker = secrets.token_hex(4)
    executor.run("import os\ntry:\n    os.system('echo %s')\nexcept PermissionError:\n    pass" % marker)
    deadline, lines = time.monotonic() + 30, []
    while not lines and time.monotonic() < deadline:  # the line follows the answer
        lines = [l for l in executor.output().splitlines()
                 if "event=security_event" in l and marker in l]
        time.sleep(0.05)
    assert lines and "audit=1" in lines[0] and "layer=python" in lines[0]
    assert "operation=os.system" in lines[0] and "ended_job=0" in lines[0]


def test_a_seccomp_trap_ends_the_process_caught_or_not(seccomp_only, listener):
    r = seccomp_only.run("import socket\ntry:\n    s = socket.socket()\n"
                         "    s.connect(('127.0.0.1', %d))\nexcept OSError:\n    print('caught')"
                         % listener.port)
    assert r["status"] == V and "caught" not in r["stdout"]
    assert r["exit"]["reason"] == "seccomp"
    assert ("socket", None, "seccomp") in events(r)
    assert not listener.contacted()


def test_an_os_layer_still_stops_what_the_code_catches(seccomp_only):
    pwn = "/tmp/sp-pwned-" + secrets.token_hex(6)
    r = seccomp_only.run("import os\ntry:\n    os.system('touch %s')\nexcept OSError:\n"
                         "    print('caught')" % pwn)
    assert r["status"] == V and "caught" not in r["stdout"]
    assert not os.path.exists(pwn)


def test_a_session_lives_on_after_a_caught_refusal_and_ends_on_an_uncaught_one(executor):
    sid = executor.new_session()
    r = executor.run("import os\ntry:\n    os.system('id')\nexcept PermissionError:\n    x = 1",
                     kind="exec", session=sid)
    assert r["status"] == "ok" and r["session"]["alive"]
    assert events(r) == [("os.system", "id", "python")]
    r = executor.run("print(x)", session=sid)
    assert r["status"] == "ok" and r["stdout"] == "1\n" and not r.get("security_events")
    r = executor.run("os.system('id')", session=sid)
    assert r["status"] == V and not r["session"]["alive"]
