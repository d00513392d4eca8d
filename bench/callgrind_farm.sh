#!/usr/bin/env bash
# bench/callgrind_farm.sh — instructions per execute_code call in one component of the farm,
# counted by callgrind (exact and repeatable where wall-clock profiles on a shared 2-core VM are
# not). Starts a farm by hand the way `snakepit up` does (private Redis on a unix socket,
# broker, executor, front-end on ipc:// and loopback), with COMPONENT under
# `valgrind --tool=callgrind`; warms up, zeroes the counters, runs JOBS_S seconds of
# `execute_code` at concurrency CONC with bench/http_load, dumps, and prints the instructions
# per call (total and by function, self and inclusive).
#
#   bench/callgrind_farm.sh                         # COMPONENT=mcp CODE='print(1)' CONC=1 SECONDS_=5
#   COMPONENT=broker bench/callgrind_farm.sh
#   COMPONENT=executor bench/callgrind_farm.sh      # the node process only (not the zygote)
#
# Kernel time (syscalls, page faults, fork) is not counted by callgrind: see perf_roles.py.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${SNAKEPIT_BIN:-build/bin}
TOOLS=${SNAKEPIT_BENCH:-build/bench}
COMPONENT=${COMPONENT:-mcp}
CODE=${CODE:-print(1)}
CONC=${CONC:-1}
SECONDS_=${SECONDS_:-5}
TOP=${TOP:-30}
OUT=${OUT:-}

dir=$(mktemp -d /tmp/sp-cg.XXXXXX)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
    [ -n "$OUT" ] && cp "$dir"/cg.out.* "$OUT"/ 2>/dev/null || true
    rm -rf "$dir"
}
trap cleanup EXIT

vg() { # the component under callgrind, the others as they are
    if [ "$1" = "$COMPONENT" ]; then
        echo valgrind --tool=callgrind --callgrind-out-file="$dir/cg.out.%p" --dump-instr=no
    fi
}
port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
redis-server --unixsocket "$dir/redis.sock" --port 0 --save "" --appendonly no --daemonize no \
    >"$dir/redis.log" 2>&1 &
pids+=("$!")
for i in $(seq 1 100); do [ -S "$dir/redis.sock" ] && break; sleep 0.05; done
$(vg broker) "$BIN/snakepit-broker" --clients "ipc://$dir/clients.sock" --executors "ipc://$dir/executors.sock" \
    --metrics off --redis "unix://$dir/redis.sock" --log-level warn 2>"$dir/broker.log" &
pids+=("$!")
broker=$!
$(vg executor) "$BIN/snakepit-executor" --broker "ipc://$dir/executors.sock" --slots "$(nproc)" \
    --metrics off --redis "unix://$dir/redis.sock" --log-level warn 2>"$dir/executor.log" &
pids+=("$!")
executor=$!
$(vg mcp) "$BIN/snakepit-mcp" --http "127.0.0.1:$port" --broker "ipc://$dir/clients.sock" \
    --redis "unix://$dir/redis.sock" --log-level warn 2>"$dir/mcp.log" &
pids+=("$!")
mcp=$!
key=$("$BIN/snakepit" tenant add bench --redis "unix://$dir/redis.sock" --rate 1000000 --burst 1000000 \
    --max-concurrency 100000 --json | sed 's/.*"api_key":"\([^"]*\)".*/\1/')
target=$(eval echo "\$$COMPONENT")
load() {
    "$TOOLS/http_load" --url "http://127.0.0.1:$port/mcp" --key "$key" --concurrency "$CONC" \
        --warmup 0 --window-answers 1 --drain 60 --seconds "$1" "$CODE"
}
# warm-up until the farm answers (valgrind makes the first calls slow), then count
for i in $(seq 1 60); do
    if load 2 2>/dev/null | grep -q '"errors":0'; then break; fi
    sleep 1
done
callgrind_control -z "$target" >/dev/null
line=$(load "$SECONDS_")
callgrind_control -d "$target" >/dev/null
sleep 0.5
answers=$(echo "$line" | sed 's/.*"answers":\([0-9]*\).*/\1/')
errors=$(echo "$line" | sed 's/.*"errors":\([0-9]*\).*/\1/')
dump=$(ls -t "$dir"/cg.out.* | head -1)
total=$(callgrind_annotate "$dump" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1 + 0; exit}')
echo "component=$COMPONENT code=$CODE concurrency=$CONC calls=$answers errors=$errors"
echo "instructions per call: $(( total / (answers > 0 ? answers : 1) )) (total $total; includes 2 session set-up requests)"
echo
# (the frames that were on the stack when the counters were zeroed show their whole subtree as
# "self" in callgrind_annotate 3.19: self rows above 50% are that artefact and are left out)
per_call() { # self | inclusive
    local cap=2 opt=--inclusive=no
    [ "$1" = inclusive ] && cap=1 opt=--inclusive=yes
    callgrind_annotate --threshold=100 "$opt" "$dump" 2>/dev/null | awk -v n="$answers" -v t="$total" -v cap="$cap" '
        /^-+$/ {sep++} sep >= 3 && $1 ~ /^[0-9,]+$/ {v=$1; gsub(",", "", v); v += 0; if (v > t / cap) next;
        sub(/^ *[0-9,]+ +\( *[0-9.]+%\) +/, ""); sub(/ \[\/.*\]$/, ""); printf "%9.0f  %s\n", v / n, $0}'
}
echo "--- self instructions per call, by function"
per_call self | head -"$TOP" || true
echo
echo "--- inclusive instructions per call, snakepit's own functions"
per_call inclusive | grep -E '(^|[ /])(common|proto|mcp-frontend|broker|executor-node)/[a-z_]+\.c:' | \
    sed "s#$PWD/##" | awk '!seen[$2]++' | head -"$TOP" || true
