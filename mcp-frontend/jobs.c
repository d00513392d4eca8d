/* mcp-frontend/jobs.c — see jobs.h. A job is freed in exactly one place, s_finish, after its
 * owner heard the end. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/buf.h"
#include "../common/clock.h"
#include "../common/idmap.h"
#include "../common/log.h"
#include "../proto/client.h"
#include "../proto/result.h"
#include "jobs.h"

#define RETRY_MS 20 /* how often jobs held back are offered to the broker again */

struct job {
    uint8_t id[ID_BYTES];
    char service[JOB_MAX_SERVICE + 1];
    const job_events_t *events;
    void *owner;
    /* while no broker connection can take the job: kept here and retried until
     * broker_wait_until, then answered `rejected` */
    buf_t body;
    route_t route;
    uint64_t broker_wait_until; /* monotonic ms; 0 once submitted */
    job_t *next_waiting;
};

struct jobs {
    loop_t *loop;
    jobs_conf_t conf;
    client_t *client;
    idmap_t *pending; /* job id → job_t, submitted or waiting */
    job_t *waiting;   /* jobs waiting for a broker connection, oldest first */
    uint64_t retry_timer;
    jobs_stats_t stats;
};

static void s_finish(jobs_t *self, job_t *job, const uint8_t *body, size_t len)
{
    idmap_del(self->pending, job->id);
    job->events->finished(job->owner, body, len);
    buf_free(&job->body);
    free(job);
}

/* A result made here for a job the farm never answered. */
static void s_finish_simple(jobs_t *self, job_t *job, status_t st, const char *type,
                            const char *message)
{
    buf_t r;
    buf_init(&r);
    result_encode_simple(&r, st, type, message);
    s_finish(self, job, r.data, r.len);
    buf_free(&r);
}

static void s_on_event(void *arg, const uint8_t id[ID_BYTES], client_event_t ev,
                       const uint8_t *body, size_t len)
{
    jobs_t *self = arg;
    job_t *job = idmap_get(self->pending, id);
    if (!job) return;
    switch (ev) {
    case CLIENT_ACCEPTED:
        job->events->accepted(job->owner);
        break;
    case CLIENT_PROGRESS:
        job->events->progress(job->owner, body, len);
        break;
    case CLIENT_RESULT:
        s_finish(self, job, body, len);
        break;
    }
}

static void s_unavailable(jobs_t *self, job_t *job)
{
    char id[ID_STR_LEN + 1];
    id_format(job->id, id);
    self->stats.broker_unavailable++;
    log_warn("event=broker_unavailable job=%s endpoint=%s", id, self->conf.broker);
    s_finish_simple(self, job, ST_REJECTED, "Unavailable",
                    "no broker is connected: the sandbox farm is not running or not reachable "
                    "from this front-end; try again shortly");
}

/* Retries the jobs held for want of a broker connection, in order. */
static void s_on_retry(loop_t *loop, void *arg)
{
    (void)loop;
    jobs_t *self = arg;
    uint64_t now = clock_mono_ms();
    while (self->waiting) {
        job_t *job = self->waiting;
        if (client_submit(self->client, job->service, job->id, &job->route, job->body.data,
                          job->body.len) == 0) {
            self->waiting = job->next_waiting;
            job->broker_wait_until = 0;
            buf_free(&job->body);
            continue;
        }
        if (job->broker_wait_until > now) return; /* still down: keep the rest in order too */
        self->waiting = job->next_waiting;
        job->broker_wait_until = 0;
        s_unavailable(self, job);
    }
}

jobs_t *jobs_new(loop_t *loop, void *zmq_ctx, const jobs_conf_t *conf)
{
    jobs_t *self = xcalloc(1, sizeof *self);
    self->loop = loop;
    self->conf = *conf;
    self->pending = idmap_new();
    client_conf_t cc = {
        .endpoint = self->conf.broker,
        .heartbeat_ms = self->conf.heartbeat_ms,
        .curve_server_key = self->conf.curve_server_key[0] ? self->conf.curve_server_key : NULL,
        .curve_public_key = self->conf.curve_public_key,
        .curve_secret_key = self->conf.curve_secret_key,
    };
    self->client = client_new(zmq_ctx, loop, &cc, s_on_event, self);
    self->retry_timer = loop_timer_add(loop, RETRY_MS, RETRY_MS, s_on_retry, self);
    return self;
}

static void s_drop(void *arg, const uint8_t *id, void *value)
{
    (void)arg, (void)id;
    job_t *job = value;
    buf_free(&job->body);
    free(job);
}

void jobs_destroy(jobs_t **self_p)
{
    jobs_t *self = *self_p;
    if (!self) return;
    loop_timer_cancel(self->loop, self->retry_timer);
    client_destroy(&self->client);
    idmap_each(self->pending, s_drop, NULL);
    idmap_destroy(&self->pending);
    free(self);
    *self_p = NULL;
}

job_t *jobs_submit(jobs_t *self, const jobspec_t *spec, long max_inflight,
                   const job_events_t *events, void *owner)
{
    job_t *job = xcalloc(1, sizeof *job);
    memcpy(job->id, spec->id, ID_BYTES);
    snprintf(job->service, sizeof job->service, "%s", spec->service);
    job->events = events;
    job->owner = owner;
    snprintf(job->route.tenant, sizeof job->route.tenant, "%s", spec->tenant);
    job->route.deadline_ms = spec->submitted_ms + (uint64_t)spec->limits.wall_ms +
                             (uint64_t)self->conf.queue_allowance_ms;
    job->route.max_inflight = (uint32_t)max_inflight;
    /* sessions: the broker routes by these (affinity), never decoding the JobSpec */
    job->route.has_session = spec->has_session;
    memcpy(job->route.session, spec->session, ID_BYTES);
    job->route.has_new_session = spec->has_new_session;
    memcpy(job->route.new_session, spec->new_session, ID_BYTES);
    buf_init(&job->body);
    jobspec_encode(spec, &job->body);
    idmap_put(self->pending, job->id, job);
    if (client_submit(self->client, job->service, job->id, &job->route, job->body.data,
                      job->body.len) == 0) {
        buf_free(&job->body);
        return job;
    }
    /* ZMQ_IMMEDIATE: no broker connection can take it now (starting up, or the broker is
     * restarting). Hold it for a short while rather than fail at the first hiccup. */
    job->broker_wait_until = clock_mono_ms() + (uint64_t)self->conf.broker_wait_ms;
    job_t **pp = &self->waiting;
    while (*pp) pp = &(*pp)->next_waiting;
    *pp = job;
    return job;
}

void jobs_cancel(jobs_t *self, job_t *job)
{
    if (job->broker_wait_until) { /* never reached the farm: it ends here */
        for (job_t **pp = &self->waiting; *pp; pp = &(*pp)->next_waiting)
            if (*pp == job) {
                *pp = job->next_waiting;
                break;
            }
        s_finish_simple(self, job, ST_CANCELLED, "Cancelled",
                        "cancelled before it reached the farm");
        return;
    }
    client_cancel(self->client, job->service, job->id);
}

size_t jobs_count(const jobs_t *self)
{
    return idmap_size(self->pending);
}

int jobs_broker_connected(const jobs_t *self)
{
    return client_connected(self->client);
}

const char *jobs_broker_instance(const jobs_t *self)
{
    return self->conf.broker_instance;
}

const jobs_stats_t *jobs_stats(const jobs_t *self)
{
    return &self->stats;
}
