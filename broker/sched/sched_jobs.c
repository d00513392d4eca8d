/* broker/sched/sched_jobs.c — see sched.h: admission, cancels, results and dispatch, and the
 * scheduler built. The top of the scheduler's parts (internal.h): executors and clients coming
 * and going and the clocks are sched_life.c's, resubmitted jobs sched_probe.c's, sessions'
 * lines sched_sessions.c's, the books sched_state.c's. */
#define _GNU_SOURCE

#include "common/profiles.h"
#include "broker/tables/lease.h"
#include "internal.h"

/* Built here, at the top, so that each part below the books registers what a job's leaving
 * means to it (sched_detach_hooks_t) and the books call nothing above them. */
sched_t *sched_new(const sched_conf_t *conf, const sched_io_t *io)
{
    sched_t *s = sched_state_new(conf, io);
    sched_sessions_init(s);
    sched_probe_init(s);
    return s;
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
            if (!sv) sched_refuse(why, REFUSE_OVERLOAD, ST_REJECTED, "too many services");
            return sv;
        }
        sched_refuse(why, REFUSE_NO_EXECUTOR, ST_REJECTED, "no executor serves service '%s'", name);
        return NULL;
    }
    if (!sv->executors && now - sv->orphaned_ms >= grace) {
        sched_refuse(why, REFUSE_NO_EXECUTOR, ST_REJECTED,
                     "no executor serves service '%s' (none for %llu s)", name,
                     (unsigned long long)((now - sv->orphaned_ms) / 1000));
        return NULL;
    }
    return sv;
}

/* The broker's caps: refuse at once rather than hold what cannot be held. */
static int s_check_caps(sched_t *s, const job_t *job, sched_refusal_t *why)
{
    const sched_conf_t *cf = &s->conf;
    if (s->queued >= cf->max_queue)
        return sched_refuse(why, REFUSE_QUEUE_FULL, ST_REJECTED,
                            "the broker's queue is full (%zu jobs queued)", s->queued);
    if (s->queued_bytes + job->body_len > cf->max_queue_bytes)
        return sched_refuse(why, REFUSE_QUEUE_BYTES, ST_REJECTED,
                            "the broker's queue is full (%zu bytes queued)", s->queued_bytes);
    const tenant_t *t = tenants_find(s->tenants, job->route.tenant);
    if (t && t->queued >= cf->max_queue_per_tenant) {
        uint32_t quota = job->route.max_inflight;
        if (quota && t->inflight >= quota)
            return sched_refuse(why, REFUSE_INFLIGHT_QUOTA, ST_REJECTED,
                                "tenant '%s' is at its in-flight quota (%zu running, quota %u) and "
                                "its queue is full (%zu jobs)",
                                t->name, t->inflight, quota, t->queued);
        return sched_refuse(why, REFUSE_TENANT_QUEUE_FULL, ST_REJECTED,
                            "tenant '%s' has too many jobs queued (%zu, cap %zu)", t->name,
                            t->queued, cf->max_queue_per_tenant);
    }
    return 0;
}

int sched_submit(sched_t *s, client_t *c, const char *service, job_t *job, sched_refusal_t *why)
{
    uint64_t now = s->conf.mono_ms();
    if (idmap_get(s->jobs, job->id))
        return sched_refuse(why, REFUSE_DUPLICATE, ST_REJECTED,
                            "a job with this id is already queued or running");
    service_t *sv = s_service_for(s, service, now, why);
    if (!sv) return -1;
    uint64_t expires = 0;
    if (job->route.deadline_ms) {
        uint64_t wall = s->conf.wall_ms();
        if (job->route.deadline_ms <= wall)
            return sched_refuse(why, REFUSE_EXPIRED, ST_TIMEOUT,
                                "the job's deadline had passed when it reached the broker");
        expires = now + (job->route.deadline_ms - wall);
    }
    if (s_check_caps(s, job, why) < 0) return -1;
    if (job->route.has_session && sched_session_admit(s, job, why) < 0) return -1;

    tenant_t *t = tenants_get(s->tenants, job->route.tenant);
    t->max_inflight = job->route.max_inflight; /* the newest quota the front-end sent */
    if (t->parked && tenant_may_run(t)) sched_unpark(s, t);
    job->service = sv;
    job->tenant = t;
    job->client = c;
    c->jobs++;
    job->queued_ms = now;
    job->expires_ms = job->due_ms = expires;
    idmap_put(s->jobs, job->id, job);
    if (expires) deadlines_add(s->deadlines, job);
    sched_count_queued(s, job, +1);
    sv->count.submitted++;
    if (job->route.resubmit) {
        sched_probe_start(s, job); /* it may have run before: ask the executors first */
        return 0;
    }
    sched_enqueue(s, job);
    return 0;
}

