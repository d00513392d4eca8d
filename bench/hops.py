#!/usr/bin/python3
"""bench/hops.py — one call's path through the farm, hop by hop, from `perf script` of
sched:sched_waking and sched:sched_switch (perf record -a) while paced calls run (bench/hops.sh).

    perf script -i DATA | bench/hops.py ROLE=TID ...     # mcp=, mcp-io=, broker=, zygote=, ...

A call starts when the client's request wakes the front-end's main thread and ends when the
front-end wakes the client with the answer (other wake-ups of the client are its own timers).
Every wake-up of a farm thread in between is a milestone named by the thread's role and its
occurrence in the call ("zygote#2": the zygote's second wake-up, the child's done byte); a
process forked by the zygote is "child". Printed: the median offset of each milestone from the
call's start, in order, and the median scheduling delay (woken -> running): under load that
delay, not the work, is what the offsets measure."""
import bisect
import collections
import re
import statistics
import sys

WAKING = re.compile(r"^\s*(\S.*?)\s+(\d+)\s+\[\d+\]\s+([\d.]+):\s+sched:sched_waking:\s+comm=(.*?) pid=(\d+)")
SWITCH = re.compile(r"^\s*(\S.*?)\s+(\d+)\s+\[\d+\]\s+([\d.]+):\s+sched:sched_switch:.*==> "
                    r"next_comm=(.*?) next_pid=(\d+)")


def main():
    roles = {}
    for a in sys.argv[1:]:
        name, tid = a.split("=")
        roles[int(tid)] = name

    def role(tid, comm):
        if tid in roles:
            return roles[tid]
        if comm.startswith("http_load"):
            return "client"
        if comm.startswith("snakepit-zygot"):
            return "child"
        return None

    wakes, runs = [], collections.defaultdict(list)  # (t, wakee role, wakee tid, waker role)
    for line in sys.stdin:
        m = WAKING.match(line)
        if m:
            wakee = role(int(m.group(5)), m.group(4))
            if wakee:
                wakes.append((float(m.group(3)), wakee, int(m.group(5)), role(int(m.group(2)), m.group(1))))
            continue
        m = SWITCH.match(line)
        if m and role(int(m.group(5)), m.group(4)):
            runs[int(m.group(5))].append(float(m.group(3)))
    wakes.sort()
    for r in runs.values():
        r.sort()

    def delay(tid, t):
        r = runs.get(tid, [])
        i = bisect.bisect_left(r, t)
        return r[i] - t if i < len(r) else None

    calls, cur = [], None
    for t, wakee, tid, waker in wakes:
        if cur is None:
            if wakee == "mcp" and waker == "client":
                cur = [(t, wakee, tid)]
            continue
        if wakee == "client" and waker != "mcp":
            continue  # the client's own timer, not the answer
        cur.append((t, wakee, tid))
        if wakee == "client":
            calls.append(cur)
            cur = None
    if not calls:
        sys.exit("no call seen: is the farm's front-end among the roles?")
    offsets, delays, totals = collections.defaultdict(list), collections.defaultdict(list), []
    for c in calls:
        t0 = c[0][0]
        totals.append(c[-1][0] - t0)
        seen = collections.Counter()
        for t, wakee, tid in c:
            seen[wakee] += 1
            k = f"{wakee}#{seen[wakee]}"
            offsets[k].append(t - t0)
            d = delay(tid, t)
            if d is not None:
                delays[k].append(d)
    n = len(calls)
    totals.sort()
    print(f"{n} calls; request -> answer (wake-ups) p50 {statistics.median(totals) * 1e3:.3f} ms, "
          f"p90 {totals[int(0.9 * (n - 1))] * 1e3:.3f} ms")
    print(f"{'milestone':16} {'seen in':>8} {'offset p50 us':>14} {'sched delay p50 us':>19}")
    rows = sorted((statistics.median(v), k) for k, v in offsets.items() if len(v) >= n / 2)
    for med, k in rows:
        d = statistics.median(delays[k]) * 1e6 if delays[k] else float("nan")
        print(f"{k:16} {len(offsets[k]):8} {med * 1e6:14.1f} {d:19.1f}")


if __name__ == "__main__":
    main()
