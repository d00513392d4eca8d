"""tests/security/harness.py — an executor node driven directly, the way the broker drives it.

The test is the broker: a ZeroMQ ROUTER speaking SPW1 (proto/PROTOCOL.md §3). It starts a
real `snakepit-executor` (with chosen sandbox layers switched off, for the tests that prove
each layer alone), sends JOBs and decodes RESULTs. The executor runs with a secret in its
environment and a canary file on disk, which no job may ever see.
"""
import atexit
import os
import secrets
import signal
import socket
import subprocess
import tempfile
import time
import uuid

import msgpack
import zmq

BIN = os.path.abspath(os.environ.get("SNAKEPIT_BIN") or
                      os.path.join(os.path.dirname(__file__), "..", "..", "build", "bin"))
CANARY_ENV = "SNAKEPIT_TEST_SECRET"


class Executor:
    def __init__(self, disable=(), slots=2, profiles="python.basic", extra=(), cwd=None):
        self.closed = False
        self.ctx = zmq.Context.instance()
        self.sock = self.ctx.socket(zmq.ROUTER)
        self.sock.setsockopt(zmq.LINGER, 0)
        port = self.sock.bind_to_random_port("tcp://127.0.0.1")
        self.secret = secrets.token_hex(16)
        fd, self.canary_path = tempfile.mkstemp(prefix="sp-canary-", dir="/tmp")
        os.write(fd, ("CANARY-" + self.secret).encode())
        os.close(fd)
        os.chmod(self.canary_path, 0o644)  # world-readable on purpose: only the sandbox stops it
        env = dict(os.environ, **{CANARY_ENV: self.secret})
        args = [os.path.join(BIN, "snakepit-executor"), "--broker", "tcp://127.0.0.1:%d" % port,
                "--slots", str(slots), "--profiles", profiles, "--log-level", "warn",
                "--metrics", "127.0.0.1:0", *extra]
        if disable:
            args += ["--disable-layer", ",".join(disable)]
        self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(args, env=env, stdout=self.log, stderr=self.log, cwd=cwd)
        _started.append(self)  # stopped at exit whatever happens to the test
        self.identity = None
        self.ready = None
        self.results, self.streamed, self.answered = {}, {}, []
        self.leaving = []  # LEAVING bodies: the node drains
        self.via = {}  # job id: the command its answer came in (RESULT b"\x05" or ANSWER b"\x09")
        self.disconnected = 0  # DISCONNECTs heard
        self.events = []  # every command the node sent but HEARTBEAT, in order
        self.started = set()  # job ids whose process has started (PROGRESS state running)
        deadline = time.time() + 60
        while self.identity is None or self.ready is None:
            if time.time() > deadline or self.proc.poll() is not None:
                out = self.output()
                self.close()
                raise RuntimeError("executor did not register:\n" + out)
            if self.sock.poll(200):
                parts = self.sock.recv_multipart()
                if parts[1] == b"SPW1" and parts[2] == b"\x01":
                    self.identity = parts[0]
                    self.ready = msgpack.unpackb(parts[3])

    def run(self, code, service="python.basic", timeout=60, **job):
        """files: {path: bytes or str} for the job's workspace (PROTOCOL.md §4). session: the
        session (16 bytes) the job runs in; new_session: the id a session_new/fork/restore
        makes."""
        return self.wait(self.submit(code, service=service, **job), timeout, code)

    def submit(self, code, service="python.basic", kind="exec", wall_ms=5000, cpu_ms=0,
               memory_mb=0, output_bytes=0, inspect=(), stdin=None, allowed_imports=(),
               files=None, tenant="attacker", session=None, new_session=None, snapshot=None,
               idle_timeout_s=None, **more):
        """Sends a JOB and returns its id at once (wait() collects the RESULT). more: JobSpec
        keys beyond these (dependencies, figure_format, ...)."""
        job = {"v": 1, "kind": kind, "tenant": tenant, "service": service, "code": code,
               "limits": {"wall_ms": wall_ms, "cpu_ms": cpu_ms or wall_ms, "memory_mb": memory_mb,
                          "output_bytes": output_bytes, "nofile": 0},
               "inspect": list(inspect), "allowed_imports": list(allowed_imports), "stdin": stdin,
               "capture_output": True,
               "files": [{"path": p, "data": d.encode() if isinstance(d, str) else d}
                         for p, d in (files or {}).items()],
               "submitted_ms": int(time.time() * 1000), **more}
        route = {"tenant": tenant, "deadline_ms": 0, "max_inflight": 0, "attempt": 0}
        for key, value in (("session", session), ("new_session", new_session)):
            if value is not None:
                job[key] = route[key] = value
        if snapshot is not None:
            job["snapshot"] = snapshot
        if idle_timeout_s is not None:
            job["idle_timeout_s"] = idle_timeout_s
        jid = uuid.uuid4().bytes
        self._pump(0)  # catch up: the node may have re-registered while we were idle
        self.sock.send_multipart([self.identity, b"SPW1", b"\x04", service.encode(), jid,
                                  msgpack.packb(route), msgpack.packb(job)])
        return jid

    def wait(self, jid, timeout=60, what=""):
        deadline = time.time() + timeout
        while time.time() < deadline:
            r = self.results.pop(jid, None) or self._pump(200, jid)
            if r is not None:
                for k in ("stdout", "stderr"):
                    r[k] = r[k].decode("utf-8", "replace")
                return r
            if self.proc.poll() is not None:
                raise RuntimeError("executor died: %s" % self.output())
        raise TimeoutError("no result in %ss for %r" % (timeout, what[:80]))

    def progress(self, jid):
        """The stdout a running job has printed so far (its PROGRESS chunks)."""
        self._pump(0)
        return b"".join(self.streamed.get(jid, [])).decode("utf-8", "replace")

    def new_session(self, service="python.basic", tenant="attacker", memory_mb=0,
                    idle_timeout_s=None):
        """A new session's id."""
        sid = uuid.uuid4().bytes
        r = self.run("", service=service, kind="session_new", tenant=tenant, new_session=sid,
                     memory_mb=memory_mb, idle_timeout_s=idle_timeout_s)
        assert r["status"] == "ok", (r.get("error"), self.output()[-2000:])
        return sid

    def fork_session(self, sid, service="python.basic", tenant="attacker"):
        fid = uuid.uuid4().bytes
        r = self.run("", service=service, kind="session_fork", tenant=tenant, session=sid,
                     new_session=fid)
        assert r["status"] == "ok", r.get("error")
        return fid

    def _pump(self, wait_ms, want=None):
        """Handles what the node sent: READY (a reconnect changes its identity), HEARTBEAT
        (answered, so the node keeps us as its broker), PROGRESS (kept per job), RESULT
        (returned when it is `want`, kept for wait() otherwise), LEAVING (answered with RELEASE
        of all the credit it gave: the node drains)."""
        while self.sock.poll(wait_ms):
            parts = self.sock.recv_multipart()
            cmd = parts[2]
            if cmd != b"\x03":
                self.events.append(cmd)
            if cmd == b"\x01":
                self.identity = parts[0]
                self.ready = msgpack.unpackb(parts[3])
            elif cmd == b"\x03":
                self.sock.send_multipart([parts[0], b"SPW1", b"\x03"])
            elif cmd == b"\x06":
                chunk = msgpack.unpackb(parts[4], raw=False)
                if chunk.get("state") == "running":
                    self.started.add(parts[3])
                if chunk.get("stream") == "stdout":
                    self.streamed.setdefault(parts[3], []).append(chunk["data"])
            elif cmd == b"\x08":
                self.disconnected += 1
            elif cmd == b"\x10":  # LEAVING (it drains): give back the credit, as a broker does
                self.leaving.append(msgpack.unpackb(parts[3], raw=False))
                self.sock.send_multipart([parts[0], b"SPW1", b"\x0c", msgpack.packb(4096)])
            elif cmd in (b"\x05", b"\x09"):  # RESULT, or ANSWER (no credit: a draining node's)
                r = msgpack.unpackb(parts[4], raw=False)
                self.via[parts[3]] = cmd
                self.answered.append(parts[3])  # the order answers came in
                if want is not None and parts[3] == want:
                    return r
                self.results[parts[3]] = r
            wait_ms = 0
        return None

    def alive(self):
        return self.proc.poll() is None

    def output(self):
        self.log.seek(0)
        return self.log.read().decode(errors="replace")

    def close(self):
        if self.closed:
            return
        self.closed = True
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)  # it drains: answered as a broker would
            deadline = time.time() + 15
            while self.proc.poll() is None and time.time() < deadline:
                self._pump(50)
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()
        self.sock.close()
        os.unlink(self.canary_path)
        out = self.output()
        for marker in ("ERROR: AddressSanitizer", "runtime error:"):
            assert marker not in out, "sanitizer report:\n" + out[out.index(marker):][:3000]


_started = []


@atexit.register
def _stop_all():
    for ex in _started:
        ex.close()


class Listener:
    """A TCP listener on loopback: an attack that reaches it has escaped the network layer."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.setblocking(False)
        self.port = self.sock.getsockname()[1]

    def contacted(self):
        try:
            conn, _ = self.sock.accept()
            conn.close()
            return True
        except BlockingIOError:
            return False

    def close(self):
        self.sock.close()
