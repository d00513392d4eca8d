#!/usr/bin/python3
"""bench/redis_cost.py — what an execution's record costs Redis, beside what any command costs it.

A private redis-server started as `snakepit up` starts the farm's (AOF, every second; a unix
socket), then four measures, Redis's CPU from its /proc schedstat (ns) around each:

  pipelined   records written by the front-end's own code (bench/record_fill: records.c, its
              script, fields and store), 1,000 in flight: the record's own cost, no wake-ups;
              beside it the same number of PINGs, and the same record's fields written as plain
              HSET + EXPIRE + ZADD (what the write would cost without Lua), pipelined alike
  paced       one record at a time, one every --pace-ms (a quiet farm: Redis idles between
              calls), and one PING at a time alike: the round trip's p50/p90 and Redis's CPU
              per call, of which the wake-up from idle is the part no script can remove

    bench/redis_cost.py [--records N] [--paced N] [--pace-ms P] [--json]

SNAKEPIT_BENCH names the directory of record_fill (default build/bench). Reports, never asserts.
"""
import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOOLS = os.environ.get("SNAKEPIT_BENCH", os.path.join(ROOT, "build", "bench"))
BATCH = 1000


def resp(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


class Conn:
    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX)
        self.s.connect(path)
        self.buf = b""

    def _line(self):
        while b"\r\n" not in self.buf:
            self.buf += self.s.recv(1 << 16)
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def reply(self):
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            while len(self.buf) < n + 2:
                self.buf += self.s.recv(1 << 16)
            data, self.buf = self.buf[:n], self.buf[n + 2:]
            return data
        if kind == b"*":
            return [self.reply() for _ in range(int(rest))]
        if kind == b"-":
            raise RuntimeError(rest.decode())
        return rest

    def call(self, *args):
        self.s.sendall(resp(*args))
        return self.reply()

    def pipelined(self, payloads, replies_each):
        """payloads sent BATCH at a time, every reply read before the next batch"""
        for i in range(0, len(payloads), BATCH):
            chunk = payloads[i:i + BATCH]
            self.s.sendall(b"".join(chunk))
            for _ in range(len(chunk) * replies_each):
                self.reply()


def redis_cpu_s(pid):
    task = f"/proc/{pid}/task"
    return sum(int(open(f"{task}/{t}/schedstat").read().split()[0]) for t in os.listdir(task)) / 1e9


def commands(c):
    calls = {}
    for line in c.call("INFO", "commandstats").decode().splitlines():
        if line.startswith("cmdstat_"):
            name, kv = line[8:].split(":", 1)
            calls[name] = int(kv.split(",")[0].split("=")[1])
    return calls


def measure(pid, c, fn, n):
    before_calls, before = commands(c), redis_cpu_s(pid)
    out = fn()
    cpu, after_calls = redis_cpu_s(pid) - before, commands(c)
    cmds = sum(after_calls[k] - before_calls.get(k, 0) for k in after_calls if k not in ("info",))
    return {"n": n, "redis_cpu_us": round(cpu / n * 1e6, 1), "commands": round(cmds / n, 2)}, out


def record_fill(url, records, pace_ms=0):
    argv = [os.path.join(TOOLS, "record_fill"), "--redis", url, "--records", str(records)]
    if pace_ms:
        argv += ["--pace-ms", str(pace_ms), "--tenants", "1"]
    out = subprocess.run(argv, check=True, capture_output=True, text=True).stdout.split()
    return [int(x) for x in out]


