"""An executor node that is stopped drains (PROTOCOL.md §3.2), driven directly with the test as
its broker (tests/security/harness.py, which answers LEAVING with RELEASE as a broker does):
SIGTERM (or POST /drain on its metrics listener, from this machine only) makes it say LEAVING,
grant no credit any more, answer the jobs it runs (as ANSWER: no credit comes back with them)
and only then say DISCONNECT and exit 0; a second signal stops it at once; a job that outlives
--drain-grace-s is left to the brokers (DISCONNECT, as when a node stops). Every wait is bounded
and polls; nothing asserts how long anything took."""
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "security"))
from harness import BIN, Executor  # noqa: E402

SLOW = "import time\ntime.sleep(%s)\nprint('done')"


def poll(ex, pred, timeout, what):
    """Handles what the node sends (as its broker) until pred() holds."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        ex._pump(20)
        if pred():
            return
    raise AssertionError("timed out waiting for %s:\n%s" % (what, ex.output()[-3000:]))


def metrics_port(ex):
    poll(ex, lambda: "event=metrics_listening" in ex.output(), 30, "the metrics listener")
    return int(re.search(r"event=metrics_listening port=(\d+)", ex.output()).group(1))


def started(ex, jid):
    poll(ex, lambda: jid in ex.started, 60, "the job to start")


def test_sigterm_finishes_the_running_job_then_disconnects_and_exits():
    ex = Executor(slots=2, extra=["--log-level", "info"])
    try:
        jid = ex.submit(SLOW % 1.5, wall_ms=30000)
        started(ex, jid)
        ex.proc.send_signal(signal.SIGTERM)
        poll(ex, lambda: ex.leaving, 30, "LEAVING")
        assert ex.leaving[0]["v"] == 1 and ex.leaving[0]["grace_ms"] == 60000, ex.leaving
        assert ex.leaving[0]["running"] == 1 and ex.leaving[0]["reason"] == "SIGTERM", ex.leaving
        poll(ex, lambda: not ex.alive(), 60, "the node to exit")
        ex._pump(200)  # what it sent before it went
        assert ex.proc.returncode == 0, ex.output()[-3000:]
        r = ex.results.pop(jid)
        assert r["status"] == "ok" and r["stdout"] == b"done\n", r
        assert ex.via[jid] == b"\x09"  # ANSWER: the slot's credit does not come back
        after = ex.events[ex.events.index(b"\x10"):]
        assert b"\x02" not in after, after  # no CREDIT once it said LEAVING
        assert after[-1] == b"\x08", after  # DISCONNECT, last
        out = ex.output()
        assert 'event=draining reason="SIGTERM" grace_s=60 running=1' in out, out[-3000:]
        assert "event=drained" in out and "event=drain_grace_over" not in out
    finally:
        ex.close()


def test_a_second_signal_stops_at_once():
    ex = Executor(slots=1, extra=["--log-level", "info"])
    try:
        jid = ex.submit(SLOW % 60, wall_ms=120000)
        started(ex, jid)
        ex.proc.send_signal(signal.SIGTERM)
        poll(ex, lambda: ex.leaving, 30, "LEAVING")
        ex.proc.send_signal(signal.SIGINT)
        poll(ex, lambda: not ex.alive(), 30, "the node to exit")
        ex._pump(200)
        assert ex.proc.returncode == 0
        assert jid not in ex.results  # left to the broker: DISCONNECT, it requeues
        assert ex.disconnected == 1
        assert "event=stopping reason=SIGINT draining=1" in ex.output(), ex.output()[-3000:]
    finally:
        ex.close()


def test_a_job_that_outlives_the_grace_is_left_to_the_brokers():
    ex = Executor(slots=1, extra=["--log-level", "info", "--drain-grace-s", "1"])
    try:
        jid = ex.submit(SLOW % 60, wall_ms=120000)
        started(ex, jid)
        ex.proc.send_signal(signal.SIGTERM)
        poll(ex, lambda: not ex.alive(), 60, "the node to exit")
        ex._pump(200)
        assert ex.proc.returncode == 0
        assert ex.leaving and ex.leaving[0]["grace_ms"] == 1000
        assert jid not in ex.results and ex.disconnected == 1
        assert "event=drain_grace_over running=1 grace_s=1" in ex.output(), ex.output()[-3000:]
    finally:
        ex.close()


def test_no_grace_stops_at_once_as_before():
    ex = Executor(slots=1, extra=["--log-level", "info", "--drain-grace-s", "0"])
    try:
        ex.proc.send_signal(signal.SIGTERM)
        poll(ex, lambda: not ex.alive(), 30, "the node to exit")
        ex._pump(200)
        assert ex.proc.returncode == 0 and not ex.leaving and ex.disconnected == 1
    finally:
        ex.close()


def test_post_drain_from_this_machine_drains_it():
    ex = Executor(slots=1, extra=["--log-level", "info"])
    try:
        port = metrics_port(ex)
        url = "http://127.0.0.1:%d/drain" % port
        with pytest.raises(urllib.error.HTTPError) as e:  # it is a POST
            urllib.request.urlopen(url, timeout=10)
        assert e.value.code == 405
        jid = ex.submit(SLOW % 1, wall_ms=30000)
        started(ex, jid)
        r = urllib.request.urlopen(urllib.request.Request(url, data=b"", method="POST"), timeout=10)
        assert r.status == 202
        assert r.read() == b'{"state":"draining","running":1,"grace_s":60}\n'
        poll(ex, lambda: not ex.alive(), 60, "the node to exit")
        ex._pump(200)
        assert ex.proc.returncode == 0
        assert ex.results.pop(jid)["status"] == "ok"
        assert ex.leaving[0]["reason"] == "POST /drain"
    finally:
        ex.close()


def test_post_drain_is_refused_to_other_machines():
    """The listener on every address; a peer that is not loopback gets 403 and nothing drains.
    Needs an address of this machine's that is not loopback."""
    import socket
    outside = None
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u:
        try:  # the address the default route leaves from (a UDP connect sends nothing)
            u.connect(("10.255.255.255", 9))
            outside = u.getsockname()[0]
        except OSError:
            pass
    if not outside or outside.startswith("127."):
        pytest.skip("this machine has no address but loopback")
    ex = Executor(slots=1, extra=["--log-level", "info", "--metrics", "0.0.0.0:0"])
    try:
        port = metrics_port(ex)
        req = urllib.request.Request("http://%s:%d/drain" % (outside, port), data=b"",
                                     method="POST")
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(req, timeout=10)
        assert e.value.code == 403
        assert ex.run("print(1)")["stdout"] == "1\n"  # still serving
        assert not ex.leaving and "event=draining" not in ex.output()
    finally:
        ex.close()


def test_snakepit_drain_asks_the_node_and_waits_until_it_has_stopped():
    ex = Executor(slots=1, extra=["--log-level", "info"])
    try:
        port = metrics_port(ex)
        p = subprocess.Popen([os.path.join(BIN, "snakepit"), "drain", "--executor",
                              "127.0.0.1:%d" % port, "--wait"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        poll(ex, lambda: p.poll() is not None, 60, "snakepit drain --wait to return")
        out, err = p.communicate()
        assert p.returncode == 0, err
        assert out == "127.0.0.1:%d: draining, 0 jobs running, grace 60 s\n127.0.0.1:%d: stopped\n" % (
            port, port), out
        assert not ex.alive() and ex.proc.returncode == 0
    finally:
        ex.close()
    r = subprocess.run([os.path.join(BIN, "snakepit"), "drain", "--executor", "127.0.0.1:1"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 69 and "127.0.0.1:1" in r.stderr, r.stderr
