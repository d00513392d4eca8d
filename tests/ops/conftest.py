"""Fixtures for the operations tests: one real farm (`snakepit up` in a temporary state
directory) for the session, a known mix of jobs run against it with every component's
/metrics read before and after, and the real Prometheus server scraping the farm with the
one-host configuration from monitoring/.

The mix, and what each part exercises:
  snakepit run (straight to the broker): 3 ok, 2 error, 1 timeout, 1 security_violation
  MCP over HTTP (front-end, records, usage): 1 each of ok, error, timeout, security_violation
  one request with an unknown API key (auth failure), one call over a tenant's rate limit
"""
import json
import os
import subprocess
import sys

import pytest
import yaml

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
from farm import Farm, McpHttp, McpError, free_port  # noqa: E402
import opslib  # noqa: E402

VIOLATION = ("[c for c in ().__class__.__base__.__subclasses__() if c.__name__ == '_wrap_close'][0]"
             ".__init__.__globals__['system']('true')")
CLI_MIX = [("print(1)", 0), ("x = 2\nprint(x * 21)", 0), ("sum(range(10))", 0),
           ("1/0", 1), ("raise ValueError('no')", 1),
           ("while True: pass", 3), (VIOLATION, 7)]
MCP_MIX = [("print('ok')", "ok"), ("{}['missing']", "error"), ("while True: pass", "timeout"),
           (VIOLATION, "security_violation")]
STATUS_BY_EXIT = {0: "ok", 1: "error", 3: "timeout", 7: "security_violation"}
COMPONENTS = ("broker", "executor", "mcp")


def snakepit(*args, timeout=60):
    return subprocess.run([os.path.join(opslib.BIN, "snakepit"), *args], capture_output=True,
                          text=True, timeout=timeout)


def scrape_all(ready):
    urls = ready["metrics"]
    assert len(urls) == 3, urls
    return {c: opslib.fetch(u) for c, u in zip(COMPONENTS, urls)}


@pytest.fixture(scope="session")
def farm():
    f = Farm(slots=2)
    yield f
    f.stop()


@pytest.fixture(scope="session")
def mix(farm):
    """Runs the known mix once; returns the texts scraped before and after, and the usage."""
    before = scrape_all(farm.ready)
    usage_before = json.loads(snakepit("usage", "--state-dir", farm.dir, "--json").stdout)
    exits = []
    for code, want in CLI_MIX:
        r = snakepit("run", "--state-dir", farm.dir, "-t", "1", code)
        exits.append(r.returncode)
        assert r.returncode == want, (code, r.returncode, r.stdout, r.stderr)
    client = McpHttp(farm.url, farm.api_key)
    client.initialize()
    for code, want in MCP_MIX:
        res = client.call("execute_code", {"code": code, "timeout": 1})
        assert res["structuredContent"]["status"] == want, res
    stranger = McpHttp(farm.url, "sp_" + "0" * 64)
    with pytest.raises(McpError) as e:
        stranger.initialize()
    assert e.value.status == 401
    # a tenant allowed one call now and then: the second call in a row is rate-limited
    key = snakepit("tenant", "add", "ops-slow", "--rate", "0.01", "--burst", "1",
                   "--state-dir", farm.dir).stdout.strip()
    slow = McpHttp(farm.url, key)
    slow.initialize()
    limited = []
    for _ in range(3):
        try:
            r = slow.request("tools/call", {"name": "execute_code", "arguments": {"code": "1"}})
            limited.append("error" in r)
        except McpError as e:  # HTTP 429 with the JSON-RPC error
            limited.append(e.status == 429)
    after = scrape_all(farm.ready)
    usage_after = json.loads(snakepit("usage", "--state-dir", farm.dir, "--json").stdout)
    return {"before": before, "after": after, "usage_before": usage_before,
            "usage_after": usage_after, "limited": limited}


def one_host_config(ready, rules):
    """monitoring/prometheus.yml aimed at this farm: each static target replaced by the
    component's real address, scraping every second. The redis job is dropped: the farm
    runs no redis exporter."""
    with open(os.path.join(opslib.MONITORING, "prometheus.yml")) as f:
        cfg = yaml.safe_load(f)
    cfg["global"].update(scrape_interval="1s", scrape_timeout="1s", evaluation_interval="1s")
    cfg["rule_files"] = [rules]
    addr = {c: u.split("//", 1)[1].split("/", 1)[0] for c, u in zip(COMPONENTS, ready["metrics"])}
    jobs = []
    for job in cfg["scrape_configs"]:
        if job["job_name"] == "redis":
            continue
        comp = job["job_name"].replace("snakepit-", "")
        for sc in job["static_configs"]:
            sc["targets"] = [addr[comp]]
        jobs.append(job)
    cfg["scrape_configs"] = jobs
    return yaml.safe_dump(cfg)


@pytest.fixture(scope="session")
def prom(farm, mix):
    rules = os.path.join(opslib.MONITORING, "rules", "snakepit.rules.yml")
    p = opslib.Prometheus(one_host_config(farm.ready, rules), free_port())
    try:
        p.wait_targets_up(3)
        # the mix is over before Prometheus starts: wait until it has scraped its outcome
        p.wait_value('sum(snakepit_executor_jobs_total{status="security_violation"})', lambda v: v >= 2)
        yield p
    finally:
        p.stop()
