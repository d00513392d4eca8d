/* executor-node/sandbox.h — the OS layers between a job's code and the machine.
 *
 * Per zygote, once: namespaces (user, pid, net, ipc, uts, mount: entered by clone(2) when the
 * node spawns the zygote), an empty read-only root (sandbox_seal_filesystem), the seccomp
 * filter compiled to BPF (sandbox_compile).
 * Per child, in this order (DESIGN.md §5): new process group, every inherited fd closed,
 * parent-death signal (sandbox_child_prepare), then rlimits, Landlock, an unprivileged uid,
 * no_new_privs, seccomp (sandbox_child_lock) — all while the child waits in the pool. Only the
 * limits that depend on the job (address space, CPU, open files) are set when it arrives
 * (sandbox_child_limits): lowering a limit needs no privilege, and no user code runs before
 * every layer is in place. This keeps seccomp's JIT compile and the layers' cost off the job's
 * critical path.
 *
 * Each layer can be switched off by name for operators on hosts that lack it, and for the
 * tests that prove each layer stops an attack on its own. */
#ifndef SP_SANDBOX_H
#define SP_SANDBOX_H
#include <linux/filter.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "../common/profiles.h"
#include "../proto/job.h"
#include "jobarea.h"

#include "layers.h"

typedef struct {
    unsigned           layers;     /* active */
    struct sock_fprog  filter;     /* compiled seccomp program, owned */
    uid_t              run_uid;    /* the uid children drop to (inside the user namespace) */
    gid_t              run_gid;
    int                drop_uid;   /* 0 when no other uid is mapped (unprivileged node) */
    size_t             base_vm;    /* the zygote's address space after warm-up, for RLIMIT_AS */
    int                landlock_abi;
    int                landlock_fd; /* the ruleset, built once per zygote; -1 without Landlock
                                       (workspace profiles: each child's own, see below) */
    long               fsize_max;  /* RLIMIT_FSIZE: 0, or a workspace profile's file-size cap */
} sandbox_t;

/* Zygote: checks that every requested layer is available here; fails closed, naming the
 * layer and why, so the node refuses to start rather than run jobs with less isolation. */
int  sandbox_probe(sandbox_t *sb, char *err, size_t errlen);
int  sandbox_compile(sandbox_t *sb, const profile_t *profile, char *err, size_t errlen);
/* Zygote, after warm imports: make the filesystem view an empty read-only tmpfs holding only
 * the profile's read-only paths (and, for workspace profiles, a writable /work where each
 * child's directory is mounted); then build the Landlock ruleset that allows reading them. */
int  sandbox_seal_filesystem(sandbox_t *sb, const profile_t *profile, char *err, size_t errlen);
/* Zygote, before forking a workspace profile's child: a Landlock ruleset that also lets it
 * read and write its own workspace directory (a ruleset cannot be copied, and one shared fd
 * would carry every child's rule). The fd, or -1 with the reason. */
int  sandbox_landlock_ruleset(const sandbox_t *sb, const profile_t *profile, const char *workspace,
                              char *err, size_t errlen);
void sandbox_free(sandbox_t *sb);

/* Child at pre-fork time: closes every fd but keep_fd (its wake socket) and the Landlock
 * ruleset. Returns 0 or -errno. */
int sandbox_child_prepare(const sandbox_t *sb, int keep_fd);
/* Child at pre-fork time, after prepare: every layer that does not depend on the job, in
 * DESIGN.md §5 order — the job-independent rlimits (NPROC, CORE, FSIZE, MEMLOCK, MSGQUEUE),
 * Landlock, unprivileged uid, no_new_privs, seccomp. Loading the seccomp program costs a
 * kernel JIT compile; doing it here keeps it off the job's path. 0, or -1 naming the layer. */
int sandbox_child_lock(const sandbox_t *sb, area_t *area, char *err, size_t errlen);
/* Child once its job is known: its own limits (address space, CPU, open files). Lowering a
 * limit needs no privilege, so this works under the locked-down sandbox; no user code has run
 * yet. 0, or -1 with the reason. */
int sandbox_child_limits(const sandbox_t *sb, const limits_t *limits, const area_t *area,
                         char *err, size_t errlen);

/* The name of a syscall number, for reports ("socket"); "syscall_N" when unknown. */
const char *sandbox_syscall_name(int nr, char *buf, size_t cap);

#endif
