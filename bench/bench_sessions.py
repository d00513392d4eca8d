"""bench/bench_sessions.py — the session variant of `make bench`, run on the farm of
variant (b) once its own grid is done:

  cells   `print(1)` as a cell through MCP/HTTP (build/bench/http_load --sessions): paced c1 (one
          call every PACE_MS, a warm node), and closed loops at c8 and c64, each connection with
          a session of its own (C calls across C sessions);
  atomic  the same cells with execute_code's atomic (a backup of the session set aside for each
          cell, thrown away when it ends ok): cells/s, latency and CPU per cell at c1 paced and
          c8, and the overhead over plain cells (CPU per cell, atomic / plain, at c8);
  forks   fork_session of a python.basic session that holds 20 MB and 200 MB (bytes it wrote,
          so the pages are there to copy-on-write): the MCP round trip of each fork (admission
          in Redis, broker, node, the zygote's clone, a new Landlock layer and a copied
          workspace on each side), p50/p90 over FORKS forks; each fork is closed again;
  fan-out fork_session count 16 of the 200 MB session (16 clones, one job), and map_session of 8
          `print(1)` (8 forks and 8 cells, the forks closed after), p50/p90 of the MCP round trip.

A tenant of its own with room for 64 sessions. Reported, never asserted.
"""
import json
import subprocess
import time
import urllib.request

FORKS = {"full": 30, "quick": 12, "smoke": 2}
FANOUTS = {"full": 10, "quick": 4, "smoke": 1}
SIZES_MB = (20, 200)


