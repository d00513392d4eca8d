/* executor-node/child/session_child.h — a session's process, from its first job to its end.
 *
 * A child pooled for a session (pool.h) waits like any other, every layer in place. When its
 * first job makes a session (session_new, or a restore into a new session), child.c hands it
 * here instead of running it and exiting: the session's own limits are set for good, the
 * session starts (session.py), and then this loop waits on the wake socket between jobs. No
 * code of the tenant's runs while it waits: threads are refused by seccomp, and Python signal
 * handlers run only inside the interpreter's loop, which this loop is not in.
 *
 * What the zygote sends on the wake socket (a SOCK_SEQPACKET datagram):
 *   'j'            a job is in the area: a cell, a snapshot, a restore or an info
 *   'f' + fork_msg_t, with descriptors
 *                  clone yourself (fork_session, or an atomic cell's backup;
 *                  session_fork.h has the zygote's side)
 *   end of file    the session is over: exit
 * and what this loop answers: 'd' when the job's result is in the area; for each 'f', 'F' +
 * the clone's pid (or 'E' + errno) from the session, and 'R' from the clone on its own new
 * socket, where the kernel attaches the clone's real pid (SO_PASSCRED on the zygote's end).
 *
 * The fork is a bare clone(CLONE_PARENT | SIGCHLD) from one instruction of this file, which is
 * the only place the session's seccomp prologue lets it come from (prologue.h); the zygote
 * raises RLIMIT_NPROC's soft limit just for it. CLONE_PARENT makes the clone the zygote's own
 * child, reaped and owned like any other. Each side then takes one more Landlock layer that
 * keeps it to its own directories, and the clone maps the job area and takes the socket the
 * zygote made for it, so that neither can see the other's files, memory or jobs. */
#ifndef SP_SESSION_CHILD_H
#define SP_SESSION_CHILD_H
#include <stdint.h>

#include "executor-node/area/jobarea.h"
#include "executor-node/sandbox/workspace.h"
#include "child_env.h"

/* The instruction the fork's clone returns to: what the prologue compares seccomp's
 * instruction pointer with. */
extern const char session_clone_site[];

/* What comes with 'f' (after the command byte), and its descriptors, in this order: the
 * clone's socket, its area (a memfd), then — a session's clone — the clone's Landlock layer
 * and, with FORK_HAS_CWD, its working directory (O_PATH); and last, with FORK_PARENT_LAYER,
 * the session's own next layer, which it takes after this clone (the last of a fan-out). A
 * FORK_BACKUP clone (an atomic cell's backup) takes no layer, keeps the session's directory,
 * skips CPython's after-fork work (it must stay exactly what the session was: no reseeded
 * random, nothing rewritten) and waits. */
#define SESSION_FORK_FDS  5
#define FORK_HAS_CWD      1u
#define FORK_PARENT_LAYER 2u
#define FORK_BACKUP       4u
typedef struct {
    uint32_t job_cap, stream_cap; /* the clone's area */
    uint32_t flags;               /* FORK_* */
    char cwd[WORKSPACE_PATH_MAX]; /* the clone's working directory; "" without one */
} fork_msg_t;

/* In a pooled child whose first job (already in its area) makes a session; ws_dir its
 * workspace ("" without one). Never returns. */
_Noreturn void session_child_main(const child_env_t *env, sandbox_t *sb, area_t *area, int wake_fd,
                                  const char *ws_dir);

#endif
