/* executor-node/zygote/sessions/session_fork.h — fork_session, on the zygote's side
 * (session_child.h has the session's). Clones of a live session, each in one fork():
 * copy-on-write memory, the interpreter's whole state, and a copy of its workspace.
 *
 * The zygote prepares everything the clones will need, then lets the session's own C loop do
 * the one thing only it can, the clone(CLONE_PARENT | SIGCHLD) of its process:
 *   1. per clone a slot, its job area (a memfd) and socket; in workspace profiles its
 *      directory under the session's spare one, with a tmpfs of its own holding a copy of the
 *      session's workspace (modes and mtimes kept); and a new spare directory for the session;
 *   2. Landlock rulesets: one per clone (its own directory) and the session's next layer (its
 *      own workspace and its new spare directory): each side then reaches only its own;
 *   3. RLIMIT_NPROC's soft limit raised on the idle session with prlimit(2), enough for the
 *      clones and those of the other forks under way (the count is per uid, and every child of
 *      this zygote has the same);
 *   4. one 'f' per clone, with its descriptors, sent at once; the session clones once per 'f'
 *      and answers 'F' with each clone's pid, and with the last one takes its own next layer
 *      (one layer per fork_session, however many clones: while it clones it runs nothing of
 *      the tenant's); the limit goes back to 0 at once;
 *   5. each clone takes its layer, maps its area, moves into its directory and says 'R' on its
 *      own socket, where the kernel attaches its real pid (SO_PASSCRED); the zygote checks it
 *      is its child, makes it a process group of its own and sets its RLIMIT_NPROC to 0.
 * Then the job is answered with every new session (all of them, or none: a clone that fails
 * fails the fork, and the others go), and any child of the zygote it does not know (a clone
 * nobody asked for) is killed. A session forks at most as deep as Landlock stacks layers (16,
 * one taken by the pool): beyond that fork_session is refused with a clear reason (a snapshot
 * restored into a new session starts from a fresh sandbox). Forks need the seccomp layer (it
 * keeps the clone to that one call site) and Landlock with signal scoping (ABI 6: the sides
 * must not signal each other); without them they are refused.
 *
 * The same machinery sets an atomic cell's backup aside (session_fork_backup): one clone that
 * takes no Landlock layer and keeps the session's working directory and descriptors' paths,
 * which never runs CPython's after-fork work (it must stay exactly what the session was) and
 * waits, running nothing, until the cell ends: it then either goes (the cell ended ok) or
 * becomes the session (zygote_sessions.c). */
#ifndef SP_SESSION_FORK_H
#define SP_SESSION_FORK_H
#include <stdint.h>

#include "common/ids.h"
#include "proto/job.h"
#include "proto/status.h"
#include "executor-node/child/child_env.h"
#include "executor-node/sandbox/workspace.h"
#include "executor-node/zygote/pool/pool.h"
#include "executor-node/zygote/pool/refusal.h"
#include "zygote_session.h"

/* A zygote's forks of sessions under way. */
typedef struct session_fork session_fork_t;

/* What a fork asks of the table of sessions it works for: zygote_sessions.c hands these over when
 * it makes its session_fork_t, so that forks call nothing of the table's but through them. */
typedef struct {
    /* a session for the clone's slot c, sharing from's lineage */
    zygote_session_t *(*add)(void *arg, const uint8_t id[ID_BYTES], const char *tenant, child_t *c,
                             const zygote_session_t *from);
    /* a clone that never got a process leaves the table (its slot is the fork's to free) */
    void (*forget)(void *arg, zygote_session_t *z);
    /* room for n new sessions, ids[0..n): 0, or -1 with the refusal */
    int (*room)(void *arg, const uint8_t (*ids)[ID_BYTES], size_t n, refusal_t *why);
    /* ZM_SESSION up for z, once */
    void (*announce)(void *arg, zygote_session_t *z);
    /* a job's answer made here: status, error type and message; z (may be NULL) fills the
     * session part; clones (n of them, or none) its list of new sessions */
    void (*answer)(void *arg, const uint8_t id[ID_BYTES], const zygote_session_t *z, status_t st,
                   const char *type, const char *message, const child_t *c,
                   zygote_session_t *const *clones, size_t n);
    /* z ends with this reason, its process killed */
    void (*kill)(void *arg, zygote_session_t *z, const char *reason);
    /* z ends with this reason, its process already gone */
    void (*ended)(void *arg, zygote_session_t *z, const char *reason);
    /* z's backup is ready (backup: its slot, kept, z's to hold), or could not be made (NULL,
     * why says why; z is idle again, or ending) */
    void (*backup_done)(void *arg, zygote_session_t *z, child_t *backup, const char *why);
    void *arg;
} session_fork_hooks_t;

typedef struct {
    pool_t *pool;
    workspace_t *ws;        /* NULL in profiles without a workspace */
    const child_env_t *env; /* the profile, the layers */
    int procfd;             /* procfs.h; -1 without */
    int fork_ok;            /* the layers a fork's isolation rests on are on */
} session_fork_conf_t;

session_fork_t *session_fork_new(const session_fork_conf_t *conf,
                                 const session_fork_hooks_t *hooks);
void session_fork_destroy(session_fork_t **self_p);
/* 1 while a fork_session is under way (an atomic cell's backup does not count). */
int session_fork_busy(const session_fork_t *self);
/* Starts a fork of parent for the job id (its new_session and more_sessions name the clones).
 * 0 when under way (the job is answered later), -1 with why. */
int session_fork_start(session_fork_t *self, zygote_session_t *parent, const uint8_t id[ID_BYTES],
                       const jobspec_t *job, refusal_t *why);
/* Starts setting z's backup aside (z idle, its next job already in its area); backup_done
 * says how it went. 0 when under way, -1 with why (nothing was started). */
int session_fork_backup(session_fork_t *self, zygote_session_t *z, refusal_t *why);
/* c's socket is readable and c is a side of a fork: 1 when it was the fork's to read. */
int session_fork_on_io(session_fork_t *self, child_t *c);
/* A side of a fork died (reaped) or was killed: the fork fails, and is answered. */
void session_fork_died(session_fork_t *self, child_t *c);
/* Forks past their deadline fail (from zygote_sessions_tick). */
void session_fork_tick(session_fork_t *self);

#endif
