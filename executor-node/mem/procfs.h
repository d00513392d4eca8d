/* executor-node/mem/procfs.h — the zygote's own view of /proc, kept after its filesystem is sealed.
 *
 * With the namespaces layer the zygote pivots into an empty root, where there is no /proc; but
 * it still needs two things only /proc tells: how much memory a session's process holds
 * (smaps_rollup's Pss, for list_sessions, metrics and eviction) and which processes are its
 * children (so a clone it did not ask for is found and killed after a fork_session). Before
 * sealing it mounts a proc of its own pid namespace over the old root's /proc and keeps a
 * descriptor to it; the mount leaves with the old root, the descriptor keeps it readable, and
 * no child ever holds it (children close every descriptor but their wake socket). Without the
 * namespaces layer the zygote shares the host's pid namespace, and /proc is the host's. */
#ifndef SP_PROCFS_H
#define SP_PROCFS_H
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Zygote, before sealing (own_ns: it is pid 1 of a pid namespace of its own). The descriptor,
 * or -1 (logged): memory then reads as 0 and strays go unsought. */
int procfs_open(int own_ns);
/* pid's proportional share of memory (Pss) in KiB; -1 when it cannot be read. Costs a walk
 * of its page tables (~0.2 ms for 10 MB, ~5 ms for 200 MB here): off any job's path. */
int procfs_pss_kb(int procfd, pid_t pid, uint64_t *kb);
/* pid's CPU time so far (user + system: its CPU clock, else its stat) in ms; -1 when it
 * cannot be read. */
int procfs_cpu_ms(int procfd, pid_t pid, uint64_t *ms);
/* The pids whose parent is parent, into out (at most cap); how many were found. */
size_t procfs_children(int procfd, pid_t parent, pid_t *out, size_t cap);

#endif
