#!/bin/bash
# tests/suites.sh TARGET... — runs each make target in turn (stopping at the first that fails)
# and prints, at the end, how long each took: its wall time and the CPU its processes used
# (user + system, of the processes that ended). `make test` runs every suite through it, so a
# CI log says where its minutes went.
#   bg:TARGET  starts TARGET in the background at the lowest CPU priority (its output in
#              build/TARGET.log), for compiling ahead what later suites use;
#   bg:wait    waits for it (and fails, with its log's end, if it failed);
#   A,B|C,D    lanes side by side: A then B in one lane, C then D in another (for suites that
#              mostly wait on processes, so that two of them fit on the machine at once). Each
#              lane has its own range of test ports (SNAKEPIT_PORT_RANGE, tests/lib/ports.py)
#              and its own pytest temporary directory; its output goes to build/lanes/N.log and
#              is printed when every lane has ended; a lane stops at its first failure, and the
#              token fails when any lane failed.
set -u
MAKE=${MAKE:-make}
total_start=$(date +%s.%N)
timesfile=$(mktemp)
# a lane (run_lanes, below) is this script again, with SUITES_LANE set: it adds its times to
# the results file of the run that started it and leaves the summary to that run
lane=${SUITES_LANE:-}
if [ -n "$lane" ]; then resultsfile=$SUITES_RESULTS; else resultsfile=$(mktemp); fi
bg_pid=
lane_pids=()
# what still runs in the background when this ends (a suite failed, or CI stopped us) is
# stopped with its whole process group
stop_background() {
    local p
    for p in $bg_pid "${lane_pids[@]}"; do kill -TERM -- "-$p" 2>/dev/null; done
}
trap 'stop_background; rm -f "$timesfile"; [ -n "$lane" ] || rm -f "$resultsfile"' EXIT
cpu=0
cpu_now() { # into cpu: the CPU of this shell's ended children, in seconds (times must run in
            # this shell, not in a $(...) subshell, which has no children of its own)
    times >"$timesfile" # two lines, "XmY.YYYs XmY.YYYs" (user, system): ours, our children's
    cpu=$(awk 'function sec(x,  m) { m = x; sub(/m.*/, "", m); sub(/^[0-9]+m/, "", x);
                                     sub(/s$/, "", x); return m * 60 + x }
               NR == 2 { printf "%.1f", sec($1) + sec($2) }' "$timesfile")
}
summary() {
    local end
    end=$(date +%s.%N)
    echo
    echo "suite times (wall s, CPU s of its processes):"
    sed 's/^/  /' "$resultsfile"
    awk -v a="$total_start" -v b="$end" 'BEGIN { printf "  total %.0f s\n", b - a }'
}
# run_suite TARGET [LABEL]: one make target, its times appended to the results; its exit code
run_suite() {
    local target=$1 label=${2:-$1} start end cpu0 rc
    start=$(date +%s.%N)
    cpu_now
    cpu0=$cpu
    $MAKE --no-print-directory "$target"
    rc=$?
    end=$(date +%s.%N)
    cpu_now
    awk -v t="$label" -v a="$start" -v b="$end" -v c0="$cpu0" -v c1="$cpu" -v rc=$rc \
        'BEGIN { printf "%-28s %7.1f %8.1f%s\n", t, b - a, c1 - c0, rc ? "  FAILED" : "" }' \
        >>"$resultsfile"
    return $rc
}
# run_lanes "A,B|C,D": see the top
run_lanes() {
    local spec=$1 lanes n i rc=0 lo span tmp tmps=() targets
    IFS='|' read -ra lanes <<<"$spec"
    n=${#lanes[@]}
    mkdir -p build/lanes
    # the ports below the kernel's ephemeral range, shared out between the lanes
    lo=10000
    span=$(( ($(awk '{ print $1 }' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768) - lo) / n ))
    lane_pids=()
    for ((i = 0; i < n; i++)); do
        tmp=$(mktemp -d /tmp/sp-lane.XXXXXX) # short: unix socket paths are made under it
        tmps+=("$tmp")
        echo "== lane $((i + 1)): ${lanes[i]//,/ } (build/lanes/$((i + 1)).log)"
        IFS=, read -ra targets <<<"${lanes[i]}"
        SUITES_LANE=$((i + 1)) SUITES_RESULTS=$resultsfile MAKE=$MAKE \
            SNAKEPIT_PORT_RANGE=$((lo + i * span))-$((lo + (i + 1) * span - 1)) \
            PYTEST_ADDOPTS="${PYTEST_ADDOPTS:-} --basetemp=$tmp/pytest" \
            setsid bash "$0" "${targets[@]}" >"build/lanes/$((i + 1)).log" 2>&1 &
        lane_pids+=($!)
    done
    for ((i = 0; i < n; i++)); do
        wait "${lane_pids[i]}" || rc=1
    done
    lane_pids=()
    rm -rf "${tmps[@]}"
    for ((i = 0; i < n; i++)); do
        echo "== lane $((i + 1)) (${lanes[i]//,/ }):"
        cat "build/lanes/$((i + 1)).log"
    done
    return $rc
}
bg_name= bg_start=
for target in "$@"; do
    case $target in
    bg:wait)
        [ -n "$bg_pid" ] || continue
        wait "$bg_pid"
        rc=$?
        awk -v t="$bg_name (background)" -v a="$bg_start" -v b="$(date +%s.%N)" -v rc=$rc \
            'BEGIN { printf "%-28s %7.1f %8s%s\n", t, b - a, "", rc ? "  FAILED" : "" }' >>"$resultsfile"
        if [ $rc -ne 0 ]; then
            tail -40 "build/$bg_name.log"
            [ -n "$lane" ] || summary
            exit $rc
        fi
        bg_pid=
        continue
        ;;
    bg:*)
        bg_name=${target#bg:}
        bg_start=$(date +%s.%N)
        mkdir -p build
        setsid nice -n 19 $MAKE --no-print-directory "$bg_name" >"build/$bg_name.log" 2>&1 &
        bg_pid=$!
        echo "== $bg_name: in the background (build/$bg_name.log)"
        continue
        ;;
    *'|'*)
        run_lanes "$target" || { summary; exit 1; }
        ;;
    *)
        run_suite "$target" "$target${lane:+ (lane $lane)}" || { rc=$?; [ -n "$lane" ] || summary; exit $rc; }
        ;;
    esac
done
[ -n "$lane" ] || summary
