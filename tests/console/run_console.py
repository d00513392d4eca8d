#!/usr/bin/python3
"""tests/console/run_console.py — `make test-console`: the tenant console against a real farm
(tests/integration/farm.py: `snakepit up` with its own redis-server, broker, executor and
front-end, stopped by pid), in two parts:

- over plain HTTP, what a browser cannot be made to send: a wrong key, no CSRF token, a wrong
  one, a request from another origin, an expired sign-in, an unknown cookie, another tenant's
  ids by every endpoint, a sign-in used and ended on a second front-end, and sign-in attempts
  past the rate (refused, logged, counted);
- in Debian's chromium driven by playwright-core (console.test.mjs): signing in, running code
  that prints and plots, the run in Executions and its detail, a session with two cells, usage,
  hostile records shown inert, a second tenant that sees none of the first's data, key rotation,
  and a narrow screen. Screenshots of every page go to build/console-shots/.

Everything is bounded: the farm must be ready in 120 s, the browser part is killed after 240 s."""
import hashlib
import http.cookiejar
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
from farm import BIN, Farm, McpHttp, free_port  # noqa: E402

SHOTS = os.environ.get("SP_CONSOLE_SHOTS") or os.path.join(ROOT, "build", "console-shots")
SIGNINS_PER_MIN = 40  # the farm's console rate for this run: the suite signs in a dozen times

HOSTILE_STDOUT = "print('<script>document.title=\"pwned\";window.__pwned=1</script><img src=x onerror=\"window.__pwned=2\">')"
HOSTILE_HTML = ("from IPython.display import display, HTML\n"
                "display(HTML('<table><tr><td id=\"cell\">safe cell</td></tr></table>"
                "<script>parent.__pwned=3;document.body.dataset.ran=\"yes\"</script>"
                "<img src=x onerror=\"parent.__pwned=4\">'))\n")


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print("ok -", what, flush=True)


class Browserless:
    """The console over HTTP as a script would use it: a cookie jar and the CSRF token."""

    def __init__(self, base):
        self.base = base
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))
        self.csrf = None

    def send(self, method, path, body=None, headers=None, ctype="application/json"):
        data = None
        if body is not None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
        h = {"Content-Type": ctype} if data is not None else {}
        h.update(headers or {})
        req = urllib.request.Request(self.base + path, data=data, headers=h, method=method)
        try:
            with self.opener.open(req, timeout=60) as r:
                return r.status, dict(r.headers), r.read()
        except urllib.error.HTTPError as e:
            return e.code, dict(e.headers), e.read()

    def sign_in(self, key):
        status, headers, body = self.send("POST", "/console/signin",
                                          urllib.parse.urlencode({"key": key}).encode(),
                                          ctype="application/x-www-form-urlencoded")
        if status == 200:
            self.token = self.cookie()
            s, _, me = self.send("GET", "/console/api/me")
            assert s == 200, (s, me)
            self.csrf = json.loads(me)["csrf"]
        return status, headers, body

    def tool(self, name, args, csrf=True, headers=None):
        h = {"X-CSRF-Token": self.csrf} if csrf else {}
        h.update(headers or {})
        status, _, body = self.send("POST", "/console/api/tools/" + name, args, headers=h)
        return status, json.loads(body) if body else None

    @property
    def last_token(self):
        return self.token

    def cookie(self):
        return next(c.value for c in self.jar if c.name == "sp_console")


def add_tenant(farm, name):
    out = subprocess.run([os.path.join(BIN, "snakepit"), "tenant", "add", name, "--state-dir",
                          farm.dir, "--rate", "1000", "--burst", "1000", "--json"],
                         capture_output=True, text=True, timeout=30, check=True).stdout
    try:
        return json.loads(out)["api_key"]
    except (ValueError, KeyError):
        return next(w for w in out.split() if w.startswith("sp_"))


