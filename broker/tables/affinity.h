/* broker/tables/affinity.h — session affinity (PROTOCOL.md §3): where each session lives,
 * and the line of its jobs waiting for it.
 *
 * A session is one process on one executor, so its jobs go there and nowhere else, and one at
 * a time. Each session known here has its executor (NULL while it has none: right after the
 * broker started, or after its executor went away) and its line: the jobs submitted for it, in
 * order. Only the head of a line, and only while the session is placed and runs nothing, sits
 * in its executor's pinned queue (executors.h), where tenants take turns as in a service's
 * queue; so a session whose executor is busy holds back its own jobs and no one else's.
 *
 * The map is what executors say: READY lists every session a node holds (how a restarted
 * broker learns where they are), SESSIONS says which began and ended. A session that ended
 * is remembered for a while with why — lost when its executor went away — so that a job that
 * comes later is answered with the reason at once rather than "unknown", but only to the
 * tenant whose session it was (as far as this broker saw its jobs). */
#ifndef SP_AFFINITY_H
#define SP_AFFINITY_H
#include <stddef.h>
#include <stdint.h>

#include "common/ids.h"
#include "proto/wire.h"
#include "job.h"

struct broker_session {
    uint8_t id[ID_BYTES];
    char tenant[65];      /* whose (route_t.tenant), from its first job seen here ("" until then) */
    executor_t *executor; /* NULL: not placed (yet, or any more) */
    uint64_t homeless_ms; /* monotonic: since when it has had no executor */
    int was_placed;       /* it had one: its jobs left waiting are answered `lost` */
    job_t *head, *tail;   /* its waiting jobs (job->s_prev / s_next) */
    size_t waiting;
    job_t *running; /* its job leased to the executor, if any */
    int probing;    /* its resubmitted jobs being probed (sched_probe.c): its line waits */
    int ended;      /* its executor said it ended: forgotten once its last job is done */
    int draining;   /* its waiting jobs are being answered: not forgotten meanwhile */
    char end_reason[WIRE_MAX_REASON + 1];
};

typedef struct affinity affinity_t;

affinity_t *affinity_new(size_t gone_kept);
void affinity_destroy(affinity_t **self_p); /* sessions must have no jobs */

broker_session_t *affinity_get(const affinity_t *self, const uint8_t id[ID_BYTES]);
/* A new session, not placed (homeless since now_ms). */
broker_session_t *affinity_add(affinity_t *self, const uint8_t id[ID_BYTES], uint64_t now_ms);
/* Forgets a session that holds no job. */
void affinity_remove(affinity_t *self, broker_session_t **s_p);
size_t affinity_count(const affinity_t *self);
/* The sessions, into out (at most max; the map may change afterwards): how many. */
size_t affinity_list(const affinity_t *self, broker_session_t **out, size_t max);

/* A job joins the end of its session's line (job->session is set here). */
void affinity_push(broker_session_t *s, job_t *job);
/* A job goes back to the front of its session's line (its send failed). */
void affinity_push_head(broker_session_t *s, job_t *job);
/* A job leaves its session's line (dispatched, cancelled, expired). */
void affinity_unlink(broker_session_t *s, job_t *job);

/* A session that ended (lost: its executor went away), remembered with why for the jobs that
 * come later; the last gone_kept of them. */
void affinity_gone(affinity_t *self, const broker_session_t *s, int lost, const char *reason);
/* Why the session ended, for a job of `tenant` (NULL: not remembered, or another tenant's);
 * *lost says whether it was lost. */
const char *affinity_gone_reason(const affinity_t *self, const uint8_t id[ID_BYTES],
                                 const char *tenant, int *lost);

#endif
