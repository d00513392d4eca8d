"""What the Python layer used to refuse at the import, the OS layers stop on their own.

Since `import os` and `import subprocess` work, the Python layer refuses operations instead of
modules. These attacks run with that layer switched off (--disable-layer python: no import
guard, no audit hook, real builtins) and every other layer on, in python.basic and in
python.data_science (where numpy can disarm the Python layer anyway). Each is checked for its
status and for the absence of its effect."""
import os
import secrets
import time

import pytest

from harness import Executor

PROFILES = ["python.basic", "python.data_science"]


@pytest.fixture(scope="module", params=PROFILES)
def bare_python(request):
    ex = Executor(disable=("python",), slots=2, profiles=request.param)
    ex.profile = request.param
    yield ex
    ex.close()


V = "security_violation"

ATTACKS = [
    # glibc's system() and CPython's subprocess block every signal around their clone: the
    # kernel then ends the job without the SIGSYS handler that would name the syscall
    ("os_system", "import os\nos.system('touch {pwn}')", {V}, ("clone", "vfork", "unknown")),
    ("subprocess_run", "import subprocess\nsubprocess.run(['touch', '{pwn}'])", {V},
     ("clone", "vfork", "unknown")),
    ("os_fork", "import os\nos.fork()", {V}, ("clone", "fork")),
    ("os_execv", "import os\nos.execv('/bin/touch', ['touch', '{pwn}'])", {V}, ("execve",)),
    ("socket_connect", "import socket\nsocket.create_connection(('127.0.0.1', {port}))", {V},
     ("socket",)),
    ("socketpair_inet", "import socket\nsocket.socketpair(socket.AF_INET)", {V}, ("socketpair",)),
    ("socket_unix_new", "import socket\nsocket.socket(socket.AF_UNIX).connect('/dev/log')", {V},
     ("socket",)),
    ("socketpair_sendto_address",
     "import socket\na, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)\n"
     "a.sendto(b'<1>pwned', '/dev/log')", {V}, ("sendto",)),
    ("socketpair_send_fd", "import socket\na, b = socket.socketpair()\n"
     "socket.send_fds(a, [b'x'], [0])", {V}, ("sendmsg",)),
    ("os_open_passwd", "import os\nprint(os.read(os.open('/etc/passwd', os.O_RDONLY), 200))",
     {"error"}, ()),
    ("open_canary", "print(open('{canary}').read())", {"error"}, ()),
    ("write_host_file", "open('{pwn}', 'w').write('x')", {"error"}, ()),
    ("list_root", "import os\nprint(sorted(os.listdir('/')))", {"ok", "error"}, ()),
    ("proc_environ", "print(open('/proc/self/environ').read())", {"error"}, ()),
    ("kill_other_pid", "import os\nos.kill(2, 9)", {V}, ("kill",)),
    ("kill_every_process", "import os\nos.kill(-1, 9)", {V}, ("kill",)),
    ("sethostname", "import socket\nsocket.sethostname('pwned')", {V}, ("sethostname",)),
    ("chmod_read_only_path", "import os\nos.chmod('/usr/share/zoneinfo/UTC', 0o777)", {"error"}, ()),
    ("symlink_to_canary", "import os\nos.symlink('{canary}', 'l')\nprint(open('l').read())",
     {"error"}, ()),
    ("chdir_root_then_read", "import os\nos.chdir('/')\nprint(open('etc/passwd').read())",
     {"error"}, ()),
]


@pytest.mark.parametrize("name,code,expected,syscalls", ATTACKS, ids=[a[0] for a in ATTACKS])
def test_the_os_layers_stop_it_without_the_python_layer(bare_python, listener, name, code,
                                                        expected, syscalls):
    ex = bare_python
    pwn = "/tmp/sp-pwned-" + secrets.token_hex(6)
    mode = os.stat("/usr/share/zoneinfo/UTC").st_mode
    r = ex.run(code.format(pwn=pwn, canary=ex.canary_path, port=listener.port), service=ex.profile,
               wall_ms=5000)
    text = r["stdout"] + r["stderr"] + str(r.get("error"))
    assert r["status"] in expected, (r["status"], r.get("error"), r.get("exit"))
    if r["status"] == V:
        assert r["exit"]["reason"] == "seccomp" and r["exit"]["syscall"] in syscalls, r["exit"]
    assert not os.path.exists(pwn), "the attack created a file on the host"
    assert "CANARY-" not in text and ex.secret not in text and "root:x:0:0" not in text
    assert not listener.contacted(), "the attack reached the network"
    assert os.stat("/usr/share/zoneinfo/UTC").st_mode == mode
    if name == "list_root":
        assert r["stdout"] in ("['usr']\n", ""), r["stdout"]


def test_a_job_sees_no_other_process(bare_python):
    # Once every child of a zygote shared its pid namespace: os.getpgid() found the
    # zygote (pid 1) and the other pooled children, other tenants' jobs included.
    r = bare_python.run("import os\nlive = []\nfor pid in range(1, 4096):\n    try:\n"
                        "        os.getpgid(pid)\n        live.append(pid)\n"
                        "    except OSError:\n        pass\nprint(os.getpid(), live, os.getppid())",
                        service=bare_python.profile, wall_ms=10000)
    assert r["status"] == "ok", r.get("error")
    assert r["stdout"] == "1 [1] 0\n"


def test_the_host_name_is_neutral(bare_python):
    r = bare_python.run("import os, socket, platform\n"
                        "print(os.uname().nodename, socket.gethostname(), platform.node())",
                        service=bare_python.profile)
    assert r["status"] == "ok" and r["stdout"] == "sandbox sandbox sandbox\n"


def test_another_jobs_workspace_cannot_be_read_even_by_its_path():
    """Job A prints where its workspace is and waits; job B, told the path, tries to read A's
    file and list A's directory: Landlock gives each child its own directory only (the uid and
    the mount are the same for both)."""
    ex = Executor(disable=("python",), slots=2, profiles="python.filesystem")
    try:
        secret = "A-SECRET-" + secrets.token_hex(4)
        a = ex.submit("import os, time\nopen('secret.txt', 'w').write(%r)\nprint(os.getcwd(), flush=True)\n"
                      "time.sleep(4)" % secret, service="python.filesystem", wall_ms=8000)
        where = ""
        for _ in range(100):
            where = ex.progress(a).strip()
            if where:
                break
            time.sleep(0.05)
        assert where.startswith("/work/"), where
        r = ex.run("import os\nfor f in (lambda: open(%r).read(), lambda: os.listdir(%r),\n"
                   "          lambda: os.listdir('/work')):\n    try:\n        print(f())\n"
                   "    except OSError as e:\n        print(type(e).__name__)" % (where + "/secret.txt", where),
                   service="python.filesystem")
        assert r["status"] == "ok", r.get("error")
        assert secret not in r["stdout"] and r["stdout"] == "PermissionError\n" * 3, r["stdout"]
        assert ex.wait(a)["status"] == "ok"
    finally:
        ex.close()
