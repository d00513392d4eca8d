/* mcp-frontend/farm/jobs.c — see jobs.h. A job is freed in exactly one place, s_finish, after its
 * owner heard the end. It keeps its JobSpec until then: the broker holding it may go away, and
 * the job is sent again. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/idmap.h"
#include "common/log.h"
#include "proto/client.h"
#include "proto/result.h"
#include "jobs.h"

#define RETRY_MS    20 /* how often jobs held back are offered to the brokers again */
#define MAX_BROKERS 8

struct job {
    uint8_t id[ID_BYTES];
    char service[JOB_MAX_SERVICE + 1];
    const job_events_t *events;
    void *owner;
    buf_t body; /* the JobSpec, kept until the end */
    route_t route;
    int broker;                 /* the client it is pending on; -1 while held back */
    int accepted;               /* ACCEPTED was passed on (not again after a resubmission) */
    uint64_t broker_wait_until; /* monotonic ms; 0 unless held back */
    job_t *next_waiting;
};

struct jobs {
    loop_t *loop;
    jobs_conf_t conf;
    client_t *clients[MAX_BROKERS];
    char *endpoints[MAX_BROKERS];
    int n_clients;
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

/* Sends the job to the first broker that takes it: connected ones first, in order, then any
 * whose socket accepts it. 0, or -1 when none can now. */
static int s_send(jobs_t *self, job_t *job)
{
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < self->n_clients; i++) {
            if (pass == 0 && !client_connected(self->clients[i])) continue;
            if (client_submit(self->clients[i], job->service, job->id, &job->route, job->body.data,
                              job->body.len) == 0) {
                job->broker = i;
                return 0;
            }
        }
    return -1;
}

static void s_hold(jobs_t *self, job_t *job)
{
    job->broker = -1;
    job->broker_wait_until = clock_mono_ms() + (uint64_t)self->conf.broker_wait_ms;
    job_t **pp = &self->waiting;
    while (*pp) pp = &(*pp)->next_waiting;
    *pp = job;
}

/* The broker holding the job went away (body: the `lost` Result the client made). Sent again
 * once, marked resubmit: the broker that gets it asks the executors before running it. */
static void s_on_broker_lost(jobs_t *self, job_t *job, const uint8_t *body, size_t len)
{
    char hex[ID_STR_LEN + 1];
    id_format(job->id, hex);
    if (job->route.resubmit) {
        self->stats.lost++;
        log_warn("event=job_lost job=%s reason=\"its broker was lost twice\"", hex);
        s_finish(self, job, body, len);
        return;
    }
    job->route.resubmit = 1;
    self->stats.resubmitted++;
    int from = job->broker;
    if (s_send(self, job) == 0) {
        log_info("event=job_resubmitted job=%s from=%s to=%s", hex, self->endpoints[from],
                 self->endpoints[job->broker]);
        return;
    }
    log_info("event=job_resubmit_waiting job=%s from=%s", hex, self->endpoints[from]);
    s_hold(self, job);
}

static void s_on_event(void *arg, const uint8_t id[ID_BYTES], client_event_t ev,
                       const uint8_t *body, size_t len)
{
    jobs_t *self = arg;
    job_t *job = idmap_get(self->pending, id);
    if (!job) return;
    switch (ev) {
    case CLIENT_ACCEPTED:
        if (!job->accepted) job->events->accepted(job->owner);
        job->accepted = 1;
        break;
    case CLIENT_PROGRESS:
        job->events->progress(job->owner, body, len);
        break;
    case CLIENT_RESULT:
        s_finish(self, job, body, len);
        break;
    case CLIENT_LOST:
        s_on_broker_lost(self, job, body, len);
        break;
    }
}

/* Held back past --broker-wait-ms: a job that never reached a broker is `rejected`; one whose
 * broker was lost is `lost` (it may have run). */
static void s_give_up(jobs_t *self, job_t *job)
{
    char id[ID_STR_LEN + 1];
    id_format(job->id, id);
    if (job->route.resubmit) {
        self->stats.lost++;
        log_warn("event=job_lost job=%s reason=\"no broker to resubmit it to\"", id);
        s_finish_simple(self, job, ST_LOST, "BrokerLost",
                        "the broker holding the job was lost and no other broker could take it "
                        "again; it may or may not have run");
        return;
    }
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
        if (s_send(self, job) == 0) {
            self->waiting = job->next_waiting;
            job->broker_wait_until = 0;
            continue;
        }
        if (job->broker_wait_until > now) return; /* still down: keep the rest in order too */
        self->waiting = job->next_waiting;
        job->broker_wait_until = 0;
        s_give_up(self, job);
    }
}

jobs_t *jobs_new(loop_t *loop, void *zmq_ctx, const jobs_conf_t *conf)
{
    jobs_t *self = xcalloc(1, sizeof *self);
    self->loop = loop;
    self->conf = *conf;
    self->pending = idmap_new();
    char list[sizeof conf->broker];
    snprintf(list, sizeof list, "%s", conf->broker);
    char *save = NULL;
    for (char *ep = strtok_r(list, ",", &save); ep && self->n_clients < MAX_BROKERS;
         ep = strtok_r(NULL, ",", &save)) {
        while (*ep == ' ') ep++;
        if (!*ep) continue;
        client_conf_t cc = {
            .endpoint = ep,
            .heartbeat_ms = self->conf.heartbeat_ms,
            .curve_server_key = self->conf.curve_server_key[0] ? self->conf.curve_server_key : NULL,
            .curve_public_key = self->conf.curve_public_key,
            .curve_secret_key = self->conf.curve_secret_key,
            .hand_back_lost = 1,
        };
        self->endpoints[self->n_clients] = xstrdup(ep);
        self->clients[self->n_clients++] = client_new(zmq_ctx, loop, &cc, s_on_event, self);
    }
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
    for (int i = 0; i < self->n_clients; i++) {
        client_destroy(&self->clients[i]);
        free(self->endpoints[i]);
    }
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
    /* ZMQ_IMMEDIATE: with no broker connection (starting up, or restarting) no socket takes
     * it. Hold it for a short while rather than fail at the first hiccup. */
    if (s_send(self, job) < 0) s_hold(self, job);
    return job;
}

void jobs_cancel(jobs_t *self, job_t *job)
{
    if (job->broker_wait_until) { /* not at any broker now: it ends here */
        for (job_t **pp = &self->waiting; *pp; pp = &(*pp)->next_waiting)
            if (*pp == job) {
                *pp = job->next_waiting;
                break;
            }
        s_finish_simple(self, job, ST_CANCELLED, "Cancelled",
                        "cancelled before it reached the farm");
        return;
    }
    client_cancel(self->clients[job->broker], job->service, job->id);
}

size_t jobs_count(const jobs_t *self)
{
    return idmap_size(self->pending);
}

int jobs_broker_connected(const jobs_t *self)
{
    int n = 0;
    for (int i = 0; i < self->n_clients; i++) n += client_connected(self->clients[i]) != 0;
    return n;
}

const jobs_stats_t *jobs_stats(const jobs_t *self)
{
    return &self->stats;
}
