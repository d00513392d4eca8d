"""Each sandbox layer, alone, stops an attack.

For every layer: the attack first runs on an executor with *every* layer switched off and
succeeds (so the test can fail), then on an executor where only that layer is on, and is
stopped. The layers: seccomp, rlimits, namespaces, Landlock, and the Python layer (import
policy + audit hook)."""
import pytest

from harness import Executor

ALL = ("rlimits", "namespaces", "landlock", "uid", "nnp", "seccomp", "python")


def only(layer):
    return [l for l in ALL if l != layer]


@pytest.fixture(scope="module")
def bare():
    ex = Executor(disable=ALL, slots=1)
    yield ex
    ex.close()


def _with_only(layer):
    ex = Executor(disable=only(layer), slots=1)
    assert layer in ex.ready["layers"].split(",")
    return ex


READ_PASSWD = "print(open('/etc/passwd').read())"
CONNECT = "import socket\ns = socket.socket()\ns.connect(('127.0.0.1', {port}))\nprint('connected')"
LIST_ROOT = "import os\nprint(sorted(os.listdir('/')))"
ALLOCATE = "x = bytearray(600 * 1024 * 1024)\nprint('allocated', len(x))"


def test_everything_off_lets_the_attacks_through(bare, listener):
    """The control: without the sandbox each attack works, so the tests below can fail."""
    assert "root:x:0:0" in bare.run(READ_PASSWD)["stdout"]
    assert bare.run(CONNECT.format(port=listener.port))["stdout"] == "connected\n"
    assert listener.contacted()
    assert "proc" in bare.run(LIST_ROOT)["stdout"]
    r = bare.run(ALLOCATE, memory_mb=128)
    assert r["status"] == "ok", r


def test_seccomp_alone_stops_a_socket(listener):
    ex = _with_only("seccomp")
    try:
        r = ex.run(CONNECT.format(port=listener.port))
        assert r["status"] == "security_violation"
        assert r["exit"]["reason"] == "seccomp"
        assert r["exit"]["syscall"] == "socket"
        assert not listener.contacted()
        # still serving after the kill
        assert ex.run("print(2)")["stdout"] == "2\n"
    finally:
        ex.close()


def test_namespaces_alone_hide_the_hosts_files_and_network(listener):
    ex = _with_only("namespaces")
    try:
        r = ex.run(READ_PASSWD)
        assert r["status"] == "error"
        assert r["error"]["type"] == "FileNotFoundError"  # an empty root: nothing to find
        assert "root:x:0:0" not in r["stdout"]
        # the root is an empty tmpfs but for the read-only time zone database
        assert ex.run(LIST_ROOT)["stdout"] == "['usr']\n"
        r = ex.run(CONNECT.format(port=listener.port))
        assert r["status"] == "error"  # no network device: unreachable
        assert not listener.contacted()
    finally:
        ex.close()


def test_landlock_alone_denies_the_filesystem(listener):
    ex = _with_only("landlock")
    try:
        r = ex.run(READ_PASSWD)
        assert r["status"] == "error"
        assert r["error"]["type"] == "PermissionError"
        assert "root:x:0:0" not in r["stdout"]
        r = ex.run(LIST_ROOT)
        assert r["error"]["type"] == "PermissionError"
    finally:
        ex.close()


def test_rlimits_alone_stop_a_memory_bomb():
    ex = _with_only("rlimits")
    try:
        r = ex.run(ALLOCATE, memory_mb=128)
        assert r["status"] == "memory_limit"
        assert "allocated" not in r["stdout"]
        r = ex.run("while True:\n    pass", wall_ms=10000, cpu_ms=1000)
        assert r["status"] == "cpu_limit"
    finally:
        ex.close()


def test_python_layer_alone_refuses_the_operation():
    # os imports; listing the host's root is what the audit hook refuses
    ex = _with_only("python")
    try:
        r = ex.run(LIST_ROOT)
        assert r["status"] == "security_violation"
        assert r["error"]["type"] == "PermissionError"
        assert r["exit"]["reason"] == "audit"
        assert r["exit"]["syscall"] == "os.listdir /"
        assert "proc" not in r["stdout"]
        r = ex.run("import ctypes")  # what exists to get past the layers still does not import
        assert r["status"] == "error" and r["error"]["type"] == "ModuleNotFoundError"
    finally:
        ex.close()


# ---- the workspace: writing outside it, each layer alone ---------------------------

FS = "python.filesystem"
WRITE_HOST = "import os\nfd = os.open({pwn!r}, os.O_WRONLY | os.O_CREAT, 0o644)\nos.write(fd, b'x')\nprint('wrote')"
WRITE_HERE = "open('inside.txt', 'w').write('ok')\nprint(open('inside.txt').read())"


def _fs_with_only(layer):
    ex = Executor(disable=only(layer), slots=1, profiles=FS)
    assert layer in ex.ready["layers"].split(",")
    return ex


def _pwn():
    import os
    import secrets
    path = "/tmp/sp-pwned-" + secrets.token_hex(6)
    return path, lambda: os.path.exists(path) and (os.unlink(path) or True)


def test_everything_off_lets_a_workspace_job_write_on_the_host():
    ex = Executor(disable=ALL, slots=1, profiles=FS)
    try:
        path, existed = _pwn()
        r = ex.run(WRITE_HOST.format(pwn=path), service=FS)
        assert r["stdout"] == "wrote\n" and existed()
    finally:
        ex.close()


@pytest.mark.parametrize("layer,error", [("landlock", "PermissionError"),
                                         ("namespaces", ("OSError", "FileNotFoundError"))])
def test_one_layer_alone_keeps_workspace_writes_inside(layer, error):
    ex = _fs_with_only(layer)
    try:
        path, existed = _pwn()
        r = ex.run(WRITE_HOST.format(pwn=path), service=FS)
        assert r["status"] == "error" and r["error"]["type"] in error, r.get("error")
        assert not existed()
        r = ex.run(WRITE_HERE, service=FS)  # the workspace itself still works
        assert r["status"] == "ok" and r["stdout"] == "ok\n", r.get("error")
    finally:
        ex.close()


def test_rlimits_alone_cap_a_workspace_file():
    ex = _fs_with_only("rlimits")
    try:
        r = ex.run("with open('big', 'wb') as f:\n    for _ in range(100):\n"
                   "        f.write(b'x' * (1 << 20))", service=FS, memory_mb=256)
        assert r["status"] == "error" and "File too large" in r["error"]["message"]
    finally:
        ex.close()


def test_seccomp_alone_refuses_a_symlink_out_of_the_workspace():
    ex = _fs_with_only("seccomp")
    try:
        r = ex.run("import os\nos.symlink('/etc/passwd', 'l')\nprint(open('l').read())", service=FS)
        assert r["status"] == "error" and r["error"]["type"] == "PermissionError"
        assert "root:x:0:0" not in r["stdout"]
    finally:
        ex.close()
