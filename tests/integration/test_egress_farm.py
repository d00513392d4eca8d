"""Network egress end to end (`snakepit up` with its own Redis on TCP, so that the farm's Redis
is a port a rule can name): an operator grants a tenant destinations with `snakepit tenant add
--egress`, its jobs reach them through MCP — urllib, requests in python.data_science, HTTPS with
a test CA — and every other destination is refused with the message that names it and says
where the policy is set, without anything reaching the test servers: another tenant without
rules, another port, the farm's own Redis and /metrics, cloud metadata, and a name the test's
resolver points at a denied address. A session made under the policy fetches in one cell and
computes in the next; the execution record, the usage and /metrics show the destinations and
their bytes; a job past its byte cap ends egress_limit with its output so far."""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from egress_servers import CANARY, DnsServer, EchoServer, HttpServer, CertAuthority  # noqa: E402
from farm import BIN, Farm, McpHttp, free_port  # noqa: E402

DS = "python.data_science"


class Servers:
    def __init__(self):
        self.ca = CertAuthority()
        self.http = HttpServer()
        self.https = HttpServer(tls=(self.ca.cert, self.ca.key))
        self.echo = EchoServer()
        self.dns = DnsServer({"canary.test": "127.0.0.1", "meta.rebind.test": "169.254.169.254",
                              "loop.rebind.test": "127.0.0.2"})

    def close(self):
        for s in (self.http, self.https, self.echo, self.dns):
            s.close()
        shutil.rmtree(self.ca.dir, ignore_errors=True)


@pytest.fixture(scope="module")
def servers():
    s = Servers()
    yield s
    s.close()


@pytest.fixture(scope="module")
def redis_port():
    """The farm's Redis on a TCP port of its own (stopped by pid)."""
    port = free_port()
    d = tempfile.mkdtemp(prefix="sp-eg-redis-")
    proc = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1",
                             "--dir", d, "--save", "", "--appendonly", "no"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 20
    while time.time() < deadline:
        try:
            import redis
            if redis.Redis(port=port).ping():
                break
        except Exception:
            time.sleep(0.1)
    yield port
    proc.send_signal(signal.SIGTERM)
    proc.wait(20)
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def farm(servers, redis_port):
    f = Farm(slots=2, extra=["--redis", "redis://127.0.0.1:%d" % redis_port,
                             "--profiles", "python.basic,%s" % DS,
                             "--egress-resolver", "127.0.0.1:%d" % servers.dns.port])
    yield f
    f.stop()


