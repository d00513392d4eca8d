"""snakepit-mcp --stdio as a local MCP client runs it: newline-delimited JSON on stdin and
stdout, nothing but protocol on stdout, logs on stderr, the --tenant identity without a key,
malformed lines answered and survived, a clean exit on EOF."""
import json
import os
import select
import subprocess
import time

import pytest

from fe_harness import Frontend


@pytest.fixture(scope="module")
def fe():
    f = Frontend(stdio=True)
    f.add_tenant("desk", "desk-key", rate="1000", burst="1000")
    yield f
    f.stop()


class Stdio:
    def __init__(self, fe, *extra):
        args = [a for a in fe.mcp_args if not a.startswith("--http") and not a.startswith("127.0.0.1:")]
        self.stderr = open(os.path.join(fe.dir, "stdio.err"), "ab")
        self.p = subprocess.Popen(args + ["--stdio", "--tenant", "desk", *extra], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=self.stderr)
        self.buf = b""
        self.lines = []

    def send(self, obj):
        data = obj if isinstance(obj, bytes) else json.dumps(obj).encode() + b"\n"
        self.p.stdin.write(data)
        self.p.stdin.flush()

    def read(self, timeout=10):
        deadline = time.time() + timeout
        while b"\n" not in self.buf:
            left = deadline - time.time()
            assert left > 0, "no line from the server"
            r, _, _ = select.select([self.p.stdout], [], [], left)
            if r:
                chunk = os.read(self.p.stdout.fileno(), 65536)
                assert chunk, "stdout closed"
                self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        self.lines.append(line)
        return json.loads(line)

    def until_id(self, id_):
        while True:
            m = self.read()
            if m.get("id") == id_:
                return m

    def close(self):
        self.p.stdin.close()
        rc = self.p.wait(15)
        self.stderr.close()
        return rc


def initialize(s):
    s.send({"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
    r = s.until_id(0)
    s.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    return r


def test_stdio_session_runs_code_as_the_tenant(fe):
    s = Stdio(fe)
    assert initialize(s)["result"]["protocolVersion"] == "2025-11-25"
    s.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "execute_code", "arguments": {"code": "print(3)"}, "_meta": {"progressToken": 9}}})
    r = s.until_id(1)
    assert r["result"]["structuredContent"]["status"] == "ok"
    assert any(json.loads(l).get("method") == "notifications/progress" for l in s.lines)
    eid = r["result"]["structuredContent"]["execution_id"]
    assert s.close() == 0
    time.sleep(0.2)
    assert fe.redis().hget("sp:exec:" + eid, "tenant") == "desk"


def test_stdio_requests_before_initialize_are_refused(fe):
    s = Stdio(fe)
    s.send({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert s.until_id(1)["error"]["code"] == -32600
    s.send({"jsonrpc": "2.0", "id": 2, "method": "ping"})  # ping is allowed any time
    assert s.until_id(2)["result"] == {}
    assert s.close() == 0


@pytest.mark.parametrize("line,code", [
    (b"{\n", -32700), (b"\xff\xfe\n", -32700), (b"[1,2]\n", -32600), (b'{"jsonrpc":"2.0","id":1}\n', -32600),
    (b'{"jsonrpc":"2.0","id":1,"method":"pi\\u0000ng"}\n', -32700), (b"null\n", -32600),
])
def test_stdio_malformed_lines_get_errors_and_the_session_goes_on(fe, line, code):
    s = Stdio(fe)
    initialize(s)
    s.send(line)
    err = s.read()
    assert err["error"]["code"] == code and err["id"] is None or err.get("id") == 1
    s.send({"jsonrpc": "2.0", "id": 5, "method": "ping"})
    assert s.until_id(5)["result"] == {}
    assert s.close() == 0


def test_stdio_line_over_the_limit(fe):
    s = Stdio(fe, "--max-body", "4096")
    initialize(s)
    s.send(b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"' + b"a" * 10000 + b'"}}\n')
    assert s.read()["error"]["code"] == -32600
    s.send({"jsonrpc": "2.0", "id": 2, "method": "ping"})
    assert s.until_id(2)["result"] == {}
    assert s.close() == 0


def test_stdout_carries_protocol_only(fe):
    s = Stdio(fe, "--log-level", "debug")
    initialize(s)
    for i in range(3):
        s.send({"jsonrpc": "2.0", "id": 10 + i, "method": "tools/call",
                "params": {"name": "execute_code", "arguments": {"code": "#status error"}}})
        s.until_id(10 + i)
    s.send(b"garbage\n")
    s.read()
    s.p.stdin.close()
    rest = s.p.stdout.read()
    assert s.p.wait(15) == 0
    for line in s.lines + [l for l in rest.split(b"\n") if l]:
        assert json.loads(line)["jsonrpc"] == "2.0"


def test_eof_with_a_call_in_flight_answers_it_then_exits(fe):
    s = Stdio(fe)
    initialize(s)
    s.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "execute_code", "arguments": {"code": "#sleep 0.5"}}})
    s.p.stdin.close()
    out = s.p.stdout.read()
    assert s.p.wait(15) == 0
    assert any(json.loads(l).get("id") == 1 for l in out.split(b"\n") if l)