def modern_call(url, key, tool, args):
    c = McpHttp(url, key, protocol=None)
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}
    r = c.post({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": tool, "arguments": args, "_meta": meta}},
               headers={"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call",
                        "Mcp-Name": tool})
    return r["result"]


def http_checks(farm, base, key_a, key_b, ids):
    a = Browserless(base)
    status, _, body = a.sign_in("sp_" + "0" * 64)
    check(status == 401 and json.loads(body)["reason"] == "invalid_key", "a wrong key is refused")
    status, headers, _ = a.sign_in(key_a)
    cookie = headers.get("Set-Cookie", "")
    check(status == 200 and "HttpOnly" in cookie and "SameSite=Strict" in cookie
          and "Path=/console" in cookie, "a key signs in: HttpOnly, SameSite=Strict cookie")
    s, h, page = a.send("GET", "/console")
    csp = h.get("Content-Security-Policy", "")
    check(s == 200 and "script-src 'self'" in csp and "unsafe-inline" not in csp
          and b"<script>" not in page, "the page comes with a strict CSP and no inline script")
    status, r = a.tool("list_executions", {})
    check(status == 200 and r["result"]["structuredContent"]["executions"], "signed in, a page's call works")
    # /mcp is untouched by the route beside it: none of the console's headers, no cookie
    mcp = McpHttp(farm.url, key_a)
    s, h, _ = mcp.post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "console-test", "version": "1"}}}, raw=True)
    check(s == 200 and "Content-Security-Policy" not in h and "Set-Cookie" not in h,
          "/mcp answers as before, without the console's headers")
    status, r = a.tool("list_executions", {}, csrf=False)
    check(status == 403 and r["reason"] == "csrf", "a call without the CSRF token is refused")
    status, r = a.tool("list_executions", {}, csrf=False, headers={"X-CSRF-Token": "f" * 64})
    check(status == 403 and r["reason"] == "csrf", "a call with a wrong CSRF token is refused")
    status, r = a.tool("list_executions", {}, headers={"Origin": "http://evil.example"})
    check(status == 403 and r["reason"] == "bad_origin", "a call from another origin is refused")
    s, _, body = a.send("POST", "/console/signout", {}, headers={})
    check(s == 403, "sign-out without the CSRF token is refused")

    # an expired sign-in: its longest life over, though Redis still holds it
    token_hash = hashlib.sha256(a.cookie().encode()).hexdigest()
    r = farm.redis()
    r.hset("sp:console:" + token_hash, "expires_ms", "1000")
    status, body = a.tool("list_executions", {})
    check(status == 401 and body["reason"] == "signed_out", "an expired sign-in is refused")
    check(not r.exists("sp:console:" + token_hash), "and forgotten in Redis")
    fresh = Browserless(base)
    status, body = fresh.tool("list_executions", {}, csrf=False,
                              headers={"Cookie": "sp_console=" + "ab" * 32})
    check(status == 401, "an unknown cookie is refused")

    # the second tenant, by every endpoint, with the first's ids
    b = Browserless(base)
    check(b.sign_in(key_b)[0] == 200, "the second tenant signs in")
    status, body = b.tool("list_executions", {})
    check(body["result"]["structuredContent"]["executions"] == [], "it lists none of the first's executions")
    for eid in ids["executions"]:
        status, body = b.tool("get_execution", {"execution_id": eid})
        check(body["result"].get("isError") and "structuredContent" not in body["result"],
              "get_execution of the first tenant's %s is not found" % eid[:8])
        s, _, raw = b.send("POST", "/console/api/resource",
                           {"uri": "sandbox://executions/%s/images/0" % eid},
                           headers={"X-CSRF-Token": b.csrf})
        check("error" in json.loads(raw), "nor its figure")
    for sid in ids["sessions"]:
        status, body = b.tool("execute_code", {"code": "print(1)", "session_id": sid})
        check(body["result"].get("isError"), "it cannot run a cell in the first's session")
        status, body = b.tool("list_state_snapshots", {"session_id": sid})
        snaps = (body["result"].get("structuredContent") or {}).get("snapshots", [])
        check(snaps == [], "nor see its snapshots")
        status, body = b.tool("close_session", {"session_id": sid})
        check(body["result"].get("isError"), "nor close it")
    status, body = b.tool("list_sessions", {})
    check(body["result"]["structuredContent"]["sessions"] == [], "it lists none of the first's sessions")
    status, body = b.tool("get_usage", {"days": 2})
    check(body["result"]["structuredContent"]["total"]["executions"] == 0, "its usage is its own")
    status, body = b.tool("set_tenant", {})
    check(status == 404, "a tool the pages do not use is not reachable")


