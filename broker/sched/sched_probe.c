/* broker/sched/sched_probe.c — resubmitted jobs (PROTOCOL.md §3.1). A front-end whose broker went
 * away sends each job it was waiting for to another broker, once, marked `resubmit`: the
 * first broker may have dispatched it before it died, and the job must not run twice. So
 * before such a job may be queued, every executor serving its service is asked (PROBE) and
 * answers (HELD):
 *
 *   running  it runs there, for the broker that died: the job is leased to that executor
 *            without taking credit (`attached`), and its answer comes as ANSWER
 *   done     it ran there already, and its answer died with the first broker: `lost`
 *   none     not there — and that executor will not run it for anyone but this broker now
 *
 * Once every executor has said `none` (or gone), the job is queued like any other. Executors
 * that register meanwhile are asked too, and right after this broker starts (when executors
 * are still coming back) no probing job is queued before heartbeat × liveness have passed:
 * an executor not back by then counts as gone, as everywhere else in the scheduler. */
#define _GNU_SOURCE
#include <stdlib.h>

#include "common/buf.h"
#include "common/log.h"
#include "internal.h"

void sched_probe_init(sched_t *s)
{
    s->on_detach.probe_left = sched_probe_remove;
}

static void s_list_push(sched_t *s, job_t *job)
{
    job->prev = NULL;
    job->next = s->probing;
    if (s->probing) s->probing->prev = job;
    s->probing = job;
}

void sched_probe_remove(sched_t *s, job_t *job)
{
    if (job->prev)
        job->prev->next = job->next;
    else
        s->probing = job->next;
    if (job->next) job->next->prev = job->prev;
    job->prev = job->next = NULL;
    job->n_probe_wait = 0;
    job->state = JOB_DETACHED;
    if (job->route.has_session) sched_session_probing(s, job, -1);
}

static void s_ask(sched_t *s, job_t *job, executor_t *ex)
{
    if (job->n_probe_wait == job->probe_cap) {
        job->probe_cap = job->probe_cap ? job->probe_cap * 2 : 4;
        job->probe_wait = xrealloc(job->probe_wait, job->probe_cap * sizeof *job->probe_wait);
    }
    job->probe_wait[job->n_probe_wait++] = ex;
    s->io.probe(s->io.arg, ex, job);
}

/* 1 when ex was awaited (and no longer is). */
static int s_answered(job_t *job, const executor_t *ex)
{
    for (size_t i = 0; i < job->n_probe_wait; i++)
        if (job->probe_wait[i] == ex) {
            job->probe_wait[i] = job->probe_wait[--job->n_probe_wait];
            return 1;
        }
    return 0;
}

static int s_serves(const executor_t *ex, const job_t *job)
{
    return (ex->service_mask >> job->service->index) & 1;
}

/* All answers in, and the executors have had the time to come back after a start: queue it.
 * It stays counted as queued throughout. */
static void s_settle(sched_t *s, job_t *job)
{
    uint64_t window = s->conf.heartbeat_ms * s->conf.liveness;
    if (job->n_probe_wait || s->conf.mono_ms() - s->started_ms < window) return;
    sched_probe_remove(s, job);
    sched_enqueue(s, job); /* a session's job joins its session's line */
}

void sched_probe_start(sched_t *s, job_t *job)
{
    s->stats.resubmitted++;
    job->state = JOB_PROBING;
    s_list_push(s, job);
    if (job->route.has_session) sched_session_probing(s, job, +1);
    const executors_t *reg = s->executors;
    for (size_t i = 0; i < executors_count(reg); i++) {
        executor_t *ex = executors_at(reg, i);
        if (s_serves(ex, job)) s_ask(s, job, ex);
    }
    s_settle(s, job);
}

void sched_probe_executor_ready(sched_t *s, executor_t *ex)
{
    for (job_t *job = s->probing; job; job = job->next)
        if (s_serves(ex, job)) s_ask(s, job, ex);
}

void sched_probe_executor_gone(sched_t *s, executor_t *ex)
{
    for (job_t *job = s->probing; job; job = job->next) s_answered(job, ex);
}

void sched_probe_settle_all(sched_t *s)
{
    job_t *job = s->probing;
    while (job) {
        job_t *next = job->next; /* settling takes it off the list */
        s_settle(s, job);
        job = next;
    }
}

void sched_held(sched_t *s, executor_t *ex, const uint8_t id[ID_BYTES], unsigned state)
{
    job_t *job = idmap_get(s->jobs, id);
    if (!job || job->state != JOB_PROBING || !s_answered(job, ex)) return; /* stale */
    char hex[ID_STR_LEN + 1];
    switch (state) {
    case HELD_STATE_RUNNING:
        s->stats.probe_running++;
        /* a session's job is its running one first, so that its line does not move on */
        if (job->route.has_session) sched_session_attached(s, job);
        sched_probe_remove(s, job);
        sched_count_queued(s, job, -1);
        job->attached = 1;
        sched_lease(s, job, ex);
        id_format(job->id, hex);
        log_info("event=resubmitted_attached job=%s node=%s", hex, ex->node);
        break;
    case HELD_STATE_DONE:
        s->stats.probe_done++;
        sched_detach(s, job);
        job->service->count.lost++;
        sched_answer(s, job, ST_LOST, "BrokerLost",
                     "the job had already run when its first broker was lost, and its answer "
                     "was lost with that broker");
        break;
    default:
        s_settle(s, job);
        break;
    }
}
