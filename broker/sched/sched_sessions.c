/* broker/sched/sched_sessions.c — see sched.h: session affinity in the scheduler (affinity.h says
 * how a session's jobs wait). A job on a session waits in its session's line; the line's head
 * goes to the session's executor's pinned queue when the session runs nothing, and from there
 * to the executor when it has credit, taking turns with the service queues. Executors say
 * where sessions are (READY, SESSIONS); one that goes away takes its sessions with it: their
 * jobs are answered `lost` — a session never moves, so nothing is requeued elsewhere. Above
 * the books (sched_state.c) only: an executor found unreachable is handed to the caller. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "broker/tables/lease.h"
#include "internal.h"

#define LOST_REASON                                                                                \
    "session lost: its executor went away; restore a snapshot of it (restore_state_snapshot) "     \
    "into a new session"

/* ---- the line and the pinned queue ------------------------------------------------------ */

void sched_session_ready(sched_t *s, broker_session_t *b)
{
    job_t *head = b->head;
    /* a resubmitted job being probed came before what waits here: the line waits for it */
    if (!b->executor || b->running || b->probing || !head || head->pinned) return;
    /* the head leaves the line's links alone: the queue links through prev/next */
    head->state = JOB_DETACHED;
    queue_push(b->executor->pinned, head);
    head->pinned = 1;
    s->pinned_dirty = 1;
}

/* The head out of its executor's pinned queue (the session lost its place, or the job goes). */
static void s_unpin(broker_session_t *b, job_t *job)
{
    if (!job->pinned) return;
    queue_remove(b->executor->pinned, job);
    job->pinned = 0;
    job->state = JOB_QUEUED;
}

void sched_session_detach(sched_t *s, job_t *job)
{
    broker_session_t *b = job->session;
    if (job->state == JOB_QUEUED) {
        s_unpin(b, job);
        affinity_unlink(b, job);
        job->state = JOB_DETACHED;
    } else if (b->running == job) {
        b->running = NULL;
    }
    job->session = NULL;
    if (b->ended && !b->draining && !b->running && !b->probing && !b->head)
        affinity_remove(s->affinity, &b);
    else
        sched_session_ready(s, b);
}

void sched_sessions_init(sched_t *s)
{
    s->on_detach.session_left = sched_session_detach;
    s->on_detach.session_probe_left = sched_session_probe_dropped;
}

/* ---- admission ---------------------------------------------------------------------------- */

int sched_session_admit(sched_t *s, job_t *job, sched_refusal_t *why)
{
    uint64_t now = s->conf.mono_ms();
    broker_session_t *b = affinity_get(s->affinity, job->route.session);
    if (b && b->tenant[0] && strcmp(b->tenant, job->route.tenant) != 0) /* as if unknown */
        return sched_refuse(why, REFUSE_SESSION_UNKNOWN, ST_REJECTED,
                            "no executor holds this session (it may have ended)");
    if (!b) {
        int lost = 0;
        const char *gone =
            affinity_gone_reason(s->affinity, job->route.session, job->route.tenant, &lost);
        if (gone && lost) return sched_refuse(why, REFUSE_SESSION_LOST, ST_LOST, "%s", gone);
        if (gone) return sched_refuse(why, REFUSE_SESSION_ENDED, ST_REJECTED, "%s", gone);
        /* Right after a (re)start the executors have not said where their sessions are yet:
         * the job waits out the grace for them, as jobs of known profiles do. */
        if (now - s->started_ms >= s->conf.service_grace_ms)
            return sched_refuse(why, REFUSE_SESSION_UNKNOWN, ST_REJECTED,
                                "no executor holds this session (it may have ended)");
        b = affinity_add(s->affinity, job->route.session, s->started_ms);
    }
    if (b->ended) return sched_refuse(why, REFUSE_SESSION_ENDED, ST_REJECTED, "%s", b->end_reason);
    if (!b->tenant[0]) snprintf(b->tenant, sizeof b->tenant, "%s", job->route.tenant);
    return 0;
}

/* A resubmitted job's probe settled on a session that ended or was lost meanwhile: answered as
 * admission would have answered it then. */
