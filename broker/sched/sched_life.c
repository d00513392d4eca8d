/* broker/sched/sched_life.c — see sched.h: executors coming and going (and the fate of their
 * leases), clients that vanish, deadlines and the service grace. Above resubmitted jobs
 * (sched_probe.c), sessions (sched_sessions.c) and the books (sched_state.c): internal.h. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>

#include "common/log.h"
#include "broker/tables/lease.h"
#include "internal.h"

/* ---- executors --------------------------------------------------------------------------- */

static void s_requeue(sched_t *s, job_t *job)
{
    job->route.attempt++;
    job->attached = 0;
    queue_push_head(job->service->queue, job);
    sched_count_queued(s, job, +1);
    if (job->expires_ms) {
        job->due_ms = job->expires_ms;
        deadlines_update(s->deadlines, job);
    }
    job->service->count.requeued++;
    job->service->dirty = 1;
}

/* ex serves its services no more (it went, or it drains): their counts drop, and a service
 * left with no executor starts its grace (its queued jobs wait that long for another). */
static void s_unserve(sched_t *s, executor_t *ex, uint64_t now)
{
    for (size_t i = 0; i < services_count(s->services); i++) {
        if (!(ex->service_mask & (1ULL << i))) continue;
        service_t *sv = services_at(s->services, i);
        sv->executors--;
        sv->slots -= ex->slots - ex->reserve;
        if (!sv->executors) {
            sv->orphaned_ms = now;
            if (queue_depth(sv->queue) || sv->inflight)
                log_warn("event=service_orphaned service=%s queued=%zu grace_ms=%llu", sv->name,
                         queue_depth(sv->queue), (unsigned long long)s->conf.service_grace_ms);
        }
    }
}

void sched_executor_gone(sched_t *s, executor_t *ex, const char *why)
{
    size_t requeued = 0, answered = 0;
    uint64_t now = s->conf.mono_ms();
    /* Leases are listed newest first; pushing each at the head of its FIFO leaves the
     * oldest first in line again. */
    while (ex->leases) {
        job_t *job = ex->leases;
        service_t *sv = job->service;
        lease_end(job);
        sched_inflight_done(s, job);
        if (job->session) { /* a session never moves: its job is lost with it */
            sched_session_detach(s, job);
            sched_detach(s, job);
            sv->count.lost++;
            answered++;
            sched_answer(s, job, ST_LOST, "SessionLost", sched_session_lost_reason());
            continue;
        }
        switch (lease_fate(job)) {
        case LEASE_REQUEUE:
            s_requeue(s, job);
            requeued++;
            break;
        case LEASE_LOST:
            sched_detach(s, job);
            sv->count.lost++;
            answered++;
            sched_answer(
                s, job, ST_LOST, "ExecutorLost",
                "the executor running the job was lost, and so was the one that retried it");
            break;
        case LEASE_CANCELLED:
            sched_detach(s, job);
            sv->count.cancelled++;
            answered++;
            sched_answer(s, job, ST_CANCELLED, "Cancelled",
                         "cancelled by the client; its executor was lost before answering");
            break;
        }
    }
    sched_sessions_executor_gone(s, ex);
    if (!ex->draining) s_unserve(s, ex, now); /* a draining one was counted out already */
    s->stats.executors_lost++;
    if (ex->draining && !requeued && !answered)
        log_info("event=executor_left node=%s reason=\"%s\" drained_ms=%llu", ex->node, why,
                 (unsigned long long)(now - ex->drain_since_ms));
    else
        log_warn("event=executor_lost node=%s reason=\"%s\" requeued=%zu answered=%zu%s", ex->node,
                 why, requeued, answered, ex->draining ? " draining=1" : "");
    if (s->probing) sched_probe_executor_gone(s, ex); /* before it is freed: it is compared */
    executors_remove(s->executors, &ex);
    sched_probe_settle_all(s);
}

