"""`snakepit status` shows the farm from its Redis snapshots and `snakepit usage` the
per-tenant per-day usage the front-end recorded for the known mix (opsfarm.py)."""
import datetime
import json
import time

import pytest

import opslib
from opsfarm import CLI_MIX, MCP_MIX, snakepit


def status_json(farm, *extra):
    r = snakepit("status", "--state-dir", farm.dir, "--json", *extra)
    return r.returncode, json.loads(r.stdout) if r.stdout.strip() else None, r.stderr


def wait_status(farm, pred, timeout=15):
    """Snapshots are published every second: wait (bounded) until one shows what we want."""
    deadline = time.time() + timeout
    while True:
        rc, st, err = status_json(farm, "--interval-ms", "0")
        if st and pred(st):
            return rc, st
        if time.time() > deadline:
            raise AssertionError("status never showed it: %s %s" % (json.dumps(st, indent=1), err))
        time.sleep(0.3)


def component(st, name):
    return [c for c in st["components"] if c["component"] == name]


def test_status_shows_the_whole_farm_on_one_screen(farm, mix):
    r = snakepit("status", "--state-dir", farm.dir)
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout
    for words in ("BROKER", "SERVICE", "EXECUTOR", "python.basic", "executors 1", "slots 2"):
        assert words in out, (words, out)
    st = json.loads(snakepit("status", "--state-dir", farm.dir, "--json", "--interval-ms", "0").stdout)
    (ex,) = component(st, "executor")
    assert ex["instance"] in out  # the node is listed by its id


def test_status_json_counts_executors_slots_and_the_jobs_run(farm, mix):
    rc, st = wait_status(farm, lambda s: component(s, "executor")
                         and component(s, "executor")[0]["fields"].get("violations", 0) >= 2)
    assert rc == 0 and st["healthy"] and st["problems"] == []
    s = st["summary"]
    assert (s["brokers"], s["executors"], s["slots"]) == (1, 1, 2)
    assert s["busy"] + s["free"] == 2 and s["stale"] == 0
    assert s["reserve_slots"] == 1  # the executor's default, kept apart from slots
    (broker,) = component(st, "broker")
    assert broker["fields"]["services"]["python.basic"]["slots"] == 2
    assert broker["fields"]["completed_total"] >= 11
    assert 0 <= broker["age_s"] < 5 and broker["ttl_s"] > 0
    (ex,) = component(st, "executor")
    # snakepit up serves every profile whose libraries are installed
    assert ex["fields"]["jobs"] >= 11 and "python.basic" in ex["fields"]["services"].split(",")


def test_status_measures_rates_between_two_readings(farm, mix):
    rc, st, err = status_json(farm, "--interval-ms", "1000")
    assert rc == 0, err
    (broker,) = component(st, "broker")
    (ex,) = component(st, "executor")
    assert broker["rates"] is not None and broker["rates"]["dispatched_total"] >= 0
    assert ex["rates"] is not None and ex["rates"]["jobs"] >= 0
    assert st["summary"]["jobs_per_s"] is not None


def test_status_reports_a_farm_without_snapshots_as_degraded(farm):
    empty_db = farm.ready["redis"].split("?")[0] + "?db=7"
    r = snakepit("status", "--redis", empty_db, "--json", "--interval-ms", "0")
    assert r.returncode == 1, r.stderr
    st = json.loads(r.stdout)
    assert not st["healthy"] and st["summary"]["executors"] == 0
    assert any("broker" in p for p in st["problems"]) and any("executor" in p for p in st["problems"])


def test_status_without_redis_says_so():
    r = snakepit("status", "--redis", "unix:///nonexistent/redis.sock")
    assert r.returncode == 69 and "redis" in r.stderr.lower()
    assert snakepit("status", "--bogus").returncode == 64


def today():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d")


def test_usage_counts_the_mix_by_tenant_day_and_status(farm, mix):
    before = mix["usage_before"]["tenants"].get("local", {}).get("total", {})
    after = mix["usage_after"]["tenants"]["local"]
    assert today() in after["days"]
    total = after["total"]
    # `snakepit run` goes through the MCP endpoint too, so its runs count (its exit status is
    # the job's status: 0 ok, 1 error, 3 timeout, 7 security_violation, ...)
    names = ["ok", "error", "syntax_error", "timeout", "cpu_limit", "memory_limit", "output_limit",
             "security_violation", "cancelled", "rejected", "lost", "internal_error"]
    statuses = [status for _, status in MCP_MIX] + [names[code] for _, code in CLI_MIX]
    assert total["executions"] - before.get("executions", 0) == len(statuses)
    for status in set(statuses):
        assert (total["by_status"][status] - before.get("by_status", {}).get(status, 0)
                == statuses.count(status)), status
    assert total["cpu_ms"] > before.get("cpu_ms", 0)
    # two 1 s timeouts in MCP_MIX? one: its wall clock is in the day's wall_ms
    assert total["wall_ms"] - before.get("wall_ms", 0) >= 900


def test_usage_table_shows_each_tenant_and_day(farm, mix):
    r = snakepit("usage", "--state-dir", farm.dir, "--days", "3")
    assert r.returncode == 0, r.stderr
    day = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    local = [l for l in r.stdout.splitlines() if l.startswith("local ")]
    assert local and day in local[0], r.stdout
    for status in ("ok=", "error=", "timeout=", "security_violation="):
        assert status in local[0], r.stdout
    assert any(l.startswith("ops-slow ") for l in r.stdout.splitlines()), r.stdout


def test_usage_for_one_tenant(farm, mix):
    r = snakepit("usage", "local", "--days", "1", "--state-dir", farm.dir, "--json")
    assert r.returncode == 0
    doc = json.loads(r.stdout)
    assert list(doc["tenants"]) == ["local"] and doc["days"] == 1 and doc["to"] == today()
    r = snakepit("usage", "nobody-here", "--state-dir", farm.dir)  # no such tenant, no usage: 1
    assert r.returncode == 1 and "no tenant nobody-here" in r.stderr


@pytest.mark.parametrize("args", [["a:b"], ["x", "y"], ["--days", "0"]])
def test_usage_refuses_bad_arguments(farm, args):
    assert snakepit("usage", *args, "--state-dir", farm.dir).returncode == 64


def test_status_counts_an_executor_that_publishes_nothing(farm, mix):
    """A node without --redis is registered with the broker but has no snapshot: the farm's
    capacity is the broker's view, and status says one node is not publishing. (Last in this
    file: it changes the farm's capacity while it runs.)"""
    import os
    import subprocess
    node = subprocess.Popen([os.path.join(opslib.BIN, "snakepit-executor"), "--broker", farm.ready["executors"],
                             "--metrics", "off", "--slots", "1", "--node-id", "ops-silent-node"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        rc, st = wait_status(farm, lambda s: s["summary"]["executors"] == 2)
        assert rc == 0, st["problems"]
        assert st["summary"]["executors_publishing"] == 1 and st["summary"]["slots"] == 3
        assert any("publish no snapshot" in n for n in st["notes"]), st["notes"]
    finally:
        node.terminate()
        try:
            node.wait(15)
        except subprocess.TimeoutExpired:
            node.kill()
            node.wait()
