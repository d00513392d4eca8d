"""The front-end when the broker is gone or comes back: every call still gets exactly one
answer (proto/client.h's rule), and records still land; and when Redis cannot take records,
losses are bounded and counted."""
import os
import subprocess
import threading
import time

import pytest

from fe_harness import PY, Client, Frontend, HERE, wait_for


@pytest.fixture(scope="module")
def fe():
    f = Frontend(extra=["--broker-wait-ms", "500", "--heartbeat-ms", "200"])
    yield f
    f.stop()


@pytest.fixture(scope="module")
def client(fe):
    c = Client(fe.url, fe.add_tenant("b", rate="1000", burst="1000"))
    c.initialize()
    return c


def restart_broker(fe):
    fe._spawn("broker", [PY, os.path.join(HERE, "fake_broker.py"), "--clients", fe.broker_ep, "--stats",
                         fe.stats_path])
    wait_for(lambda: fe.health()["broker_connected"], 15, "the broker to be back")


def test_a_job_in_flight_when_the_broker_dies_is_answered_lost(fe, client):
    out = {}
    t = threading.Thread(target=lambda: out.update(r=client.call("execute_code", {"code": "#sleep 30"})))
    t.start()
    wait_for(lambda: fe.health()["jobs_in_flight"] == 1, 5, "the job to be in flight")
    fe._stop("broker")
    t.join(20)
    sc = out["r"]["result"]["structuredContent"]
    assert sc["status"] == "lost" and out["r"]["result"]["isError"] is True
    wait_for(lambda: fe.redis().hget("sp:exec:" + sc["execution_id"], "status") == "lost", 5, "the record")
    restart_broker(fe)


def test_a_call_while_no_broker_is_there_is_rejected_clearly(fe, client):
    fe._stop("broker")
    wait_for(lambda: not fe.health()["broker_connected"], 10, "the front-end to notice")
    sc = client.call("execute_code", {"code": "1"})["result"]["structuredContent"]
    assert sc["status"] == "rejected" and "no broker" in sc["error"]["message"]
    assert fe.metric("snakepit_mcp_broker_unavailable_total") >= 1
    restart_broker(fe)
    assert client.call("execute_code", {"code": "1"})["result"]["structuredContent"]["status"] == "ok"


def test_a_call_made_just_before_the_broker_returns_waits_for_it(fe, client):
    fe._stop("broker")
    wait_for(lambda: not fe.health()["broker_connected"], 10, "the front-end to notice")
    out = {}
    t = threading.Thread(target=lambda: out.update(r=client.call("execute_code", {"code": "1"})))
    t.start()
    fe._spawn("broker", [PY, os.path.join(HERE, "fake_broker.py"), "--clients", fe.broker_ep, "--stats",
                         fe.stats_path])
    t.join(20)
    assert out["r"]["result"]["structuredContent"]["status"] in ("ok", "rejected")
    wait_for(lambda: fe.health()["broker_connected"], 15, "the broker to be back")


def test_record_writes_beyond_the_buffer_are_dropped_and_counted():
    f = Frontend(extra=["--record-buffer", "5", "--redis-timeout-ms", "300"])
    try:
        c = Client(f.url, f.add_tenant("buf", rate="1000", burst="1000"))
        c.initialize()
        f.stop_redis()
        wait_for(lambda: not f.health()["redis_connected"], 10, "Redis to be gone")
        for i in range(8):  # a short job is one record write: 8 of them overflow a buffer of 5
            assert c.call("execute_code", {"code": str(i)})["result"]["structuredContent"]["status"] == "ok"
        assert f.metric("snakepit_mcp_records_dropped_total") > 0
        assert f.mcp_alive()
    finally:
        f.stop()
