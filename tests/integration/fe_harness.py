"""tests/integration/fe_harness.py — a front-end under test, with real neighbours.

Starts, in a fresh temp dir: a private redis-server on a unix socket, either the broker
stand-in (fake_broker.py, answering from directives in the code, for the front-end's own
behaviour) or the real snakepit-broker with a snakepit-executor node, and snakepit-mcp
on a free loopback port. Everything is stopped by pid. Also a small MCP-over-HTTP client that
can send any bytes and read JSON or SSE answers, and helpers to add tenants the way
`snakepit tenant add` stores them (sp:key:<sha256> → name, sp:t:<name> hash).
"""
import hashlib
import http.client
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BIN = os.path.abspath(os.environ.get("SNAKEPIT_BIN") or os.path.join(HERE, "..", "..", "build", "bin"))
PY = "/usr/bin/python3"


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from ports import free_port  # noqa: E402,F401  (below the ephemeral range; re-exported)


def wait_for(pred, timeout, what):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            if pred():
                return
        except Exception:
            pass
        time.sleep(0.05)
    raise RuntimeError("timed out waiting for " + what)


def argument_error(msg, argument=None, kind="invalid_argument"):
    """The text of a tools/call refused for its arguments (msg: the JSON-RPC response): a tool
    result with isError that the model reads (MCP 2025-11-25 tools, "Error Handling": input
    validation errors are tool execution errors), no structuredContent (it would not match the
    tool's outputSchema), and _meta["snakepit/error"] with the kind and the argument named."""
    assert "result" in msg, msg
    r = msg["result"]
    assert r.get("isError") is True and "structuredContent" not in r, r
    err = r["_meta"]["snakepit/error"]
    assert err["kind"] == kind, err
    if argument is not None:
        assert err.get("argument") == argument, err
    return r["content"][0]["text"]


# A Redis set up as `snakepit up` sets its own (cli/up_plan.c s_plan_redis): the front-end then
# has no redis_config_warning to log (a suite that reads its stderr wants it quiet)
REDIS_AS_UP = ("--appendonly", "yes", "--appendfsync", "everysec", "--maxmemory", "256mb",
               "--maxmemory-policy", "volatile-lru", "--hash-max-listpack-value", "4096")


