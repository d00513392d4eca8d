/* broker/sched.c — see sched.h. Admission, dispatch, results and cancels; the lifecycle of
 * executors and clients and the clocks are in sched_life.c. Shared helpers are declared in
 * sched_int.h. */
#define _GNU_SOURCE
#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/buf.h"
#include "../common/clock.h"
#include "../common/log.h"
#include "../common/profiles.h"
#include "lease.h"
#include "sched_int.h"

static const char *s_refusal_names[REFUSE__COUNT] = {
    "queue_full", "queue_bytes", "tenant_queue_full", "inflight_quota", "no_executor",
    "duplicate",  "expired",     "overload",          "malformed",
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

sched_t *sched_new(const sched_conf_t *conf, const sched_io_t *io)
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
    s->executors = executors_new(conf->max_executors);
    s->jobs = idmap_new();
    s->deadlines = deadlines_new();
    s->started_ms = s->conf.mono_ms();
    prom_hist_init(&s->stats.queue_wait, prom_seconds_buckets, prom_seconds_buckets_n);
    return s;
}

/* ---- bookkeeping shared with sched_life.c ------------------------------------------------ */

void s_count_queued(sched_t *s, job_t *job, int sign)
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

void s_mark_dirty(sched_t *s, uint64_t mask)
{
    for (size_t i = 0; i < services_count(s->services); i++)
        if (mask & (1ULL << i)) services_at(s->services, i)->dirty = 1;
}

static void s_unpark(sched_t *s, tenant_t *t)
{
    t->parked = 0;
    for (size_t i = 0; i < services_count(s->services); i++) {
        service_t *sv = services_at(s->services, i);
        queue_unpark(sv->queue, t->name);
        sv->dirty = 1;
    }
}

void s_inflight_done(sched_t *s, job_t *job)
{
    tenant_t *t = job->tenant;
    s->inflight--;
    job->service->inflight--;
    t->inflight--;
    if (t->parked && tenant_may_run(t)) s_unpark(s, t);
}

executor_t *s_detach(sched_t *s, job_t *job)
{
    executor_t *holder = NULL;
    if (job->state == JOB_QUEUED) {
        queue_remove(job->service->queue, job);
        s_count_queued(s, job, -1);
    } else if (job->state == JOB_LEASED) {
        holder = job->executor;
        lease_end(job);
        s_inflight_done(s, job);
    }
    deadlines_remove(s->deadlines, job);
    idmap_del(s->jobs, job->id);
    tenants_release(s->tenants, job->tenant);
    job->tenant = NULL;
    return holder;
}

void s_finish(sched_t *s, job_t *job)
{
    (void)s; /* the scheduler's counts were settled by s_detach */
    assert(job->state == JOB_DETACHED && !job->tenant);
    if (job->client) job->client->jobs--;
    job_destroy(&job);
}

void s_answer(sched_t *s, job_t *job, status_t st, const char *type, const char *message)
{
    if (job->client && !job->client->gone) s->io.answer(s->io.arg, job, st, type, message);
    s_finish(s, job);
}

/* ---- client channel -------------------------------------------------------------------- */

client_t *sched_client(sched_t *s, const void *identity, size_t len, int ping)
{
    client_t *c = clients_touch(s->clients, identity, len, s->conf.mono_ms());
    if (!c) return NULL;
    if (ping) c->pings = 1;
    c->gone = 0; /* it speaks, so it is there */
    return c;
}

static int s_refuse(sched_refusal_t *why, refusal_t reason, status_t st, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int s_refuse(sched_refusal_t *why, refusal_t reason, status_t st, const char *fmt, ...)
{
    why->reason = reason;
    why->status = st;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why->message, sizeof why->message, fmt, ap);
    va_end(ap);
    return -1;
}

