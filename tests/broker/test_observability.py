"""What operators see: /metrics in the Prometheus text format 0.0.4 (checked line by line,
since promtool is not installed here) and the one-second snapshot in Redis that the
front-end's get_sandbox_info and `snakepit status` read."""
import json
import math
import os
import re
import shutil
import signal
import subprocess
import time

import pytest
import redis

import spwire as w
from conftest import result_of, stop, wait_executors

NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
SAMPLE = re.compile(r"^(%s)(\{(.*)\})? (\S+)$" % NAME)
LABEL = re.compile(r'(%s)="((?:[^"\\\n]|\\[\\"n])*)"' % r"[a-zA-Z_][a-zA-Z0-9_]*")


def parse_exposition(text):
    """Checks the 0.0.4 rules the broker must follow; returns {family: (type, [samples])}."""
    families, current = {}, None
    assert text.endswith("\n")
    for line in text.splitlines():
        if line.startswith("# HELP "):
            name = line.split(" ", 3)[2]
            assert re.fullmatch(NAME, name) and name not in families, line
            families[name] = [None, []]
            current = name
        elif line.startswith("# TYPE "):
            _, _, name, typ = line.split(" ")
            assert name == current and typ in ("counter", "gauge", "histogram", "untyped"), line
            families[name][0] = typ
        else:
            m = SAMPLE.match(line)
            assert m, "bad sample line: %r" % line
            name, labels, value = m.group(1), m.group(3) or "", m.group(4)
            base = re.sub(r"_(bucket|sum|count)$", "", name) if families[current][0] == "histogram" else name
            assert base == current, "sample %s outside its family %s" % (name, current)
            parsed = dict(LABEL.findall(labels))
            assert ",".join('%s="%s"' % kv for kv in LABEL.findall(labels)) == labels, line
            assert "tenant" not in parsed and "job" not in parsed  # bounded label sets only
            float(value)
            families[current][1].append((name, parsed, float(value)))
    for name, (typ, samples) in families.items():
        assert typ, name
        if typ == "counter":
            assert name.endswith("_total"), name
            assert all(v >= 0 for _, _, v in samples), name
        if typ == "histogram":
            buckets = [(l["le"], v) for n, l, v in samples if n.endswith("_bucket")]
            assert buckets[-1][0] == "+Inf"
            values = [v for _, v in buckets]
            assert values == sorted(values)  # cumulative
            count = [v for n, _, v in samples if n.endswith("_count")][0]
            assert values[-1] == count
    return families


def test_metrics_are_valid_exposition_and_move_with_jobs(ctx, make_broker):
    broker = make_broker("--heartbeat-ms", "200")
    ex = w.Executor(ctx, broker.executors, node="x", slots=2)
    wait_executors(broker, 1)
    client = w.Client(ctx, broker.clients)
    ok = [w.job_id() for _ in range(3)]
    for jid in ok:
        client.submit(jid, "t")
    client.submit(w.job_id(), "t", service="nobody.serves.this")
    assert ex.wait_jobs(2)
    for jid, *_ in list(ex.jobs):
        ex.answer(jid)
    assert ex.wait_jobs(3)
    ex.answer(ex.jobs[2][0])
    w.collect_finals(client, 4, 10)
    fam = parse_exposition(broker.metrics())
    for required in ("snakepit_build_info", "process_start_time_seconds", "snakepit_broker_queue_depth",
                     "snakepit_broker_jobs_inflight", "snakepit_broker_executors",
                     "snakepit_broker_jobs_dispatched_total", "snakepit_broker_jobs_requeued_total",
                     "snakepit_broker_jobs_lost_total", "snakepit_broker_jobs_rejected_total",
                     "snakepit_broker_jobs_expired_total", "snakepit_broker_messages_malformed_total",
                     "snakepit_broker_queue_wait_seconds"):
        assert required in fam, required
    assert fam["snakepit_broker_queue_wait_seconds"][0] == "histogram"
    assert broker.metric("snakepit_broker_jobs_dispatched_total", service=w.SERVICE) == 3
    assert broker.metric("snakepit_broker_jobs_completed_total", service=w.SERVICE) == 3
    assert broker.metric("snakepit_broker_jobs_rejected_total", reason="no_executor") == 1
    assert broker.metric("snakepit_broker_queue_wait_seconds_count") == 3
    assert broker.metric("snakepit_broker_executors", state="idle") == 1
    assert broker.metric("snakepit_build_info", component="broker") == 1
    start = broker.metric("process_start_time_seconds")
    assert abs(start - time.time()) < 3600
    ex.close()
    client.close()


@pytest.fixture
def redis_server(tmp):
    sock = os.path.join(tmp, "redis.sock")
    proc = subprocess.Popen(["redis-server", "--port", "0", "--unixsocket", sock, "--save", "",
                             "--appendonly", "no", "--dir", tmp], stdout=subprocess.DEVNULL)
    r = redis.Redis(unix_socket_path=sock, decode_responses=True)
    deadline = time.time() + 10
    while time.time() < deadline:
        try:
            if r.ping():
                break
        except redis.exceptions.ConnectionError:
            time.sleep(0.05)
    yield sock, r, proc
    stop(proc)


def wait_hash(r, key, pred, timeout=10, tick=None):
    deadline = time.time() + timeout
    h = {}
    while time.time() < deadline:
        if tick:
            tick()
        h = r.hgetall(key)
        if h and pred(h):
            return h
        time.sleep(0.1)
    raise AssertionError("snapshot %s never matched: %r" % (key, h))


def test_snapshot_published_to_redis_every_second(ctx, make_broker, redis_server, tmp):
    sock, r, proc = redis_server
    broker = make_broker("--heartbeat-ms", "200", "--redis", "unix://" + sock, "--instance", "b-test")
    key = "sp:metrics:broker:b-test"
    h = wait_hash(r, key, lambda h: h.get("executors") == "0")
    for field in ("executors", "slots", "free_slots", "queued", "inflight", "services"):
        assert field in h, field
    assert 0 < r.ttl(key) <= 10
    ex = w.Executor(ctx, broker.executors, node="x", slots=3, credit=1)
    client = w.Client(ctx, broker.clients)
    for _ in range(2):
        client.submit(w.job_id(), "t")
    h = wait_hash(r, key, lambda h: h["executors"] == "1" and h["inflight"] == "1" and h["queued"] == "1",
                  tick=ex.heartbeat)  # a live executor heartbeats
    assert h["slots"] == "3" and h["free_slots"] == "0"
    services = json.loads(h["services"])
    assert services[w.SERVICE] == {"executors": 1, "draining": 0, "slots": 3, "free": 0,
                                   "queued": 1, "inflight": 1, "requeued": 0}
    # Redis going away costs snapshots, not the broker
    stop(proc)
    broker.wait_metric("snakepit_broker_redis_publish_errors_total", lambda v: v >= 1, timeout=10)
    client.ping()
    assert client.recv(2000) is not None
    ex.close()
    client.close()