class Frontend:
    """redis + broker stand-in (+ executor) + snakepit-mcp; stop() ends them all by pid.
    redis_args: more redis-server options (REDIS_AS_UP for a Redis kept as in production; by
    default it persists nothing, so that a restarted one comes back empty)."""

    def __init__(self, extra=(), executor=False, stdio=False, redis=True, profiles="python.basic",
                 executor_args=(), redis_args=()):
        self.dir = tempfile.mkdtemp(prefix="spfe-", dir="/tmp")
        self.procs = {}
        self.redis_sock = os.path.join(self.dir, "redis.sock")
        self.redis_url = "unix://" + self.redis_sock
        self.redis_args = list(redis_args)
        if redis:
            self.start_redis()
        self.broker_ep = "tcp://127.0.0.1:%d" % free_port()
        self.stats_path = os.path.join(self.dir, "broker-stats.json")
        if executor:
            # the real thing end to end: snakepit-broker and a snakepit-executor node
            self.executor_ep = "tcp://127.0.0.1:%d" % free_port()
            args = [os.path.join(BIN, "snakepit-broker"), "--clients", self.broker_ep, "--executors",
                    self.executor_ep, "--metrics", "off", "--redis", self.redis_url, "--instance", "test",
                    "--log-level", "warn"]
        else:
            # the stand-in answers from directives in the code (fake_broker.py)
            args = [PY, os.path.join(HERE, "fake_broker.py"), "--clients", self.broker_ep, "--stats", self.stats_path]
        self._spawn("broker", args)
        if executor:
            # no fixed metrics port: other farms on a shared machine may hold 9102
            self._spawn("executor", [os.path.join(BIN, "snakepit-executor"), "--broker", self.executor_ep,
                                     "--slots", "2", "--profiles", profiles, "--metrics", "off",
                                     "--log-level", "warn", *executor_args])
        self.port = free_port()
        self.url = "http://127.0.0.1:%d/mcp" % self.port
        self.mcp_args = [os.path.join(BIN, "snakepit-mcp"), "--http", "127.0.0.1:%d" % self.port,
                         "--broker", self.broker_ep, "--redis", self.redis_url, "--log-level", "debug",
                         *extra]
        if not stdio:
            self._spawn("mcp", self.mcp_args)
            wait_for(lambda: self.health()["broker_connected"], 20, "the front-end to listen and see the broker")
        if executor:
            # the data-science zygote warms numpy, pandas and matplotlib up first: minutes on a busy
            # 2-core machine
            wait_for(self._executor_ready, 240 if "data_science" in profiles else 60,
                     "the executor to register")

    # ---- processes

    def _spawn(self, name, args, **kw):
        log = open(os.path.join(self.dir, name + ".log"), "ab")
        self.procs[name] = subprocess.Popen(args, stdout=kw.pop("stdout", log), stderr=log,
                                            stdin=kw.pop("stdin", subprocess.DEVNULL), **kw)
        return self.procs[name]

    def start_redis(self):
        self._spawn("redis", ["redis-server", "--port", "0", "--unixsocket", self.redis_sock, "--save", "",
                              "--appendonly", "no", "--dir", self.dir, *self.redis_args])
        wait_for(lambda: self.redis().ping(), 10, "redis")

    def stop_redis(self):
        self._stop("redis")
        if os.path.exists(self.redis_sock):
            os.unlink(self.redis_sock)

    def _stop(self, name, timeout=10):
        p = self.procs.pop(name, None)
        if not p or p.poll() is not None:
            return p.returncode if p else None
        p.send_signal(signal.SIGTERM)
        try:
            return p.wait(timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            return p.wait()

    def stop(self):
        rc = self._stop("mcp")
        for name in ("executor", "broker", "redis"):
            self._stop(name)
        # a sanitizer build reports into the log; a clean exit on SIGTERM is part of the contract
        problems = self.sanitizer_reports()
        shutil.rmtree(self.dir, ignore_errors=True)
        assert not problems, "sanitizer reports in the front-end's stderr:\n" + problems
        assert rc in (None, 0), "snakepit-mcp exited with %s on SIGTERM" % rc

    def sanitizer_reports(self):
        out = []
        for name in os.listdir(self.dir):
            if not (name.startswith("mcp") or name.startswith("stdio")):
                continue
            try:
                with open(os.path.join(self.dir, name), "rb") as f:
                    text = f.read().decode("utf-8", "replace")
            except OSError:
                continue
            for marker in ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:"):
                i = text.find(marker)
                if i >= 0:
                    out.append("%s: %s" % (name, text[max(0, i - 200):i + 3000]))
        return "\n".join(out)

    def log(self, name="mcp"):
        with open(os.path.join(self.dir, name + ".log"), "rb") as f:
            return f.read().decode("utf-8", "replace")

    def spawn_peer(self, name="mcp2"):
        """A second front-end on a free port sharing this one's broker and Redis; its URL and port."""
        port = free_port()
        args = [("127.0.0.1:%d" % port if a == "127.0.0.1:%d" % self.port else a) for a in self.mcp_args]
        self._spawn(name, args)
        url = "http://127.0.0.1:%d/mcp" % port
        wait_for(lambda: Client(url).raw("GET", path="/healthz").status == 200, 20, "front-end " + name)
        return url, port

    def stdio_args(self, *extra, tenant="local"):
        """The command line of a stdio front-end on this farm, serving tenant (added if need be)."""
        self.add_tenant(tenant, rate="1000", burst="1000")
        return [a for a in self.mcp_args if a != "--http" and not a.startswith("127.0.0.1:")] + \
            ["--stdio", "--tenant", tenant, *extra]

    def mcp_alive(self):
        p = self.procs.get("mcp")
        return p is not None and p.poll() is None

    def _executor_ready(self):
        # the bridge sends a job to the executor once it has credit; a canned answer says "ran"
        c = Client(self.url, self.add_tenant("probe", "probe-key"))
        c.initialize()
        r = c.call("execute_code", {"code": "print('real')"})
        return r["result"]["structuredContent"]["stdout"] == "real\n"

    # ---- Redis and tenants

    def redis(self):
        import redis
        return redis.Redis(unix_socket_path=self.redis_sock, decode_responses=True, socket_timeout=5)

    def add_tenant(self, name, key=None, **quotas):
        key = key or ("key-" + name + "-" + os.urandom(6).hex())
        r = self.redis()
        r.set("sp:key:" + hashlib.sha256(key.encode()).hexdigest(), name)
        r.hset("sp:t:" + name, mapping={"created_ms": int(time.time() * 1000), **quotas})
        return key

    def broker_stats(self):
        try:
            with open(self.stats_path) as f:
                return json.load(f)
        except (OSError, ValueError):
            return {"submits": 0, "cancels": 0, "routes": [], "specs": []}

    # ---- HTTP

    def health(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
        conn.request("GET", "/healthz")
        r = conn.getresponse()
        body = json.loads(r.read())
        conn.close()
        return body

    def metrics(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
        conn.request("GET", "/metrics")
        r = conn.getresponse()
        body = r.read().decode()
        conn.close()
        return body

    def metric(self, name, **labels):
        """The sum of the series of one metric whose labels include these (0 when absent)."""
        total = 0.0
        for line in self.metrics().splitlines():
            if line.startswith("#"):
                continue
            series, value = line.rsplit(" ", 1)
            base, _, rest = series.partition("{")
            if base != name:
                continue
            have = dict(kv.split("=", 1) for kv in rest.rstrip("}").split(",") if kv)
            have = {k: v.strip('"') for k, v in have.items()}
            if all(have.get(k) == str(v) for k, v in labels.items()):
                total += float(value)
        return total


class Reply:
    def __init__(self, status, headers, body, messages):
        self.status = status
        self.headers = headers
        self.body = body
        self.messages = messages  # JSON-RPC messages, in order (one for JSON answers)

    @property
    def json(self):
        return self.messages[-1] if self.messages else None

    def header(self, name):
        return self.headers.get(name.lower())


def parse_sse(text):
    msgs = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        data = [l[5:].lstrip(" ") if l.startswith("data:") else None for l in block.split("\n")]
        data = [d for d in data if d is not None]
        if data:
            msgs.append(json.loads("\n".join(data)))
    return msgs


class Client:
    """MCP over Streamable HTTP, one request at a time, keep-alive."""

    def __init__(self, url, key=None, protocol="2025-11-25", accept="application/json, text/event-stream"):
        self.url = url
        self.host, rest = url.split("://", 1)[1].split("/", 1)
        self.path = "/" + rest
        self.key = key
        self.protocol = protocol
        self.accept = accept
        self.session = None
        self.next_id = 1
        self.conn = None

    def _conn(self):
        if self.conn is None:
            h, p = self.host.rsplit(":", 1)
            self.conn = http.client.HTTPConnection(h, int(p), timeout=60)
        return self.conn

    def raw(self, method="POST", body=b"", headers=None, path=None):
        h = {"Content-Type": "application/json", "Accept": self.accept}
        if self.key:
            h["Authorization"] = "Bearer " + self.key
        if self.session:
            h["Mcp-Session-Id"] = self.session
        if self.protocol and self.session:
            h["MCP-Protocol-Version"] = self.protocol
        for k, v in (headers or {}).items():
            if v is None:
                h.pop(k, None)
            else:
                h[k] = v
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
        elif isinstance(body, str):
            body = body.encode()
        for attempt in range(2):
            conn = self._conn()
            try:
                conn.request(method, path or self.path, body=body, headers=h)
                r = conn.getresponse()
                data = r.read()
                break
            except (ConnectionError, http.client.RemoteDisconnected, http.client.BadStatusLine):
                self.conn = None
                if attempt:
                    raise
        headers_out = {k.lower(): v for k, v in r.getheaders()}
        ctype = headers_out.get("content-type", "")
        text = data.decode("utf-8", "replace")
        if ctype.startswith("text/event-stream"):
            msgs = parse_sse(text)
        elif data and ctype.startswith("application/json"):
            msgs = [json.loads(text)]
        else:
            msgs = []
        if r.getheader("Connection", "").lower() == "close":
            self.conn = None
        return Reply(r.status, headers_out, data, msgs)

    def send(self, method, params=None, notify=False, **kw):
        msg = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        if not notify:
            msg["id"] = self.next_id
            self.next_id += 1
        return self.raw(body=msg, **kw)

    def request(self, method, params=None, **kw):
        r = self.send(method, params, **kw)
        assert r.status == 200, (r.status, r.body[:500])
        return r.json

    def initialize(self, version="2025-11-25", capabilities=None):
        self.session = None
        r = self.send("initialize", {"protocolVersion": version, "capabilities": capabilities or {},
                                     "clientInfo": {"name": "pytest", "version": "1"}})
        assert r.status == 200, (r.status, r.body)
        self.session = r.header("Mcp-Session-Id")
        n = self.send("notifications/initialized", notify=True)
        assert n.status == 202, n.status
        return r.json

    def call(self, tool, arguments=None, **params):
        p = {"name": tool, "arguments": arguments or {}}
        p.update(params)
        return self.request("tools/call", p)

    def close(self):
        if self.conn:
            self.conn.close()
            self.conn = None


MODERN = "2026-07-28"


def assert_no_type_unions(node):
    """No `"type": [...]` anywhere in a schema: some clients map tool schemas onto one type per node."""
    if isinstance(node, dict):
        assert not isinstance(node.get("type"), list), node
        for v in node.values():
            assert_no_type_unions(v)
    elif isinstance(node, list):
        for v in node:
            assert_no_type_unions(v)


def modern_meta(caps=None, **extra):
    """The per-request envelope of MCP 2026-07-28 (_meta)."""
    m = {"io.modelcontextprotocol/protocolVersion": MODERN,
         "io.modelcontextprotocol/clientCapabilities": caps if caps is not None else {},
         "io.modelcontextprotocol/clientInfo": {"name": "pytest", "version": "1"}}
    m.update(extra)
    return m


def mirrored_name(method, params):
    """What Mcp-Name mirrors for a method (streamable-http of 2026-07-28 §"Standard Request Headers")."""
    if method in ("tools/call", "prompts/get"):
        return params.get("name")
    if method == "resources/read":
        return params.get("uri")
    if method in ("tasks/get", "tasks/update", "tasks/cancel"):
        return params.get("taskId")
    return None


class ModernClient(Client):
    """MCP 2026-07-28 over Streamable HTTP: no session, the envelope in every request's _meta and the
    headers the transport requires (MCP-Protocol-Version, Mcp-Method, Mcp-Name)."""

    def __init__(self, url, key=None, caps=None, **kw):
        super().__init__(url, key, protocol=None, **kw)
        self.caps = caps

    def send(self, method, params=None, notify=False, caps=None, meta=None, headers=None, **kw):
        p = dict(params or {})
        p["_meta"] = dict(modern_meta(self.caps if caps is None else caps), **(meta or {}))
        h = {"MCP-Protocol-Version": MODERN, "Mcp-Method": method}
        name = mirrored_name(method, p)
        if isinstance(name, str):
            h["Mcp-Name"] = name
        h.update(headers or {})
        return super().send(method, p, notify=notify, headers=h, **kw)