/* The service a SUBMIT names, or NULL with the refusal filled in. */
static service_t *s_service_for(sched_t *s, const char *name, uint64_t now, sched_refusal_t *why)
{
    uint64_t grace = s->conf.service_grace_ms;
    service_t *sv = services_get(s->services, name);
    if (!sv) {
        /* Right after a (re)start no executor has registered yet: jobs for the known
         * profiles wait out the grace instead of bouncing. */
        if (now - s->started_ms < grace && profile_find(name)) {
            sv = services_add(s->services, name, s->started_ms);
            if (!sv) s_refuse(why, REFUSE_OVERLOAD, ST_REJECTED, "too many services");
            return sv;
        }
        s_refuse(why, REFUSE_NO_EXECUTOR, ST_REJECTED, "no executor serves service '%s'", name);
        return NULL;
    }
    if (!sv->executors && now - sv->orphaned_ms >= grace) {
        s_refuse(why, REFUSE_NO_EXECUTOR, ST_REJECTED,
                 "no executor serves service '%s' (none for %llu s)", name,
                 (unsigned long long)((now - sv->orphaned_ms) / 1000));
        return NULL;
    }
    return sv;
}

/* The caps of DESIGN.md §4: refuse at once rather than hold what cannot be held. */
static int s_check_caps(sched_t *s, const job_t *job, sched_refusal_t *why)
{
    const sched_conf_t *cf = &s->conf;
    if (s->queued >= cf->max_queue)
        return s_refuse(why, REFUSE_QUEUE_FULL, ST_REJECTED,
                        "the broker's queue is full (%zu jobs queued)", s->queued);
    if (s->queued_bytes + job->body_len > cf->max_queue_bytes)
        return s_refuse(why, REFUSE_QUEUE_BYTES, ST_REJECTED,
                        "the broker's queue is full (%zu bytes queued)", s->queued_bytes);
    const tenant_t *t = tenants_find(s->tenants, job->route.tenant);
    if (t && t->queued >= cf->max_queue_per_tenant) {
        uint32_t quota = job->route.max_inflight;
        if (quota && t->inflight >= quota)
            return s_refuse(why, REFUSE_INFLIGHT_QUOTA, ST_REJECTED,
                            "tenant '%s' is at its in-flight quota (%zu running, quota %u) and "
                            "its queue is full (%zu jobs)",
                            t->name, t->inflight, quota, t->queued);
        return s_refuse(why, REFUSE_TENANT_QUEUE_FULL, ST_REJECTED,
                        "tenant '%s' has too many jobs queued (%zu, cap %zu)", t->name, t->queued,
                        cf->max_queue_per_tenant);
    }
    return 0;
}

int sched_submit(sched_t *s, client_t *c, const char *service, job_t *job, sched_refusal_t *why)
{
    uint64_t now = s->conf.mono_ms();
    if (idmap_get(s->jobs, job->id))
        return s_refuse(why, REFUSE_DUPLICATE, ST_REJECTED,
                        "a job with this id is already queued or running");
    service_t *sv = s_service_for(s, service, now, why);
    if (!sv) return -1;
    uint64_t expires = 0;
    if (job->route.deadline_ms) {
        uint64_t wall = s->conf.wall_ms();
        if (job->route.deadline_ms <= wall)
            return s_refuse(why, REFUSE_EXPIRED, ST_TIMEOUT,
                            "the job's deadline had passed when it reached the broker");
        expires = now + (job->route.deadline_ms - wall);
    }
    if (s_check_caps(s, job, why) < 0) return -1;

    tenant_t *t = tenants_get(s->tenants, job->route.tenant);
    t->max_inflight = job->route.max_inflight; /* the newest quota the front-end sent */
    if (t->parked && tenant_may_run(t)) s_unpark(s, t);
    job->service = sv;
    job->tenant = t;
    job->client = c;
    c->jobs++;
    job->queued_ms = now;
    job->expires_ms = job->due_ms = expires;
    idmap_put(s->jobs, job->id, job);
    if (expires) deadlines_add(s->deadlines, job);
    queue_push(sv->queue, job);
    s_count_queued(s, job, +1);
    sv->count.submitted++;
    sv->dirty = 1;
    return 0;
}

