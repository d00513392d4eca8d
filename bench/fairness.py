"""bench/fairness.py — two measurements `make bench` takes on the farm of variant (b) while it is
up, after its closed loops:

- fairness under a flood: tenant `quiet` runs `print(1)` one call at a time (closed loop, c1),
  first alone, then while tenant `flood` keeps 64 calls outstanding; reported: the quiet
  tenant's p50/p99 alone and under the flood, their ratio (target: p99 under the flood at most
  2x alone), the flooder's own rate, and the farm's CPU per execution during the flood.
- Redis per execution: INFO commandstats, network bytes and used_memory of the farm's Redis
  around two consecutive c8 windows of `print(1)`, each divided by its answers, so that a cost
  growing with the records already stored shows as a difference between the first window and
  the second (records that cost more the more are kept).

Both tenants get rates and concurrency far above what 2 cores serve: the flood is judged by
what it costs the quiet tenant, not stopped by a rate limit."""
import json
import os
import subprocess
import time

FLOOD_C = 64


def _tenant(bin_dir, state, name):
    add = subprocess.run([f"{bin_dir}/snakepit", "tenant", "add", name, "--state-dir", state,
                          "--rate", "1000000", "--burst", "1000000", "--max-concurrency", "100000",
                          "--json"], capture_output=True, text=True, timeout=30)
    if add.returncode != 0:
        raise RuntimeError(f"snakepit tenant add {name}: {add.stderr.strip()}")
    return json.loads(add.stdout)["api_key"]


def _load_argv(tools, url, key, cpu_root, seconds, conc, warmup=0.3):
    return [f"{tools}/http_load", "--url", url, "--key", key, "--cpu-root", str(cpu_root),
            "--seconds", str(seconds), "--warmup", str(warmup), "--drain", "60",
            "--window-answers", "1", "--concurrency", str(conc), "print(1)"]


def _run(argv, log_path, timeout=300):
    with open(log_path, "ab") as err:
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=err, timeout=timeout)
    lines = [json.loads(l) for l in p.stdout.decode().splitlines() if l.startswith("{")]
    if p.returncode != 0 or not lines:
        raise RuntimeError(f"http_load exited with {p.returncode} (log: {log_path})")
    return lines[-1]


def _pick(line):
    return {k: line.get(k) for k in ("exec_per_s", "p50_ms", "p90_ms", "p99_ms", "errors", "n", "cpu_ms_per_exec")}


def bench_fairness(bin_dir, tools, state, url, cpu_root, seconds, log_path):
    quiet, flood = _tenant(bin_dir, state, "quiet"), _tenant(bin_dir, state, "flood")
    alone = _run(_load_argv(tools, url, quiet, cpu_root, seconds, 1), log_path)
    # the flood starts first and outlasts the quiet tenant's window on both sides
    flooder = subprocess.Popen(_load_argv(tools, url, flood, cpu_root, seconds + 2.0, FLOOD_C, warmup=0.5),
                               stdout=subprocess.PIPE, stderr=open(log_path, "ab"))
    try:
        time.sleep(1.0)
        under = _run(_load_argv(tools, url, quiet, cpu_root, seconds, 1), log_path)
        out, _ = flooder.communicate(timeout=300)
    finally:
        if flooder.poll() is None:
            flooder.kill()
            flooder.wait()
    flines = [json.loads(l) for l in out.decode().splitlines() if l.startswith("{")]
    f = flines[-1] if flines else {}
    ratio = round(under["p99_ms"] / alone["p99_ms"], 2) if alone.get("p99_ms") else None
    return {"quiet_alone": _pick(alone), "quiet_under_flood": _pick(under), "flood": _pick(f),
            "p99_under_flood_over_alone": ratio,
            "p50_under_flood_over_alone": round(under["p50_ms"] / alone["p50_ms"], 2) if alone.get("p50_ms") else None,
            "how": f"tenant quiet: print(1) at c1 for {seconds} s alone, then again while tenant flood "
                   f"keeps {FLOOD_C} print(1) calls outstanding (started 1 s before, ends after)"}


# ---- Redis ----------------------------------------------------------------------------------------

