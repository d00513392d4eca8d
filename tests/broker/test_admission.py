"""Admission: caps answered REJECT at once with the reason, the in-flight quota, services
nobody serves, duplicate ids, malformed SUBMITs."""
import msgpack
import pytest
import zmq

import spwire as w
from conftest import result_of, wait_executors


def final(client, jid, timeout=5000):
    """The final answer for jid (skipping ACCEPTED); fails when none arrives."""
    while True:
        msg = client.recv(timeout)
        assert msg is not None, "no answer"
        if msg[1] in (w.RESULT, w.REJECT) and msg[3] == jid:
            return msg[1], w.decode_result(msg[4])


def test_queue_caps_reject_at_once_with_reason(ctx, make_broker):
    broker = make_broker("--max-queue", "8", "--max-queue-per-tenant", "5")
    ex = w.Executor(ctx, broker.executors, node="no-credit", slots=4, credit=0)  # jobs stay queued
    wait_executors(broker, 1)
    client = w.Client(ctx, broker.clients)
    ids = [w.job_id() for _ in range(6)]
    for jid in ids:
        client.submit(jid, "a")
    cmd, res = final(client, ids[5])
    assert cmd == w.REJECT and res["status"] == "rejected"
    assert "tenant 'a'" in res["error"]["message"] and "queued" in res["error"]["message"]
    more = [w.job_id() for _ in range(4)]
    for jid in more:
        client.submit(jid, "b")
    cmd, res = final(client, more[3])  # 5 (a) + 3 (b) = 8 = the global cap
    assert cmd == w.REJECT and "queue is full" in res["error"]["message"]
    assert broker.metric("snakepit_broker_jobs_rejected_total", reason="tenant_queue_full") == 1
    assert broker.metric("snakepit_broker_jobs_rejected_total", reason="queue_full") == 1
    assert broker.metric("snakepit_broker_queue_depth", service=w.SERVICE) == 8
    ex.close()
    client.close()


def test_tenant_at_inflight_quota_waits_and_others_run(ctx, make_broker):
    broker = make_broker("--max-queue-per-tenant", "3")
    ex = w.Executor(ctx, broker.executors, node="x", slots=8)
    wait_executors(broker, 1)
    client = w.Client(ctx, broker.clients)
    q = [w.job_id() for _ in range(5)]
    for jid in q[:2]:
        client.submit(jid, "q", max_inflight=2)
    other = [w.job_id() for _ in range(3)]
    for jid in other:
        client.submit(jid, "other")
    assert ex.wait_jobs(5)
    for jid in q[2:]:  # q is at its quota now: these wait although the executor has credit
        client.submit(jid, "q", max_inflight=2)
    accepted = 0
    while accepted < 3 + 2 + 3:
        msg = client.recv()
        assert msg is not None and msg[1] == w.ACCEPTED
        accepted += 1
    assert ex.pump(300) == 0
    got = [j for j, *_ in ex.jobs]
    assert len(got) == 5 and set(other) <= set(got) and [j for j in got if j in q] == q[:2]
    # the quota is full and so is q's queue (3): the next is refused, saying why
    extra = w.job_id()
    client.submit(extra, "q", max_inflight=2)
    cmd, res = final(client, extra)
    assert cmd == w.REJECT and "in-flight quota" in res["error"]["message"]
    ex.answer(q[0])
    assert ex.wait_jobs(6)
    assert ex.jobs[5][0] == q[2]
    ex.close()
    client.close()


def test_service_nobody_serves_is_rejected(ctx, make_broker):
    broker = make_broker("--service-grace-ms", "400")
    client = w.Client(ctx, broker.clients)
    unknown = w.job_id()
    client.submit(unknown, "t", service="no.such.service")
    cmd, res = final(client, unknown)
    assert cmd == w.REJECT and res["status"] == "rejected"
    assert "no executor serves service 'no.such.service'" in res["error"]["message"]
    # a known profile right after start waits out the grace for executors, then is answered
    waiting = w.job_id()
    client.submit(waiting, "t")
    cmd, res = final(client, waiting, timeout=5000)
    assert cmd == w.REJECT and "no executor serves service 'python.basic'" in res["error"]["message"]
    client.close()


def test_executor_arriving_within_the_grace_takes_the_job(ctx, make_broker):
    broker = make_broker("--service-grace-ms", "5000")
    client = w.Client(ctx, broker.clients)
    jid = w.job_id()
    client.submit(jid, "t")
    ex = w.Executor(ctx, broker.executors, node="late")
    assert ex.wait_jobs(1)
    ex.answer(jid)
    cmd, res = final(client, jid)
    assert cmd == w.RESULT and res["status"] == "ok"
    ex.close()
    client.close()


def test_duplicate_job_id_rejected_and_original_kept(ctx, make_broker):
    broker = make_broker()
    ex = w.Executor(ctx, broker.executors, node="x", credit=0)
    wait_executors(broker, 1)
    c1, c2 = w.Client(ctx, broker.clients), w.Client(ctx, broker.clients)
    jid = w.job_id()
    c1.submit(jid, "t")
    assert c1.recv()[1] == w.ACCEPTED
    c2.submit(jid, "t")
    cmd, res = final(c2, jid)
    assert cmd == w.REJECT and "already queued or running" in res["error"]["message"]
    ex.credit(1)
    assert ex.wait_jobs(1)
    ex.answer(jid)
    cmd, res = final(c1, jid)
    assert cmd == w.RESULT
    assert c2.recv(300) is None  # the duplicate's submitter hears nothing more
    for s in (ex, c1, c2):
        s.close()


def test_oversized_submit_is_rejected_not_queued(ctx, make_broker):
    broker = make_broker()
    client = w.Client(ctx, broker.clients)
    jid = w.job_id()
    client.submit(jid, "t", body=b"x" * (16 * 1024 * 1024 + 1))
    cmd, res = final(client, jid, timeout=10000)
    assert cmd == w.REJECT and "body too large" in res["error"]["message"]
    assert broker.metric("snakepit_broker_messages_malformed_total", channel="client", reason="oversized") == 1
    assert broker.metric("snakepit_broker_queue_depth") in (None, 0)
    client.close()


def test_deadline_already_passed_answers_timeout(ctx, make_broker):
    broker = make_broker()
    client = w.Client(ctx, broker.clients)
    jid = w.job_id()
    client.submit(jid, "t", deadline_ms=1000)  # 1970
    cmd, res = final(client, jid)
    assert cmd == w.REJECT and res["status"] == "timeout"
    client.close()
