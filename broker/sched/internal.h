/* broker/sched/internal.h — what the scheduler's own files share, and nothing outside
 * broker/sched/ includes: its state, and the verbs of its parts. Their contract with the rest of
 * the broker is sched.h.
 *
 * The parts stand on each other in one order, each calling only the ones below it:
 *
 *   sched_jobs.c      admission, cancels, results, dispatch; builds the scheduler
 *   sched_life.c      executors and clients coming and going, deadlines, the service grace
 *   sched_probe.c     resubmitted jobs, probed before they may run
 *   sched_sessions.c  sessions' lines and pinned queues; where an admitted job waits
 *   sched_state.c     the books: what the scheduler holds, the counts that go with it, views
 *
 * Every job the scheduler holds is in exactly one place, a tenant's FIFO in its service's
 * queue, a session's line, the probing list or an executor's leases, and counted there once. It
 * leaves in two steps: sched_detach takes it out of everything, then sched_finish frees it (the
 * executor's RESULT was forwarded) or sched_answer answers it first. What leaving means to a
 * session's line or to the probing list, the parts that keep them tell the books through
 * sched_detach_hooks_t, registered when the scheduler is built: the books call nothing above
 * them. */
#ifndef SP_SCHED_INTERNAL_H
#define SP_SCHED_INTERNAL_H
#include "common/idmap.h"
#include "broker/tables/affinity.h"
#include "broker/tables/deadlines.h"
#include "sched.h"

/* What else goes when sched_detach takes a job out of the books. */
typedef struct {
    /* a session's job leaves its line (queued) or its session's running place (leased):
     * sched_sessions.c */
    void (*session_left)(sched_t *s, job_t *job);
    /* a probing job leaves the probing list: sched_probe.c */
    void (*probe_left)(sched_t *s, job_t *job);
    /* ...and when it was a session's, its line may move again: sched_sessions.c */
    void (*session_probe_left)(sched_t *s, job_t *job);
} sched_detach_hooks_t;

struct sched {
    sched_conf_t conf;
    sched_io_t io;
    services_t *services;
    tenants_t *tenants;
    clients_t *clients;
    executors_t *executors;
    idmap_t *jobs;          /* every job held, queued or leased, by id */
    deadlines_t *deadlines; /* jobs with a deadline */
    size_t queued;          /* jobs in queues, all services */
    size_t queued_bytes;    /* their JobSpec bytes */
    size_t inflight;        /* jobs leased */
    uint64_t started_ms;    /* monotonic; the start-up grace runs from here */
    job_t *probing;         /* resubmitted jobs awaiting their executors' HELD (sched_probe.c) */
    sched_stats_t stats;
    affinity_t *affinity; /* sessions: where each lives, and its line (sched_sessions.c) */
    int pinned_dirty;     /* some executor's pinned queue may have work to send */
    sched_detach_hooks_t on_detach;
};

/* ---- the books (sched_state.c) */
/* The scheduler's state, built; sched_new (sched_jobs.c) lets the parts register their hooks. */
sched_t *sched_state_new(const sched_conf_t *conf, const sched_io_t *io);
/* Counts a job into (sign > 0) or out of the queued totals. */
void sched_count_queued(sched_t *s, job_t *job, int sign);
/* A lease ended: in-flight counts drop and a parked tenant may be unparked. */
void sched_inflight_done(sched_t *s, job_t *job);
/* Takes a job out of every structure (queue, line or lease, deadlines, id map, tenant counts);
 * returns the executor that held it, if it was leased. */
executor_t *sched_detach(sched_t *s, job_t *job);
/* A detached job's end with an answer made by the broker. */
void sched_answer(sched_t *s, job_t *job, status_t st, const char *type, const char *message);
/* The jobs of client c (every job when c is NULL), in an array the caller frees. */
size_t sched_jobs_of(sched_t *s, const client_t *c, job_t ***out);
/* Fills why and returns -1. */
int sched_refuse(sched_refusal_t *why, refusal_t reason, status_t st, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Leases a job to ex: the books of a lease (in-flight counts, the lease deadline). */
void sched_lease(sched_t *s, job_t *job, executor_t *ex);
/* A job just sent to ex: its lease, the queue wait it ends, the reserve it took. */
void sched_leased(sched_t *s, executor_t *ex, job_t *job);
/* The tenant may run again: every service queue and pinned queue takes it back. */
void sched_unpark(sched_t *s, tenant_t *t);
/* queue_eligible_fn: the job may take an executor's reserve (its tenant has nothing running). */
int sched_may_reserve(void *arg, const job_t *job);

/* ---- sessions (sched_sessions.c) */
/* Registers what a session's job leaving the books means to its line (sched_detach_hooks_t). */
void sched_sessions_init(sched_t *s);
/* An admitted job takes its place: its session's line, or its service's queue. */
void sched_enqueue(sched_t *s, job_t *job);
/* 0 when a job on a session may wait for it; -1 with why (unknown past the grace, lost). */
int sched_session_admit(sched_t *s, job_t *job, sched_refusal_t *why);
/* An admitted job joins its session's line. */
void sched_session_queue(sched_t *s, job_t *job);
/* b's head goes to its executor's pinned queue, when b is placed and runs nothing. */
void sched_session_ready(sched_t *s, broker_session_t *b);
/* A session job leaves its line, or its lease ended: the next one may go. */
void sched_session_detach(sched_t *s, job_t *job);
/* One pass over the pinned queues: 1 when a job went. An executor that cannot be reached ends
 * the pass with *unreachable set (its job is first in its session's line again): the caller
 * takes the executor away (sched_executor_gone, sched_life.c, above this part). */
int sched_dispatch_pinned(sched_t *s, executor_t **unreachable);
/* The sessions ids name are on ex (READY, SESSIONS up). */
void sched_sessions_placed(sched_t *s, executor_t *ex, const wire_ids_t *ids);
/* ex went away: its sessions have no executor (their leased jobs were answered already). */
void sched_sessions_executor_gone(sched_t *s, executor_t *ex);
void sched_sessions_housekeep(sched_t *s, uint64_t now);
const char *sched_session_lost_reason(void);
/* A resubmitted session job found running on ex (HELD running): it is its session's running
 * job, so the session's next cell waits for its answer. */
void sched_session_attached(sched_t *s, job_t *job);
/* A resubmitted session job starts (+1) or stops (-1) being probed: its session's line waits
 * meanwhile (the job came before what queues behind it). */
void sched_session_probing(sched_t *s, job_t *job, int delta);
/* A probing session job left without running here (answered, cancelled, expired): its
 * session's line may move again. */
void sched_session_probe_dropped(sched_t *s, job_t *job);

/* ---- resubmitted jobs (sched_probe.c) */
/* Registers what a probing job leaving the books means to the probing list. */
void sched_probe_init(sched_t *s);
/* An admitted job marked resubmit: PROBE every executor serving its service first. */
void sched_probe_start(sched_t *s, job_t *job);
/* Takes a probing job off the probing list (what sched_detach asks of this part). */
void sched_probe_remove(sched_t *s, job_t *job);
/* A new executor: it is asked about every probing job of its services too. */
void sched_probe_executor_ready(sched_t *s, executor_t *ex);
/* An executor is gone: nobody waits for its HELD any more (sched_probe_settle_all next). */
void sched_probe_executor_gone(sched_t *s, executor_t *ex);
/* Queues every probing job that has all its answers (and the start-up window is over). */
void sched_probe_settle_all(sched_t *s);

/* sched_life.c and sched_jobs.c, at the top, implement sched.h and need nothing more here. */

#endif
