"""tests/cli/clilib.py — running the `snakepit` command in tests, and a scripted stand-in for an
MCP endpoint (FakeMcp) for what a real farm cannot be made to answer on demand: every job
status, malformed answers, 401/429/503, and for seeing exactly what the CLI sent.

Kept out of conftest.py so that tests import it by name (tests/integration and tests/ops have
conftest modules of their own)."""
import json
import os
import ssl
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
from farm import BIN, Farm, free_port  # noqa: E402,F401  (re-exported)

SNAKEPIT = os.path.join(BIN, "snakepit")

# the exit status for each job status (docs/cli.md, snakepit run --help)
EXIT = {"ok": 0, "error": 1, "syntax_error": 2, "timeout": 3, "cpu_limit": 4, "memory_limit": 5,
        "output_limit": 6, "security_violation": 7, "cancelled": 8, "rejected": 9, "lost": 10,
        "internal_error": 11, "egress_limit": 12}
EX_USAGE, EX_UNAVAILABLE, EX_CANTCREAT, EX_NOPERM = 64, 69, 73, 77


def snakepit(*args, env=None, input=None, cwd=None, timeout=120):
    """Runs `snakepit ARGS` with the environment given on top of a clean one (no SNAKEPIT_*
    from the caller's shell)."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("SNAKEPIT_")}
    base.update(env or {})
    return subprocess.run([SNAKEPIT, *args], capture_output=True, text=True, env=base,
                          input=input, cwd=cwd, timeout=timeout)


def structured(status="ok", **fields):
    """An execute_code structuredContent of the front-end's shape."""
    s = {"execution_id": "01900000-0000-7000-8000-000000000000", "status": status, "stdout": "",
         "stderr": "", "truncated": {"stdout": False, "stderr": False, "images": False,
                                     "files": False},
         "result": None, "variables": {}, "error": None,
         "timings": {"queue_ms": 0.1, "wall_ms": 0.34599999999999997, "cpu_ms": 0.2},
         "resources": {"max_rss_kb": 1000}, "exit": {"reason": "exit", "signal": None,
                                                     "syscall": None},
         "images": [], "files": []}
    s.update(fields)
    return s


def tool_result(s, content=None):
    status = s.get("status", "ok")
    return {"content": content or [{"type": "text", "text": "status: %s" % status}],
            "structuredContent": s, "isError": status != "ok"}


class FakeMcp:
    """An MCP endpoint on a free loopback port. `answer(msg)` decides each tools/call answer:
    it returns (http_status, body_dict, headers) — by default an ok result. Every request is
    kept in `requests` as (method, headers, json_body)."""

    def __init__(self, answer=None, tls=None):
        self.requests = []
        self.answer = answer or (lambda msg: (200, {"jsonrpc": "2.0", "id": msg["id"],
                                                    "result": tool_result(structured())}, {}))
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def _reply(self, status, body=None, headers=None):
                data = json.dumps(body).encode() if body is not None else b""
                self.send_response(status)
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                if data:
                    self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                fake.requests.append(("POST", dict(self.headers), body))
                if body.get("method") == "initialize":
                    return self._reply(200, {"jsonrpc": "2.0", "id": body["id"], "result": {
                        "protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                        "serverInfo": {"name": "fake", "version": "0"}}},
                        {"Mcp-Session-Id": "fake-session-1"})
                if "id" not in body:
                    return self._reply(202)
                status, reply, headers = fake.answer(body)
                self._reply(status, reply, headers)

            def do_DELETE(self):
                fake.requests.append(("DELETE", dict(self.headers), None))
                self._reply(200)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        if tls:  # (certificate, key) files: https
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(*tls)
            self.server.socket = ctx.wrap_socket(self.server.socket, server_side=True)
        self.url = "%s://127.0.0.1:%d/mcp" % ("https" if tls else "http",
                                              self.server.server_address[1])
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def calls(self):
        return [b for m, _, b in self.requests if m == "POST" and b.get("method") == "tools/call"]

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


def answer_with(result=None, error=None, status=200, headers=None):
    """An `answer` for FakeMcp that always gives this result or JSON-RPC error."""
    def answer(msg):
        body = {"jsonrpc": "2.0", "id": msg["id"]}
        body.update({"error": error} if error else {"result": result})
        return status, body, headers or {}
    return answer


def self_signed(directory, names="IP:127.0.0.1,DNS:localhost"):
    """A certificate for these names, and its key: (cert path, key path)."""
    os.makedirs(directory, exist_ok=True)
    cert, key = os.path.join(directory, "cert.pem"), os.path.join(directory, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key,
                    "-out", cert, "-days", "2", "-subj", "/CN=snakepit-test",
                    "-addext", "subjectAltName=" + names],
                   check=True, capture_output=True)
    return cert, key
