"""Hostile input, restarts and refusing plain text off loopback: the broker drops, logs and
counts what is malformed, never crashes or blocks, and every job still gets one answer."""
import os
import signal
import subprocess
import time

import msgpack
import zmq

import spwire as w
from conftest import BENCH, BIN, free_port, result_of, stop, wait_executors


def test_malformed_messages_and_floods_are_dropped_and_counted(ctx, make_broker):
    broker = make_broker("--heartbeat-ms", "200")
    ex = w.Executor(ctx, broker.executors, node="x", slots=4)
    wait_executors(broker, 1)
    evil = ctx.socket(zmq.DEALER)
    evil.connect(broker.clients)
    evil_worker = ctx.socket(zmq.DEALER)
    evil_worker.connect(broker.executors)
    jid = w.job_id()
    garbage = [
        [b"SPC2", w.SUBMIT],                                    # a future protocol version
        [b"SPC1"],                                              # too few frames
        [b"SPC1", b"\x01\x02"],                                 # command not one byte
        [b"SPC1", b"\x7f", b"x"],                               # unknown command
        [b"SPC1", w.SUBMIT, b"python.basic", jid[:15], w.route("t"), b""],  # short id
        [b"SPC1", w.SUBMIT, b"bad service!", jid, w.route("t"), b""],
        [b"SPC1", w.SUBMIT, b"python.basic", jid, b"\xc1", b""],            # bad route
        [b"SPC1", w.SUBMIT, b"python.basic", jid, msgpack.packb({"tenant": "a b"}), b""],
        [b"SPC1", w.RESULT, b"python.basic", jid, b""],        # wrong direction
        [b"SPC1"] + [b"x"] * 20,                                # too many frames
        [b""],
    ]
    for _ in range(50):  # a flood of it
        for m in garbage:
            evil.send_multipart(m)
    worker_garbage = [
        [b"SPW1", w.W_READY, b"\x81\xa1v\x02"],                  # READY version 2
        [b"SPW1", w.W_READY, msgpack.packb({"v": 1, "node": "n", "services": ["s"] * 9, "slots": 1})],
        [b"SPW1", w.W_CREDIT, msgpack.packb(1 << 20)],          # absurd credit
        [b"SPW1", w.W_JOB, b"python.basic", jid, w.route("t"), b""],  # wrong direction
        [b"SPW0", w.W_HEARTBEAT],
    ]
    for _ in range(50):
        for m in worker_garbage:
            evil_worker.send_multipart(m)
    # meanwhile real work still flows
    client = w.Client(ctx, broker.clients)
    good = w.job_id()
    client.submit(good, "t")
    assert ex.wait_jobs(1)
    ex.answer(good)
    order, answers = w.collect_finals(client, 1, 10)
    assert answers[good][0][0] == w.RESULT
    # malformed SUBMITs with a readable id got one REJECT each; nothing else answered
    bad_ids = 0
    while evil.poll(300):
        msg = evil.recv_multipart()
        assert msg[1] == w.REJECT
        bad_ids += 1
    assert bad_ids == 50 * 2  # the bad-route SUBMITs (valid service and id)
    total_client = broker.wait_metric("snakepit_broker_messages_malformed_total",
                                      lambda v: v >= 50 * len(garbage), channel="client")
    assert total_client == 50 * len(garbage)
    assert broker.metric("snakepit_broker_messages_malformed_total", channel="client",
                         reason="unknown_version") == 50
    assert broker.metric("snakepit_broker_messages_malformed_total", channel="worker") == 50 * len(worker_garbage)
    assert broker.metric("snakepit_broker_executors") == 1  # none of the garbage registered
    deadline = time.time() + 5  # logged, and rate-limited: the rest summed up a second later
    while "event=log_suppressed kind=malformed" not in broker.read_log() and time.time() < deadline:
        time.sleep(0.1)
    log = broker.read_log()
    assert "event=malformed" in log and "event=log_suppressed kind=malformed" in log
    assert log.count("event=malformed") <= 40
    assert broker.proc.poll() is None
    for s in (evil, evil_worker):
        s.close(0)
    ex.close()
    client.close()


def test_restart_executors_reregister_and_pending_jobs_get_an_answer(ctx, make_broker, make_stub, tmp):
    """SIGKILL the broker under load and start a new one on the same endpoints: the stub
    executor registers again by itself, and the load generator (proto/client.c) gets one
    answer for every job: results, or `lost` for what the dead broker held."""
    broker = make_broker("--heartbeat-ms", "200")
    make_stub(broker, "s1", slots=16, delay_us=5000)
    wait_executors(broker, 1)
    out = open(os.path.join(tmp, "loadgen.json"), "w+")
    load = subprocess.Popen([os.path.join(BENCH, "loadgen"), "--broker", broker.clients,
                             "--jobs", "3000", "--window", "64", "--timeout-s", "60"], stdout=out)
    broker.wait_metric("snakepit_broker_jobs_completed_total", lambda v: v >= 300, timeout=30)
    broker.proc.kill()
    broker.proc.wait(5)
    broker.log.close()
    time.sleep(0.5)
    broker.start()
    wait_executors(broker, 1, timeout=10)  # the stub noticed and registered again
    rc = load.wait(90)
    out.seek(0)
    import json
    report = json.loads(out.read())
    assert rc == 0, json.dumps(report) + "\n" + broker.read_log()[-6000:]
    assert report["answered"] == 3000 and report["unknown_answers"] == 0
    assert report["status"]["ok"] >= 2000
    assert set(report["status"]) <= {"ok", "lost"}
    assert set(report["error_types"]) <= {"BrokerLost"}


def test_plain_tcp_off_loopback_is_refused_without_curve(tmp):
    port = free_port()
    args = [os.path.join(BIN, "snakepit-broker"), "--clients", "tcp://0.0.0.0:%d" % port,
            "--executors", "ipc://%s/w.sock" % tmp, "--metrics", "off"]
    p = subprocess.run(args, capture_output=True, timeout=10)
    assert p.returncode != 0
    assert b"CURVE is off" in p.stderr and b"--allow-plain-remote" in p.stderr
    proc = subprocess.Popen(args + ["--allow-plain-remote"], stderr=subprocess.PIPE)
    time.sleep(0.5)
    assert proc.poll() is None
    assert stop(proc) == 0


def test_oversized_result_still_ends_the_job_and_returns_the_credit(ctx, make_broker):
    broker = make_broker()
    ex = w.Executor(ctx, broker.executors, node="big", slots=1)
    wait_executors(broker, 1)
    client = w.Client(ctx, broker.clients)
    first, second = w.job_id(), w.job_id()
    client.submit(first, "t")
    client.submit(second, "t")
    assert ex.wait_jobs(1)
    ex.sock.send_multipart([w.SPW1, w.W_RESULT, first, b"x" * (16 * 1024 * 1024 + 1)])
    order, answers = w.collect_finals(client, 1, 10)
    cmd, res = result_of(answers[first][0])
    assert cmd == w.REJECT and res["status"] == "internal_error"
    assert res["error"]["type"] == "ResultTooLarge"
    assert ex.wait_jobs(2)  # its credit came back: the next job went out
    assert ex.jobs[1][0] == second
    ex.close()
    client.close()
