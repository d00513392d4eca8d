/* broker/sched/sched_state.c — the books (internal.h): the scheduler's state built and torn
 * down, what it holds and the counts that go with it, and the views metrics and tests read. The
 * lowest of the scheduler's parts: it calls none of the others; what a job's leaving means to a
 * session's line or to the probing list, they tell it through sched_detach_hooks_t. */
#define _GNU_SOURCE
#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/clock.h"
#include "broker/tables/lease.h"
#include "internal.h"

static const char *s_refusal_names[REFUSE__COUNT] = {
    "queue_full",  "queue_bytes",     "tenant_queue_full", "inflight_quota",
    "no_executor", "duplicate",       "expired",           "overload",
    "malformed",   "session_unknown", "session_lost",      "session_ended",
};

const char *refusal_name(refusal_t r)
{
    return (unsigned)r < REFUSE__COUNT ? s_refusal_names[r] : "unknown";
}

void sched_conf_defaults(sched_conf_t *conf)
{
    memset(conf, 0, sizeof *conf);
    conf->max_queue = 100000;
    conf->max_queue_per_tenant = 10000;
    conf->max_queue_bytes = 1024u << 20;
    conf->max_executors = 4096;
    conf->max_clients = 65536;
    conf->heartbeat_ms = 1000;
    conf->liveness = 3;
    conf->service_grace_ms = 10000;
    conf->lease_grace_ms = 3000;
    conf->quantum = 1;
}

sched_t *sched_state_new(const sched_conf_t *conf, const sched_io_t *io)
{
    sched_t *s = xcalloc(1, sizeof *s);
    s->conf = *conf;
    if (!s->conf.mono_ms) s->conf.mono_ms = clock_mono_ms;
    if (!s->conf.wall_ms) s->conf.wall_ms = clock_wall_ms;
    if (!s->conf.liveness) s->conf.liveness = 3;
    if (!s->conf.heartbeat_ms) s->conf.heartbeat_ms = 1000;
    s->io = *io;
    s->services = services_new(conf->quantum);
    s->tenants = tenants_new();
    s->clients = clients_new(conf->max_clients);
    s->executors = executors_new(conf->max_executors, conf->quantum);
    s->jobs = idmap_new();
    s->deadlines = deadlines_new();
    s->affinity = affinity_new(16384);
    s->started_ms = s->conf.mono_ms();
    prom_hist_init(&s->stats.queue_wait, prom_seconds_buckets, prom_seconds_buckets_n);
    return s;
}

/* ---- the books --------------------------------------------------------------------------- */

void sched_count_queued(sched_t *s, job_t *job, int sign)
{
    if (sign > 0) {
        s->queued++;
        s->queued_bytes += job->body_len;
        job->tenant->queued++;
    } else {
        s->queued--;
        s->queued_bytes -= job->body_len;
        job->tenant->queued--;
    }
}

void sched_inflight_done(sched_t *s, job_t *job)
{
    tenant_t *t = job->tenant;
    s->inflight--;
    job->service->inflight--;
    t->inflight--;
    if (t->parked && tenant_may_run(t)) sched_unpark(s, t);
}

void sched_unpark(sched_t *s, tenant_t *t)
{
    services_unpark(s->services, t);
    for (size_t i = 0; i < executors_count(s->executors); i++)
        queue_unpark(executors_at(s->executors, i)->pinned, t->name);
    s->pinned_dirty = 1;
}

executor_t *sched_detach(sched_t *s, job_t *job)
{
    executor_t *holder = NULL;
    const sched_detach_hooks_t *hook = &s->on_detach;
    if (job->state == JOB_QUEUED) {
        if (job->session)
            hook->session_left(s, job);
        else
            queue_remove(job->service->queue, job);
        sched_count_queued(s, job, -1);
    } else if (job->state == JOB_PROBING) {
        hook->probe_left(s, job);
        sched_count_queued(s, job, -1);
        if (job->route.has_session) hook->session_probe_left(s, job);
    } else if (job->state == JOB_LEASED) {
        holder = job->executor;
        lease_end(job);
        sched_inflight_done(s, job);
        if (job->session) hook->session_left(s, job);
    }
    deadlines_remove(s->deadlines, job);
    idmap_del(s->jobs, job->id);
    tenants_release(s->tenants, job->tenant);
    job->tenant = NULL;
    return holder;
}

void sched_lease(sched_t *s, job_t *job, executor_t *ex)
{
    lease_grant(job, ex);
    job->tenant->inflight++;
    job->service->inflight++;
    s->inflight++;
    if (job->expires_ms) {
        job->due_ms = job->expires_ms + s->conf.lease_grace_ms;
        deadlines_update(s->deadlines, job);
    }
}

