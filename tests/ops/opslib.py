"""tests/ops/opslib.py — what the operations tests share: reading the Prometheus text format,
running the real Prometheus server and promtool, and the names the monitoring files use.

Every process started here is stopped by its own pid, with a bounded wait.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MONITORING = os.path.join(ROOT, "monitoring")
DEPLOY = os.path.join(ROOT, "deploy")
BIN = os.path.abspath(os.environ.get("SNAKEPIT_BIN") or os.path.join(ROOT, "build", "bin"))

PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"

_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)(\s+\d+)?$')
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def fetch(url, timeout=10):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


def parse(text):
    """{(name, ((label, value), ...)): float} for every sample line."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        assert m, "not an exposition line: %r" % line
        labels = tuple(sorted(_LABEL.findall(m.group(3) or "")))
        out[(m.group(1), labels)] = float(m.group(4))
    return out


def families(text):
    """{family name: type} from the # TYPE lines."""
    return {p[2]: p[3] for p in (l.split() for l in text.splitlines() if l.startswith("# TYPE "))}


def value(samples, name, **labels):
    """Sum of the samples of `name` whose labels include `labels` (0 when none)."""
    want = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == name and want <= set(ls))


def metric_names(expr):
    """Metric names a PromQL expression reads (snakepit_*, process_*, up, redis_*)."""
    names = set(re.findall(r'\b((?:snakepit|process|redis)_[a-z0-9_]+)', expr))
    if re.search(r'\bup\{', expr):
        names.add("up")
    return names


def base_family(name):
    for suffix in ("_bucket", "_sum", "_count"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def dashboard_exprs(dashboard):
    exprs = []

    def walk(panels):
        for p in panels:
            for t in p.get("targets", []):
                exprs.append((p["title"], t["expr"]))
            walk(p.get("panels", []))
    walk(dashboard["panels"])
    return exprs


def rule_exprs(rules_doc):
    return [(r.get("alert") or r.get("record"), r["expr"])
            for g in rules_doc["groups"] for r in g["rules"]]


def concrete(expr):
    """A dashboard expression with Grafana's variables filled in, for the Prometheus API."""
    return (expr.replace("$__rate_interval", "1m").replace('"$service"', '".*"')
            .replace('"$profile"', '".*"'))


def promtool(*args, timeout=60):
    return subprocess.run([PROMTOOL, *args], capture_output=True, text=True, timeout=timeout)


class Prometheus:
    """The real Prometheus server on a free loopback port with its own temporary storage."""

    def __init__(self, config, port):
        self.dir = tempfile.mkdtemp(prefix="sp-prom-", dir="/tmp")
        self.port = port
        self.url = "http://127.0.0.1:%d" % port
        cfg = os.path.join(self.dir, "prometheus.yml")
        with open(cfg, "w") as f:
            f.write(config)
        self.log = open(os.path.join(self.dir, "prometheus.log"), "w")
        self.proc = subprocess.Popen(
            [PROMETHEUS, "--config.file=" + cfg, "--storage.tsdb.path=" + os.path.join(self.dir, "data"),
             "--web.listen-address=127.0.0.1:%d" % port, "--log.level=warn",
             "--storage.tsdb.retention.time=1h"],
            stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        self._wait(lambda: fetch(self.url + "/-/ready", timeout=2), 60, "ready")

    def _wait(self, probe, timeout, what):
        deadline = time.time() + timeout
        last = None
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("prometheus exited (%s):\n%s" % (self.proc.returncode, self.output()))
            try:
                r = probe()
                if r:
                    return r
            except Exception as e:  # not up yet
                last = e
            time.sleep(0.25)
        raise RuntimeError("prometheus not %s in %ss (%s):\n%s" % (what, timeout, last, self.output()))

    def output(self):
        self.log.flush()
        with open(os.path.join(self.dir, "prometheus.log")) as f:
            return f.read()

    def api(self, path, **params):
        url = self.url + "/api/v1/" + path
        if params:
            url += "?" + urllib.parse.urlencode(params)
        try:
            body = fetch(url)
        except urllib.error.HTTPError as e:
            body = e.read().decode()
        return json.loads(body)

    def query(self, expr):
        return self.api("query", query=expr)

    def targets(self):
        return self.api("targets")["data"]["activeTargets"]

    def wait_targets_up(self, expected, timeout=60):
        def probe():
            ts = self.targets()
            return ts if len(ts) == expected and all(t["health"] == "up" for t in ts) else None
        try:
            return self._wait(probe, timeout, "scraping every target")
        except RuntimeError:
            raise RuntimeError("targets: %s" % json.dumps(self.targets(), indent=1))

    def wait_value(self, expr, pred, timeout=60):
        def probe():
            r = self.query(expr)
            res = r.get("data", {}).get("result", [])
            return res if res and pred(float(res[0]["value"][1])) else None
        return self._wait(probe, timeout, "showing %s" % expr)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)  # our own session only
                self.proc.wait()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)