static void s_settled_too_late(sched_t *s, job_t *job, broker_session_t *b)
{
    int lost = 0;
    const char *why =
        b ? b->end_reason
          : affinity_gone_reason(s->affinity, job->route.session, job->route.tenant, &lost);
    if (!why) why = "no executor holds this session (it may have ended)";
    sched_count_queued(s, job, -1);
    sched_detach(s, job);
    sched_answer(s, job, lost ? ST_LOST : ST_REJECTED,
                 lost ? "SessionLost" : b ? "SessionEnded" : "SessionUnknown", why);
    if (b && !b->draining && !b->running && !b->probing && !b->head)
        affinity_remove(s->affinity, &b);
}

void sched_enqueue(sched_t *s, job_t *job)
{
    if (job->route.has_session) {
        sched_session_queue(s, job); /* behind the session's earlier jobs, for its executor */
        return;
    }
    queue_push(job->service->queue, job);
    job->service->dirty = 1;
}

void sched_session_queue(sched_t *s, job_t *job)
{
    broker_session_t *b = affinity_get(s->affinity, job->route.session);
    if (!b || b->ended) {
        s_settled_too_late(s, job, b);
        return;
    }
    /* a resubmitted job was sent before whatever queued while it was probed */
    if (job->route.resubmit)
        affinity_push_head(b, job);
    else
        affinity_push(b, job);
    job->state = JOB_QUEUED;
    sched_session_ready(s, b);
}

void sched_session_probing(sched_t *s, job_t *job, int delta)
{
    broker_session_t *b = affinity_get(s->affinity, job->route.session);
    if (b) b->probing += delta;
}

void sched_session_probe_dropped(sched_t *s, job_t *job)
{
    broker_session_t *b = affinity_get(s->affinity, job->route.session);
    if (!b) return;
    if (b->ended && !b->draining && !b->running && !b->probing && !b->head)
        affinity_remove(s->affinity, &b);
    else
        sched_session_ready(s, b);
}

void sched_session_attached(sched_t *s, job_t *job)
{
    broker_session_t *b = affinity_get(s->affinity, job->route.session);
    if (!b || b->running) return; /* then it is an ordinary lease; its answer still comes */
    job->session = b;
    b->running = job;
    (void)s;
}

/* ---- dispatch ------------------------------------------------------------------------------ */

static int s_service_work(const sched_t *s, const executor_t *ex)
{
    for (size_t i = 0; i < services_count(s->services); i++)
        if ((ex->service_mask & (1ULL << i)) && queue_depth(services_at(s->services, i)->queue))
            return 1;
    return 0;
}

static int s_eligible(void *arg, const job_t *job)
{
    (void)arg;
    if (tenant_may_run(job->tenant)) return 1;
    job->tenant->parked = 1;
    return 0;
}

/* One pinned job to ex: 1 when one went (or ex could not be reached: *unreachable). With only
 * the reserve's credit left, only a job of a tenant with nothing running may go. */
static int s_dispatch_one(sched_t *s, executor_t *ex, executor_t **unreachable)
{
    job_t *job = executor_open_credit(ex) ? queue_pop(ex->pinned, s_eligible, s)
                                          : queue_pop_first(ex->pinned, sched_may_reserve, s);
    if (!job) return 0;
    broker_session_t *b = job->session;
    job->pinned = 0;
    job->state = JOB_QUEUED;
    affinity_unlink(b, job);
    job->state = JOB_DETACHED;
    sched_count_queued(s, job, -1);
    if (s->io.send_job(s->io.arg, ex, job) < 0) {
        affinity_push_head(b, job); /* it never left: first in its line again */
        job->state = JOB_QUEUED;
        sched_count_queued(s, job, +1);
        *unreachable = ex;
        return 1;
    }
    b->running = job;
    sched_leased(s, ex, job);
    ex->pinned_last = 1;
    return 1;
}

int sched_dispatch_pinned(sched_t *s, executor_t **unreachable)
{
    int progress = 0;
    if (!s->pinned_dirty) return 0;
    s->pinned_dirty = 0;
    /* Downwards, as the executor table moves its last entry into a removed one's place. An
     * unreachable executor ends the pass: the caller removes it, and the next pass goes on. */
    for (size_t i = executors_count(s->executors); i-- > 0 && !*unreachable;) {
        executor_t *ex = executors_at(s->executors, i);
        if (!ex || !ex->credit || !queue_depth(ex->pinned)) continue;
        s->pinned_dirty = 1; /* work left somewhere: look again next pass */
        /* Turns with the service queues: after a pinned job, a waiting service job first. */
        if (ex->pinned_last && s_service_work(s, ex)) {
            ex->pinned_last = 0;
            continue;
        }
        progress |= s_dispatch_one(s, ex, unreachable);
    }
    return progress;
}

