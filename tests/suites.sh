#!/bin/bash
# tests/suites.sh TARGET... — runs each make target in turn (stopping at the first that fails)
# and prints, at the end, how long each took: its wall time and the CPU its processes used
# (user + system, of the processes that ended). `make test` runs every suite through it, so a
# CI log says where its minutes went.
#   bg:TARGET  starts TARGET in the background at the lowest CPU priority (its output in
#              build/TARGET.log), for compiling ahead what later suites use;
#   bg:wait    waits for it (and fails, with its log's end, if it failed).
set -u
MAKE=${MAKE:-make}
results=()
total_start=$(date +%s.%N)
timesfile=$(mktemp)
bg_pid=
# a background build still running when a suite fails is stopped with its whole process group
trap 'rm -f "$timesfile"; [ -z "$bg_pid" ] || kill -TERM -- "-$bg_pid" 2>/dev/null' EXIT
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
    for r in "${results[@]}"; do echo "  $r"; done
    awk -v a="$total_start" -v b="$end" 'BEGIN { printf "  total %.0f s\n", b - a }'
}
bg_name= bg_start=
for target in "$@"; do
    case $target in
    bg:wait)
        [ -n "$bg_pid" ] || continue
        wait "$bg_pid"
        rc=$?
        results+=("$(awk -v t="$bg_name (background)" -v a="$bg_start" -v b="$(date +%s.%N)" -v rc=$rc \
            'BEGIN { printf "%-28s %7.1f %8s%s", t, b - a, "", rc ? "  FAILED" : "" }')")
        if [ $rc -ne 0 ]; then
            tail -40 "build/$bg_name.log"
            summary
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
    esac
    start=$(date +%s.%N)
    cpu_now
    cpu0=$cpu
    $MAKE --no-print-directory $target
    rc=$?
    end=$(date +%s.%N)
    cpu_now
    cpu1=$cpu
    results+=("$(awk -v t="$target" -v a="$start" -v b="$end" -v c0="$cpu0" -v c1="$cpu1" -v rc=$rc \
        'BEGIN { printf "%-28s %7.1f %8.1f%s", t, b - a, c1 - c0, rc ? "  FAILED" : "" }')")
    if [ $rc -ne 0 ]; then
        summary
        exit $rc
    fi
done
summary
