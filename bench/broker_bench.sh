#!/usr/bin/env bash
# bench/broker_bench.sh — broker routing throughput with executors that answer instantly.
#
# Starts snakepit-broker and STUBS stub executors (bench/stub_executor.c: no Python, every
# JOB answered at once with a canned `ok` Result) on private ipc:// endpoints, then runs
# bench/loadgen.c (proto/client.c, the front-end's submitter library) for JOBS jobs with
# WINDOW pending, RUNS times. Everything shares this machine's cores, so the figure is a
# floor for the broker alone; the broker's own CPU seconds per job are reported too, which
# say what one dedicated core would route.
#
#   bench/broker_bench.sh                      # defaults below
#   JOBS=500000 WINDOW=1000 TRANSPORT=tcp bench/broker_bench.sh
#
# Prints one JSON object per run and a summary line; writes bench/results/broker.json.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${SNAKEPIT_BIN:-build/bin}
TOOLS=${BENCH_TOOLS:-build/bench}
JOBS=${JOBS:-200000}
WINDOW=${WINDOW:-1000}
RUNS=${RUNS:-3}
STUBS=${STUBS:-2}
SLOTS=${SLOTS:-256}
TRANSPORT=${TRANSPORT:-ipc}

dir=$(mktemp -d /tmp/sp-bench.XXXXXX)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
    rm -rf "$dir"
}
trap cleanup EXIT

if [ "$TRANSPORT" = tcp ]; then
    port=$((20000 + RANDOM % 20000))
    clients=tcp://127.0.0.1:$port executors=tcp://127.0.0.1:$((port + 1))
else
    clients=ipc://$dir/clients.sock executors=ipc://$dir/executors.sock
fi
"$BIN/snakepit-broker" --clients "$clients" --executors "$executors" --metrics off \
    --log-level warn --max-queue 1000000 --max-queue-per-tenant 1000000 2>"$dir/broker.log" &
broker=$!
pids+=("$broker")
for i in $(seq 1 "$STUBS"); do
    "$TOOLS/stub_executor" --broker "$executors" --slots "$SLOTS" --node-id "stub-$i" \
        --log-level warn 2>"$dir/stub-$i.log" &
    pids+=("$!")
done

cpu_s() { # utime + stime of a pid, seconds
    awk -v hz="$(getconf CLK_TCK)" '{print ($14 + $15) / hz}' "/proc/$1/stat"
}

mkdir -p bench/results
results=()
for run in $(seq 1 "$RUNS"); do
    before=$(cpu_s "$broker")
    out=$("$TOOLS/loadgen" --broker "$clients" --jobs "$JOBS" --window "$WINDOW" --tenants a,b)
    after=$(cpu_s "$broker")
    rate=$(echo "$out" | sed -n 's/.*"jobs_per_s":\([0-9]*\).*/\1/p')
    per_cpu=$(awk -v j="$JOBS" -v a="$after" -v b="$before" 'BEGIN { d = a - b; printf "%.0f", (d > 0 ? j / d : 0) }')
    echo "$out" | sed "s/}\$/,\"run\":$run,\"broker_cpu_s\":$(awk -v a="$after" -v b="$before" 'BEGIN{printf "%.2f", a-b}'),\"jobs_per_broker_cpu_s\":$per_cpu}/"
    results+=("$rate")
done
sorted=$(printf '%s\n' "${results[@]}" | sort -n)
median=$(echo "$sorted" | sed -n "$(( (RUNS + 1) / 2 ))p")
cores=$(nproc)
summary="{\"bench\":\"broker_routing\",\"transport\":\"$TRANSPORT\",\"jobs\":$JOBS,\"window\":$WINDOW,\"stubs\":$STUBS,\"cores\":$cores,\"runs\":[$(IFS=,; echo "${results[*]}")],\"median_jobs_per_s\":$median}"
echo "$summary"
echo "$summary" > bench/results/broker.json
if grep -q "level=error" "$dir/broker.log"; then
    echo "broker logged errors:" >&2
    cat "$dir/broker.log" >&2
fi
