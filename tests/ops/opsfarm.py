"""tests/ops/opsfarm.py — the known job mix the operations tests run against a farm, and
helpers around it (imported by conftest.py and the tests; kept out of conftest.py so that
running tests/ops beside tests/integration, which has its own conftest, stays unambiguous).

The mix, and what each part exercises:
  snakepit run (straight to the broker): 3 ok, 2 error, 1 timeout, 1 security_violation
  MCP over HTTP (front-end, records, usage): 1 each of ok, error, timeout, security_violation
  one request with an unknown API key (auth failure), calls over a tenant's rate limit
"""
import os
import subprocess
import sys

import yaml

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
from farm import free_port  # noqa: E402,F401  (re-exported for the tests)
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