def tenant(farm, name, *args):
    """A new tenant's API key (snakepit tenant add, as an operator types it)."""
    r = subprocess.run([os.path.join(BIN, "snakepit"), "tenant", "add", name, "--state-dir",
                        farm.dir, *args], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def metrics_port(farm, i):
    return int(farm.ready["metrics"][i].rsplit(":", 1)[1].split("/")[0])


@pytest.fixture(scope="module")
def acme(farm, servers, redis_port):
    rules = ["127.0.0.1:%d" % servers.http.port, "127.0.0.1:%d" % servers.https.port,
             "127.0.0.1:%d" % servers.echo.port, "canary.test:%d" % servers.http.port,
             "*.rebind.test", "169.254.169.254:80", "127.0.0.1:%d" % redis_port,
             "127.0.0.1:%d" % metrics_port(farm, 1)]
    key = tenant(farm, "acme", *sum((["--egress", r] for r in rules), []))
    c = McpHttp(farm.url, key)
    c.initialize()
    return c


def run(client, code, **args):
    r = client.call("execute_code", dict(code=code, **args))
    return r["structuredContent"]


def refused(r, dest, tenant="acme"):
    """The clear message: the destination, that the tenant's policy does not allow it, and
    where an operator sets it."""
    msg = r["error"]["message"]
    assert dest in msg, msg
    assert "egress policy of tenant %s" % tenant in msg, msg
    assert "snakepit tenant set %s --egress" % tenant in msg, msg


def test_the_tenant_reads_the_canary_page_with_urllib(acme, servers):
    r = run(acme, "import urllib.request\n"
                  "print(urllib.request.urlopen('http://127.0.0.1:%d/urllib').read().decode())"
            % servers.http.port)
    assert r["status"] == "ok", r
    assert CANARY in r["stdout"] and "/urllib" in servers.http.requests
    dest = r["egress"][0]
    assert dest["host"] == "127.0.0.1" and dest["port"] == servers.http.port
    assert dest["verdict"] == "allowed" and dest["bytes_in"] > len(CANARY)


def test_requests_get_in_data_science(acme, servers):
    r = run(acme, "import requests\nr = requests.get('http://127.0.0.1:%d/requests')\n"
                  "print(r.status_code, r.text)" % servers.http.port, profile=DS, timeout=60)
    assert r["status"] == "ok", r
    assert r["stdout"].startswith("200 " + CANARY)


def test_https_with_the_test_ca(acme, servers):
    r = run(acme, "import ssl, urllib.request\nctx = ssl.create_default_context(cadata=%r)\n"
                  "print(urllib.request.urlopen('https://127.0.0.1:%d/tls', context=ctx).read()"
                  ".decode())" % (servers.ca.pem, servers.https.port))
    assert r["status"] == "ok", r
    assert CANARY in r["stdout"] and "/tls" in servers.https.requests
    # the tunnel carried TLS end to end: the system's CA store is what the sandbox trusts
    r = run(acme, "import ssl\nprint(ssl.create_default_context().cert_store_stats()['x509_ca'] > 0)")
    assert r["stdout"] == "True\n", r


def test_plain_tcp_to_an_allowed_port(acme, servers):
    r = run(acme, "import socket\ns = socket.create_connection(('127.0.0.1', %d))\n"
                  "print(s.recv(6)); s.sendall(b'ping'); print(s.recv(4))" % servers.echo.port)
    assert r["stdout"] == "b'HELLO\\n'\nb'ping'\n", r


def test_a_name_is_resolved_outside_the_sandbox(acme, servers):
    r = run(acme, "import urllib.request\n"
                  "print(urllib.request.urlopen('http://canary.test:%d/byname').read().decode())"
            % servers.http.port)
    assert r["status"] == "ok", r
    assert "canary.test" in servers.dns.asked and "/byname" in servers.http.requests
    assert r["egress"][0]["host"] == "canary.test"


def test_a_tenant_without_rules_is_refused_and_reaches_nothing(farm, servers):
    c = McpHttp(farm.url, tenant(farm, "norules"))
    c.initialize()
    r = run(c, "import urllib.request\nurllib.request.urlopen('http://127.0.0.1:%d/norules')"
            % servers.http.port)
    assert r["status"] == "security_violation", r  # as before: a tenant without rules has no network
    msg = r["error"]["message"]
    assert "http://127.0.0.1:%d/norules" % servers.http.port in msg, msg
    assert "egress policy of tenant norules" in msg and "snakepit tenant set norules --egress" in msg
    assert "/norules" not in servers.http.requests


@pytest.mark.parametrize("what", ["other_port", "redis", "metrics", "metadata", "rebind"])
def test_each_denied_destination_is_refused_clearly_and_reaches_nothing(acme, farm, servers,
                                                                       redis_port, what):
    dest = {"other_port": "127.0.0.1:%d" % (servers.http.port + 1),
            "redis": "127.0.0.1:%d" % redis_port,
            "metrics": "127.0.0.1:%d" % metrics_port(farm, 1),
            "metadata": "169.254.169.254:80",
            "rebind": "meta.rebind.test:80"}[what]
    before = len(servers.http.requests)
    r = run(acme, "import urllib.request\ntry:\n"
                  "    urllib.request.urlopen('http://%s/%s', timeout=10)\n"
                  "except OSError as e:\n    print('refused:', e)\n    raise\n" % (dest, what))
    assert r["status"] == "error", r  # an ordinary error: the job went on to raise it
    refused(r, dest)
    assert r["stdout"].startswith("refused:")
    assert r["egress"][0]["verdict"] == "refused" and r["egress"][0]["bytes_out"] == 0
    # a security event like any other refusal, of the egress layer
    assert [e for e in r["security_events"] if e["layer"] == "egress"] == [
        {"operation": "connect", "target": dest, "layer": "egress", "count": 1}], r
    assert len(servers.http.requests) == before


def test_the_farm_endpoints_reason_and_a_rebound_name_say_why(acme, redis_port, servers):
    r = run(acme, "import urllib.request\nurllib.request.urlopen('http://127.0.0.1:%d/')"
            % redis_port)
    assert "farm's own endpoints" in r["error"]["message"]
    r = run(acme, "import urllib.request\nurllib.request.urlopen('http://loop.rebind.test:%d/')"
            % servers.http.port)
    refused(r, "loop.rebind.test:%d" % servers.http.port)
    assert "resolves to 127.0.0.2" in r["error"]["message"]


def test_network_false_runs_without_network(acme, servers):
    r = run(acme, "import urllib.request\nurllib.request.urlopen('http://127.0.0.1:%d/off')"
            % servers.http.port, network=False)
    assert r["status"] == "security_violation" and "no network" in r["error"]["message"], r
    assert "/off" not in servers.http.requests


def test_a_session_fetches_in_one_cell_and_computes_in_the_next(acme, servers):
    s = acme.call("create_session", {})["structuredContent"]["session_id"]
    try:
        r = run(acme, "import urllib.request\n"
                      "page = urllib.request.urlopen('http://127.0.0.1:%d/session').read().decode()"
                % servers.http.port, session_id=s)
        assert r["status"] == "ok", r
        r = run(acme, "print(len(page.split()), page.split()[0])", session_id=s)
        assert r["status"] == "ok" and r["stdout"].split()[1] == CANARY.split()[0], r
        assert "egress" not in r  # this cell used no network
    finally:
        acme.call("close_session", {"session_id": s})


def test_a_session_resumed_from_its_checkpoint_keeps_its_network(acme, servers):
    """A session idle past its timeout is hibernated; its next cell resumes it on a new
    sandbox, which has its network as before (the session's record says it was made with it)."""
    s = acme.call("create_session", {"idle_timeout": 1})["structuredContent"]["session_id"]
    try:
        assert run(acme, "x = 1", session_id=s)["status"] == "ok"
        deadline = time.time() + 30
        while True:
            rows = [x for x in acme.call("list_sessions", {})["structuredContent"]["sessions"]
                    if x["session_id"] == s]
            if rows and rows[0].get("state") == "hibernated":
                break
            assert time.time() < deadline, rows
            time.sleep(0.3)
        r = run(acme, "import urllib.request\n"
                      "print(x, urllib.request.urlopen('http://127.0.0.1:%d/resumed').status)"
                % servers.http.port, session_id=s)
        assert r["status"] == "ok" and r["stdout"] == "1 200\n", r
        assert r["session"]["resumed"]["from_cell"] == 1, r["session"]
    finally:
        acme.call("close_session", {"session_id": s})


def test_the_record_the_usage_and_the_metrics_show_destinations_and_bytes(acme, farm, servers,
                                                                         redis_port):
    r = run(acme, "import urllib.request\nurllib.request.urlopen('http://127.0.0.1:%d/rec').read()"
            % servers.http.port)
    got = acme.call("get_execution", {"execution_id": r["execution_id"]})["structuredContent"]
    assert got["egress_bytes_in"] > 0 and got["egress_connections"] == 1, got
    dest = got["result"]["egress"][0]
    assert (dest["host"], dest["port"], dest["verdict"]) == ("127.0.0.1", servers.http.port,
                                                             "allowed")
    assert dest["bytes_in"] > 0 and dest["bytes_out"] > 0
    day = time.strftime("%Y%m%d", time.gmtime())
    import redis
    use = redis.Redis(port=redis_port, decode_responses=True).hgetall("sp:t:acme:use:%s" % day)
    assert int(use.get("egress_bytes_in", 0)) > 0 and int(use.get("egress_refused", 0)) > 0, use
    # the egress process reports its counters once a second: poll, bounded
    for _ in range(100):
        text = urllib.request.urlopen(farm.ready["metrics"][1], timeout=10).read().decode()
        lines = {l.split(" ")[0]: float(l.split(" ")[1]) for l in text.splitlines()
                 if l.startswith("snakepit_executor_egress_")}
        if lines['snakepit_executor_egress_connections_total{result="refused"}'] > 0:
            break
        time.sleep(0.1)
    assert lines['snakepit_executor_egress_connections_total{result="allowed"}'] > 0
    assert lines['snakepit_executor_egress_connections_total{result="refused"}'] > 0
    assert lines['snakepit_executor_egress_bytes_total{direction="in"}'] > 0
    assert lines["snakepit_executor_egress_up"] == 1
    # the front-end counts the refusals with the sandbox's others (the code went on: caught)
    text = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % farm.port, timeout=10).read()
    assert any(l.startswith('snakepit_mcp_security_events_total{layer="egress",outcome="caught"} ')
               and float(l.rsplit(" ", 1)[1]) > 0 for l in text.decode().splitlines()), text


def test_a_job_over_its_byte_cap_is_stopped_with_its_output_so_far(farm, servers):
    c = McpHttp(farm.url, tenant(farm, "capped", "--egress", "127.0.0.1:%d" % servers.http.port,
                                 "--egress-max-bytes", "50000"))
    c.initialize()
    r = run(c, "import urllib.request\nprint('fetching', flush=True)\n"
               "data = urllib.request.urlopen('http://127.0.0.1:%d/big').read()\nprint('never')"
            % servers.http.port)
    assert r["status"] == "egress_limit", r
    assert r["stdout"] == "fetching\n"
    assert r["error"]["type"] == "EgressLimit"
    assert r["egress"][0]["bytes_in"] <= 50000


def test_get_sandbox_info_shows_the_tenant_its_own_policy(acme, servers):
    info = acme.call("get_sandbox_info", {})["structuredContent"]
    rules = info["tenant"]["egress"]["rules"]
    assert "127.0.0.1:%d" % servers.http.port in rules and "*.rebind.test" in rules