def _redis_cli(redis_url):
    if redis_url.startswith("unix:"):
        return ["redis-cli", "-s", "/" + redis_url[5:].lstrip("/")]
    return ["redis-cli", "-u", redis_url]


def _redis_info(cli):
    text = subprocess.run(cli + ["INFO", "all"], capture_output=True, text=True, timeout=30).stdout
    calls, usec, fields = {}, {}, {}
    for line in text.splitlines():
        if line.startswith("cmdstat_"):
            name, rest = line[8:].split(":", 1)
            kv = dict(p.split("=") for p in rest.split(","))
            calls[name], usec[name] = int(kv["calls"]), int(kv["usec"])
        elif ":" in line:
            k, v = line.split(":", 1)
            fields[k] = v.strip()
    return calls, usec, fields


def _redis_window(cli, tools, url, key, cpu_root, seconds, log_path):
    c0, u0, f0 = _redis_info(cli)
    line = _run(_load_argv(tools, url, key, cpu_root, seconds, 8), log_path)
    c1, u1, f1 = _redis_info(cli)
    n = line["answers"] or 1
    per = {k: round((c1[k] - c0.get(k, 0)) / n, 2) for k in c1 if c1[k] - c0.get(k, 0) > 0 and k != "info"}
    return {
        "answers": line["answers"], "commands_per_exec": round(sum(per.values()), 2), "by_command": per,
        "command_us_per_exec": round(sum(u1[k] - u0.get(k, 0) for k in u1 if k != "info") / n, 1),
        "net_in_bytes_per_exec": round((int(f1["total_net_input_bytes"]) - int(f0["total_net_input_bytes"])) / n),
        "net_out_bytes_per_exec": round((int(f1["total_net_output_bytes"]) - int(f0["total_net_output_bytes"])) / n),
        "used_memory_bytes_per_exec": round((int(f1["used_memory"]) - int(f0["used_memory"])) / n),
        "keys_after": sum(int(v.split(",")[0].split("=")[1]) for k, v in f1.items() if k.startswith("db")),
        "redis_cpu_ms_per_exec": (line.get("cpu_ms_by_process") or {}).get("redis-server"),
    }


def bench_redis(bin_dir, tools, state, url, cpu_root, seconds, log_path):
    with open(os.path.join(state, "ready.json")) as f:
        redis_url = json.load(f)["redis"]
    cli = _redis_cli(redis_url)
    key = _tenant(bin_dir, state, "records")
    first = _redis_window(cli, tools, url, key, cpu_root, seconds, log_path)
    second = _redis_window(cli, tools, url, key, cpu_root, seconds, log_path)
    return {"first_window": first, "second_window": second,
            "how": "INFO commandstats/stats/memory of the farm's Redis around two consecutive print(1) "
                   f"c8 windows of {seconds} s, per answer; Redis CPU from /proc"}


def summary_lines(fair, redis):
    out = []
    if fair:
        a, u = fair["quiet_alone"], fair["quiet_under_flood"]
        out.append(f"fairness (print(1) c1, another tenant at c{FLOOD_C}): quiet tenant p50/p99 "
                   f"{a['p50_ms']:.2f}/{a['p99_ms']:.2f} ms alone, {u['p50_ms']:.2f}/{u['p99_ms']:.2f} ms under "
                   f"the flood (p99 x{fair['p99_under_flood_over_alone']}); flooder "
                   f"{fair['flood'].get('exec_per_s')} exec/s, farm CPU {fair['flood'].get('cpu_ms_per_exec')} "
                   f"ms per execution meanwhile")
    if redis:
        for name in ("first_window", "second_window"):
            w = redis[name]
            out.append(f"Redis per execution ({name.replace('_', ' ')}, {w['keys_after']} keys after): "
                       f"{w['commands_per_exec']} commands ({w['command_us_per_exec']} µs inside them), "
                       f"{w['net_in_bytes_per_exec']} B in / {w['net_out_bytes_per_exec']} B out, "
                       f"used_memory +{w['used_memory_bytes_per_exec']} B, Redis CPU "
                       f"{w['redis_cpu_ms_per_exec']} ms")
    return out
