"""tests/integration/farm.py — start and stop a real farm for tests, and talk MCP to it.

A farm is `snakepit up` in a fresh state directory: a private redis-server on a unix socket,
the broker, an executor node and the MCP front-end on a free loopback port. Everything is
stopped by pid (the `up` process stops its own components), never by name.
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

BIN = os.environ.get("SNAKEPIT_BIN") or os.path.join(
    os.path.dirname(__file__), "..", "..", "build", "bin")
BIN = os.path.abspath(BIN)


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from ports import free_port  # noqa: E402,F401  (below the ephemeral range; re-exported)


class Farm:
    """state_dir: an existing state directory (a farm started again on it); default_ports:
    leave the MCP and metrics ports to `snakepit up`'s defaults, as a user would."""

    def __init__(self, slots=2, extra=(), state_dir=None, default_ports=False):
        # unix socket paths are limited to 108 bytes: keep the state dir short
        self.dir = state_dir or tempfile.mkdtemp(prefix="sp-", dir="/tmp")
        self.port = free_port()
        ports = [] if default_ports else ["--http", "127.0.0.1:%d" % self.port, "--metrics-port", "0"]
        self.log = open(os.path.join(self.dir, "up.out"), "a")
        self.proc = subprocess.Popen(
            [os.path.join(BIN, "snakepit"), "up", "--state-dir", self.dir, *ports,
             "--slots", str(slots), *extra],
            stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        self.ready = self._wait_ready(120)
        self.url = self.ready["url"]
        self.api_key = self.ready["api_key"]
        self.redis_socket = self.ready["redis"].split("://", 1)[1].split("?")[0]

    def _wait_ready(self, timeout):
        path = os.path.join(self.dir, "ready.json")
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("snakepit up exited with %s:\n%s" % (self.proc.returncode, self.output()))
            if os.path.exists(path):
                with open(path) as f:
                    return json.load(f)
            time.sleep(0.1)
        self.stop()
        raise RuntimeError("farm not ready in %ss:\n%s" % (timeout, self.output()))

    def output(self):
        if not self.log.closed:
            self.log.flush()
        with open(os.path.join(self.dir, "up.out")) as f:
            return f.read()

    def component_log(self, name):
        try:
            with open(os.path.join(self.dir, "logs", name + ".log")) as f:
                return f.read()
        except OSError:
            return ""

    def redis(self):
        import redis
        return redis.Redis(unix_socket_path=self.redis_socket, decode_responses=True)

    def child_pids(self):
        """Every process in the `up` process's session (its components and their children)."""
        sid = os.getsid(self.proc.pid)
        pids = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open("/proc/%s/stat" % entry) as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                if int(fields[3]) == sid and int(entry) != self.proc.pid:
                    pids.append(int(entry))
            except (OSError, IndexError, ValueError):
                pass
        return pids

    def sanitizer_reports(self):
        """ASan/UBSan reports in any component's log (a sanitizer build aborts the component,
        and `snakepit up` would quietly restart it: the tests look)."""
        found = []
        logs = os.path.join(self.dir, "logs")
        for name in sorted(os.listdir(logs)) if os.path.isdir(logs) else []:
            text = self.component_log(name[:-4]) if name.endswith(".log") else ""
            for marker in ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:"):
                if marker in text:
                    found.append("%s: %s" % (name, text[text.index(marker):][:2000]))
        return found

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    def stop(self, timeout=30):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)  # our own session only
                self.proc.wait()
        self.log.close()
        reports = self.sanitizer_reports()
        assert not reports, "sanitizer reports:\n" + "\n".join(reports)


class McpError(Exception):
    def __init__(self, status, body):
        super().__init__("HTTP %s: %s" % (status, body))
        self.status = status
        self.body = body


class McpHttp:
    """A minimal Streamable HTTP MCP client: JSON or SSE answers, session header kept."""

    def __init__(self, url, api_key, protocol="2025-11-25"):
        self.url = url
        self.api_key = api_key
        self.protocol = protocol
        self.session = None
        self.next_id = 1

    def post_all(self, body):
        """Every JSON-RPC message of an answer (an SSE stream carries notifications first)."""
        status, headers, payload = self.post(body, raw=True)
        assert status == 200, (status, payload)
        if not headers.get("Content-Type", "").startswith("text/event-stream"):
            return [json.loads(payload)]
        out = []
        for block in payload.decode().split("\n\n"):
            data = [l[5:].lstrip() for l in block.split("\n") if l.startswith("data:")]
            if data:
                out.append(json.loads("\n".join(data)))
        return out

    def post(self, body, headers=None, raw=False):
        data = body if isinstance(body, (bytes, bytearray)) else json.dumps(body).encode()
        h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        if self.api_key:
            h["Authorization"] = "Bearer " + self.api_key
        if self.session:
            h["Mcp-Session-Id"] = self.session
        if self.session and self.protocol:
            h["MCP-Protocol-Version"] = self.protocol
        h.update(headers or {})
        req = urllib.request.Request(self.url, data=data, headers=h, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=60) as resp:
                status, rh, payload = resp.status, dict(resp.headers), resp.read()
        except urllib.error.HTTPError as e:
            status, rh, payload = e.code, dict(e.headers), e.read()
        if raw:
            return status, rh, payload
        if status >= 400:
            raise McpError(status, payload.decode(errors="replace"))
        if rh.get("Mcp-Session-Id"):
            self.session = rh["Mcp-Session-Id"]
        if not payload:
            return None
        if rh.get("Content-Type", "").startswith("text/event-stream"):
            messages = []
            for block in payload.decode().split("\n\n"):
                data = [l[5:].lstrip() for l in block.split("\n") if l.startswith("data:")]
                if data:
                    messages.append(json.loads("\n".join(data)))
            return messages[-1] if messages else None
        return json.loads(payload)

    def request(self, method, params=None):
        rid = self.next_id
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        return self.post(msg)

    def initialize(self):
        r = self.request("initialize", {"protocolVersion": self.protocol, "capabilities": {},
                                        "clientInfo": {"name": "snakepit-tests", "version": "1"}})
        self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return r

    def call(self, tool, arguments):
        r = self.request("tools/call", {"name": tool, "arguments": arguments})
        if "error" in r:
            raise AssertionError("tools/call %s failed: %s" % (tool, r["error"]))
        return r["result"]


class McpStdio:
    """MCP over `snakepit mcp --stdio`: newline-delimited JSON on the child's stdin/stdout."""

    def __init__(self, state_dir, extra=(), env=None):
        self.proc = subprocess.Popen(
            [os.path.join(BIN, "snakepit"), "mcp", "--stdio", "--state-dir", state_dir, *extra],
            env=env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.next_id = 1

    def send(self, msg):
        self.proc.stdin.write((json.dumps(msg) + "\n").encode())
        self.proc.stdin.flush()

    def request(self, method, params=None):
        rid = self.next_id
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError("stdio server closed: " + self.proc.stderr.read().decode())
            reply = json.loads(line)  # anything on stdout must be JSON-RPC
            if reply.get("id") == rid:
                return reply

    def initialize(self):
        r = self.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                        "clientInfo": {"name": "snakepit-tests", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return r

    def call(self, tool, arguments):
        r = self.request("tools/call", {"name": tool, "arguments": arguments})
        if "error" in r:
            raise AssertionError("tools/call %s failed: %s" % (tool, r["error"]))
        return r["result"]

    def close(self):
        self.proc.stdin.close()
        try:
            return self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()