int sched_cancel(sched_t *s, const client_t *c, const uint8_t id[ID_BYTES])
{
    job_t *job = idmap_get(s->jobs, id);
    if (!job || job->client != c) return -1; /* only the submitter may cancel (PROTOCOL.md §2) */
    if (job->state == JOB_QUEUED || job->state == JOB_PROBING) {
        sched_detach(s, job);
        job->service->count.cancelled++;
        sched_answer(s, job, ST_CANCELLED, "Cancelled", "cancelled by the client before it ran");
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

job_t *sched_result(sched_t *s, executor_t *ex, const uint8_t id[ID_BYTES], int credit)
{
    if (ex) {
        /* PROTOCOL.md §3: each RESULT returns one credit, known job or not; an ANSWER none */
        if (credit) executors_refund(ex, 1);
        ex->results++;
        services_mark_dirty(s->services, ex->service_mask);
        if (queue_depth(ex->pinned)) s->pinned_dirty = 1;
    }
    job_t *job = idmap_get(s->jobs, id);
    if (!job) {
        s->stats.stale_results++;
        return NULL;
    }
    /* First answer wins: after a requeue, the original executor may still deliver. Its
     * rival copy, if one is running, is cancelled; that executor's RESULT will be stale. */
    executor_t *holder = sched_detach(s, job);
    if (holder && holder != ex) s->io.cancel(s->io.arg, holder, id);
    job->service->count.completed++;
    return job;
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
    sched_count_queued(s, job, -1);
    if (s->io.send_job(s->io.arg, ex, job) < 0) {
        queue_push_head(sv->queue, job); /* it never left: same attempt */
        sched_count_queued(s, job, +1);
        sched_executor_gone(s, ex, "unreachable");
        return;
    }
    ex->pinned_last = 0;
    sched_leased(s, ex, job);
}

/* Jobs wait that no executor has credit for (a service's queue, or a session's head pinned to
 * the executor holding the session): each executor that could run them and has none
 * of its credit here hears WANT (PROTOCOL.md §3.1), at most every WANT_EVERY_MS — another
 * broker may be holding its slots. */
#define WANT_EVERY_MS 100

static void s_want(sched_t *s)
{
    uint64_t now = s->conf.mono_ms();
    for (size_t i = 0; i < executors_count(s->executors); i++) {
        executor_t *ex = executors_at(s->executors, i);
        /* credit the reserve keeps counts as none: the jobs of busy tenants wait here too */
        /* a draining executor gives no credit: nothing waits for it */
        if (ex->draining || executor_open_credit(ex) ||
            (ex->wanted_ms && now - ex->wanted_ms < WANT_EVERY_MS))
            continue;
        /* the heads of its sessions' lines can go nowhere else: they count here only */
        queue_t *pq = ex->pinned;
        size_t waiting = queue_tenants(pq) > queue_parked(pq) ? queue_depth(pq) : 0;
        for (size_t k = 0; k < services_count(s->services); k++) {
            service_t *sv = services_at(s->services, k);
            queue_t *q = sv->queue;
            if ((ex->service_mask >> k) & 1 && queue_tenants(q) > queue_parked(q))
                waiting += queue_depth(q);
        }
        if (!waiting) continue;
        ex->wanted_ms = now;
        s->stats.wants++;
        s->io.want(s->io.arg, ex, waiting > ex->slots ? ex->slots : (uint32_t)waiting);
    }
}

void sched_executor_reclaim(sched_t *s, executor_t *ex, uint32_t n)
{
    uint32_t given = n < ex->credit ? n : ex->credit;
    ex->credit -= given;
    s->stats.releases++;
    s->io.release(s->io.arg, ex, given);
}

/* Any executor of the service that keeps sessions and has room for one more. */
static int s_session_room(const sched_t *s, const service_t *sv)
{
    for (size_t i = 0; i < executors_count(s->executors); i++) {
        const executor_t *ex = executors_at(s->executors, i);
        if ((ex->service_mask & (1ULL << sv->index)) && ex->sessions < ex->max_sessions &&
            !ex->draining)
            return 1;
    }
    return 0;
}

/* Where a job from a service's queue goes (on the reserve or not, as it was popped): a new
 * session where memory is freest; NULL when it must wait (it is back in its queue) or was
 * answered. */
static executor_t *s_place(sched_t *s, service_t *sv, job_t *job, int reserve)
{
    if (!job->route.has_new_session) return executors_pick(s->executors, sv->index, reserve);
    executor_t *ex = executors_pick_for_session(s->executors, sv->index, reserve);
    if (ex) return ex;
    if (!s_session_room(s, sv)) {
        sched_count_queued(s, job, -1); /* popped, so only its counts are left to settle */
        sched_detach(s, job);
        s->stats.rejected[REFUSE_NO_EXECUTOR]++;
        sched_answer(s, job, ST_REJECTED, "NoSessionRoom",
                     "no executor has room for another session");
        return NULL;
    }
    queue_push_head(sv->queue, job); /* room, but no credit now: it waits for some */
    return NULL;
}

void sched_dispatch(sched_t *s)
{
    /* One job per service per pass, so services sharing executors share their credit; the
     * executors' pinned queues (sessions' jobs) take turns with them. */
    for (int progress = 1; progress;) {
        executor_t *unreachable = NULL;
        progress = sched_dispatch_pinned(s, &unreachable);
        if (unreachable) sched_executor_gone(s, unreachable, "unreachable");
        for (size_t i = 0; i < services_count(s->services); i++) {
            service_t *sv = services_at(s->services, i);
            if (!sv->dirty) continue;
            /* open credit: the queue's next job in turn; only the reserve left: the first
             * job, in turn order, of a tenant with nothing running */
            job_t *job = NULL;
            int reserve = 0;
            if (queue_depth(sv->queue)) {
                if (executors_pick(s->executors, sv->index, 0))
                    job = queue_pop(sv->queue, s_eligible, s);
                else if (executors_pick(s->executors, sv->index, 1)) {
                    job = queue_pop_first(sv->queue, sched_may_reserve, s);
                    reserve = 1;
                }
            }
            executor_t *ex = job ? s_place(s, sv, job, reserve) : NULL;
            if (!job || !ex) {
                sv->dirty = 0;
                continue;
            }
            s_dispatch_one(s, sv, ex, job);
            progress = 1;
        }
    }
    if (s->queued) s_want(s);
}
