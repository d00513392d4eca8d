"""Execution records kept within bounds and never lost, against a real Redis with the
broker stand-in: retention by count and age, per tenant and farm-wide, deletes the records it
drops; usage has no TTL (a full Redis must not evict it); every finished record can go to an
export stream, once; and an acknowledged write lost with its Redis (restarted empty, as after
a failover to a replica that had not got it yet) is written again from the front-end's journal,
without counting usage twice."""
import time

import pytest

from fe_harness import Client, Frontend, wait_for


@pytest.fixture(scope="module")
def fe():
    f = Frontend(extra=["--record-max", "4", "--export-stream", "sp:export",
                        "--redis-replay-ms", "60000"])
    yield f
    f.stop()


def run(fe, key, n):
    c = Client(fe.url, key)
    c.initialize()
    return [c.call("execute_code", {"code": "print(%d)" % i})["result"]["structuredContent"]
            ["execution_id"] for i in range(n)]


def test_the_farm_keeps_its_record_max_per_tenant_and_deletes_the_rest(fe):
    ids = run(fe, fe.add_tenant("many", rate="1000", burst="1000"), 7)
    r = fe.redis()
    wait_for(lambda: r.zcard("sp:t:many:execs") == 4 and not r.exists("sp:exec:" + ids[2]), 10,
             "the oldest records to go")
    assert r.zrange("sp:t:many:execs", 0, -1) == ids[3:]
    assert all(r.exists("sp:exec:" + i) for i in ids[3:])


def test_a_tenant_s_own_retention_overrides_the_farm_s(fe):
    ids = run(fe, fe.add_tenant("few", rate="1000", burst="1000", record_max="2",
                                record_ttl_s="120"), 3)
    r = fe.redis()
    wait_for(lambda: r.zcard("sp:t:few:execs") == 2, 10, "the tenant's own count")
    assert not r.exists("sp:exec:" + ids[0])
    assert 0 < r.ttl("sp:exec:" + ids[2]) <= 120


def test_usage_has_no_ttl_and_every_record_is_exported_once(fe):
    ids = run(fe, fe.add_tenant("exp", rate="1000", burst="1000"), 2)
    r = fe.redis()
    day = time.strftime("%Y%m%d", time.gmtime())
    wait_for(lambda: r.hget("sp:t:exp:use:" + day, "executions") == "2", 10, "usage")
    assert r.ttl("sp:t:exp:use:" + day) == -1
    exported = [f for _, f in r.xrange("sp:export") if f.get("tenant") == "exp"]
    assert sorted(f["id"] for f in exported) == sorted(ids)
    assert all(f["status"] == "ok" and f["code"].startswith("print(") for f in exported)


def test_writes_lost_with_redis_are_replayed_without_counting_twice(fe):
    ids = run(fe, fe.add_tenant("replay", rate="1000", burst="1000"), 3)
    r = fe.redis()
    day = time.strftime("%Y%m%d", time.gmtime())
    wait_for(lambda: r.hget("sp:exec:" + ids[-1], "status") == "ok", 10, "the records")
    assert r.hget("sp:t:replay:use:" + day, "executions") == "3"
    # Redis comes back without them (a replica promoted before it had them, a Redis without its
    # files): the front-end's journal still holds them (--redis-replay-ms) and sends them again
    fe.stop_redis()
    fe.start_redis()  # an empty Redis
    fe.add_tenant("replay", rate="1000", burst="1000")
    r = fe.redis()
    wait_for(lambda: all(r.hget("sp:exec:" + i, "status") == "ok" for i in ids), 15,
             "the journal to replay every record")
    assert fe.metric("snakepit_mcp_records_replayed_total") >= 3
    assert r.hget("sp:t:replay:use:" + day, "executions") == "3"  # once each, not again
    # replayed into a Redis that has them (a reconnect to the same one), they count nothing
    replayed = fe.metric("snakepit_mcp_records_replayed_total")
    r.client_kill_filter(_type="normal", skipme=True)
    wait_for(lambda: fe.metric("snakepit_mcp_records_replayed_total") >= replayed + 3, 15,
             "the journal sent again")
    assert r.hget("sp:t:replay:use:" + day, "executions") == "3"