def send_paced(c, payloads, replies_each, pace_ms):
    rtt, n = [], len(payloads)
    for p in payloads:
        t = time.perf_counter()
        c.s.sendall(p)
        for _ in range(replies_each):
            c.reply()
        rtt.append((time.perf_counter() - t) * 1e6)
        time.sleep(pace_ms / 1000)
    rtt.sort()
    return [n, int(rtt[n // 2]), int(rtt[n * 9 // 10])]


def run(records, paced, pace_ms):
    tmp = tempfile.mkdtemp(prefix="sp-redis-cost.")
    sock = os.path.join(tmp, "redis.sock")
    srv = subprocess.Popen(["redis-server", "--port", "0", "--unixsocket", sock, "--dir", tmp,
                            "--appendonly", "yes", "--appendfsync", "everysec", "--save", ""],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 10
        while not os.path.exists(sock):
            if time.time() > deadline or srv.poll() is not None:
                raise RuntimeError("redis-server did not start")
            time.sleep(0.02)
        url = "unix://" + sock
        c = Conn(sock)
        record_fill(url, 1000)  # warm: scripts loaded, allocator and AOF buffers grown
        out = {}
        out["record_pipelined"], _ = measure(srv.pid, c, lambda: record_fill(url, records), records)
        out["ping_pipelined"], _ = measure(srv.pid, c, lambda: c.pipelined([resp("PING")] * records, 1),
                                           records)
        # the same record's fields, written as plain commands to fresh keys
        key = c.call("ZRANGE", "sp:t:tenant0:execs", 0, 0)[0].decode()
        fields = c.call("HGETALL", "sp:exec:" + key)
        plain = [resp("HSET", f"sp:plain:{i}", *fields) + resp("EXPIRE", f"sp:plain:{i}", 604800)
                 + resp("ZADD", "sp:plain:index", i, f"id{i}") for i in range(records)]
        out["plain_writes_pipelined"], _ = measure(srv.pid, c, lambda: c.pipelined(plain, 3), records)
        out["record_fields"] = len(fields) // 2
        out["record_bytes"] = sum(len(x) for x in fields)
        out["record_paced"], rtt = measure(srv.pid, c, lambda: record_fill(url, paced, pace_ms), paced)
        out["record_paced"].update(rtt_p50_us=rtt[1], rtt_p90_us=rtt[2])
        out["plain_writes_paced"], rtt = measure(srv.pid, c, lambda: send_paced(c, plain[:paced], 3, pace_ms),
                                                 paced)
        out["plain_writes_paced"].update(rtt_p50_us=rtt[1], rtt_p90_us=rtt[2])
        out["ping_paced"], rtt = measure(srv.pid, c, lambda: send_paced(c, [resp("PING")] * paced, 1, pace_ms),
                                         paced)
        out["ping_paced"].update(rtt_p50_us=rtt[1], rtt_p90_us=rtt[2])
        out["pace_ms"] = pace_ms
        out["redis"] = c.call("INFO", "server").decode().split("redis_version:")[1].split()[0]
        return out
    finally:
        srv.terminate()
        srv.wait()
        shutil.rmtree(tmp, ignore_errors=True)


def summary(r):
    rp, pp, wp = r["record_pipelined"], r["ping_pipelined"], r["plain_writes_pipelined"]
    ra, wa, pa = r["record_paced"], r["plain_writes_paced"], r["ping_paced"]
    return [
        f"Redis cost of a record ({r['record_fields']} fields, {r['record_bytes']} B; redis "
        f"{r['redis']}): pipelined {rp['redis_cpu_us']} µs of Redis CPU and {rp['commands']} commands "
        f"per record (the same fields as plain HSET+EXPIRE+ZADD {wp['redis_cpu_us']} µs, a PING "
        f"{pp['redis_cpu_us']} µs); paced one every {r['pace_ms']} ms: a record {ra['redis_cpu_us']} µs "
        f"of Redis CPU, round trip p50/p90 {ra['rtt_p50_us']}/{ra['rtt_p90_us']} µs; plain writes "
        f"{wa['redis_cpu_us']} µs, {wa['rtt_p50_us']}/{wa['rtt_p90_us']} µs; a PING "
        f"{pa['redis_cpu_us']} µs, {pa['rtt_p50_us']}/{pa['rtt_p90_us']} µs"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=20000, help="records written pipelined (20000)")
    ap.add_argument("--paced", type=int, default=200, help="records and PINGs sent paced (200)")
    ap.add_argument("--pace-ms", type=int, default=25, help="between two paced calls (25)")
    ap.add_argument("--json", action="store_true", help="print the JSON only")
    a = ap.parse_args()
    r = run(a.records, a.paced, a.pace_ms)
    print(json.dumps(r))
    if not a.json:
        print("\n".join(summary(r)))


if __name__ == "__main__":
    sys.exit(main())
