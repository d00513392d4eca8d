/* executor-node/sandbox/sandbox.h — the OS layers between a job's code and the machine, and what a
 * zygote and its children share of them.
 *
 * Where each layer is applied (child.c holds the child's sequence on one screen):
 *   namespaces  user, pid, net, ipc, uts, mount: entered once per zygote by clone(2) in the node
 *               (spawn.c); the zygote then seals its filesystem view (sandbox_seal_filesystem)
 *   rlimits     the job-independent ones while the child waits (sandbox_enter_rlimits), the
 *               job's own when it arrives (sandbox_child_limits)
 *   landlock    landlock.h: rulesets built in the zygote, entered by each child
 *   uid         an unprivileged uid and no capabilities (sandbox_enter_uid)
 *   nnp         no_new_privs (sandbox_enter_nnp)
 *   seccomp     filter.h: compiled once in the zygote, loaded by each child
 *   python      python.h: the import guard, restricted builtins and audit hook, armed per job
 * Everything but the job's own limits is in place while the pre-forked child waits in the pool:
 * lowering a limit needs no privilege, and no user code runs before every layer is in place,
 * so seccomp's JIT compile and the layers' cost stay off the job's critical path.
 *
 * Each layer can be switched off by name (layers.h) for operators on hosts that lack it, and
 * for the tests that prove each layer stops an attack on its own. */
#ifndef SP_SANDBOX_H
#define SP_SANDBOX_H
#include <linux/filter.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/limits.h"
#include "common/profiles.h"
#include "executor-node/area/jobarea.h"
#include "executor-node/link/layers.h"

typedef struct {
    unsigned           layers;      /* active */
    struct sock_fprog  filter;      /* compiled seccomp program, owned */
    uid_t              run_uid;     /* the uid children drop to (inside the user namespace) */
    gid_t              run_gid;
    int                drop_uid;    /* 0 when no other uid is mapped (unprivileged node) */
    size_t             base_vm;     /* the zygote's address space after warm-up, for RLIMIT_AS */
    int                landlock_abi;
    int                landlock_fd; /* the ruleset, built once per zygote; -1 without Landlock
                                       (workspace profiles: each child's own, see pool.c) */
    long               fsize_max;   /* RLIMIT_FSIZE: 0, or a workspace profile's file-size cap */
    int                session;     /* a child pooled for a session: RLIMIT_NPROC keeps its hard
                                       limit (the zygote raises the soft one, 0, for a fork) */
    const char        *env_host;    /* a dependency environment's site-packages on the host,
                                       mounted at ENVPROFILE_SITE when sealing; NULL none */
    int                egress_port; /* jobs with network egress reach the egress process on
                                       127.0.0.1:egress_port (egress.h); 0: this zygote serves
                                       none */
    int                landlock_egress_fd; /* the ruleset of a child for such jobs, -1 none */
} sandbox_t;

/* Zygote: checks that every requested layer is available here; fails closed, naming the
 * layer and why, so the node refuses to start rather than run jobs with less isolation. */
int sandbox_probe(sandbox_t *sb, char *err, size_t errlen);
/* Zygote, before its interpreter starts (so nothing caches the host's): a neutral host name,
 * "sandbox", in its own UTS namespace, which every child shares. 0, or -1 with the reason. */
int sandbox_neutral_host(const sandbox_t *sb, char *err, size_t errlen);
/* Zygote, after warm imports: make the filesystem view an empty read-only tmpfs holding only
 * the profile's read-only paths (and, for workspace profiles, a writable /work where each
 * child's directory is mounted; with egress_port, the CA certificates too); then build the
 * Landlock ruleset that allows reading them (and, with egress_port, a second one for children
 * that run jobs with network egress). */
int sandbox_seal_filesystem(sandbox_t *sb, const profile_t *profile, char *err, size_t errlen);
/* Zygote, before anything is imported, when it serves jobs with network egress: loopback up in
 * its own (otherwise empty) network namespace, and a TCP socket listening on
 * 127.0.0.1:egress_port there, for the node to hand to its egress process. The listening fd, or
 * -1 with the reason. */
int sandbox_egress_listener(const sandbox_t *sb, char *err, size_t errlen);

/* Child, first: its own process group, every fd closed but keep_fd (its wake socket) and the
 * Landlock ruleset, SIGKILL when the zygote dies. 0 or -errno. */
int sandbox_child_prepare(const sandbox_t *sb, int keep_fd);
/* Child: the limits every job gets (NPROC, CORE, FSIZE, MEMLOCK, MSGQUEUE). 0, or -1. */
int sandbox_enter_rlimits(const sandbox_t *sb);
/* Child: the unprivileged uid (when another is mapped) and no capabilities. 0, or -1. */
int sandbox_enter_uid(const sandbox_t *sb);
/* Child: no_new_privs. 0, or -1. */
int sandbox_enter_nnp(void);
/* Child once its job is known: its own limits (address space, CPU, open files). Lowering a
 * limit needs no privilege, so this works under the locked-down sandbox; no user code has run
 * yet. 0, or -1 with the reason. */
int sandbox_child_limits(const sandbox_t *sb, const limits_t *limits, const area_t *area,
                         char *err, size_t errlen);
/* A session's process at its start: the session's address space and open files, for good
 * (hard limits). Its CPU is limited cell by cell (sandbox_cell_cpu). 0, or -1 with the reason. */
int sandbox_session_limits(const sandbox_t *sb, const limits_t *limits, const area_t *area,
                           char *err, size_t errlen);
/* Before a cell: SIGXCPU once the process has used cpu_ms more than now. Only the soft limit
 * moves (a hard one could never be raised again); the cell's wall-clock timeout, enforced by
 * the zygote, comes first, and this is its backstop. 0, or -1. */
int sandbox_cell_cpu(const sandbox_t *sb, long cpu_ms);

#endif
