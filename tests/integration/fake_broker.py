#!/usr/bin/python3
"""tests/integration/fake_broker.py — a stand-in for snakepit-broker, for front-end tests.

Speaks the client side of proto/PROTOCOL.md (SPC1) on --clients. Two ways to answer a SUBMIT:

  * bridge (when --executors is given and an executor is READY): the job goes to the real
    executor node over SPW1 and its RESULT comes back, as the broker would do it;
  * canned (otherwise): the front-end's own behaviour is under test, so the job's code holds
    directives the fake obeys:
        #sleep 2.5        answer after 2.5 s (CANCEL before then answers `cancelled`)
        #progress 3       send 3 PROGRESS chunks {stream: stdout, data: ...} first
        #status timeout   answer with this status
        #stdout-hex c3    stdout is these bytes (to test invalid UTF-8)
        #files 4 2097152  the job wrote 4 files of that many bytes (out0.bin, out1.bin, ...)
        #drop             never answer (the client library synthesizes the timeout/lost)
    and anything else is answered `ok` with stdout "ran <n> bytes\n".

It also counts what it saw in a JSON file given by --stats (submits, cancels, last route).
"""
import argparse
import json
import os
import sys
import time

import msgpack
import zmq

TAG_C, TAG_W = b"SPC1", b"SPW1"
SUBMIT, CANCEL, PING = 0x01, 0x02, 0x03
ACCEPTED, PROGRESS, RESULT, REJECT, PONG = 0x11, 0x12, 0x13, 0x14, 0x15
W_READY, W_CREDIT, W_HEARTBEAT, W_JOB, W_RESULT, W_PROGRESS, W_CANCEL, W_DISCONNECT = range(1, 9)


def result(status="ok", stdout=b"", stderr=b"", error=None, files=(), **kw):
    r = {"v": 1, "status": status, "stdout": stdout, "stdout_truncated": False, "stderr": stderr,
         "stderr_truncated": False, "result": kw.get("result"), "variables": kw.get("variables"),
         "validation": kw.get("validation"), "error": error,
         "timings": {"queue_ms": 0.1, "wall_ms": 1.5, "cpu_ms": 1.2}, "max_rss_kb": 9000,
         "exit": {"reason": "exit", "signal": 0, "syscall": None, "code": 0}, "images": [], "files": list(files),
         "truncated_media": 0, "executor": "fake", "attempt": 0}
    return msgpack.packb(r, use_bin_type=True)


