"""The memory budget of execution records (docs/operating.md "Failure and recovery"), measured: a
private redis-server set up as `snakepit up` sets its own (cli/up_plan.c s_plan_redis), a million
records written into it by the front-end's own code (bench/record_fill.c: records.c, its
scripts, its store), and Redis's used_memory read before and after. And a Redis that is full
evicts records only: tenants, keys, quotas, usage, session snapshots and the requestState key
have no TTL.

`make test-memory` (part of `make test`); SNAKEPIT_BENCH names the directory of record_fill."""
import os
import shutil
import subprocess
import tempfile
import time

import pytest
import redis

BENCH = os.environ.get("SNAKEPIT_BENCH") or os.path.join(os.path.dirname(__file__), "..", "..",
                                                         "build", "bench")
RECORD_FILL = os.path.join(BENCH, "record_fill")
BUDGET = 1 << 30           # bytes for a million executions (docs/operating.md states it)
MILLION = 1000000
# what `snakepit up` gives its private Redis, bar persistence (cli/up_plan.c s_plan_redis)
UP_REDIS = ["--maxmemory-policy", "volatile-lru", "--hash-max-listpack-value", "4096"]


class PrivateRedis:
    def __init__(self, *extra):
        self.dir = tempfile.mkdtemp(prefix="spmem-", dir="/tmp")
        self.sock = os.path.join(self.dir, "redis.sock")
        self.proc = subprocess.Popen(
            ["redis-server", "--port", "0", "--unixsocket", self.sock, "--dir", self.dir,
             "--save", "", "--appendonly", "no", *UP_REDIS, *extra],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                if self.client().ping():
                    break
            except redis.exceptions.ConnectionError:
                time.sleep(0.05)
        self.url = "unix://" + self.sock

    def client(self):
        return redis.Redis(unix_socket_path=self.sock, decode_responses=True)

    def used(self):
        return int(self.client().info("memory")["used_memory"])

    def stop(self):
        self.proc.terminate()
        self.proc.wait(30)
        shutil.rmtree(self.dir, ignore_errors=True)


def fill(r, n, tenants=100):
    out = subprocess.run([RECORD_FILL, "--redis", r.url, "--records", str(n), "--tenants",
                          str(tenants)], capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr
    return int(out.stdout)


@pytest.fixture
def private():
    r = PrivateRedis()
    yield r
    r.stop()


def test_a_million_executions_fit_the_budget(private):
    base = private.used()
    assert fill(private, MILLION) == MILLION
    c = private.client()
    assert c.dbsize() >= MILLION  # every record kept: 100 tenants × 10,000, the default
    grew = private.used() - base
    print("\n%d records: %.0f MB, %d bytes per execution (record, TTL, tenant index)" % (
        MILLION, grew / 1e6, grew // MILLION))
    assert grew <= BUDGET, "a million executions take %.0f MB" % (grew / 1e6)


def test_a_full_redis_evicts_only_records():
    r = PrivateRedis("--maxmemory", "24mb")
    try:
        c = r.client()
        lasting = {"sp:tenants": None, "sp:t:acme": None, "sp:key:" + "ab" * 32: None,
                   "sp:t:acme:use:20260101": None, "sp:snap:acme:s1": None, "sp:mrtr:key": None}
        c.sadd("sp:tenants", "acme")
        c.hset("sp:t:acme", mapping={"rate": "10", "burst": "20"})
        c.set("sp:key:" + "ab" * 32, "acme")
        c.hset("sp:t:acme:use:20260101", mapping={"executions": "5"})
        c.set("sp:snap:acme:s1", "x" * 1000)  # a session snapshot, no TTL
        c.set("sp:mrtr:key", "ab" * 32)  # seals requestState: every front-end must keep the same
        for k in lasting:
            lasting[k] = c.dump(k)
        fill(r, 60000)  # ~45 MB of records into 24 MB: the oldest go
        assert int(c.info("stats")["evicted_keys"]) > 0
        # Redis evicts before each command and, when that takes too long, goes on from a timer:
        # on a busy machine the last batch may still be over the cap for a moment
        deadline = time.time() + 30
        while r.used() > 24 << 20 and time.time() < deadline:
            time.sleep(0.1)
        assert r.used() <= 24 << 20, r.used()
        for k, v in lasting.items():
            assert c.dump(k) == v, "%s was evicted or changed" % k
        assert c.ttl("sp:t:acme") == -1 and c.ttl("sp:t:acme:use:20260101") == -1
    finally:
        r.stop()
