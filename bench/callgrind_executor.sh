#!/usr/bin/env bash
# bench/callgrind_executor.sh — instructions per job in each process of variant (a): the
# executor node, the zygote, and a job child split in its two lives — from fork to the end
# of its warm-up (off the job's latency path, but on its CPU bill) and the job itself.
#
# bench/limit drives `snakepit-executor` started under `valgrind --tool=callgrind
# --trace-children=yes`; each child zeroes its counters when it enters py_after_fork and dumps
# them when the job starts (sandbox_child_limits) and ends (py_run_job) (cg.PID.1: fork, layers,
# any warm-up run;
# cg.PID.2: the job). The node and the zygote are
# zeroed once warm and dumped SECONDS_ later. Valgrind knows neither Landlock nor the sandbox's
# rlimits and seccomp filter, and a child in the empty mount namespace cannot write its
# profile: those layers are off here (their cost is in the kernel, which callgrind does not
# count anyway: see perf_roles.py).
#
#   bench/callgrind_executor.sh                        # CODE='print(1)' SECONDS_=15
#   CODE='x=sum(range(10**6))' bench/callgrind_executor.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${SNAKEPIT_BIN:-$PWD/build/bin}
TOOLS=${SNAKEPIT_BENCH:-$PWD/build/bench}
CODE=${CODE:-print(1)}
SECONDS_=${SECONDS_:-15}
TOP=${TOP:-25}

dir=$(mktemp -d /tmp/sp-cgx.XXXXXX)
driver=
cleanup() {
    [ -n "$driver" ] && kill "$driver" 2>/dev/null && wait "$driver" 2>/dev/null
    rm -rf "$dir"
}
trap cleanup EXIT
cat >"$dir/executor" <<EOF
#!/bin/sh
exec valgrind --tool=callgrind --trace-children=yes --callgrind-out-file=$dir/cg.%p \\
    --log-file=$dir/vg.%p.log --zero-before=py_after_fork --dump-before=sandbox_child_limits \\
    --dump-after=py_run_job "$BIN/snakepit-executor" "\$@"
EOF
chmod +x "$dir/executor"
"$TOOLS/limit" --executor "$dir/executor" --executor-arg=--metrics --executor-arg=off \
    --executor-arg=--disable-layer --executor-arg=rlimits,landlock,seccomp,namespaces \
    --log "$dir/executor.log" --seconds $((SECONDS_ + 40)) --warmup 0 --window-answers 1 \
    --concurrency 1 "$CODE" >"$dir/limit.out" &
driver=$!
# the node is the first valgrind; the zygote its child that says --zygote
node= zygote=
for i in $(seq 1 240); do
    node=$(pgrep -P "$driver" -f valgrind || true)
    [ -n "$node" ] && zygote=$(pgrep -P "$node" -f -- '--zygote' || true)
    [ -n "$zygote" ] && ls "$dir"/cg.*.2 >/dev/null 2>&1 && break
    sleep 0.5
done
[ -n "$zygote" ] || { echo "the executor did not start under valgrind" >&2; tail "$dir/executor.log" >&2; exit 1; }
sleep 3
callgrind_control -z "$node" >/dev/null
callgrind_control -z "$zygote" >/dev/null
touch "$dir/t0"
sleep "$SECONDS_"
callgrind_control -d "$node" >/dev/null
callgrind_control -d "$zygote" >/dev/null
touch "$dir/t1"
sleep 1

/usr/bin/python3 - "$dir" "$node" "$zygote" "$CODE" "$TOP" <<'EOF'
import glob, os, re, statistics, subprocess, sys
d, node, zygote, code, top = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
t0, t1 = os.path.getmtime(f"{d}/t0"), os.path.getmtime(f"{d}/t1")

def annotate(f, *args):
    return subprocess.run(["callgrind_annotate", "--threshold=100", *args, f], capture_output=True, text=True).stdout

def total(f):
    m = re.search(r"([\d,]+) \(100.0%\)\s+PROGRAM TOTALS", annotate(f))
    return int(m.group(1).replace(",", "")) if m else 0

def rows(f, n, inclusive=False, only=None):
    out, seen = [], set()
    t = total(f)
    for line in annotate(f, f"--inclusive={'yes' if inclusive else 'no'}").splitlines():
        m = re.match(r"\s*([\d,]+) \(\s*[\d.]+%\)\s+(.*)", line)
        if not m or "PROGRAM TOTALS" in line:
            continue
        v = int(m.group(1).replace(",", ""))
        name = re.sub(r" \[/.*\]$", "", m.group(2))
        if (not inclusive and v > t / 2) or (only and not re.search(only, name)) or name in seen:
            continue
        seen.add(name)
        out.append(f"{v / n:11.0f}  {name}")
    return out[:top]

jobs = [f for f in glob.glob(f"{d}/cg.*.2") if t0 <= os.path.getmtime(f) <= t1]
n = len(jobs)
warm = sorted(glob.glob(f"{d}/cg.*.1"), key=os.path.getmtime)
warm = [f for f in warm if not f.endswith((f"cg.{node}.1", f"cg.{zygote}.1"))]
w = [total(f) for f in warm]
j = [total(f) for f in glob.glob(f"{d}/cg.*.2")]
print(f"code={code!r}: {n} jobs answered between the zero and the dump of node and zygote")
print(f"instructions per job (user space; layers rlimits, namespaces, landlock, seccomp off):")
print(f"  executor node                 {total(f'{d}/cg.{node}.1') / max(n, 1):12.0f}")
print(f"  zygote                        {total(f'{d}/cg.{zygote}.1') / max(n, 1):12.0f}")
print(f"  child, fork to its job       {statistics.median(w):12.0f}   (median of {len(w)})")
print(f"  child, the job                {statistics.median(j):12.0f}   (median of {len(j)})")
med = lambda fs, vs: sorted(zip(vs, fs))[len(vs) // 2][1]
for title, f in (("child before its job (fork, layers, warm-up run)", med(warm, w)),
                 ("child running the job", med(glob.glob(f"{d}/cg.*.2"), j))):
    print(f"\n--- {title}: snakepit functions, inclusive")
    print("\n".join(rows(f, 1, True, r"(executor-node|proto|common)/")))
    print(f"--- {title}: self, by function")
    print("\n".join(rows(f, 1)))
print(f"\n--- zygote per job: snakepit functions, inclusive")
print("\n".join(rows(f"{d}/cg.{zygote}.1", max(n, 1), True, r"(executor-node|proto|common)/")))
print(f"\n--- node per job: self, by function")
print("\n".join(rows(f"{d}/cg.{node}.1", max(n, 1))))
EOF
