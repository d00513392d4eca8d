#!/usr/bin/python3
"""bench/perf_roles.py — where the CPU of a `perf record -g` of a bench driver went, by role.

    perf record -e cpu-clock -F 10000 -g -o a.data -- build/bench/limit ... 'print(1)'
    perf script -i a.data --show-task-events | /usr/bin/python3 bench/perf_roles.py --answers N

Each sampled process gets a role from the fork/exec tree perf recorded: the driver, the
executor node (the process that exec'd snakepit-executor), the zygote (the node's child that
exec'd it again), and job children (forked by the zygote). For a farm, snakepit-mcp,
snakepit-broker and redis-server are roles of their own. Prints, per role, the share of
samples, user vs kernel, and the heaviest leaf functions and kernel entry paths; with
--answers (the jobs answered while recording) also µs of CPU per job.
"""
import argparse
import collections
import re
import sys

FORK = re.compile(r"PERF_RECORD_FORK\((\d+):(\d+)\):\((\d+):(\d+)\)")
EXEC = re.compile(r"PERF_RECORD_COMM exec: (\S+):(\d+)/(\d+)")
COMM = re.compile(r"PERF_RECORD_COMM: (\S+):(\d+)/(\d+)")  # synthesized for what ran before
HEAD2 = re.compile(r"^\s*(\S.*?)\s+(\d+)(?:/\d+)?\s+(?:\[\d+\]\s+)?[\d.]+:\s+\d+\s+cpu-clock")


# Where in a job's life a sample falls, from markers anywhere in its call chain (first match
# wins: an exit's page freeing is "exit", not "page fault").
PHASES = [
    ("exit teardown (do_exit, exit_mmap)", ("do_exit", "exit_mmap", "do_group_exit", "get_signal")),
    ("fork (copy_process, dup_mmap)", ("copy_process", "dup_mmap", "kernel_clone")),
    ("reap (wait4, release_task)", ("do_wait", "wait_consider_task", "release_task", "__x64_sys_wait4")),
    ("child: PyOS_AfterFork_Child", ("py_after_fork", "PyOS_AfterFork_Child")),
    ("child: sandbox layers (prepare, lock)", ("sandbox_child_prepare", "sandbox_enter_", "filter_enter",
                                               "landlock_enter", "seccomp", "landlock")),
    ("child: warm-up run (py_warm)", ("py_warm",)),
    ("child: job limits", ("sandbox_child_limits",)),
    ("child: the job (py_run_job)", ("py_run_job",)),
    ("zygote: answer (collect, encode, send)", ("pool_on_done", "outcome_result", "s_send_result",
                                                "result_encode")),
    ("zygote: take a job (decode, wake)", ("dispatch_job", "jobspec_decode", "jobcopy_put")),
    ("zygote: pool (area_map, socketpair, madvise)", ("pool_fork", "area_map", "area_unmap", "s_release")),
    ("zmq", ("libzmq",)),
    ("poll / scheduler", ("do_sys_poll", "__x64_sys_poll", "schedule", "finish_task_switch")),
    ("page fault (elsewhere)", ("exc_page_fault",)),
]


def phase(frames):
    for name, marks in PHASES:
        if any(m in f for f in frames for m in marks):
            return name
    return "other: " + frames[-1].split()[0][:60] if frames else "other"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--answers", type=float, default=0, help="jobs answered while recording")
    ap.add_argument("--hz", type=float, default=10000, help="sampling frequency of the record")
    ap.add_argument("--top", type=int, default=12)
    ap.add_argument("--role", action="append", default=[], metavar="NAME=PID",
                    help="name a process (and what it forks) whose exec perf did not see (perf record -a)")
    a = ap.parse_args()

    parent, execs, thread = {}, {}, {}
    samples = []  # (pid, [frames leaf first])
    cur = None
    for line in sys.stdin:
        m = FORK.search(line)
        if m:
            child, tid, ppid = int(m.group(1)), int(m.group(2)), int(m.group(3))
            if child == tid:  # a process
                parent[child] = ppid
            else:  # a thread: it is its process
                thread[tid] = child
            continue
        m = COMM.search(line)
        if m:
            if m.group(2) != m.group(3):
                thread[int(m.group(3))] = int(m.group(2))
            continue
        m = EXEC.search(line)
        if m:
            execs.setdefault(int(m.group(2)), []).append(m.group(1))
            continue
        if "cpu-clock" in line:
            m = HEAD2.match(line)
            if m:
                cur = (int(m.group(2)), [])
                samples.append(cur)
            continue
        s = line.strip()
        if s and cur is not None:
            parts = s.split(None, 1)
            if len(parts) == 2:
                cur[1].append(re.sub(r"\+0x[0-9a-f]+", "", parts[1]))
        elif not s:
            cur = None

    given = {int(p): n for n, p in (r.split("=", 1) for r in a.role)}

    def role(pid):
        pid = thread.get(pid, pid)
        if pid in given:
            return given[pid]
        names = execs.get(pid, [])
        if any(n.startswith("snakepit-zygot") for n in names):  # the zygote's own binary
            return "zygote"
        if any(n.startswith("snakepit-execut") for n in names):
            pp = parent.get(pid)
            if pp is not None and any(n.startswith("snakepit-execut") for n in execs.get(pp, [])):
                return "zygote"
            return "executor node"
        for n in names:
            if n.startswith(("snakepit-mcp", "snakepit-broker", "redis-server", "limit", "http_load",
                             "spawn_load", "snakepit")):
                return n
        pp = parent.get(pid)
        if pp is not None:
            r = role(pp)
            if r in ("zygote", "job child"):
                return "job child"
            return r
        return "?"

    roles = collections.Counter()
    kern = collections.Counter()
    leaf = collections.defaultdict(collections.Counter)
    path = collections.defaultdict(collections.Counter)
    for pid, frames in samples:
        r = role(pid)
        roles[r] += 1
        if not frames:
            continue
        is_k = frames[0].endswith("([kernel.kallsyms])")
        if is_k:
            kern[r] += 1
        leaf[r][frames[0].replace(" ([kernel.kallsyms])", " [k]")] += 1
        path[r][phase(frames)] += 1
    total = sum(roles.values())
    print(f"{total} samples at {a.hz:.0f} Hz = {total / a.hz:.2f} CPU s"
          + (f", {a.answers:.0f} jobs: {total / a.hz / a.answers * 1e6:.0f} µs CPU per job" if a.answers else ""))
    for r, n in roles.most_common():
        per = f", {n / a.hz / a.answers * 1e6:.0f} µs/job" if a.answers else ""
        print(f"\n== {r}: {100 * n / total:.1f}% ({n} samples{per}), kernel {100 * kern[r] / max(n, 1):.0f}%")
        print("   leaf functions:")
        for f, k in leaf[r].most_common(a.top):
            per = f" {k / a.hz / a.answers * 1e6:6.0f} µs/job" if a.answers else ""
            print(f"     {100 * k / n:5.1f}%{per}  {f[:100]}")
        print("   by phase (markers in the call chain):")
        for f, k in path[r].most_common(a.top):
            per = f" {k / a.hz / a.answers * 1e6:6.0f} µs/job" if a.answers else ""
            print(f"     {100 * k / n:5.1f}%{per}  {f[:100]}")


if __name__ == "__main__":
    main()
