"""Attacks on network egress, against a real executor node driven as its broker would (harness.py):
what a child pooled for jobs with egress still refuses, what a job without egress never gets,
and what the egress process does with credentials that are not the job's and with requests
that do not parse. Every attack is followed by an ordinary job, which must still work: a
hostile request ends its own connection and nothing else."""
import os
import sys
import time

import pytest

from harness import Executor

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from egress_servers import CANARY, HttpServer  # noqa: E402

V = "security_violation"


@pytest.fixture(scope="module")
def server():
    s = HttpServer()
    yield s
    s.close()


@pytest.fixture(scope="module")
def node():
    ex = Executor(slots=2, profiles="python.basic,python.filesystem")
    yield ex
    ex.close()


@pytest.fixture(scope="module")
def bare_python():
    """The Python layer off: what the OS layers alone do with an egress child's calls."""
    ex = Executor(slots=1, disable=("python",))
    yield ex
    ex.close()


def grant(server, *more):
    return {"rules": ["127.0.0.1:%d" % server.port, *more], "max_bytes": 0, "max_conns": 0}


def fetch_ok(node, server):
    r = node.run("import urllib.request\nprint(urllib.request.urlopen('http://127.0.0.1:%d/ok')"
                 ".read().decode())" % server.port, tenant="acme", egress=grant(server))
    assert r["status"] == "ok" and CANARY in r["stdout"], (r, node.output()[-2000:])


ATTACKS = {
    "unix": "import socket\nsocket.socket(socket.AF_UNIX).connect('/dev/log')",
    "packet": "import socket\nsocket.socket(socket.AF_PACKET, socket.SOCK_RAW)",
    "netlink": "import socket\nsocket.socket(socket.AF_NETLINK, socket.SOCK_RAW)",
    "bind": "import socket\ns = socket.socket()\ns.bind(('127.0.0.1', 0))",
    "listen": "import socket\ns = socket.socket()\ns.listen()",
    "send_fds": "import socket\na, b = socket.socketpair()\nsocket.send_fds(a, [b'x'], [0])",
}
SYSCALL = {"unix": "socket", "packet": "socket", "netlink": "socket", "bind": "bind",
           "listen": "listen", "send_fds": "sendmsg"}


@pytest.mark.parametrize("what", sorted(ATTACKS))
def test_an_egress_child_still_refuses_everything_but_a_tcp_client(node, server, what):
    r = node.run(ATTACKS[what], tenant="acme", egress=grant(server))
    assert r["status"] == V, r
    fetch_ok(node, server)


@pytest.mark.parametrize("what", sorted(ATTACKS))
def test_the_os_layers_alone_refuse_the_same(bare_python, server, what):
    r = bare_python.run(ATTACKS[what], tenant="acme", egress=grant(server))
    assert r["status"] == V and r["exit"]["syscall"] == SYSCALL[what], r
    fetch_ok(bare_python, server)


def test_an_inet_socket_of_another_type_fails_cleanly(bare_python, server):
    r = bare_python.run("import socket\ntry:\n    socket.socket(socket.AF_INET, socket.SOCK_RAW, 1)\n"
                        "except PermissionError as e:\n    print('refused', e.errno)",
                        tenant="acme", egress=grant(server))
    assert r["status"] == "ok" and r["stdout"] == "refused 13\n", r


def test_udp_fails_cleanly_and_reaches_nothing(node, server):
    r = node.run("import socket\ntry:\n    socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
                 "except PermissionError as e:\n    print('refused', e.errno)",
                 tenant="acme", egress=grant(server))
    assert r["status"] == "ok" and r["stdout"] == "refused 13\n", r


def test_landlock_keeps_a_direct_connect_to_the_proxy_port(node, server):
    """Bypassing the runner's tunnel: the socket's own connect may reach only the proxy's port
    in the zygote's namespace (and there is nothing else in it)."""
    r = node.run("import socket, sys, errno\nraw = sys.modules['socket']._socket.socket.connect\n"
                 "s = socket.socket()\ntry:\n    raw(s, ('127.0.0.1', %d))\n"
                 "except OSError as e:\n    print(errno.errorcode[e.errno])" % server.port,
                 tenant="acme", egress=grant(server))
    assert r["status"] == "ok" and r["stdout"] in ("EACCES\n", "ECONNREFUSED\n"), r


@pytest.mark.parametrize("opt", ["socket.SOL_SOCKET, 26, b'x' * 16",  # SO_ATTACH_FILTER
                                 "socket.IPPROTO_TCP, 31, b'tls'"],
                         ids=["attach_filter", "tcp_ulp"])
def test_dangerous_socket_options_are_refused(node, server, opt):
    r = node.run("import socket\ns = socket.socket()\ntry:\n    s.setsockopt(%s)\n"
                 "except OSError as e:\n    print('refused', e.errno)" % opt,
                 tenant="acme", egress=grant(server))
    assert r["status"] == "ok" and r["stdout"] == "refused 1\n", r


