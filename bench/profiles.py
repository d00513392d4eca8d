#!/usr/bin/python3
"""bench/profiles.py — what each profile costs, for `make bench` and on its own.

For every profile: build/bench/limit drives a real snakepit-executor serving only that profile,
paced `print(1)` at concurrency 1 (one call every PACE_MS, so a warm child is always ready),
then measures the zygote's memory and a job's (smaps_rollup, limit --memory). Reported per
profile: zygote RSS, PSS and private dirty memory; a running job's private dirty memory; CPU
per execution (the executor's whole process tree, as limit counts it); the fork cost (the
zygote's fork(), from its debug log: the copy of its page tables); the paced latency.

Run alone: `bench/profiles.py [--bin DIR] [--tools DIR]` prints the JSON, which is how the
numbers before a change are taken (point --bin and --tools at an older build)."""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

PROFILES = ["python.basic", "python.filesystem", "python.data_science"]
PACE_MS = 25


def _driver(argv, timeout=900):
    p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError("%s failed: %s" % (os.path.basename(argv[0]), p.stderr[-800:]))
    return [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]


def _pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else None


def bench_profiles(bin_dir, tools_dir, tmp, slots=2, seconds=1.0, profiles=PROFILES):
    exe = os.path.join(bin_dir, "snakepit-executor")
    out = {}
    for profile in profiles:
        log = os.path.join(tmp, "profile-%s.log" % profile)
        lines = _driver([os.path.join(tools_dir, "limit"), "--executor", exe, "--slots", str(slots),
                         "--profile", profile, "--log", log, "--log-level", "debug", "--memory",
                         "--executor-arg=--metrics", "--executor-arg=off",
                         "--seconds", str(seconds), "--warmup", "0.3", "--drain", "60",
                         "--window-answers", "1", "--concurrency", "1", "--pace-ms", str(PACE_MS),
                         "print(1)"])
        mem = next((l["memory"] for l in lines if "memory" in l), {})
        run = next((l for l in lines if "memory" not in l), {})
        text = open(log, errors="replace").read() if os.path.exists(log) else ""
        forks = [int(x) for x in re.findall(r"event=forked us=(\d+)", text)]

        def m(part, field):
            return (mem.get(part) or {}).get(field)

        out[profile] = {
            "zygote_rss_kb": m("zygote", "rss_kb"), "zygote_pss_kb": m("zygote", "pss_kb"),
            "zygote_private_dirty_kb": m("zygote", "private_dirty_kb"),
            "job_private_dirty_kb": m("running_job", "private_dirty_kb"),
            "idle_child_private_dirty_kb": m("idle_child", "private_dirty_kb"),
            "cpu_ms_per_exec": run.get("cpu_ms_per_exec"),
            "cpu_ms_by_process": run.get("cpu_ms_by_process"),
            "fork_us_median": statistics.median(forks) if forks else None,
            "fork_us_p90": _pct(forks, 0.9), "forks": len(forks),
            "paced_p50_ms": run.get("p50_ms"), "paced_p90_ms": run.get("p90_ms"),
            "errors": run.get("errors"), "n": run.get("n"),
        }
    return out


def summary_lines(profiles):
    lines = []
    for name, p in profiles.items():
        def f(x, unit=""):
            return "-" if x is None else ("%.3g%s" % (x, unit) if isinstance(x, float) else "%s%s" % (x, unit))
        lines.append("%s: zygote RSS %s kB (PSS %s, private dirty %s), job private dirty %s kB, "
                     "fork %s µs (p90 %s), CPU %s ms per print(1), paced p50 %s ms" % (
                         name, f(p["zygote_rss_kb"]), f(p["zygote_pss_kb"]), f(p["zygote_private_dirty_kb"]),
                         f(p["job_private_dirty_kb"]), f(p["fork_us_median"]), f(p["fork_us_p90"]),
                         f(p["cpu_ms_per_exec"]), f(p["paced_p50_ms"])))
    return lines


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", default=os.environ.get("SNAKEPIT_BIN", os.path.join(root, "build/bin")))
    ap.add_argument("--tools", default=os.environ.get("SNAKEPIT_BENCH", os.path.join(root, "build/bench")))
    ap.add_argument("--slots", type=int, default=2)
    ap.add_argument("--seconds", type=float, default=2.0)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="sp-bench-profiles.") as tmp:
        r = bench_profiles(a.bin, a.tools, tmp, a.slots, a.seconds)
    print(json.dumps(r, indent=1))
    print("\n".join(summary_lines(r)), file=sys.stderr)


if __name__ == "__main__":
    main()