class _Mcp:
    """Enough of an MCP client over Streamable HTTP for tools/call (JSON answers)."""

    def __init__(self, url, key):
        self.url, self.key, self.session, self.next_id = url, key, None, 1
        self._post({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                    "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                               "clientInfo": {"name": "snakepit-bench", "version": "1"}}})
        self._post({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _post(self, msg):
        h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
             "Authorization": "Bearer " + self.key}
        if self.session:
            h.update({"Mcp-Session-Id": self.session, "MCP-Protocol-Version": "2025-11-25"})
        req = urllib.request.Request(self.url, json.dumps(msg).encode(), h, method="POST")
        with urllib.request.urlopen(req, timeout=120) as r:
            self.session = r.headers.get("Mcp-Session-Id") or self.session
            body = r.read()
        return json.loads(body) if body else None

    def call(self, tool, args):
        self.next_id += 1
        r = self._post({"jsonrpc": "2.0", "id": self.next_id, "method": "tools/call",
                        "params": {"name": tool, "arguments": args}})
        res = r.get("result") or {}
        if res.get("isError") or "structuredContent" not in res:
            raise RuntimeError(f"{tool}: {json.dumps(r)[:300]}")
        return res["structuredContent"]


def _pct(xs, p):
    xs = sorted(xs)
    return round(xs[min(len(xs) - 1, max(0, int(round(p / 100 * len(xs) + 0.5)) - 1))], 3) if xs else None


class _Parent:
    """A python.basic session holding MB megabytes, forked over and over. Each fork_session
    stacks one Landlock layer on the parent too, and a session has 15 to give: a fresh one
    takes its place before they run out, whichever loop forked it last."""

    RENEW_AFTER = 12

    def __init__(self, mcp, mb):
        self.mcp, self.mb, self.sid, self.forks = mcp, mb, None, 0
        self._new()

    def _new(self):
        if self.sid:
            self.mcp.call("close_session", {"session_id": self.sid})
        args = {"profile": "python.basic"}
        if self.mb:
            args["memory_limit"] = 2 * self.mb + 256
        self.sid, self.forks = self.mcp.call("create_session", args)["session_id"], 0
        self.mcp.call("execute_code", {"session_id": self.sid,
                                       "code": f"held = b'x' * ({self.mb} << 20)" if self.mb else "x = 1"})

    def fresh(self):
        """The session id, renewed first if its forks are nearly used up; counts one fork."""
        if self.forks >= self.RENEW_AFTER:
            self._new()
        self.forks += 1
        return self.sid

    def close(self):
        self.mcp.call("close_session", {"session_id": self.sid})


def _forks(mcp, mode):
    out = {}
    for mb in SIZES_MB:
        parent = _Parent(mcp, mb)
        times = []
        for _ in range(FORKS[mode]):
            sid = parent.fresh()
            t0 = time.perf_counter()
            fid = mcp.call("fork_session", {"session_id": sid})["session_id"]
            times.append((time.perf_counter() - t0) * 1000)
            mcp.call("close_session", {"session_id": fid})
        if mb == SIZES_MB[-1]:
            out["fanout16_200MB"], out["map8"] = _fanout(mcp, mode, parent)
        parent.close()
        out[f"{mb}MB"] = {"p50_ms": _pct(times, 50), "p90_ms": _pct(times, 90), "n": len(times)}
    return out


def _fanout(mcp, mode, big):
    """16 clones of the big session in one fork_session; map_session of 8 print(1) on a small
    one (8 forks, one layer on the parent). Every clone is closed again."""
    times, maps = [], []
    for _ in range(FANOUTS[mode]):
        sid = big.fresh()
        t0 = time.perf_counter()
        ids = mcp.call("fork_session", {"session_id": sid, "count": 16})["session_ids"]
        times.append((time.perf_counter() - t0) * 1000)
        for fid in ids:
            mcp.call("close_session", {"session_id": fid})
    small = _Parent(mcp, 0)
    for _ in range(FANOUTS[mode]):
        sid = small.fresh()
        t0 = time.perf_counter()
        mcp.call("map_session", {"session_id": sid, "codes": ["print(1)"] * 8})
        maps.append((time.perf_counter() - t0) * 1000)
    small.close()
    return ({"p50_ms": _pct(times, 50), "p90_ms": _pct(times, 90), "n": len(times)},
            {"p50_ms": _pct(maps, 50), "p90_ms": _pct(maps, 90), "n": len(maps)})


def run(m, mode, tmp, state, port, cpu_root, bin_dir, tools, run_driver, common_args, paced_args, log):
    """The session lines (variant farm_session, paced ones marked) and the fork latencies."""
    add = subprocess.run([f"{bin_dir}/snakepit", "tenant", "add", "benchsessions", "--state-dir", state,
                          "--rate", "1000000", "--burst", "1000000", "--max-concurrency", "100000",
                          "--max-sessions", "200", "--max-session-memory", "1000000", "--json"],
                         capture_output=True, text=True, timeout=30)
    if add.returncode != 0:
        raise RuntimeError(f"snakepit tenant add: {add.stderr.strip()}")
    key = json.loads(add.stdout)["api_key"]
    url = ["--url", f"http://127.0.0.1:{port}/mcp", "--key", key, "--cpu-root", str(cpu_root)]
    cells = run_driver([f"{tools}/http_load", "--sessions"] + url + common_args(m) + ["print(1)"],
                       f"{tmp}/farm-sessions.log")
    paced = run_driver([f"{tools}/http_load", "--sessions"] + url + paced_args(m) + ["print(1)"],
                       f"{tmp}/farm-sessions.log")
    log("atomic cells: print(1) with a backup of the session set aside for each")
    atomic = run_driver([f"{tools}/http_load", "--atomic"] + url + common_args(m) + ["print(1)"],
                        f"{tmp}/farm-sessions.log")
    atomic += [dict(l, paced=True) for l in
               run_driver([f"{tools}/http_load", "--atomic"] + url + paced_args(m) + ["print(1)"],
                          f"{tmp}/farm-sessions.log")]
    log("fork_session latency: 20 MB and 200 MB sessions")
    forks = _forks(_Mcp(f"http://127.0.0.1:{port}/mcp", key), mode)
    return cells + [dict(l, paced=True) for l in paced] + atomic, forks


def report(lines, forks):
    """r["sessions"]: cells and atomic cells (exec/s, latencies and CPU per cell per concurrency,
    paced c1), the atomic overhead, forks and fan-out."""
    cells, atomic = {}, {}
    for l in lines:
        key = "paced_c1" if l.get("paced") else f"c{l['concurrency']}"
        into = atomic if l.get("variant") == "farm_session_atomic" else cells
        into[key] = {k: l.get(k) for k in ("exec_per_s", "p50_ms", "p90_ms", "p99_ms", "errors", "n",
                                           "cpu_ms_per_exec")}
    plain_cpu = (cells.get("c8") or {}).get("cpu_ms_per_exec")
    atomic_cpu = (atomic.get("c8") or {}).get("cpu_ms_per_exec")
    overhead = round(atomic_cpu / plain_cpu, 2) if plain_cpu and atomic_cpu else None
    return {"cells": cells, "atomic": atomic, "atomic_cpu_over_plain": overhead, "fork_ms": forks,
            "targets": {"paced_c1_p50_ms<=0.6": (cells.get("paced_c1") or {}).get("p50_ms"),
                        "c8_cells_per_s>=3000": (cells.get("c8") or {}).get("exec_per_s"),
                        "fork_200MB_p50_ms<=5": (forks.get("200MB") or {}).get("p50_ms"),
                        "fork16_200MB_p50_ms<=40": (forks.get("fanout16_200MB") or {}).get("p50_ms"),
                        "atomic_cpu_over_plain<=2": overhead}}


def summary_line(s):
    c, a, f = s["cells"], s.get("atomic") or {}, s["fork_ms"]

    def at(d, k, field):
        return (d.get(k) or {}).get(field)

    def pp(k):
        return f"{(f.get(k) or {}).get('p50_ms')}/{(f.get(k) or {}).get('p90_ms')}"
    return (f"sessions: print(1) as a cell — paced c1 p50 {at(c, 'paced_c1', 'p50_ms')} ms; "
            f"c8 {at(c, 'c8', 'exec_per_s')} cells/s (p50 {at(c, 'c8', 'p50_ms')} ms, "
            f"{at(c, 'c8', 'cpu_ms_per_exec')} ms CPU per cell); "
            f"c64 {at(c, 'c64', 'exec_per_s')} cells/s (p50 {at(c, 'c64', 'p50_ms')} ms); "
            f"atomic: paced c1 p50 {at(a, 'paced_c1', 'p50_ms')} ms, c8 {at(a, 'c8', 'exec_per_s')} "
            f"cells/s, {at(a, 'c8', 'cpu_ms_per_exec')} ms CPU per cell "
            f"(x{s.get('atomic_cpu_over_plain')} a plain cell's); "
            f"fork_session p50/p90 20 MB {pp('20MB')} ms, 200 MB {pp('200MB')} ms; "
            f"16 forks of 200 MB in one call {pp('fanout16_200MB')} ms; "
            f"map_session of 8 print(1) {pp('map8')} ms")


def targets(s):
    """The session targets as bench.py lists targets: met or not, with the value."""
    if not s:
        return []
    t = s["targets"]
    rows = [("sessions: >= 3000 cells/s at c8", t.get("c8_cells_per_s>=3000"), lambda v: v >= 3000),
            ("sessions: fork_session of 200 MB p50 <= 5 ms", t.get("fork_200MB_p50_ms<=5"),
             lambda v: v <= 5),
            ("sessions: 16 forks of 200 MB in one call p50 <= 40 ms",
             t.get("fork16_200MB_p50_ms<=40"), lambda v: v <= 40),
            ("sessions: an atomic cell <= 2x a plain cell's CPU (c8)",
             t.get("atomic_cpu_over_plain<=2"), lambda v: v <= 2)]
    return [{"target": name, "value": v, "met": v is not None and ok(v)} for name, v, ok in rows]
