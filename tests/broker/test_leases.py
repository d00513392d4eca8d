"""Leases, heartbeats, deadlines and cancels, driven by scripted executors whose every
message the test controls (PROTOCOL.md §2-3)."""
import time

import spwire as w
from conftest import result_of, wait_executors

HB = ["--heartbeat-ms", "200", "--liveness", "3"]


def finals_for(client, n, timeout_s=10):
    order, answers = w.collect_finals(client, n, timeout_s)
    for jid, got in answers.items():
        assert len(got) == 1, "job answered %d times" % len(got)
    return {jid: result_of(a[0]) for jid, a in answers.items()}


def test_lost_executor_job_requeued_once_then_answered_lost(ctx, make_broker):
    broker = make_broker(*HB)
    a = w.Executor(ctx, broker.executors, node="a", slots=1)
    wait_executors(broker, 1)
    client = w.Client(ctx, broker.clients)
    jid = w.job_id()
    client.submit(jid, "t")
    assert a.wait_jobs(1)
    assert a.jobs[0][2]["attempt"] == 0
    b = w.Executor(ctx, broker.executors, node="b", slots=1)
    wait_executors(broker, 2)
    a.disconnect()  # a goes away with the job: it is requeued at the head, attempt 1
    assert b.wait_jobs(1)
    assert b.jobs[0][0] == jid and b.jobs[0][2]["attempt"] == 1
    # b falls silent (no heartbeats): after the liveness window the job is lost for good
    got = finals_for(client, 1, timeout_s=10)
    cmd, res = got[jid]
    assert cmd == w.REJECT and res["status"] == "lost"
    assert broker.metric("snakepit_broker_jobs_requeued_total") == 1
    assert broker.metric("snakepit_broker_jobs_lost_total") == 1
    for s in (a, b, client):
        s.close()


def test_a_draining_executor_finishes_its_jobs_and_none_is_requeued(ctx, make_broker):
    """LEAVING (PROTOCOL.md §3.2): the broker gives its credit back at once, sends it nothing
    new (the next job goes to the other executor), forwards its running job's RESULT, and
    when it says DISCONNECT has nothing to requeue. Both executors heartbeat throughout."""
    broker = make_broker()  # heartbeats every second: three of them missed expire a node
    a = w.Executor(ctx, broker.executors, node="a", slots=2)
    wait_executors(broker, 1)
    client = w.Client(ctx, broker.clients)
    j1 = w.job_id()
    client.submit(j1, "t")
    assert a.wait_jobs(1)
    a.leaving(running=1)
    deadline = time.time() + 5
    while not a.releases and time.time() < deadline:
        a.pump(50)
    assert a.releases == [1]  # the credit it had left
    broker.wait_metric("snakepit_broker_executors", lambda v: v == 1, state="draining")
    assert broker.metric("snakepit_broker_service_executors", service=w.SERVICE) == 0
    a.heartbeat()
    b = w.Executor(ctx, broker.executors, node="b", slots=1)
    broker.wait_metric("snakepit_broker_service_executors", lambda v: v == 1, service=w.SERVICE)
    j2 = w.job_id()
    client.submit(j2, "t")
    assert b.wait_jobs(1) and b.jobs[0][0] == j2
    a.heartbeat()
    a.credit(2)  # counts for nothing now
    a.answer(j1)
    b.answer(j2)
    got = finals_for(client, 2)
    assert {jid: (cmd, res["status"]) for jid, (cmd, res) in got.items()} == {
        j1: (w.RESULT, "ok"), j2: (w.RESULT, "ok")}
    a.pump(200)
    assert len(a.jobs) == 1 and not a.wants  # nothing new, not even asked for credit
    a.disconnect()
    broker.wait_metric("snakepit_broker_executors", lambda v: v == 0, state="draining")
    assert broker.metric("snakepit_broker_jobs_requeued_total") == 0
    assert broker.metric("snakepit_broker_jobs_lost_total") == 0
    assert broker.metric("snakepit_broker_executor_drains_total") == 1
    for s in (a, b, client):
        s.close()


def test_busy_and_idle_executors_get_heartbeats_and_silence_expires_them(ctx, make_broker):
    broker = make_broker(*HB)
    ex = w.Executor(ctx, broker.executors, node="hb", slots=1)
    wait_executors(broker, 1)
    t0 = time.time()
    beats = 0
    while time.time() - t0 < 1.5:  # idle: heartbeats still come
        if ex.sock.poll(100):
            beats += ex.sock.recv_multipart()[1] == w.W_HEARTBEAT
        ex.heartbeat()
    assert beats >= 3
    wait_executors(broker, 1)
    # silence: the broker drops it
    wait_executors(broker, 0, timeout=5)
    # a message from the forgotten connection is answered DISCONNECT, and it re-registers
    ex.heartbeat()
    deadline = time.time() + 5
    while not ex.disconnects and time.time() < deadline:
        ex.pump(100)
    assert ex.disconnects == 1
    ex.connect()
    wait_executors(broker, 1)
    ex.close()