executor_t *sched_executor_ready(sched_t *s, const void *identity, size_t len, const ready_t *ready,
                                 const char *key_name)
{
    uint64_t now = s->conf.mono_ms();
    executor_t *ex = executors_get(s->executors, identity, len);
    if (ex) sched_executor_gone(s, ex, "registered again on the same connection");
    ex = executors_find_node(s->executors, ready->node);
    if (ex) sched_executor_gone(s, ex, "the node registered again on a new connection");

    uint64_t mask = 0;
    for (int i = 0; i < ready->n_services; i++) {
        service_t *sv = services_get(s->services, ready->services[i]);
        if (!sv) sv = services_add(s->services, ready->services[i], now);
        if (!sv) {
            log_warn("event=service_refused service=%s node=%s reason=\"more than %d services\"",
                     ready->services[i], ready->node, SERVICES_MAX);
            continue;
        }
        mask |= 1ULL << sv->index;
    }
    ex = executors_add(s->executors, identity, len, ready, mask, now);
    if (!ex) {
        log_warn("event=executor_refused node=%s reason=\"executor table full\"", ready->node);
        return NULL;
    }
    snprintf(ex->key_name, sizeof ex->key_name, "%s", key_name ? key_name : "");
    ex->sessions = ready->sessions.n;
    sched_sessions_placed(s, ex, &ready->sessions); /* how a restarted broker learns them */
    for (size_t i = 0; i < services_count(s->services); i++) {
        if (!(mask & (1ULL << i))) continue;
        service_t *sv = services_at(s->services, i);
        sv->executors++;
        sv->slots += ex->slots - ex->reserve;
        sv->dirty = 1;
    }
    s->stats.executors_registered++;
    log_info("event=executor_ready node=%s slots=%u reserve=%u services=%d sessions=%u key=%s "
             "python=%s",
             ex->node, ex->slots - ex->reserve, ex->reserve, ready->n_services, ready->sessions.n,
             ex->key_name[0] ? ex->key_name : "-", ex->python[0] ? ex->python : "-");
    sched_probe_executor_ready(s, ex);
    return ex;
}

void sched_executor_leaving(sched_t *s, executor_t *ex, const leaving_t *m)
{
    uint64_t now = s->conf.mono_ms();
    int already = ex->draining;
    /* the credit it gave us goes back: the executor counts on it to know that no JOB of ours
     * is on its way any more beyond those already sent */
    uint32_t dropped = executors_drain(ex, now, m->grace_ms);
    s->stats.releases++;
    s->io.release(s->io.arg, ex, dropped);
    if (already) return;
    s_unserve(s, ex, now);
    s->stats.executors_drained++;
    char q[WIRE_MAX_REASON + 8];
    log_info("event=executor_draining node=%s grace_ms=%u running=%u leased=%zu sessions=%u "
             "reason=%s",
             ex->node, m->grace_ms, m->running, ex->n_leases, ex->sessions,
             log_quote(q, sizeof q, m->reason));
}

executor_t *sched_executor(sched_t *s, const void *identity, size_t len)
{
    executor_t *ex = executors_get(s->executors, identity, len);
    if (ex) ex->last_seen_ms = s->conf.mono_ms();
    return ex;
}

void sched_executor_credit(sched_t *s, executor_t *ex, uint32_t n)
{
    executors_refund(ex, n);
    services_mark_dirty(s->services, ex->service_mask);
    if (queue_depth(ex->pinned)) s->pinned_dirty = 1;
}

/* ---- clients ----------------------------------------------------------------------------- */

/* Answers (when answer: it may merely be slow) and drops every job of c, cancelling those
 * that run. Answering may mark c gone (send failed): the rest are then dropped unanswered. */
static void s_abandon(sched_t *s, client_t *c, int answer)
{
    job_t **jobs;
    size_t n = sched_jobs_of(s, c, &jobs);
    if (!answer) c->gone = 1;
    for (size_t i = 0; i < n; i++) {
        job_t *job = jobs[i];
        executor_t *holder = sched_detach(s, job);
        if (holder) s->io.cancel(s->io.arg, holder, job->id);
        job->service->count.abandoned++;
        sched_answer(s, job, ST_LOST, "ClientLost",
                     "the submitting client stopped answering heartbeats; the job was dropped");
    }
    c->gone = 1;
    free(jobs);
    if (n) log_warn("event=client_lost jobs=%zu", n);
}

void sched_client_gone(sched_t *s, client_t *c)
{
    if (c->jobs) s_abandon(s, c, 0);
    c->gone = 1;
}

typedef struct {
    uint64_t now, window;
    int silent_with_jobs; /* 1: select heartbeating clients that fell silent with jobs */
} client_pick_t;

