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
    """One MCP session over HTTP that reconnects: an unknown session (the front-end restarted)
    or a refused connection (it is down) means the request was never taken, so the client opens
    a new session and sends it again. A connection that breaks mid-request is the one outcome it
    cannot know: it is reported as ("transport", ...)."""

    def __init__(self, url, key, give_up_s=30):
        self.url, self.key, self.give_up_s = url, key, give_up_s
        self.http = None
        self.reconnects = 0

    def _open(self):
        self.http = McpHttp(self.url, self.key)
        self.http.initialize()

    def call(self, arguments):
        deadline = time.time() + self.give_up_s
        while True:
            try:
                if not self.http:
                    self._open()
                status, headers, body = self.http.post(
                    {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                     "params": {"name": "execute_code", "arguments": arguments}}, raw=True)
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
            if status == 404:  # the session died with its front-end: a new one, same request
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
    """n requests from `conc` clients; `on_answers(k)` is called (once) after k answers."""

    def __init__(self, url, key, n, conc=16, code=CODE):
        self.url, self.key, self.n, self.conc, self.code = url, key, n, conc, code
        self.outcomes = []
        self.started = []  # when each outcome's request was sent (time.time())
        self.lock = threading.Lock()
        self.next = 0
        self.trigger = None
        self.reconnects = 0

    def at(self, answers, fn):
        self.trigger = [answers, fn, False]

    def _take(self):
        with self.lock:
            if self.next >= self.n:
                return False
            self.next += 1
            return True

    def _record(self, outcome, started):
        fire = None
        with self.lock:
            self.outcomes.append(outcome)
            self.started.append(started)
            t = self.trigger
            if t and not t[2] and len(self.outcomes) >= t[0]:
                t[2] = True
                fire = t[1]
        if fire:
            fire()

    def _worker(self):
        c = Client(self.url, self.key)
        while self._take():
            started = time.time()
            self._record(c.call({"code": self.code}), started)
        with self.lock:
            self.reconnects += c.reconnects

    def run(self, timeout=120):
        threads = [threading.Thread(target=self._worker, daemon=True) for _ in range(self.conc)]
        for t in threads:
            t.start()
        deadline = time.time() + timeout
        for t in threads:
            t.join(max(0.1, deadline - time.time()))
        hung = [t for t in threads if t.is_alive()]
        assert not hung, "%d clients never got an answer (hung requests)" % len(hung)
        assert len(self.outcomes) == self.n, (len(self.outcomes), self.n)
        return self.outcomes

    def kinds(self):
        out = {}
        for o in self.outcomes:
            out[o[:2]] = out.get(o[:2], 0) + 1
        return out

    def sent_after(self, when):
        """The outcomes of requests sent after `when`."""
        return [o for o, t in zip(self.outcomes, self.started) if t > when]

    def ids(self, kind="ok"):
        return [o[2] for o in self.outcomes if o[0] == kind and o[2]]


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
    API keys, usage counters, and any session snapshot keys (whatever their name says snap)."""
    state = {"tenants": set(r.smembers("sp:tenants")), "quotas": {}, "keys": {}, "usage": {},
             "snapshots": {}}
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
