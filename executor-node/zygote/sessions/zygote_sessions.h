/* executor-node/zygote/sessions/zygote_sessions.h — a zygote's sessions: children kept
 * alive between calls.
 *
 * A session is a child pooled for one (pool.h), taken out of the pool by its first job and
 * kept: every sandbox layer stays in place, and its process runs cell after cell in one
 * interpreter (session_child.h), so globals, imports, open figures and its workspace persist.
 * This module is the zygote's side of it: the table of sessions by id, the jobs that act on
 * them (a cell, a snapshot, a restore, a summary, a close; forks are session_fork.h's), their
 * answers with the session's state, and their ends. It decides nothing about time: the node
 * expires idle sessions and evicts under memory pressure (node_sessions.h) by asking
 * (zygote_sessions_end); what this module reports (ZM_SESSION up, down, memory) is what the node
 * and, through it, the broker and Redis know.
 *
 * A session ends when it is closed, when the node ends it, when a job leaves it unusable
 * (memory_limit, cpu_limit, security_violation, a cell that did not stop within its grace after
 * the KeyboardInterrupt), or when its process dies; each end has a reason, which the job's
 * answer carries (Result.session.end_reason) and the node publishes. Another tenant's session
 * is, to a job, exactly like one that does not exist. */
#ifndef SP_ZYGOTE_SESSIONS_H
#define SP_ZYGOTE_SESSIONS_H
#include <stddef.h>
#include <stdint.h>

#include "common/ids.h"
#include "proto/job.h"
#include "proto/result.h"
#include "executor-node/link/zmsg.h"
#include "executor-node/zygote/pool/pool.h"
#include "executor-node/zygote/pool/refusal.h"

typedef struct zygote_sessions zygote_sessions_t;

/* How sessions speak: answers go out as RESULT (+ STATS), news as ZM_SESSION. */
typedef struct {
    /* A job's answer (res is scrubbed by the caller afterwards); c: the child that ran it, for
     * STATS, or NULL for answers made without one. */
    void (*answer)(void *arg, const uint8_t id[ID_BYTES], result_t *res, const child_t *c);
    void (*news)(void *arg, const zmsg_t *m);
    void *arg;
} zygote_sessions_io_t;

typedef struct {
    pool_t *pool;
    workspace_t *ws;        /* NULL in profiles without a workspace */
    const child_env_t *env; /* the profile, the layers */
    int procfd;             /* procfs.h; -1 without */
    long max_sessions;      /* this zygote's; the node's own cap comes first */
    long idle_default_s;    /* a session's idle timeout when its job names none */
    long idle_max_s;
    int fork_ok;             /* the layers fork_session's isolation rests on are on */
    long interrupt_grace_ms; /* a cell's KeyboardInterrupt, then SIGKILL this long after */
    const char *node;        /* for answers' executor field */
} zygote_sessions_conf_t;

zygote_sessions_t *zygote_sessions_new(const zygote_sessions_conf_t *conf,
                                       const zygote_sessions_io_t *io);
/* Kills every session's process (the zygote is ending). */
void zygote_sessions_destroy(zygote_sessions_t **self_p);

/* A decoded job that is about a session (job->has_session, or a session kind): started, or
 * answered at once. 0 when it was taken; -1 with why when refused. The job's files and
 * snapshot are consumed here; the caller still scrubs it. proxy: the job's network (the node
 * granted it), NULL none. A session made with one is pooled for egress, for good; each of its
 * cells uses the network only when that cell's own job is granted it (a cell that asks for
 * none runs without, in the same process). A session made without one never has network. */
int zygote_sessions_job(zygote_sessions_t *self, const uint8_t id[ID_BYTES], jobspec_t *job,
                        const char *proxy, refusal_t *why);

/* The pool's hooks, for children that are a session's process. */
void zygote_sessions_finished(zygote_sessions_t *self, child_t *c, int wstatus,
                              const struct rusage *ru);
void zygote_sessions_gone(zygote_sessions_t *self, child_t *c, int wstatus);
/* 1 when c (a session's process) has something to say on its socket: a job's done byte, or a
 * fork's answers. */
int zygote_sessions_wants_io(const child_t *c);
/* c's socket is readable. */
void zygote_sessions_on_io(zygote_sessions_t *self, child_t *c);
/* On the progress tick: a running job of c's session whose socket was muted (it wrote a byte
 * before it finished) is answered once its area says it has finished. */
void zygote_sessions_on_muted(zygote_sessions_t *s, child_t *c);

/* The node asks: the session ends now with this reason, unless a job is running in it (then
 * nothing happens: the node asks again once it is idle). */
void zygote_sessions_end(zygote_sessions_t *self, const uint8_t id[ID_BYTES], const char *reason);
/* Periodic work from the zygote's loop: measures a few idle sessions' memory. */
void zygote_sessions_tick(zygote_sessions_t *self);

size_t zygote_sessions_count(const zygote_sessions_t *self);
/* 1 when a fork_session is under way: the pool is not refilled meanwhile (the clone's
 * RLIMIT_NPROC window counts the zygote's children). */
int zygote_sessions_forking(const zygote_sessions_t *self);

#endif