static int s_pick_client(void *arg, const client_t *c)
{
    const client_pick_t *p = arg;
    int silent = p->now - c->last_seen_ms > p->window;
    /* Jobs of a client that is unreachable (gone), or that heartbeats and fell silent, are
     * dropped; abandoning them all leaves it with none, so each is picked once. */
    if (p->silent_with_jobs) return c->jobs && (c->gone || (c->pings && silent));
    return !c->jobs && (silent || c->gone);
}

static void s_housekeep_clients(sched_t *s, uint64_t now, uint64_t window)
{
    client_t *batch[256];
    size_t n;
    client_pick_t lost = {now, window, 1}, idle = {now, window, 0};
    /* Batches keep the stack small; each round removes what it selected, so it ends. */
    while ((n = clients_select(s->clients, s_pick_client, &lost, batch, 256)) > 0)
        for (size_t i = 0; i < n; i++) s_abandon(s, batch[i], !batch[i]->gone);
    while ((n = clients_select(s->clients, s_pick_client, &idle, batch, 256)) > 0)
        for (size_t i = 0; i < n; i++) clients_remove(s->clients, &batch[i]);
}

/* ---- clocks ------------------------------------------------------------------------------ */

void sched_expire(sched_t *s)
{
    uint64_t now = s->conf.mono_ms();
    job_t *job;
    while ((job = deadlines_first(s->deadlines)) && job->due_ms <= now) {
        service_t *sv = job->service;
        if (job->state == JOB_QUEUED || job->state == JOB_PROBING) {
            sched_detach(s, job);
            sv->count.expired_queued++;
            sched_answer(s, job, ST_TIMEOUT, "Timeout",
                         "the job's deadline passed while it waited in the queue");
        } else {
            executor_t *holder = sched_detach(s, job);
            if (holder) s->io.cancel(s->io.arg, holder, job->id);
            sv->count.expired_leased++;
            sched_answer(s, job, ST_TIMEOUT, "Timeout",
                         "the executor gave no result by the job's deadline");
        }
    }
}

/* A service with no executor past its grace: everything queued for it is answered. */
static void s_drain_orphan(sched_t *s, service_t *sv, uint64_t now)
{
    char msg[200];
    size_t n = 0;
    snprintf(msg, sizeof msg, "no executor serves service '%s' (none for %llu s)", sv->name,
             (unsigned long long)((now - sv->orphaned_ms) / 1000));
    job_t *job;
    while ((job = queue_pop(sv->queue, NULL, NULL))) {
        sched_count_queued(s, job, -1);
        sched_detach(s, job);
        n++;
        if (job->route.attempt) {
            sv->count.lost++;
            sched_answer(s, job, ST_LOST, "ExecutorLost", msg);
        } else {
            s->stats.rejected[REFUSE_NO_EXECUTOR]++;
            sched_answer(s, job, ST_REJECTED, "NoExecutor", msg);
        }
    }
    log_warn("event=service_drained service=%s jobs=%zu reason=\"no executor\"", sv->name, n);
}

void sched_housekeep(sched_t *s)
{
    uint64_t now = s->conf.mono_ms();
    uint64_t window = s->conf.heartbeat_ms * s->conf.liveness;
    sched_probe_settle_all(s); /* the start-up window may have passed */
    for (size_t i = executors_count(s->executors); i-- > 0;) {
        executor_t *ex = executors_at(s->executors, i);
        if (now - ex->last_seen_ms > window) sched_executor_gone(s, ex, "heartbeat expired");
    }
    for (size_t i = 0; i < services_count(s->services); i++) {
        service_t *sv = services_at(s->services, i);
        if (!sv->executors && queue_depth(sv->queue) &&
            now - sv->orphaned_ms >= s->conf.service_grace_ms)
            s_drain_orphan(s, sv, now);
    }
    sched_sessions_housekeep(s, now);
    /* Clients PING every second whatever our executor heartbeat is (PROTOCOL.md §2), so
     * their silence is never judged on a shorter interval than that. */
    uint64_t client_hb = s->conf.heartbeat_ms > 1000 ? s->conf.heartbeat_ms : 1000;
    s_housekeep_clients(s, now, client_hb * s->conf.liveness);
}

long sched_next_deadline_ms(const sched_t *s)
{
    const job_t *job = deadlines_first(s->deadlines);
    if (!job) return -1;
    uint64_t now = s->conf.mono_ms();
    return job->due_ms > now ? (long)(job->due_ms - now) : 0;
}
