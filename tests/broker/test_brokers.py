"""A broker in a farm of several (PROTOCOL.md §3.1), driven by scripted executors: a job a
front-end resubmits after losing its first broker is PROBEd at every executor before it may
run, and runs nowhere twice; ANSWER returns no credit; WANT asks for credit while jobs wait;
RECLAIM gives back only what is unused."""
import time

import spwire as w
from conftest import result_of, wait_executors

HB = ["--heartbeat-ms", "200", "--liveness", "3"]  # the start-up window is 600 ms


def until(pred, timeout_s=10, step=None):
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        if step:
            step()
        if pred():
            return True
        time.sleep(0.02)
    return False


def test_a_resubmitted_job_runs_once_every_executor_has_disclaimed_it(ctx, make_broker):
    broker = make_broker(*HB)
    a = w.Executor(ctx, broker.executors, node="a", slots=2)
    b = w.Executor(ctx, broker.executors, node="b", slots=2)
    wait_executors(broker, 2)
    client = w.Client(ctx, broker.clients)
    jid = w.job_id()
    client.submit(jid, "t", resubmit=True)
    assert until(lambda: jid in a.probes and jid in b.probes, step=lambda: (a.pump(20), b.pump(20)))
    time.sleep(0.7)  # past the start-up window: still nothing runs, b has not answered
    a.held(jid, w.HELD_NONE)
    a.pump(300), b.pump(300)
    assert not a.jobs and not b.jobs
    b.held(jid, w.HELD_NONE)
    assert until(lambda: len(a.jobs) + len(b.jobs) == 1, step=lambda: (a.pump(20), b.pump(20)))
    runner = a if a.jobs else b
    runner.answer(jid)
    order, answers = w.collect_finals(client, 1)
    assert [result_of(x)[1]["status"] for x in answers[jid]] == ["ok"]
    for p in (a, b, client):
        p.close()


def test_a_resubmitted_job_still_running_is_answered_from_that_run(ctx, make_broker):
    broker = make_broker(*HB)
    a = w.Executor(ctx, broker.executors, node="a", slots=2)
    wait_executors(broker, 1)
    time.sleep(0.7)
    client = w.Client(ctx, broker.clients)
    jid = w.job_id()
    client.submit(jid, "t", resubmit=True)
    assert until(lambda: jid in a.probes, step=lambda: a.pump(20))
    a.held(jid, w.HELD_RUNNING)  # it runs here for the broker that died
    a.answer(jid, credit=False)  # ... and its answer comes as ANSWER
    order, answers = w.collect_finals(client, 1)
    assert result_of(answers[jid][0])[1]["status"] == "ok"
    a.pump(200)
    assert not a.jobs  # never sent again
    assert broker.metric("snakepit_broker_resubmitted_total", found="running") == 1
    assert broker.metric("snakepit_broker_slots_free") == 2  # no credit taken, none returned
    for p in (a, client):
        p.close()


def test_a_resubmitted_job_that_already_ran_is_answered_lost(ctx, make_broker):
    broker = make_broker(*HB)
    a = w.Executor(ctx, broker.executors, node="a", slots=2)
    wait_executors(broker, 1)
    client = w.Client(ctx, broker.clients)
    jid = w.job_id()
    client.submit(jid, "t", resubmit=True)
    assert until(lambda: jid in a.probes, step=lambda: a.pump(20))
    a.held(jid, w.HELD_DONE)
    order, answers = w.collect_finals(client, 1)
    cmd, res = result_of(answers[jid][0])
    assert cmd == w.REJECT and res["status"] == "lost" and res["error"]["type"] == "BrokerLost"
    for p in (a, client):
        p.close()


def test_want_while_jobs_wait_and_reclaim_returns_only_unused_credit(ctx, make_broker):
    broker = make_broker(*HB)
    a = w.Executor(ctx, broker.executors, node="a", slots=4, credit=0)
    wait_executors(broker, 1)
    client = w.Client(ctx, broker.clients)
    jids = [w.job_id() for _ in range(3)]
    for jid in jids:
        client.submit(jid, "t")
    # WANT says how many wait, and is repeated while they do (each heartbeat at least)
    assert until(lambda: 3 in a.wants, step=lambda: a.pump(20))
    assert max(a.wants) == 3
    a.credit(4)
    assert a.wait_jobs(3)
    a.reclaim(4)
    assert until(lambda: a.releases, step=lambda: a.pump(20))
    assert a.releases == [1]  # three went out with jobs
    for p in (a, client):
        p.close()
