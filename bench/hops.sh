#!/usr/bin/env bash
# bench/hops.sh — where one call's time goes between the farm's processes: `print(1)` calls
# paced one every PACE_MS through MCP (bench/http_load), recorded by the kernel's scheduler
# tracepoints (`perf record -a -e sched:sched_waking -e sched:sched_switch`), then read by
# bench/hops.py: each call's wake-ups of the front-end, its ZeroMQ I/O thread, the broker (and its
# I/O thread), the executor node (and its I/O thread), the zygote, the job's child and Redis, as
# offsets from the request's arrival. Needs root (perf tracepoints) and a running farm.
#
#   bench/hops.sh STATE_DIR KEY [SECONDS] [PACE_MS]    # the farm of `snakepit up --state-dir`
#
# KEY: an API key of a tenant without a rate limit (`snakepit tenant add NAME --rate 1000000
# --burst 1000000 --max-concurrency 100000`). Wall-clock offsets: take them on a quiet machine
# and say its load with them.
set -euo pipefail
cd "$(dirname "$0")/.."
TOOLS=${SNAKEPIT_BENCH:-build/bench}
st=$1; key=$2; secs=${3:-3}; pace=${4:-25}
up=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "$st/ready.json")
url=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["url"])' "$st/ready.json")
roles=()
for p in $(pgrep -P "$up"); do
    case $(cat "/proc/$p/comm") in
    snakepit-mcp) n=mcp ;; snakepit-broker) n=broker ;; snakepit-execut) n=node ;; redis-server) n=redis ;;
    *) continue ;;
    esac
    for t in /proc/"$p"/task/*; do
        tid=$(basename "$t")
        case $(cat "$t/comm") in
        ZMQbg/IO*) roles+=("$n-io=$tid") ;;
        ZMQbg/Reaper) ;;
        *) if [ "$tid" = "$p" ]; then roles+=("$n=$tid"); else roles+=("$n-thr=$tid"); fi ;;
        esac
    done
    if [ "$n" = node ]; then for z in $(pgrep -P "$p"); do roles+=("zygote=$z"); done; fi
done
data=$(mktemp /tmp/sp-hops.XXXXXX)
trap 'rm -f "$data"' EXIT
perf record -q -a -e sched:sched_waking -e sched:sched_switch -o "$data" -- \
    "$TOOLS/http_load" --url "$url" --key "$key" --concurrency 1 --pace-ms "$pace" --seconds "$secs" \
    --warmup 0.3 --drain 10 --window-answers 0 'print(1)' 2>/dev/null | tail -1
perf script -i "$data" 2>/dev/null | /usr/bin/python3 bench/hops.py "${roles[@]}"
