/* bench/proctree.h — what the processes under test cost, read from the host's /proc.
 *
 * CPU: the sum of utime + stime + cutime + cstime over a root process and every live
 * descendant. A process that has exited and been reaped has its time in its parent's
 * c*time, so the sum only ever grows and counts each process once — a zygote's job
 * children, forked and reaped by the thousand, land in the zygote's figure. Sampled at both
 * ends of a run window, the difference over the answers in the window is CPU per execution.
 *
 * Memory: smaps_rollup of one process (Rss, Pss, Private_Dirty...). */
#ifndef SP_BENCH_PROCTREE_H
#define SP_BENCH_PROCTREE_H
#include <stddef.h>
#include <sys/types.h>

#define PROCTREE_MAX_LABELS 16

/* CPU seconds and minor page faults by process label (the basename of argv[0]: snakepit-mcp, snakepit-zygote,
 * redis-server...; a zygote's children count as the zygote). */
typedef struct {
    int    n;
    char   label[PROCTREE_MAX_LABELS][32];
    double cpu_s[PROCTREE_MAX_LABELS];
    double minflt[PROCTREE_MAX_LABELS]; /* minor page faults (minflt + cminflt) */
    double total_s;
} proctree_cpu_t;

int proctree_cpu(pid_t root, proctree_cpu_t *out); /* 0, or -1 when root is gone */

/* after - before as a JSON fragment `,"cpu_ms_per_exec":T,"cpu_ms_by_process":{...},
 * "minflt_per_exec_by_process":{...}` (per answer), written to out. */
void proctree_cpu_json(char *out, size_t cap, const proctree_cpu_t *before,
                       const proctree_cpu_t *after, double answers);

typedef struct {
    long rss_kb, pss_kb, private_dirty_kb, private_clean_kb, shared_dirty_kb, shared_clean_kb,
        anonymous_kb;
} smaps_t;

int smaps_read(pid_t pid, smaps_t *out); /* 0, or -1 */

/* Children of parent, up to max; returns how many. */
int proc_children(pid_t parent, pid_t *out, int max);
/* The syscall number a sleeping process is blocked in (/proc/PID/syscall), -1 if unknown. */
long proc_syscall(pid_t pid);
/* The basename of argv[0]. */
void proc_label(pid_t pid, char *out, size_t cap);

#endif
