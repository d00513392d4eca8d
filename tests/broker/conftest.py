"""tests/broker/conftest.py — fixtures that start a real snakepit-broker (and, where a test
wants one, bench/stub_executor) on private ipc:// endpoints, and stop them by pid. Every wait
is bounded; nothing here asserts a duration."""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

import pytest
import zmq

import spwire as w

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.environ.get("SNAKEPIT_BIN", os.path.join(ROOT, "build", "bin"))
BENCH = os.environ.get("SNAKEPIT_BENCH", os.path.join(ROOT, "build", "bench"))


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from ports import free_port  # noqa: E402,F401  (below the ephemeral range; re-exported)


def stop(proc, timeout=5):
    """SIGTERM, then SIGKILL; returns the exit status."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout)
    return proc.returncode


class Broker:
    def __init__(self, tmp, args, name="broker"):
        self.tmp, self.args, self.name = tmp, list(args), name
        self.clients = "ipc://%s/%s-c.sock" % (tmp, name)
        self.executors = "ipc://%s/%s-w.sock" % (tmp, name)
        self.metrics_port = free_port()
        self.log_path = os.path.join(tmp, name + ".log")
        self.proc = None

    def start(self, wait=True):
        cmd = [os.path.join(BIN, "snakepit-broker"), "--clients", self.clients,
               "--executors", self.executors, "--metrics", "127.0.0.1:%d" % self.metrics_port,
               "--log-level", "debug"] + self.args
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=self.log)
        if wait:
            self.wait_ready()
        return self

    def wait_ready(self, timeout=10):
        """Until the broker says it listens (and, without CURVE, answers PING)."""
        deadline = time.time() + timeout
        while "event=listening" not in self.read_log():
            assert self.proc.poll() is None, "broker exited: " + self.read_log()
            assert time.time() < deadline, "broker did not start: " + self.read_log()
            time.sleep(0.02)
        if "--curve-secret-file" in self.args:
            return
        c = w.Client(zmq.Context.instance(), self.clients)
        try:
            while time.time() < deadline:
                c.ping()
                msg = c.recv(200)
                if msg and msg[1] == w.PONG:
                    return
            raise AssertionError("broker did not answer PING: " + self.read_log())
        finally:
            c.close()

    def metrics(self):
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % self.metrics_port, timeout=5) as r:
            assert r.headers["Content-Type"].startswith("text/plain; version=0.0.4")
            return r.read().decode()

    def metric(self, name, **labels):
        """Sum of the samples of `name` whose labels include `labels`."""
        total, found = 0.0, False
        for line in self.metrics().splitlines():
            if line.startswith("#"):
                continue
            m = re.match(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$", line)
            if not m or m.group(1) != name:
                continue
            got = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(3) or ""))
            if all(got.get(k) == v for k, v in labels.items()):
                total += float(m.group(4))
                found = True
        return total if found else None

    def wait_metric(self, name, pred, timeout=10, **labels):
        deadline = time.time() + timeout
        value = None
        while time.time() < deadline:
            value = self.metric(name, **labels)
            if value is not None and pred(value):
                return value
            time.sleep(0.05)
        raise AssertionError("%s%s never satisfied the condition (last %r)" % (name, labels, value))

    def read_log(self):
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode(errors="replace")[-4000:]
        except OSError:
            return ""

    def stop(self):
        if self.proc:
            rc = stop(self.proc)
            self.log.close()
            return rc


class Stub:
    """bench/stub_executor: answers every job at once or after delay_us."""

    def __init__(self, broker, node, slots=4, delay_us=0, extra=()):
        self.log_path = os.path.join(broker.tmp, node + ".log")
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            [os.path.join(BENCH, "stub_executor"), "--broker", broker.executors, "--node-id", node,
             "--slots", str(slots), "--delay-us", str(delay_us), "--heartbeat-ms", "200"]
            + list(extra), stdout=self.log, stderr=self.log)

    def stop(self):
        stop(self.proc)
        self.log.close()

    def kill(self):
        self.proc.kill()
        self.proc.wait(5)
        self.log.close()


@pytest.fixture
def tmp():
    d = tempfile.mkdtemp(prefix="spb-", dir="/tmp")  # short: ipc paths are capped at 107 bytes
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def ctx():
    c = zmq.Context()
    yield c
    c.destroy(linger=0)


@pytest.fixture
def make_broker(tmp):
    started = []

    def make(*args, name="broker", start=True):
        b = Broker(tmp, args, name)
        started.append(b)
        return b.start() if start else b

    yield make
    for b in started:
        b.stop()
        log = b.read_log()
        assert "AddressSanitizer" not in log and "runtime error" not in log, log


@pytest.fixture
def make_stub():
    started = []

    def make(broker, node, **kw):
        s = Stub(broker, node, **kw)
        started.append(s)
        return s

    yield make
    for s in started:
        if s.proc.poll() is None:
            s.stop()


def wait_executors(broker, n, timeout=10):
    """Until the broker counts n registered executors."""
    return broker.wait_metric("snakepit_broker_executors", lambda v: v == n, timeout)


def result_of(answer):
    """(cmd, Result dict) of one final answer."""
    cmd, body = answer
    return cmd, w.decode_result(body)
