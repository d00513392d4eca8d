"""Network egress as a job's ordinary code meets it, on a real executor node driven as its broker
would: the proxy in the environment, plain TCP and asyncio through tunnels, names resolved by
the egress process (a resolver the test controls), what refusals look like to each client, and
the byte cap in a one-off job and in a session's cell (which lives on)."""
import os
import sys
import uuid

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "security"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from harness import Executor  # noqa: E402
from egress_servers import CANARY, DnsServer, EchoServer, HttpServer  # noqa: E402


@pytest.fixture(scope="module")
def env():
    http, echo = HttpServer(), EchoServer()
    dns = DnsServer({"canary.test": "127.0.0.1", "echo.test": "127.0.0.1"})
    ex = Executor(slots=2, profiles="python.basic,python.data_science",
                  extra=["--egress-resolver", "127.0.0.1:%d" % dns.port])
    yield ex, http, echo, dns
    ex.close()
    for s in (http, echo, dns):
        s.close()


def rules(http, echo, **caps):
    return {"rules": ["127.0.0.1:%d" % http.port, "127.0.0.1:%d" % echo.port,
                      "*.test:%d" % http.port, "echo.test:%d" % echo.port], **caps}


def test_the_job_sees_its_proxy_and_the_ca_store(env):
    ex, http, echo, _ = env
    r = ex.run("import os\nprint(sorted(k for k in os.environ if 'PROXY' in k or 'CERT' in k))\n"
               "print(os.environ['HTTPS_PROXY'].startswith('http://job:'))",
               tenant="acme", egress=rules(http, echo))
    assert r["stdout"] == ("['ALL_PROXY', 'HTTPS_PROXY', 'HTTP_PROXY', 'SSL_CERT_DIR', "
                           "'SSL_CERT_FILE']\nTrue\n"), r


def test_asyncio_open_connection_by_address_and_by_name(env):
    ex, http, echo, dns = env
    for host in ("127.0.0.1", "echo.test"):
        r = ex.run("import asyncio\nasync def main():\n"
                   "    r, w = await asyncio.open_connection(%r, %d)\n"
                   "    print((await r.readline()).decode().strip())\n"
                   "    w.write(b'pong\\n'); await w.drain()\n"
                   "    print((await r.readline()).decode().strip())\n"
                   "asyncio.run(main())" % (host, echo.port), tenant="acme",
                   egress=rules(http, echo))
        assert r["status"] == "ok" and r["stdout"] == "HELLO\npong\n", r
    assert "echo.test" in dns.asked


def test_a_name_gets_a_placeholder_in_the_sandbox_and_the_real_lookup_outside(env):
    ex, http, echo, dns = env
    r = ex.run("import socket\nprint(socket.getaddrinfo('canary.test', 80)[0][4][0])\n"
               "try:\n    socket.gethostbyname('canary.test')\n"
               "except PermissionError as e:\n    print('refused:', e)",
               tenant="acme", egress=rules(http, echo))
    lines = r["stdout"].splitlines()
    assert lines[0].startswith("198.18."), r
    assert lines[1].startswith("refused:") and "connect by name" in lines[1], r


def test_requests_raises_on_a_refused_plain_http_destination(env):
    ex, http, echo, _ = env
    r = ex.run("import requests\ntry:\n    requests.get('http://127.0.0.2:%d/x', timeout=10)\n"
               "except requests.RequestException as e:\n    print('refused:', e)" % http.port,
               service="python.data_science", tenant="acme", egress=rules(http, echo),
               wall_ms=30000)
    assert r["status"] == "ok" and r["stdout"].startswith("refused:"), r
    assert "egress to 127.0.0.2:%d refused" % http.port in r["stdout"]
    assert "egress policy of tenant acme" in r["stdout"]


def test_a_job_that_uses_no_network_has_no_egress_list(env):
    ex, http, echo, _ = env
    r = ex.run("print(1)", tenant="acme", egress=rules(http, echo))
    assert r["status"] == "ok" and "egress" not in r, r


def test_a_tunnel_that_fails_says_why(env):
    ex, http, echo, _ = env
    r = ex.run("import socket\nsocket.create_connection(('nowhere.test', %d))" % http.port,
               tenant="acme", egress=rules(http, echo))
    assert r["status"] == "error" and "does not resolve" in r["error"]["message"], r
    assert r["egress"][0]["verdict"] == "failed"


def test_a_session_cell_past_its_cap_stops_and_the_session_lives_on(env):
    ex, http, echo, _ = env
    sid = uuid.uuid4().bytes
    cap = rules(http, echo, max_bytes=50000)
    assert ex.run("", kind="session_new", tenant="acme", new_session=sid,
                  egress=cap)["status"] == "ok"
    r = ex.run("import urllib.request\nx = 41\nprint('start', flush=True)\n"
               "urllib.request.urlopen('http://127.0.0.1:%d/big').read()" % http.port,
               tenant="acme", session=sid, egress=cap, wall_ms=20000)
    assert r["status"] == "egress_limit" and r["stdout"] == "start\n", r
    assert r["session"]["alive"], r["session"]
    r = ex.run("print(x + 1)\nimport urllib.request\n"
               "print(urllib.request.urlopen('http://127.0.0.1:%d/small').read().decode())"
               % http.port, tenant="acme", session=sid, egress=cap)
    assert r["status"] == "ok" and r["stdout"].startswith("42\n" + CANARY), r
    ex.run("", kind="session_close", tenant="acme", session=sid)