def test_no_credentials_or_garbage_get_407_and_400_and_the_proxy_lives_on(node, server):
    code = ("import socket, sys, os\nraw = sys.modules['socket']._socket.socket.connect\n"
            "def ask(data):\n    s = socket.socket(); raw(s, ('127.0.0.1', 3128)); s.sendall(data)\n"
            "    out = b''\n    while True:\n        b = s.recv(4096)\n        if not b: break\n"
            "        out += b\n    return out.split(b'\\r\\n')[0].decode()\n"
            "print(ask(b'CONNECT 127.0.0.1:%d HTTP/1.1\\r\\n\\r\\n'))\n"
            "print(ask(b'CONNECT 127.0.0.1:%d HTTP/1.1\\r\\nProxy-Authorization: Basic am9iOnh4\\r\\n\\r\\n'))\n"
            "print(ask(b'\\x00\\xff garbage\\r\\n\\r\\n'))\n"
            "print(ask(b'GET http://a.b/ HTTP/1.1\\nHost: x\\n\\n'))\n" % (server.port, server.port))
    before = len(server.requests)
    r = node.run(code, tenant="acme", egress=grant(server))
    assert r["status"] == "ok", r
    lines = r["stdout"].splitlines()
    assert lines[0].startswith("HTTP/1.1 407") and lines[1].startswith("HTTP/1.1 407"), lines
    assert lines[2].startswith("HTTP/1.1 400") and lines[3].startswith("HTTP/1.1 400"), lines
    assert len(server.requests) == before
    fetch_ok(node, server)


def test_a_jobs_credentials_die_with_it(node, server):
    """One job's secret, read from its environment, is worthless once it ended: the next job
    (another tenant's, with egress of its own) is refused with it."""
    r = node.run("import os\nprint(os.environ['HTTP_PROXY'])", tenant="acme", egress=grant(server))
    stolen = r["stdout"].strip()
    assert stolen.startswith("http://job:"), r
    before = len(server.requests)
    r = node.run("import urllib.request\nopener = urllib.request.build_opener("
                 "urllib.request.ProxyHandler({'http': %r}))\n"
                 "opener.open('http://127.0.0.1:%d/stolen')" % (stolen, server.port),
                 tenant="mallory", egress=grant(server))
    assert r["status"] == "error" and "has no network" in r["error"]["message"], r
    assert len(server.requests) == before


def test_credentials_work_only_through_their_own_zygotes_listener(node, server):
    """A live job's secret cannot be used from another profile's sandbox (another namespace,
    another listener): the grant names the listener its job's zygote owns."""
    sub = node.submit("import os, time\nprint(os.environ['HTTP_PROXY'], flush=True)\n"
                      "time.sleep(8)", tenant="acme", egress=grant(server), wall_ms=20000)
    secret = None
    for _ in range(200):
        text = node.progress(sub)
        if text.strip():
            secret = text.strip()
            break
        time.sleep(0.05)
    assert secret, "the first job printed no proxy URL"
    before = len(server.requests)
    r = node.run("import urllib.request\nopener = urllib.request.build_opener("
                 "urllib.request.ProxyHandler({'http': %r}))\n"
                 "opener.open('http://127.0.0.1:%d/cross')" % (secret, server.port),
                 service="python.filesystem", tenant="mallory", egress=grant(server))
    assert r["status"] == "error" and "has no network" in r["error"]["message"], r
    assert len(server.requests) == before
    node.wait(sub, 30)


def test_a_job_without_egress_has_no_proxy_and_no_certificates(node, server):
    r = node.run("import os\nprint(sorted(k for k in os.environ if 'proxy' in k.lower()))",
                 tenant="acme")
    assert r["stdout"] == "[]\n", r
    fs = "python.filesystem"
    r = node.run("open('/usr/lib/ssl/certs/ca-certificates.crt').read()", tenant="acme",
                 service=fs)
    assert r["status"] in (V, "error") and "PermissionError" in r["error"]["type"], r
    r = node.run("import os\nprint(len(open(os.environ['SSL_CERT_FILE']).read()) > 0)",
                 tenant="acme", egress=grant(server), service=fs)
    assert r["stdout"] == "True\n", r


def test_a_session_made_without_network_never_gets_it(node, server):
    sid = node.new_session(tenant="acme")
    r = node.run("import urllib.request\nurllib.request.urlopen('http://127.0.0.1:%d/late')"
                 % server.port, tenant="acme", session=sid, egress=grant(server))
    assert r["status"] == V and "no network" in r["error"]["message"], r


def test_a_cell_without_a_grant_in_a_session_with_network_has_none(node, server):
    import uuid
    sid = uuid.uuid4().bytes
    r = node.run("", kind="session_new", tenant="acme", new_session=sid, egress=grant(server))
    assert r["status"] == "ok", r
    r = node.run("import urllib.request\nprint(urllib.request.urlopen('http://127.0.0.1:%d/cell1')"
                 ".read().decode())" % server.port, tenant="acme", session=sid, egress=grant(server))
    assert CANARY in r["stdout"], r
    before = len(server.requests)
    r = node.run("import urllib.request\nurllib.request.urlopen('http://127.0.0.1:%d/cell2')"
                 % server.port, tenant="acme", session=sid)
    assert r["status"] == V and "no network" in r["error"]["message"], r
    assert len(server.requests) == before
