"""Fixtures for the operations tests: one real farm (`snakepit up` in a temporary state
directory) for the session, the known mix of jobs (opsfarm.py) run against it with every
component's /metrics read before and after, and the real Prometheus server scraping the farm
with the one-host configuration from monitoring/."""
import json
import os
import shutil
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
from farm import Farm, McpHttp, McpError  # noqa: E402
import opslib  # noqa: E402
from opsfarm import CLI_MIX, MCP_MIX, free_port, one_host_config, scrape_all, snakepit  # noqa: E402


@pytest.fixture(scope="session")
def farm():
    f = Farm(slots=2)
    yield f
    f.stop()
    shutil.rmtree(f.dir, ignore_errors=True)


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
