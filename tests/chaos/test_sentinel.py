"""A farm on a Sentinel-managed Redis (`snakepit up --redis redis-sentinel://…`), its master
SIGKILLed under load: the front-end, the snapshots and the CLI follow the failover to the
promoted replica; no request fails (keys from the cache, records journalled and written to the
new master), the farm serves again within 5 s, and nothing lasting or recorded is lost."""
import os
import subprocess

import pytest

from chaoslib import (BIN, CODE, Farm, Load, add_tenant, answered, assert_nothing_lost,
                      assert_records_final, lasting_state, serves, serving_again_within, wait_for)
from sentinel import SentinelSet

pytestmark = pytest.mark.skipif(not os.path.exists("/usr/bin/redis-sentinel"),
                                reason="redis-sentinel is not installed (deploy/install-deps.sh test)")


@pytest.fixture(scope="module")
def sentinels():
    s = SentinelSet()
    yield s
    s.stop()


@pytest.fixture(scope="module")
def farm(sentinels):
    f = Farm(slots=2, extra=("--redis", sentinels.url, "--profiles", "python.basic"))
    f.chaos_key = add_tenant(f.dir, "chaos")
    yield f
    f.stop()


def tenant_list(url):
    return subprocess.run([os.path.join(BIN, "snakepit"), "tenant", "list", "--redis", url],
                          capture_output=True, text=True, timeout=30)


def test_the_sentinel_master_killed_under_load_costs_nothing(sentinels, farm):
    wait_for(lambda: serves(farm.url, farm.chaos_key), 60, "the farm to serve")
    assert "chaos" in tenant_list(sentinels.url).stdout  # the CLI finds the master too
    before = lasting_state(sentinels.master())
    old = sentinels.master_port_now()
    load = Load(farm.url, farm.chaos_key, 240, 16, CODE)
    killed = {}
    load.at(80, lambda: killed.setdefault("at", sentinels.kill_master()))
    load.run()
    serving_again_within(farm.url, farm.chaos_key, killed["at"])
    assert load.kinds() == {("ok", None): 240}, load.kinds()
    wait_for(lambda: sentinels.master_port_now() != old, 60, "the sentinels to fail over")
    r = sentinels.master()
    assert_records_final(r, answered(load))
    assert_nothing_lost(before, lasting_state(r))
    assert "chaos" in tenant_list(sentinels.url).stdout  # the CLI follows the failover
    wait_for(lambda: r.exists("sp:metrics:mcp:" + r.keys("sp:metrics:mcp:*")[0].split(":", 3)[3]),
             30, "the front-end's snapshot on the new master")
