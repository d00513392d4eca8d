"""HTTPS with --tls-cert/--tls-key, and the refusal to serve plain HTTP off loopback unless the
operator says a TLS-terminating proxy is in front (--allow-remote)."""
import os
import shutil
import ssl
import subprocess
import http.client
import json

import pytest

from fe_harness import BIN, Frontend, free_port, wait_for


@pytest.fixture(scope="module")
def cert(tmp_path_factory):
    if not shutil.which("openssl"):
        pytest.skip("openssl is not installed")
    d = tmp_path_factory.mktemp("tls")
    key, crt = str(d / "key.pem"), str(d / "cert.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", crt,
                    "-days", "2", "-subj", "/CN=localhost"], check=True, capture_output=True)
    return crt, key


def test_https_serves_mcp(cert):
    crt, key = cert
    fe = Frontend(extra=["--tls-cert", crt, "--tls-key", key, "--anonymous-tenant", "tls"], stdio=True)
    port = free_port()
    args = [("127.0.0.1:%d" % port if a == "127.0.0.1:%d" % fe.port else a) for a in fe.mcp_args]
    fe._spawn("mcp", args)
    ctx = ssl.create_default_context(cafile=crt)
    ctx.check_hostname = False

    def ok():
        c = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=3)
        c.request("GET", "/healthz")
        return json.loads(c.getresponse().read())["ok"]

    try:
        wait_for(ok, 15, "the HTTPS endpoint")
        c = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=5)
        c.request("POST", "/mcp", body=json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}),
                  headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
        r = c.getresponse()
        assert r.status == 200 and json.loads(r.read())["result"]["serverInfo"]["name"] == "snakepit"
        plain = http.client.HTTPConnection("127.0.0.1", port, timeout=3)
        with pytest.raises(Exception):
            plain.request("GET", "/healthz")
            plain.getresponse().read()
    finally:
        fe.stop()


def test_plain_http_off_loopback_is_refused_without_allow_remote():
    p = subprocess.run([os.path.join(BIN, "snakepit-mcp"), "--http", "0.0.0.0:%d" % free_port(), "--redis",
                        "redis://127.0.0.1:1"], capture_output=True, text=True, timeout=20)
    assert p.returncode != 0 and "--allow-remote" in p.stderr


def test_anonymous_tenant_is_loopback_only():
    p = subprocess.run([os.path.join(BIN, "snakepit-mcp"), "--http", "0.0.0.0:%d" % free_port(), "--allow-remote",
                        "--anonymous-tenant", "x", "--redis", "redis://127.0.0.1:1"],
                       capture_output=True, text=True, timeout=20)
    assert p.returncode != 0 and "loopback" in p.stderr
