"""tests/chaos/chaoslib.py — what the chaos suite shares: a bounded MCP load that records how
every request ended, SIGKILL of one component of a farm by its pid, "serving again" by polling,
and a snapshot of the state that must survive anything (tenants, keys, quotas, usage, session
snapshots, finished records).

Nothing here asserts how long anything takes, with one exception the suite's contract names:
the farm serves again within SERVE_AGAIN_S of a kill, found by polling. Every wait is bounded
and polls; processes are found by their command line and stopped by pid.
"""
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
from farm import BIN, Farm, McpError, McpHttp, free_port  # noqa: E402,F401  (re-exported)

SERVE_AGAIN_S = 5
CODE = "import time\ntime.sleep(0.02)\nprint(sum(range(1000)))"  # jobs stay in flight a while
ERAS = ("legacy", "modern")  # MCP 2025-11-25 in a session, and 2026-07-28 without one
MODERN = "2026-07-28"
MODERN_META = {"io.modelcontextprotocol/protocolVersion": MODERN,
               "io.modelcontextprotocol/clientCapabilities": {},
               "io.modelcontextprotocol/clientInfo": {"name": "snakepit-chaos", "version": "1"}}
MODERN_HEADERS = {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": "execute_code"}


def wait_for(pred, timeout, what, every=0.05):
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        try:
            v = pred()
            if v:
                return v
        except Exception as e:  # noqa: BLE001  (the thing waited for may not be up yet)
            last = e
        time.sleep(every)
    raise AssertionError("timed out after %ss waiting for %s (last error: %r)" % (timeout, what, last))


def add_tenant(state_dir, name):
    """A tenant whose rate limit the load cannot reach (while Redis is away the local limiter
    allows half a tenant's rate; this suite measures failures, not rate limits). Its key."""
    out = subprocess.run([os.path.join(BIN, "snakepit"), "tenant", "add", name, "--state-dir",
                          state_dir, "--rate", "100000/s", "--burst", "100000", "--max-concurrency",
                          "64"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip().splitlines()[0]


# ---- the farm's processes ------------------------------------------------------------------

def cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return []


def component_pid(farm, name):
    """The pid of one component of a `snakepit up` farm: redis, broker, broker2, executor, mcp."""
    for pid in farm.child_pids():
        argv = cmdline(pid)
        if not argv:
            continue
        exe = os.path.basename(argv[0].split(" ")[0])  # redis-server rewrites its title
        if name == "redis" and exe == "redis-server":
            return pid
        if name == "executor" and exe == "snakepit-executor":
            return pid
        if name == "mcp" and exe == "snakepit-mcp":
            return pid
        if exe == "snakepit-broker" and "--clients" in argv:
            first = argv[argv.index("--clients") + 1].endswith("/clients.sock")
            if (name == "broker" and first) or (name == "broker2" and not first):
                return pid
    raise AssertionError("no %s process in the farm" % name)


def _dead(pid):
    """True once every thread of pid has exited: its files (sockets) are closed then. The
    leader shows Z while ZeroMQ's threads may still be exiting, so each thread is looked at."""
    try:
        tasks = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return True
    for t in tasks:
        try:
            with open("/proc/%d/task/%s/stat" % (pid, t)) as f:
                if f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X"):
                    return False
        except OSError:
            pass
    return True


def sigkill(pid):
    """SIGKILL, and wait (bounded) until the process is dead. Returns the time it was."""
    os.kill(pid, signal.SIGKILL)
    deadline = time.time() + 10
    while time.time() < deadline and not _dead(pid):
        time.sleep(0.001)
    return time.time()


# ---- MCP over HTTP, every outcome kept ------------------------------------------------------

class Client:
    """An MCP client over HTTP that reconnects. era "legacy": one 2025-11-25 session; an unknown
    session (evicted, or lost by Redis) or a refused connection (the front-end is down) means
    the request was never taken, so the client opens a new session and sends it again. era
    "modern": 2026-07-28, no session, every request carrying its _meta and headers. A connection
    that breaks mid-request is the one outcome it cannot know: it is reported as ("transport",
    ...)."""

    def __init__(self, url, key, give_up_s=30, era="legacy"):
        self.url, self.key, self.give_up_s, self.era = url, key, give_up_s, era
        self.http = None
        self.reconnects = 0

    def _open(self):
        self.http = McpHttp(self.url, self.key)
        if self.era == "legacy":
            self.http.initialize()

    def _post(self, arguments):
        params = {"name": "execute_code", "arguments": arguments}
        if self.era == "modern":
            params["_meta"] = MODERN_META
        return self.http.post({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params},
                              headers=MODERN_HEADERS if self.era == "modern" else None, raw=True)

    def call(self, arguments):
        deadline = time.time() + self.give_up_s
        while True:
            try:
                if not self.http:
                    self._open()
                status, headers, body = self._post(arguments)
            except (ConnectionRefusedError, urllib.error.URLError) as e:
                refused = isinstance(e, ConnectionRefusedError) or isinstance(
                    getattr(e, "reason", None), ConnectionRefusedError)
                if not refused:
                    self.http = None
                    return ("transport", type(getattr(e, "reason", e)).__name__, None)
                self.http = None
                if time.time() > deadline:
                    return ("transport", "refused for %ss" % self.give_up_s, None)
                self.reconnects += 1
                time.sleep(0.1)
                continue
            except (ConnectionError, http.client.HTTPException, socket.timeout) as e:
                self.http = None
                return ("transport", type(e).__name__, None)
            except McpError as e:  # initialize refused (a 503 while Redis is away, say)
                self.http = None
                return ("http", e.status, None)
            if status == 404 and self.era == "legacy":  # the session is gone: a new one, same request
                self.http = None
                self.reconnects += 1
                continue
            return classify(status, headers, body)


def classify(status, headers, body):
    """(kind, detail, execution_id) of one HTTP answer to a tools/call."""
    if status != 200:
        return ("http", status, None)
    text = body.decode()
    if headers.get("Content-Type", "").startswith("text/event-stream"):
        data = [l[5:].strip() for l in text.split("\n") if l.startswith("data:")]
        text = data[-1] if data else "{}"
    msg = json.loads(text)
    if "error" in msg:
        return ("rpc", msg["error"].get("code"), None)
    sc = msg["result"]["structuredContent"]
    err = sc.get("error") or {}
    if sc["status"] == "ok":
        return ("ok", None, sc["execution_id"])
    return (sc["status"], err.get("type"), sc["execution_id"])


class Load:
    """n requests from `conc` clients; `on_answers(k)` is called (once) after k answers. url may
    be a list (front-ends sharing the farm) and the clients are spread over every url and era."""

    def __init__(self, url, key, n, conc=16, code=CODE, eras=("legacy",)):
        self.urls = [url] if isinstance(url, str) else list(url)
        self.key, self.n, self.conc, self.code, self.eras = key, n, conc, code, eras
        self.outcomes = []
        self.started = []  # when each outcome's request was sent (time.time())
        self.tags = []  # (url, era) of each outcome's client
        self.lock = threading.Lock()
        self.next = 0
        self.trigger = None
        self.reconnects = 0
        self.reconnects_at = {}  # url: reconnects of its clients

    def at(self, answers, fn):
        self.trigger = [answers, fn, False]

    def _take(self):
        with self.lock:
            if self.next >= self.n:
                return False
            self.next += 1
            return True

    def _record(self, outcome, started, tag):
        fire = None
        with self.lock:
            self.outcomes.append(outcome)
            self.started.append(started)
            self.tags.append(tag)
            t = self.trigger
            if t and not t[2] and len(self.outcomes) >= t[0]:
                t[2] = True
                fire = t[1]
        if fire:
            fire()

    def _worker(self, i):
        url = self.urls[i % len(self.urls)]
        era = self.eras[(i // len(self.urls)) % len(self.eras)]
        c = Client(url, self.key, era=era)
        while self._take():
            started = time.time()
            self._record(c.call({"code": self.code}), started, (url, era))
        with self.lock:
            self.reconnects += c.reconnects
            self.reconnects_at[url] = self.reconnects_at.get(url, 0) + c.reconnects

    def run(self, timeout=120):
        threads = [threading.Thread(target=self._worker, args=(i,), daemon=True)
                   for i in range(self.conc)]
        for t in threads:
            t.start()
        deadline = time.time() + timeout
        for t in threads:
            t.join(max(0.1, deadline - time.time()))
        hung = [t for t in threads if t.is_alive()]
        assert not hung, "%d clients never got an answer (hung requests)" % len(hung)
        assert len(self.outcomes) == self.n, (len(self.outcomes), self.n)
        return self.outcomes

    def kinds(self, url=None, era=None):
        """{(kind, detail): count}, of the clients of one url or era if asked."""
        out = {}
        for o, (u, e) in zip(self.outcomes, self.tags):
            if (url is None or u == url) and (era is None or e == era):
                out[o[:2]] = out.get(o[:2], 0) + 1
        return out

    def sent_after(self, when, url=None):
        """The outcomes of requests sent after `when` (to one url, if asked)."""
        return [o for o, t, (u, _) in zip(self.outcomes, self.started, self.tags)
                if t > when and (url is None or u == url)]

    def ids(self, kind="ok"):
        return [o[2] for o in self.outcomes if o[0] == kind and o[2]]


# ---- a second front-end, and legacy sessions across front-ends -------------------------------

def _environ(pid):
    with open("/proc/%d/environ" % pid, "rb") as f:
        pairs = [e.split(b"=", 1) for e in f.read().split(b"\0") if b"=" in e]
    return {k.decode(): v.decode(errors="replace") for k, v in pairs}


def health(url):
    """The /healthz of the front-end whose MCP endpoint is url."""
    with urllib.request.urlopen(url.rsplit("/", 1)[0] + "/healthz", timeout=5) as r:
        return json.loads(r.read())


def up(url):
    """The front-end at url has the broker, Redis and the bus (pub/sub between front-ends)."""
    h = health(url)
    return h["broker_connected"] and h["redis_connected"] and h["bus_connected"]


class Peer:
    """A second front-end on a farm: the farm's own snakepit-mcp command line and environment
    on another port (any front-end answers any request). Started here, stopped by its
    pid; not one of the farm's components, so no kill here finds it."""

    def __init__(self, farm, name="peer"):
        pid = component_pid(farm, "mcp")
        argv, env = cmdline(pid), _environ(pid)
        self.port = free_port()
        argv[argv.index("--http") + 1] = "127.0.0.1:%d" % self.port
        self.url = "http://127.0.0.1:%d/mcp" % self.port
        self.log = open(os.path.join(farm.dir, name + ".log"), "ab")
        self.proc = subprocess.Popen(argv, env=env, stdout=self.log, stderr=self.log,
                                     stdin=subprocess.DEVNULL)
        wait_for(self.up, 30, "the peer front-end to reach the broker, Redis and the bus")

    def up(self):
        return up(self.url)

    def stop(self):
        """SIGTERM; asserts a clean exit and no sanitizer report in its log."""
        died, rc = self.proc.poll(), None
        if died is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                rc = self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        with open(self.log.name, errors="replace") as f:
            text = f.read()
        for marker in ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:"):
            assert marker not in text, text[text.index(marker):][:2000]
        assert died is None, "the peer front-end died during the suite (exit status %s)" % died
        assert rc == 0, "the peer front-end exited with %s on SIGTERM" % rc


def open_session(url, key):
    """A legacy session opened (and used once) on the front-end at url: its id."""
    c = McpHttp(url, key)
    c.initialize()
    assert c.call("execute_code", {"code": "print('opened')"})["structuredContent"]["status"] == "ok"
    return c.session


def in_session(url, key, session):
    """One execute_code in an existing legacy session, sent to the front-end at url: the HTTP
    status (404: the session is unknown there) and the call's status."""
    c = McpHttp(url, key)
    c.session = session
    status, headers, body = c.post({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                    "params": {"name": "execute_code", "arguments": {"code": "1"}}},
                                   raw=True)
    return status, classify(status, headers, body)[0] if status == 200 else None


def end_session(url, key, session):
    """DELETE of a legacy session at url: the HTTP status."""
    req = urllib.request.Request(url, method="DELETE", headers={
        "Authorization": "Bearer " + key, "Mcp-Session-Id": session,
        "MCP-Protocol-Version": "2025-11-25"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def session_key(tenant, session):
    return "sp:t:{%s}:sess:%s" % (tenant, session)


def serves(url, key):
    """One execute_code end to end: True when it comes back ok."""
    c = Client(url, key, give_up_s=2)
    return c.call({"code": "print('again')"})[0] == "ok"


def serving_again_within(url, key, since, limit=SERVE_AGAIN_S):
    """Polls until the farm serves; asserts it did within `limit` seconds of `since`."""
    wait_for(lambda: serves(url, key), limit + 30, "the farm to serve again", every=0.1)
    took = time.time() - since
    assert took <= limit, "the farm served again only %.1fs after the kill" % took
    return took


# ---- what must survive ----------------------------------------------------------------------

def lasting_state(r):
    """What no failure may lose, read from Redis: tenants with their quotas and key hashes,
    API keys, usage counters, any session snapshot keys (whatever their name says snap), and
    the key every front-end seals requestState with."""
    state = {"tenants": set(r.smembers("sp:tenants")), "quotas": {}, "keys": {}, "usage": {},
             "snapshots": {}, "mrtr": r.get("sp:mrtr:key")}
    for k in r.scan_iter("sp:t:*", count=1000):
        parts = k.split(":")
        if len(parts) == 3:
            state["quotas"][k] = r.hgetall(k)
        elif len(parts) == 5 and parts[3] == "use":
            state["usage"][k] = {f: int(v) for f, v in r.hgetall(k).items()}
    for k in r.scan_iter("sp:key:*", count=1000):
        state["keys"][k] = r.get(k)
    for k in r.scan_iter("*snap*", count=1000):
        if not k.startswith("sp:metrics:"):
            state["snapshots"][k] = r.type(k)
    return state


def assert_nothing_lost(before, after):
    assert before["tenants"] <= after["tenants"], before["tenants"] - after["tenants"]
    for k, q in before["quotas"].items():
        assert after["quotas"].get(k) == q, (k, q, after["quotas"].get(k))
    for k, t in before["keys"].items():
        assert after["keys"].get(k) == t, (k, t)
    for k, use in before["usage"].items():  # counters only grow
        now = after["usage"].get(k, {})
        assert all(now.get(f, 0) >= v for f, v in use.items()), (k, use, now)
    for k, t in before["snapshots"].items():
        assert after["snapshots"].get(k) == t, (k, t)
    assert before["mrtr"] is None or after["mrtr"] == before["mrtr"], "sp:mrtr:key changed"


def assert_records_final(r, answered, timeout=30):
    """Every execution whose answer a client holds has its final record in Redis (written late,
    from the front-end's journal, when Redis was away)."""
    want = dict(answered)

    def missing():
        return [i for i, st in want.items() if r.hget("sp:exec:" + i, "status") != st]
    try:
        wait_for(lambda: not missing(), timeout, "every answered execution's final record")
    except AssertionError:
        gone = missing()
        raise AssertionError("%d of %d finished records missing or not final, e.g. %s" % (
            len(gone), len(want), [(i, r.hgetall("sp:exec:" + i)) for i in gone[:3]]))


def answered(load):
    """{execution id: status} of every request that got a tool result."""
    return {o[2]: o[0] for o in load.outcomes if o[2]}