/* ---- what executors say -------------------------------------------------------------------- */

/* b is on ex now (READY or SESSIONS up). */
static void s_place(sched_t *s, broker_session_t *b, executor_t *ex)
{
    if (b->executor && b->executor != ex && b->head) s_unpin(b, b->head);
    b->executor = ex;
    b->ended = 0;
    sched_session_ready(s, b);
}

void sched_sessions_placed(sched_t *s, executor_t *ex, const wire_ids_t *ids)
{
    uint8_t id[ID_BYTES];
    for (uint32_t i = 0; i < ids->n; i++) {
        wire_ids_at(ids, i, id);
        broker_session_t *b = affinity_get(s->affinity, id);
        if (!b) b = affinity_add(s->affinity, id, s->conf.mono_ms());
        s_place(s, b, ex);
    }
}

/* Answers every job waiting on b, and forgets b unless a job of it runs (its RESULT is
 * still to come). */
static void s_end(sched_t *s, broker_session_t *b, status_t st, const char *type, const char *why)
{
    job_t *job;
    snprintf(b->end_reason, sizeof b->end_reason, "%s", why);
    if (strcmp(type, "SessionUnknown") != 0) affinity_gone(s->affinity, b, st == ST_LOST, why);
    b->ended = 1;
    b->draining = 1;
    while ((job = b->head)) {
        sched_detach(s, job);
        job->service->count.lost += st == ST_LOST;
        sched_answer(s, job, st, type, why);
    }
    b->draining = 0;
    if (!b->running && !b->probing) affinity_remove(s->affinity, &b);
}

typedef struct {
    sched_t *s;
    executor_t *ex;
} down_t;

static void s_down(void *arg, const uint8_t id[ID_BYTES], const char *reason, size_t len)
{
    down_t *d = arg;
    broker_session_t *b = affinity_get(d->s->affinity, id);
    if (!b || b->executor != d->ex) return; /* not where it says: a stale word */
    char why[WIRE_MAX_REASON + 1];
    snprintf(why, sizeof why, "%.*s", (int)len, reason);
    s_end(d->s, b, ST_REJECTED, "SessionEnded", why);
}

void sched_executor_sessions(sched_t *s, executor_t *ex, const sessions_msg_t *m)
{
    ex->mem_free_mb = m->mem_free_mb;
    ex->sessions = m->sessions;
    sched_sessions_placed(s, ex, &m->up);
    down_t d = {s, ex};
    wire_down_each(m, s_down, &d);
    services_mark_dirty(s->services, ex->service_mask); /* room for a new session, maybe */
}

/* ---- executors going, time passing ---------------------------------------------------------- */

void sched_sessions_executor_gone(sched_t *s, executor_t *ex)
{
    size_t n = affinity_count(s->affinity);
    broker_session_t **all = xcalloc(n + 1, sizeof *all);
    n = affinity_list(s->affinity, all, n);
    uint64_t now = s->conf.mono_ms();
    /* Homeless, not lost yet: a node that only reconnected lists them again in its READY;
     * past the grace their waiting jobs are answered `lost` (sched_sessions_housekeep). */
    for (size_t i = 0; i < n; i++) {
        broker_session_t *b = all[i];
        if (b->executor != ex) continue;
        if (b->head) s_unpin(b, b->head);
        b->executor = NULL;
        b->was_placed = 1;
        b->homeless_ms = now;
    }
    free(all);
}

const char *sched_session_lost_reason(void)
{
    return LOST_REASON;
}

void sched_sessions_housekeep(sched_t *s, uint64_t now)
{
    size_t n = affinity_count(s->affinity);
    broker_session_t **all = xcalloc(n + 1, sizeof *all);
    n = affinity_list(s->affinity, all, n);
    for (size_t i = 0; i < n; i++) {
        broker_session_t *b = all[i];
        if (b->executor || now - b->homeless_ms < s->conf.service_grace_ms) continue;
        if (b->was_placed) {
            s_end(s, b, ST_LOST, "SessionLost", LOST_REASON);
        } else {
            s_end(s, b, ST_REJECTED, "SessionUnknown",
                  "no executor holds this session (it may have ended)");
        }
    }
    free(all);
}