def second_frontend(farm):
    """Another snakepit-mcp on the same Redis and broker, as a second machine's would be."""
    port = free_port()
    # in logs/, where the farm looks for sanitizer reports when it stops
    log = open(os.path.join(farm.dir, "logs", "console-mcp2.log"), "w")
    proc = subprocess.Popen([os.path.join(BIN, "snakepit-mcp"), "--http", "127.0.0.1:%d" % port,
                             "--broker", farm.ready["broker"], "--redis", farm.ready["redis"]],
                            stdout=log, stderr=subprocess.STDOUT)
    url = "http://127.0.0.1:%d" % port
    deadline = time.time() + 30
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(url + "/healthz", timeout=2):
                return proc, url
        except OSError:
            time.sleep(0.1)
    proc.terminate()
    proc.wait(10)
    raise AssertionError("the second front-end did not listen in 30 s")


def stateless_checks(farm, base, key_a):
    """A sign-in made on one front-end serves on any other, and ends on all of them."""
    proc, other = second_frontend(farm)
    try:
        a = Browserless(base)
        check(a.sign_in(key_a)[0] == 200, "signed in on the first front-end")
        a.base = other  # cookies are the host's, whatever the port
        status, body = a.tool("list_executions", {})
        check(status == 200 and body["result"]["structuredContent"]["executions"],
              "the second front-end serves the pages of that sign-in")
        s, _, _ = a.send("POST", "/console/signout", {}, headers={"X-CSRF-Token": a.csrf})
        check(s == 200, "signed out there")
        a.base = base
        status, body = a.tool("list_executions", {},
                              headers={"Cookie": "sp_console=" + a.last_token})
        check(status == 401, "and the sign-in has ended on the first front-end too")
    finally:
        proc.terminate()
        proc.wait(30)


def rate_limit_checks(farm, base):
    """Last: it spends the address's sign-in attempts."""
    c = Browserless(base)
    statuses = [c.sign_in("sp_" + "1" * 64)[0] for _ in range(SIGNINS_PER_MIN + 5)]
    check(429 in statuses and statuses[-1] == 429, "sign-in attempts past the rate are refused (429)")
    log = farm.component_log("mcp")
    check("event=console_signin audit=1 outcome=rate_limited" in log, "and logged")
    with urllib.request.urlopen(base + "/metrics", timeout=10) as m:
        metrics = m.read().decode()
    limited = [l for l in metrics.splitlines()
               if l.startswith('snakepit_mcp_console_signins_total{outcome="rate_limited"}')]
    check(limited and float(limited[0].split()[-1]) > 0, "and counted in /metrics")


def main():
    os.makedirs(SHOTS, exist_ok=True)
    for old in os.listdir(SHOTS):  # this run's pictures only
        if old.endswith(".png") or old == "ids.json":
            os.remove(os.path.join(SHOTS, old))
    # the front-end's options come from the environment too (SNAKEPIT_<NAME>), through `up`
    os.environ["SNAKEPIT_CONSOLE_SIGNINS_PER_MIN"] = str(SIGNINS_PER_MIN)
    farm = Farm(slots=2)
    try:
        base = farm.url.rsplit("/mcp", 1)[0]
        key_a, key_b = add_tenant(farm, "alice"), add_tenant(farm, "bob")
        # hostile records, made as an agent would make them: through /mcp
        hostile = modern_call(farm.url, key_a, "execute_code", {"code": HOSTILE_STDOUT})
        html = modern_call(farm.url, key_a, "execute_code",
                           {"code": HOSTILE_HTML, "profile": "python.basic"})
        hid = hostile["structuredContent"]["execution_id"]
        tid = html["structuredContent"]["execution_id"]
        check(html["structuredContent"]["outputs"], "the HTML output is in its record")
        for i in range(20):  # more than a page of Executions
            modern_call(farm.url, key_a, "execute_code", {"code": "print(%d)" % i, "profile": "python.basic"})
        env = dict(os.environ, SP_BASE=base, SP_KEY_A=key_a, SP_KEY_B=key_b, SP_SHOTS=SHOTS,
                   SP_HOSTILE_ID=hid, SP_HTML_ID=tid, SP_OUT=os.path.join(SHOTS, "ids.json"))
        node = subprocess.run(["node", os.path.join(HERE, "console.test.mjs")], env=env,
                              cwd=HERE, timeout=240)
        check(node.returncode == 0, "the browser part passed")
        with open(env["SP_OUT"]) as f:
            ids = json.load(f)
        ids["executions"] = ids["executions"] + [hid, tid]
        http_checks(farm, base, ids["key_a"], ids["key_b"], ids)
        stateless_checks(farm, base, ids["key_a"])
        rate_limit_checks(farm, base)
        print("console: every check passed; screenshots in %s" % SHOTS, flush=True)
    finally:
        farm.stop()


if __name__ == "__main__":
    main()