def test_late_result_from_first_executor_wins_and_retry_is_cancelled(ctx, make_broker):
    broker = make_broker(*HB)
    a = w.Executor(ctx, broker.executors, node="a", slots=1)
    wait_executors(broker, 1)
    client = w.Client(ctx, broker.clients)
    jid = w.job_id()
    client.submit(jid, "t")
    assert a.wait_jobs(1)
    b = w.Executor(ctx, broker.executors, node="b", slots=1)
    wait_executors(broker, 2)
    a.disconnect()
    assert b.wait_jobs(1)  # the retry runs on b
    a.connect()  # a comes back on a new connection and delivers the first run's result
    wait_executors(broker, 2)
    a.answer(jid, stdout=b"first")
    got = finals_for(client, 1)
    assert got[jid][1]["stdout"] == b"first"
    deadline = time.time() + 5
    while not b.cancels and time.time() < deadline:
        b.pump(100)
    assert b.cancels == [jid]
    b.answer(jid, stdout=b"second")  # stale: returns b's credit, reaches nobody
    assert client.recv(500) is None
    broker.wait_metric("snakepit_broker_stale_results_total", lambda v: v == 1)
    for s in (a, b, client):
        s.close()


def test_queued_job_past_deadline_is_answered_timeout(ctx, make_broker):
    broker = make_broker(*HB)
    ex = w.Executor(ctx, broker.executors, node="x", credit=0)
    wait_executors(broker, 1)
    client = w.Client(ctx, broker.clients)
    jid = w.job_id()
    client.submit(jid, "t", deadline_ms=int(time.time() * 1000) + 300)
    got = finals_for(client, 1)
    cmd, res = got[jid]
    assert cmd == w.REJECT and res["status"] == "timeout" and "queue" in res["error"]["message"]
    ex.credit(1)
    assert ex.pump(300) == 0  # it never runs
    assert broker.metric("snakepit_broker_jobs_expired_total", where="queue") == 1
    ex.close()
    client.close()


def test_running_job_past_deadline_and_grace_is_answered_and_cancelled(ctx, make_broker):
    broker = make_broker(*HB, "--lease-grace-ms", "200")
    ex = w.Executor(ctx, broker.executors, node="x", slots=1)
    wait_executors(broker, 1)
    client = w.Client(ctx, broker.clients)
    jid = w.job_id()
    client.submit(jid, "t", deadline_ms=int(time.time() * 1000) + 300)
    assert ex.wait_jobs(1)
    got = finals_for(client, 1)
    assert got[jid][1]["status"] == "timeout"
    deadline = time.time() + 3
    while not ex.cancels and time.time() < deadline:
        ex.pump(100)
    assert ex.cancels == [jid]
    ex.answer(jid, status="cancelled")  # late: nobody hears it
    assert client.recv(300) is None
    ex.close()
    client.close()


def test_cancel_queued_running_and_foreign(ctx, make_broker):
    broker = make_broker(*HB)
    ex = w.Executor(ctx, broker.executors, node="x", slots=1)
    wait_executors(broker, 1)
    owner, stranger = w.Client(ctx, broker.clients), w.Client(ctx, broker.clients)
    running, queued = w.job_id(), w.job_id()
    owner.submit(running, "t")
    owner.submit(queued, "t")
    assert ex.wait_jobs(1) and ex.jobs[0][0] == running
    stranger.cancel(queued)  # not the submitter: ignored
    stranger.cancel(running)
    owner.cancel(queued)
    got = finals_for(owner, 1)
    assert got[queued][0] == w.REJECT and got[queued][1]["status"] == "cancelled"
    owner.cancel(running)  # forwarded to the executor, which answers
    deadline = time.time() + 3
    while not ex.cancels and time.time() < deadline:
        ex.pump(100)
    assert ex.cancels == [running]
    ex.answer(running, status="cancelled")
    got = finals_for(owner, 1)
    assert got[running] == (w.RESULT, got[running][1]) and got[running][1]["status"] == "cancelled"
    assert stranger.recv(300) is None
    for s in (ex, owner, stranger):
        s.close()


def test_progress_is_forwarded_and_pong_answers_ping(ctx, make_broker):
    broker = make_broker(*HB)
    ex = w.Executor(ctx, broker.executors, node="x", slots=1)
    wait_executors(broker, 1)
    client = w.Client(ctx, broker.clients)
    jid = w.job_id()
    client.submit(jid, "t")
    assert ex.wait_jobs(1)
    ex.progress(jid, b"chunk-1")
    ex.answer(jid)
    seen = []
    order, answers = w.collect_finals(client, 1, 5, on_message=lambda m: seen.append(m[1]))
    assert seen == [w.ACCEPTED, w.PROGRESS, w.RESULT]
    client.ping()
    assert client.recv(2000) == [w.SPC1, w.PONG]
    ex.close()
    client.close()


def test_every_job_answered_once_while_executors_die(ctx, make_broker, make_stub):
    """Stub executors hold each job 20 ms; one is SIGKILLed mid-run, another joins: every
    job gets exactly one answer, nearly all of them results."""
    broker = make_broker(*HB)
    s1 = make_stub(broker, "s1", slots=8, delay_us=20000)
    make_stub(broker, "s2", slots=8, delay_us=20000)
    wait_executors(broker, 2)
    client = w.Client(ctx, broker.clients)
    ids = [w.job_id() for _ in range(600)]
    for i, jid in enumerate(ids):
        client.submit(jid, "ab"[i % 2])
    order, answers = w.collect_finals(client, 100, 30)
    s1.kill()
    make_stub(broker, "s3", slots=8, delay_us=20000)
    more, answers2 = w.collect_finals(client, 500, 60)
    for jid, got in answers2.items():
        answers.setdefault(jid, []).extend(got)
    assert set(answers) == set(ids)
    statuses = {}
    for jid in ids:
        assert len(answers[jid]) == 1, "job answered %d times" % len(answers[jid])
        st = w.decode_result(answers[jid][0][1])["status"]
        statuses[st] = statuses.get(st, 0) + 1
    assert statuses == {"ok": 600}, statuses  # s1's jobs were requeued and ran elsewhere
    assert client.recv(500) is None
    client.close()
