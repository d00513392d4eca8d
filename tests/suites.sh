#!/bin/bash
# tests/suites.sh TARGET... — runs each make target in turn (stopping at the first that fails)
# and prints, at the end, how long each took: its wall time and the CPU its processes used
# (user + system, of the processes that ended). `make test` runs every suite through it, so a
# CI log says where its minutes went.
set -u
MAKE=${MAKE:-make}
results=()
total_start=$(date +%s.%N)
timesfile=$(mktemp)
trap 'rm -f "$timesfile"' EXIT
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
for target in "$@"; do
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
