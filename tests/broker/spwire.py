"""tests/broker/spwire.py — the snakepit wire protocol (proto/PROTOCOL.md) from Python, for
tests that drive the broker directly: raw client and executor peers on pyzmq, msgpack bodies.
Raw sockets (not proto/client.c) so a test sees every message the broker sends, duplicates
included."""
import os
import time
import uuid

import msgpack
import zmq

SPC1, SPW1 = b"SPC1", b"SPW1"
SUBMIT, CANCEL, PING = b"\x01", b"\x02", b"\x03"
ACCEPTED, PROGRESS, RESULT, REJECT, PONG = b"\x11", b"\x12", b"\x13", b"\x14", b"\x15"
W_READY, W_CREDIT, W_HEARTBEAT, W_JOB, W_RESULT, W_PROGRESS, W_CANCEL, W_DISCONNECT = (
    bytes([i]) for i in range(1, 9))
# several brokers (PROTOCOL.md §3.1)
W_ANSWER, W_WANT, W_RECLAIM, W_RELEASE, W_PROBE, W_HELD = (bytes([i]) for i in range(9, 15))
HELD_NONE, HELD_RUNNING, HELD_DONE = 0, 1, 2
W_SESSIONS, W_LEAVING = b"\x0f", b"\x10"  # sessions (PROTOCOL.md §3), the drain (§3.2)
SERVICE = "python.basic"


def job_id():
    return uuid.uuid4().bytes


def route(tenant, deadline_ms=0, max_inflight=0, resubmit=False):
    r = {"tenant": tenant, "deadline_ms": deadline_ms, "max_inflight": max_inflight, "attempt": 0}
    if resubmit:
        r["resubmit"] = 1
    return msgpack.packb(r)


def jobspec(code="print(1)", tenant="t", service=SERVICE, wall_ms=0):
    return msgpack.packb({"v": 1, "kind": "exec", "tenant": tenant, "service": service,
                          "code": code, "limits": {"wall_ms": wall_ms}, "capture_output": True,
                          "submitted_ms": int(time.time() * 1000)})


def result(status="ok", stdout=b"", executor="stub"):
    return msgpack.packb({"v": 1, "status": status, "stdout": stdout, "stderr": b"",
                          "executor": executor, "error": None})


def decode_result(body):
    return msgpack.unpackb(body, raw=False)


def curve_opts(sock, server_public=None, public=None, secret=None):
    if server_public:
        sock.curve_serverkey = server_public.encode() if isinstance(server_public, str) else server_public
        sock.curve_publickey = public.encode() if isinstance(public, str) else public
        sock.curve_secretkey = secret.encode() if isinstance(secret, str) else secret


class Client:
    """A submitter: DEALER on the client channel."""

    def __init__(self, ctx, endpoint, **curve):
        self.sock = ctx.socket(zmq.DEALER)
        self.sock.linger = 0
        self.sock.rcvhwm = self.sock.sndhwm = 0
        curve_opts(self.sock, **curve)
        self.sock.connect(endpoint)

    def submit(self, jid, tenant, code="print(1)", service=SERVICE, deadline_ms=0, max_inflight=0,
               body=None, resubmit=False, route_body=None):
        self.sock.send_multipart([SPC1, SUBMIT, service.encode(), jid,
                                  route_body or route(tenant, deadline_ms, max_inflight, resubmit),
                                  body if body is not None else jobspec(code, tenant, service)])

    def cancel(self, jid, service=SERVICE):
        self.sock.send_multipart([SPC1, CANCEL, service.encode(), jid])

    def ping(self):
        """Never blocks: a DEALER with no connection (a refused handshake) would."""
        try:
            self.sock.send_multipart([SPC1, PING], zmq.NOBLOCK)
        except zmq.Again:
            pass

    def recv(self, timeout_ms=5000):
        """The next message as a list of frames, or None."""
        if self.sock.poll(timeout_ms):
            return self.sock.recv_multipart()
        return None

    def close(self):
        self.sock.close(0)