void sched_leased(sched_t *s, executor_t *ex, job_t *job)
{
    service_t *sv = job->service;
    uint64_t now = s->conf.mono_ms();
    if (job->route.attempt == 0)
        prom_hist_observe(&s->stats.queue_wait, (double)(now - job->queued_ms) / 1000.0);
    sched_lease(s, job, ex);
    job->on_reserve = executors_charge(s->executors, ex);
    s->stats.reserve_dispatched += (uint64_t)job->on_reserve;
    sv->count.dispatched++;
}

/* Whether the job may take an executor's reserve: its tenant has nothing running. */
int sched_may_reserve(void *arg, const job_t *job)
{
    (void)arg;
    return job->tenant->inflight == 0;
}

int sched_refuse(sched_refusal_t *why, refusal_t reason, status_t st, const char *fmt, ...)
{
    why->reason = reason;
    why->status = st;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why->message, sizeof why->message, fmt, ap);
    va_end(ap);
    return -1;
}

void sched_finish(sched_t *s, job_t **job_p)
{
    (void)s; /* the scheduler's counts were settled by sched_detach */
    job_t *job = *job_p;
    if (!job) return;
    assert(job->state == JOB_DETACHED && !job->tenant);
    if (job->client) job->client->jobs--;
    job_destroy(job_p);
}

void sched_answer(sched_t *s, job_t *job, status_t st, const char *type, const char *message)
{
    if (job->client && !job->client->gone) s->io.answer(s->io.arg, job, st, type, message);
    sched_finish(s, &job);
}

typedef struct {
    job_t **jobs;
    size_t n;
    const client_t *client; /* NULL: every job */
} collect_t;

static void s_collect(void *arg, const uint8_t *id, void *value)
{
    (void)id;
    collect_t *c = arg;
    job_t *job = value;
    if (!c->client || job->client == c->client) c->jobs[c->n++] = job;
}

size_t sched_jobs_of(sched_t *s, const client_t *c, job_t ***out)
{
    collect_t col = {xcalloc(idmap_size(s->jobs) + 1, sizeof(job_t *)), 0, c};
    idmap_each(s->jobs, s_collect, &col);
    *out = col.jobs;
    return col.n;
}

/* ---- the end ----------------------------------------------------------------------------- */

static void s_drop_all(sched_t *s, const char *why)
{
    job_t **jobs;
    size_t n = sched_jobs_of(s, NULL, &jobs);
    for (size_t i = 0; i < n; i++) {
        sched_detach(s, jobs[i]);
        if (why)
            sched_answer(s, jobs[i], ST_LOST, "BrokerStopping", why);
        else
            sched_finish(s, &jobs[i]);
    }
    free(jobs);
}

void sched_shutdown(sched_t *s, const char *why)
{
    s_drop_all(s, why ? why : "the broker is shutting down");
}

void sched_destroy(sched_t **self_p)
{
    assert(self_p);
    sched_t *s = *self_p;
    if (!s) return;
    s_drop_all(s, NULL);
    executors_destroy(&s->executors);
    affinity_destroy(&s->affinity);
    deadlines_destroy(&s->deadlines);
    idmap_destroy(&s->jobs);
    services_destroy(&s->services);
    tenants_destroy(&s->tenants);
    clients_destroy(&s->clients);
    free(s);
    *self_p = NULL;
}

/* ---- views ------------------------------------------------------------------------------- */

const sched_stats_t *sched_stats(const sched_t *s)
{
    return &s->stats;
}

const services_t *sched_services(const sched_t *s)
{
    return s->services;
}

const executors_t *sched_executors(const sched_t *s)
{
    return s->executors;
}

size_t sched_queued(const sched_t *s)
{
    return s->queued;
}

size_t sched_queued_bytes(const sched_t *s)
{
    return s->queued_bytes;
}

size_t sched_inflight(const sched_t *s)
{
    return s->inflight;
}

size_t sched_jobs(const sched_t *s)
{
    return idmap_size(s->jobs);
}

size_t sched_tenants(const sched_t *s)
{
    return tenants_count(s->tenants);
}

size_t sched_clients(const sched_t *s)
{
    return clients_count(s->clients);
}

size_t sched_sessions(const sched_t *s)
{
    return affinity_count(s->affinity);
}

const tenant_t *sched_tenant(const sched_t *s, const char *name)
{
    return tenants_find(s->tenants, name);
}