int sched_cancel(sched_t *s, const client_t *c, const uint8_t id[ID_BYTES])
{
    job_t *job = idmap_get(s->jobs, id);
    if (!job || job->client != c) return -1; /* only the submitter may cancel (PROTOCOL.md §2) */
    if (job->state == JOB_QUEUED) {
        s_detach(s, job);
        job->service->count.cancelled++;
        s_answer(s, job, ST_CANCELLED, "Cancelled", "cancelled by the client before it ran");
    } else if (!job->cancelled) {
        /* The executor answers (status cancelled, or the result if it was faster). */
        job->cancelled = 1;
        s->io.cancel(s->io.arg, job->executor, id);
    }
    return 0;
}

int sched_knows(const sched_t *s, const uint8_t id[ID_BYTES])
{
    return idmap_get(s->jobs, id) != NULL;
}

/* ---- worker channel: results ------------------------------------------------------------ */

job_t *sched_result(sched_t *s, executor_t *ex, const uint8_t id[ID_BYTES])
{
    if (ex) {
        /* PROTOCOL.md §3: each RESULT returns one credit, known job or not. */
        executors_refund(ex, 1);
        ex->results++;
        s_mark_dirty(s, ex->service_mask);
    }
    job_t *job = idmap_get(s->jobs, id);
    if (!job) {
        s->stats.stale_results++;
        return NULL;
    }
    /* First answer wins: after a requeue, the original executor may still deliver. Its
     * rival copy, if one is running, is cancelled; that executor's RESULT will be stale. */
    executor_t *holder = s_detach(s, job);
    if (holder && holder != ex) s->io.cancel(s->io.arg, holder, id);
    job->service->count.completed++;
    return job;
}

void sched_finish(sched_t *s, job_t **job_p)
{
    job_t *job = *job_p;
    if (!job) return;
    s_finish(s, job);
    *job_p = NULL;
}

job_t *sched_progress(sched_t *s, executor_t *ex, const uint8_t id[ID_BYTES])
{
    job_t *job = idmap_get(s->jobs, id);
    return job && job->state == JOB_LEASED && job->executor == ex ? job : NULL;
}

/* ---- dispatch ---------------------------------------------------------------------------- */

static int s_eligible(void *arg, const job_t *job)
{
    (void)arg;
    if (tenant_may_run(job->tenant)) return 1;
    job->tenant->parked = 1;
    return 0;
}

static void s_dispatch_one(sched_t *s, service_t *sv, executor_t *ex, job_t *job)
{
    s_count_queued(s, job, -1);
    if (s->io.send_job(s->io.arg, ex, job) < 0) {
        queue_push_head(sv->queue, job); /* it never left: same attempt */
        s_count_queued(s, job, +1);
        s_executor_lost(s, ex, "unreachable");
        return;
    }
    uint64_t now = s->conf.mono_ms();
    if (job->route.attempt == 0)
        prom_hist_observe(&s->stats.queue_wait, (double)(now - job->queued_ms) / 1000.0);
    lease_grant(job, ex);
    executors_charge(s->executors, ex);
    job->tenant->inflight++;
    sv->inflight++;
    s->inflight++;
    sv->count.dispatched++;
    if (job->expires_ms) {
        job->due_ms = job->expires_ms + s->conf.lease_grace_ms;
        deadlines_update(s->deadlines, job);
    }
}

void sched_dispatch(sched_t *s)
{
    /* One job per service per pass, so services sharing executors share their credit. */
    for (int progress = 1; progress;) {
        progress = 0;
        for (size_t i = 0; i < services_count(s->services); i++) {
            service_t *sv = services_at(s->services, i);
            if (!sv->dirty) continue;
            executor_t *ex =
                queue_depth(sv->queue) ? executors_pick(s->executors, sv->index) : NULL;
            job_t *job = ex ? queue_pop(sv->queue, s_eligible, s) : NULL;
            if (!job) {
                sv->dirty = 0;
                continue;
            }
            s_dispatch_one(s, sv, ex, job);
            progress = 1;
        }
    }
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

const tenant_t *sched_tenant(const sched_t *s, const char *name)
{
    return tenants_find(s->tenants, name);
}
