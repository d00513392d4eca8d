#!/usr/bin/python3
"""mcp-frontend/perf.py — measures the front-end's own costs (reported, never asserted):

  1. ping requests/s on one core: snakepit-mcp pinned to CPU 0 (taskset), wrk on the other
     core with keep-alive connections POSTing {"method":"ping"} to /mcp in one session;
  2. the front-end's overhead per execute_code over HTTP at concurrency 1, in a legacy session
     and (--modern) with MCP 2026-07-28's per-request envelope: its own histogram
     snakepit_mcp_overhead_seconds (request time minus the job's submit→result time), next to
     the client's round trip and the executor's wall time.

Runs a private farm: redis-server on a unix socket, snakepit-broker, snakepit-executor (one
slot) and snakepit-mcp, stopped by pid afterwards. Needs `wrk` (Debian package) for part 1.

    /usr/bin/python3 mcp-frontend/perf.py [--seconds 10] [--calls 2000]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
from fe_harness import BIN, Client, ModernClient, free_port, wait_for  # noqa: E402


def histogram_quantile(text, name, label, q):
    buckets = []
    for line in text.splitlines():
        if line.startswith(name + "_bucket{") and label in line:
            le = line.split('le="')[1].split('"')[0]
            buckets.append((float("inf") if le == "+Inf" else float(le), float(line.rsplit(" ", 1)[1])))
    buckets.sort()
    total = buckets[-1][1] if buckets else 0
    if not total:
        return None
    want, prev_le, prev_n = q * total, 0.0, 0.0
    for le, n in buckets:
        if n >= want:
            if le == float("inf"):
                return prev_le
            return prev_le + (le - prev_le) * (want - prev_n) / max(n - prev_n, 1)
        prev_le, prev_n = le, n
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--connections", type=int, default=32)
    ap.add_argument("--modern", action="store_true", help="also measure MCP 2026-07-28 requests")
    a = ap.parse_args()
    d = tempfile.mkdtemp(prefix="spperf-", dir="/tmp")
    procs = []

    def spawn(args, name, cpu=None):
        log = open(os.path.join(d, name + ".log"), "ab")
        if cpu is not None:
            args = ["taskset", "-c", str(cpu)] + args
        p = subprocess.Popen(args, stdout=log, stderr=log, stdin=subprocess.DEVNULL)
        procs.append(p)
        return p

    try:
        sock = os.path.join(d, "redis.sock")
        spawn(["redis-server", "--port", "0", "--unixsocket", sock, "--save", "", "--appendonly", "no"], "redis")
        wait_for(lambda: os.path.exists(sock), 10, "redis")
        cep, wep = "tcp://127.0.0.1:%d" % free_port(), "tcp://127.0.0.1:%d" % free_port()
        spawn([os.path.join(BIN, "snakepit-broker"), "--clients", cep, "--executors", wep, "--metrics", "off",
               "--log-level", "warn"], "broker", cpu=1)
        spawn([os.path.join(BIN, "snakepit-executor"), "--broker", wep, "--slots", "1", "--metrics", "off",
               "--log-level", "warn"], "executor", cpu=1)
        port = free_port()
        spawn([os.path.join(BIN, "snakepit-mcp"), "--http", "127.0.0.1:%d" % port, "--broker", cep, "--redis",
               "unix://" + sock, "--log-level", "warn", "--anonymous-tenant", "perf"], "mcp", cpu=0)
        url = "http://127.0.0.1:%d/mcp" % port
        import redis
        r = redis.Redis(unix_socket_path=sock)
        r.hset("sp:t:perf", mapping={"rate": 1e6, "burst": 1e6, "max_concurrency": 64})
        c = Client(url)
        wait_for(lambda: c.initialize() and True, 20, "the front-end")
        wait_for(lambda: c.call("execute_code", {"code": "1"})["result"]["structuredContent"]["status"] == "ok", 60,
                 "the farm to run a job")

        # 2. execute_code overhead at concurrency 1
        def counts(text):
            out = {}
            for line in text.splitlines():
                if line.startswith("snakepit_mcp_overhead_seconds_bucket{") and "tools/call" in line:
                    k, v = line.rsplit(" ", 1)
                    out[k] = float(v)
            return out

        def metrics():
            return subprocess.run(["curl", "-s", "http://127.0.0.1:%d/metrics" % port], capture_output=True,
                                  text=True).stdout

        def overhead(client):
            rtt, wall = [], []
            for i in range(200):  # warm-up
                client.call("execute_code", {"code": "print(1)"})
            b0 = counts(metrics())
            for i in range(a.calls):
                t0 = time.perf_counter()
                res = client.call("execute_code", {"code": "print(1)"})["result"]["structuredContent"]
                rtt.append((time.perf_counter() - t0) * 1e6)
                wall.append(res["timings"]["wall_ms"] * 1e3)
            b1 = counts(metrics())
            # subtract the warm-up's buckets so the quantile covers the measured calls only
            diff = "\n".join("%s %s" % (k, b1[k] - b0.get(k, 0)) for k in b1)
            p50 = histogram_quantile(diff, "snakepit_mcp_overhead_seconds", "tools/call", 0.5)
            p99 = histogram_quantile(diff, "snakepit_mcp_overhead_seconds", "tools/call", 0.99)
            return {
                "execute_code_calls": a.calls,
                "frontend_overhead_p50_us": round(p50 * 1e6, 1) if p50 is not None else None,
                "frontend_overhead_p99_us": round(p99 * 1e6, 1) if p99 is not None else None,
                "client_round_trip_p50_us": round(statistics.median(rtt), 1),
                "executor_wall_p50_us": round(statistics.median(wall), 1),
            }

        out = {"legacy": overhead(c)}
        if a.modern:
            out["modern"] = overhead(ModernClient(url))

        # 1. ping throughput, one core for the front-end
        if shutil.which("wrk"):
            lua = os.path.join(d, "ping.lua")
            with open(lua, "w") as f:
                f.write('wrk.method = "POST"\nwrk.body = \'{"jsonrpc":"2.0","id":1,"method":"ping"}\'\n'
                        'wrk.headers["Content-Type"] = "application/json"\n'
                        'wrk.headers["Accept"] = "application/json, text/event-stream"\n'
                        'wrk.headers["Mcp-Session-Id"] = "%s"\n' % c.session)
            w = subprocess.run(["taskset", "-c", "1", "wrk", "-t1", "-c%d" % a.connections, "-d%ds" % a.seconds,
                                "-s", lua, url], capture_output=True, text=True).stdout
            rps = [l for l in w.splitlines() if l.startswith("Requests/sec")]
            non2xx = [l for l in w.splitlines() if "Non-2xx" in l]
            out["ping_requests_per_s_one_core"] = float(rps[0].split()[1]) if rps else None
            out["ping_non_2xx"] = non2xx[0].strip() if non2xx else "0"
            out["wrk"] = w.strip().splitlines()
        print(json.dumps(out, indent=2))
    finally:
        for p in reversed(procs):
            p.terminate()
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
