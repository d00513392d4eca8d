"""A farm on a Sentinel-managed Redis (`snakepit up --redis redis-sentinel://…`) and a second
front-end beside it, the master SIGKILLed under load in both MCP eras: the front-ends (their
stores and their pub/sub buses), the snapshots and the CLI follow the failover to the promoted
replica; no request fails (keys from the cache, records journalled and written to the new
master, legacy sessions from the front-ends' copies), the farm serves again within 5 s, nothing
lasting or recorded is lost, and a legacy session opened before the failover is still valid on
either front-end — and deleted on one, at once unknown on the other, over the new master's
pub/sub."""
import os
import subprocess

import pytest
import redis

from chaoslib import (BIN, CODE, ERAS, Farm, Load, Peer, add_tenant, answered, assert_nothing_lost,
                      assert_records_final, end_session, in_session, lasting_state, open_session,
                      serves, serving_again_within, session_key, up, wait_for)
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


@pytest.fixture(scope="module")
def peer(farm):
    p = Peer(farm)
    yield p
    p.stop()


def tenant_list(url):
    return subprocess.run([os.path.join(BIN, "snakepit"), "tenant", "list", "--redis", url],
                          capture_output=True, text=True, timeout=30)


def test_the_sentinel_master_killed_under_load_costs_nothing(sentinels, farm, peer):
    key = farm.chaos_key
    wait_for(lambda: serves(farm.url, key) and serves(peer.url, key), 60, "the farm to serve")
    assert "chaos" in tenant_list(sentinels.url).stdout  # the CLI finds the master too
    before = lasting_state(sentinels.master())
    session = open_session(farm.url, key)
    replica = redis.Redis(port=sentinels.replica_port, decode_responses=True)
    wait_for(lambda: replica.exists(session_key("chaos", session)), 10, "the session on the replica")
    old = sentinels.master_port_now()
    load = Load([farm.url, peer.url], key, 240, 16, CODE, eras=ERAS)
    killed = {}
    load.at(80, lambda: killed.setdefault("at", sentinels.kill_master()))
    load.run()
    serving_again_within(farm.url, key, killed["at"])
    assert load.kinds() == {("ok", None): 240}, load.kinds()
    wait_for(lambda: sentinels.master_port_now() != old, 60, "the sentinels to fail over")
    r = sentinels.master()
    assert_records_final(r, answered(load))
    assert_nothing_lost(before, lasting_state(r))
    assert "chaos" in tenant_list(sentinels.url).stdout  # the CLI follows the failover
    wait_for(lambda: r.exists("sp:metrics:mcp:" + r.keys("sp:metrics:mcp:*")[0].split(":", 3)[3]),
             30, "the front-end's snapshot on the new master")
    # both front-ends' buses subscribed on the new master; the session made before is served by
    # both (the peer keeps a fresh copy of it now), and its deletion on one reaches the other
    wait_for(lambda: up(farm.url) and peer.up(), 30, "both front-ends' buses on the new master")
    for url in (peer.url, farm.url):
        assert in_session(url, key, session) == (200, "ok"), url
    assert end_session(farm.url, key, session) == 200
    assert in_session(peer.url, key, session)[0] == 404