def test_replayed_task_writes_leave_finished_and_cancelled_tasks_as_they_were(fe):
    c = Client(fe.url, fe.add_tenant("tasky", rate="1000", burst="1000"))
    c.initialize()
    done = c.request("tools/call", {"name": "execute_code", "arguments": {"code": "print(1)"},
                                    "task": {}})["result"]["task"]["taskId"]
    stopped = c.request("tools/call", {"name": "execute_code", "arguments": {"code": "#sleep 5"},
                                       "task": {}})["result"]["task"]["taskId"]
    c.request("tasks/cancel", {"taskId": stopped})
    r = fe.redis()
    settled = lambda: (r.hget("sp:exec:" + done, "task_status"), r.hget("sp:exec:" + stopped, "task_status"))
    wait_for(lambda: settled() == ("completed", "cancelled"), 15, "both tasks to settle")
    # the journal sends every write again, the task's start and its cancellation among them
    replayed = fe.metric("snakepit_mcp_records_replayed_total")
    r.client_kill_filter(_type="normal", skipme=True)
    wait_for(lambda: fe.metric("snakepit_mcp_records_replayed_total") >= replayed + 5, 15,
             "the journal sent again")
    assert settled() == ("completed", "cancelled")
    for tid in (done, stopped):
        assert r.zscore("sp:t:tasky:tasks", tid) and r.ttl("sp:exec:" + tid) > 0


@pytest.fixture(scope="module")
def fe_plain():
    """a front-end as most run: no export stream, the default retention"""
    f = Frontend(extra=["--redis-replay-ms", "60000"])
    yield f
    f.stop()


def _calls(r, command):
    return int(r.info("commandstats").get("cmdstat_" + command, {}).get("calls", 0))


def test_a_record_written_as_plain_commands_is_replayed_by_its_script_without_counting_twice(
        fe_plain):
    """A final record's write goes out as plain commands (HSET, EXPIRE, ZADD, HINCRBY: cheaper
    for Redis than the script) when it needs none of the script's upkeep, and stays in the
    journal as the script, which counts usage only for a record's first final fields."""
    fe = fe_plain
    key = fe.add_tenant("plain", rate="1000", burst="1000")
    r = fe.redis()
    before = _calls(r, "hincrby")
    ids = run(fe, key, 5)
    day = time.strftime("%Y%m%d", time.gmtime())
    assert r.hget("sp:t:plain:use:" + day, "executions") == "5"  # in before the answers
    assert r.hget("sp:t:plain:use:" + day, "status:ok") == "5"
    # the tenant's first write trims its index and sweeps old usage days (the script); the
    # next four went as plain commands, four counters each
    assert _calls(r, "hincrby") - before == 4 * 4
    assert r.zrange("sp:t:plain:execs", 0, -1) == ids
    assert all(0 < r.ttl("sp:exec:" + i) for i in ids)
    assert all(r.hget("sp:exec:" + i, "status") == "ok" for i in ids)
    # replayed into a Redis that has them: the script finds their final fields, counts nothing
    replayed = fe.metric("snakepit_mcp_records_replayed_total")
    r.client_kill_filter(_type="normal", skipme=True)
    wait_for(lambda: fe.metric("snakepit_mcp_records_replayed_total") >= replayed + 5, 15,
             "the journal sent again")
    assert r.hget("sp:t:plain:use:" + day, "executions") == "5"
    # replayed into a Redis that lost them: written again, counted once
    fe.stop_redis()
    fe.start_redis()
    fe.add_tenant("plain", rate="1000", burst="1000")
    r = fe.redis()
    wait_for(lambda: all(r.hget("sp:exec:" + i, "status") == "ok" for i in ids), 15,
             "the journal to replay every record")
    assert r.hget("sp:t:plain:use:" + day, "executions") == "5"
    assert r.zrange("sp:t:plain:execs", 0, -1) == ids