def directives(code):
    d = {}
    for line in code.splitlines():
        if line.startswith("#") and " " in line:
            k, v = line[1:].split(" ", 1)
            d[k] = v.strip()
        elif line.strip() == "#drop":
            d["drop"] = "1"
    return d


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--clients", required=True)
    ap.add_argument("--executors")
    ap.add_argument("--stats")
    a = ap.parse_args()
    ctx = zmq.Context()
    cli = ctx.socket(zmq.ROUTER)
    cli.setsockopt(zmq.LINGER, 0)
    cli.bind(a.clients)
    wrk = None
    if a.executors:
        wrk = ctx.socket(zmq.ROUTER)
        wrk.setsockopt(zmq.LINGER, 0)
        wrk.bind(a.executors)
    poller = zmq.Poller()
    poller.register(cli, zmq.POLLIN)
    if wrk is not None:
        poller.register(wrk, zmq.POLLIN)
    workers = {}      # identity -> credit
    inflight = {}     # job id -> (client identity, service)
    timers = []       # (due, fn)
    stats = {"submits": 0, "cancels": 0, "routes": [], "specs": []}
    last_hb = 0.0

    def save():
        if a.stats:
            tmp = a.stats + ".tmp"
            with open(tmp, "w") as f:
                json.dump(stats, f)
            os.replace(tmp, a.stats)

    def to_client(ident, cmd, service, jid, body=None):
        frames = [ident, TAG_C, bytes([cmd]), service, jid]
        if body is not None:
            frames.append(body)
        cli.send_multipart(frames)

    def canned(ident, service, jid, spec):
        code = spec.get("code", b"")
        if isinstance(code, bytes):
            code = code.decode("utf-8", "replace")
        d = directives(code)
        if "drop" in d:
            return
        delay = float(d.get("sleep", "0"))
        status = d.get("status", "ok")
        stdout = bytes.fromhex(d["stdout-hex"]) if "stdout-hex" in d else ("ran %d bytes\n" % len(code)).encode()
        err = None if status == "ok" else {"type": "FakeError", "message": "fake " + status, "traceback": None, "line": 1}
        kind = spec.get("kind", "exec")
        validation = json.dumps({"valid": True, "errors": [], "warnings": [], "details": [], "message": "ok",
                                 "analysis": {"line_count": code.count("\n") + 1}, "recommendations": []}) \
            if kind == "validate" else None
        files = []
        if "files" in d:
            count, size = (int(x) for x in d["files"].split())
            files = [{"path": "out%d.bin" % i, "data": bytes([65 + i % 26]) * size} for i in range(count)]
        body = result(status, stdout=stdout, error=err, result="42" if status == "ok" else None, files=files,
                      variables=json.dumps({"x": 1}) if spec.get("inspect") else None, validation=validation)
        n = int(d.get("progress", "0"))
        now = time.time()
        for i in range(n):
            chunk = msgpack.packb({"stream": "stdout", "data": ("line %d\n" % i).encode()}, use_bin_type=True)
            timers.append((now + delay * i / max(n, 1), lambda c=chunk: to_client(ident, PROGRESS, service, jid, c)))

        def answer():
            if jid in inflight:
                del inflight[jid]
                to_client(ident, RESULT, service, jid, body)
        inflight[jid] = (ident, service)
        timers.append((now + delay, answer))

    while True:
        wait = 100
        if timers:
            wait = max(0, min(100, int((min(t for t, _ in timers) - time.time()) * 1000)))
        events = dict(poller.poll(wait))
        now = time.time()
        due = [t for t in timers if t[0] <= now]
        timers = [t for t in timers if t[0] > now]
        for _, fn in sorted(due, key=lambda t: t[0]):
            fn()
        if wrk is not None and now - last_hb > 1:
            last_hb = now
            for ident in workers:
                wrk.send_multipart([ident, TAG_W, bytes([W_HEARTBEAT])])
        if cli in events:
            while True:
                try:
                    fr = cli.recv_multipart(zmq.NOBLOCK)
                except zmq.Again:
                    break
                ident, rest = fr[0], fr[1:]
                if len(rest) < 2 or rest[0] != TAG_C:
                    continue
                cmd = rest[1][0]
                if cmd == PING:
                    cli.send_multipart([ident, TAG_C, bytes([PONG])])
                elif cmd == SUBMIT and len(rest) == 6:
                    service, jid, route, body = rest[2], rest[3], rest[4], rest[5]
                    spec = msgpack.unpackb(body, raw=False)
                    stats["submits"] += 1
                    stats["routes"].append(msgpack.unpackb(route, raw=False))
                    stats["specs"].append({k: (v if not isinstance(v, bytes) else v.decode("utf-8", "replace"))
                                           for k, v in spec.items() if k != "files"})
                    stats["routes"] = stats["routes"][-20:]
                    stats["specs"] = stats["specs"][-20:]
                    save()
                    to_client(ident, ACCEPTED, service, jid)
                    w = next((i for i, c in workers.items() if c > 0), None)
                    if w is not None:
                        workers[w] -= 1
                        inflight[jid] = (ident, service)
                        wrk.send_multipart([w, TAG_W, bytes([W_JOB]), service, jid, route, body])
                    else:
                        canned(ident, service, jid, spec)
                elif cmd == CANCEL and len(rest) == 4:
                    stats["cancels"] += 1
                    save()
                    service, jid = rest[2], rest[3]
                    if jid in inflight and wrk is not None and workers:
                        for w in workers:
                            wrk.send_multipart([w, TAG_W, bytes([W_CANCEL]), jid])
                    elif jid in inflight:
                        ident2, _ = inflight.pop(jid)
                        to_client(ident2, RESULT, service, jid,
                                  result("cancelled", error={"type": "Cancelled", "message": "cancelled",
                                                             "traceback": None, "line": 0}))
        if wrk is not None and wrk in events:
            while True:
                try:
                    fr = wrk.recv_multipart(zmq.NOBLOCK)
                except zmq.Again:
                    break
                ident, rest = fr[0], fr[1:]
                if len(rest) < 2 or rest[0] != TAG_W:
                    continue
                cmd = rest[1][0]
                if cmd == W_READY:
                    workers[ident] = 0
                elif cmd == W_CREDIT:
                    workers[ident] = workers.get(ident, 0) + msgpack.unpackb(rest[2])
                elif cmd == W_RESULT:
                    jid, body = rest[2], rest[3]
                    workers[ident] = workers.get(ident, 0) + 1
                    if jid in inflight:
                        ident2, service = inflight.pop(jid)
                        to_client(ident2, RESULT, service, jid, body)
                elif cmd == W_PROGRESS:
                    jid = rest[2]
                    if jid in inflight:
                        ident2, service = inflight[jid]
                        to_client(ident2, PROGRESS, service, jid, rest[3])
                elif cmd == W_DISCONNECT:
                    workers.pop(ident, None)


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        sys.exit(0)