def collect_finals(client, n, timeout_s=30, on_message=None):
    """Reads until n final answers (RESULT/REJECT) arrived; returns (order, answers) where
    answers maps job id -> list of (cmd, body) so duplicates show."""
    order, answers = [], {}
    deadline = time.time() + timeout_s
    while len(order) < n and time.time() < deadline:
        msg = client.recv(200)
        if msg is None:
            continue
        if on_message:
            on_message(msg)
        if msg[1] in (RESULT, REJECT):
            jid = msg[3]
            if jid not in answers:
                order.append(jid)
            answers.setdefault(jid, []).append((msg[1], msg[4]))
    return order, answers


class Executor:
    """A scripted executor node: DEALER on the worker channel; the test decides when it
    answers, so leases, credits and losses can be driven exactly."""

    def __init__(self, ctx, endpoint, node="fake", slots=4, services=(SERVICE,), credit=None, **curve):
        self.ctx, self.endpoint, self.node, self.slots = ctx, endpoint, node, slots
        self.services, self.curve = list(services), curve
        self.jobs = []  # (job id, service, route dict, body) in arrival order
        self.cancels = []
        self.probes = []    # job ids PROBEd
        self.wants = []     # WANT counts
        self.releases = []  # RELEASE counts
        self.disconnects = 0
        self.sock = None
        self.connect(credit)

    def connect(self, credit=None):
        if self.sock is not None:
            self.sock.close(0)
        self.sock = self.ctx.socket(zmq.DEALER)
        self.sock.linger = 0
        curve_opts(self.sock, **self.curve)
        self.sock.connect(self.endpoint)
        ready = msgpack.packb({"v": 1, "node": self.node, "services": self.services,
                               "slots": self.slots, "python": "3.11", "layers": "none"})
        self.sock.send_multipart([SPW1, W_READY, ready])
        self.credit(self.slots if credit is None else credit)

    def credit(self, n):
        if n:
            self.sock.send_multipart([SPW1, W_CREDIT, msgpack.packb(n)])

    def heartbeat(self):
        self.sock.send_multipart([SPW1, W_HEARTBEAT])

    def answer(self, jid, status="ok", stdout=b"done", credit=True):
        """RESULT (returns the job's credit), or with credit=False ANSWER (does not)."""
        self.sock.send_multipart([SPW1, W_RESULT if credit else W_ANSWER, jid,
                                  result(status, stdout, self.node)])

    def held(self, jid, state):
        self.sock.send_multipart([SPW1, W_HELD, jid, msgpack.packb(state)])

    def reclaim(self, n):
        self.sock.send_multipart([SPW1, W_RECLAIM, msgpack.packb(n)])

    def progress(self, jid, chunk=b"\x81\xa6stdout\xa2hi"):
        self.sock.send_multipart([SPW1, W_PROGRESS, jid, chunk])

    def disconnect(self):
        self.sock.send_multipart([SPW1, W_DISCONNECT])

    def leaving(self, grace_ms=60000, running=0, reason="SIGTERM"):
        """LEAVING: it drains (the broker answers RELEASE of the credit it held)."""
        self.sock.send_multipart([SPW1, W_LEAVING, msgpack.packb(
            {"v": 1, "grace_ms": grace_ms, "running": running, "reason": reason})])

    def pump(self, timeout_ms=100):
        """Reads what the broker sent; returns how many JOBs arrived."""
        got = 0
        while self.sock.poll(timeout_ms):
            timeout_ms = 0
            msg = self.sock.recv_multipart()
            if msg[1] == W_JOB:
                self.jobs.append((msg[3], msg[2].decode(), msgpack.unpackb(msg[4]), msg[5]))
                got += 1
            elif msg[1] == W_CANCEL:
                self.cancels.append(msg[2])
            elif msg[1] == W_PROBE:
                self.probes.append(msg[3])
            elif msg[1] == W_WANT:
                self.wants.append(msgpack.unpackb(msg[2]))
            elif msg[1] == W_RELEASE:
                self.releases.append(msgpack.unpackb(msg[2]))
            elif msg[1] == W_DISCONNECT:
                self.disconnects += 1
        return got

    def wait_jobs(self, n, timeout_s=10):
        deadline = time.time() + timeout_s
        while len(self.jobs) < n and time.time() < deadline:
            self.pump(50)
        return len(self.jobs) >= n

    def close(self):
        self.sock.close(0)
