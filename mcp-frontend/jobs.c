/* mcp-frontend/jobs.c — see jobs.h. The client library guarantees one final event per
 * submitted job (proto/client.h), so a job is freed in exactly one place: s_finish. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../common/buf.h"
#include "../common/clock.h"
#include "../common/log.h"
#include "../proto/mpack.h"
#include "http.h"
#include "jobs.h"
#include "metrics.h"
#include "records.h"
#include "resources.h"
#include "task.h"
#include "utf8.h"

static int s_cancel_waiting(job_t *job);

/* notifications/cancelled for the call waiting (call.h's cancel callback): the call will not
 * be answered; the job goes on to its (cancelled) result and record. */
static void s_on_call_cancelled(void *arg, call_t *c)
{
    job_t *job = arg;
    job->call = NULL;
    if (!(job->broker_wait_until && s_cancel_waiting(job)))
        client_cancel(job->fe->client, job->service, job->id);
    call_release(c);
}

job_t *job_new(fe_t *fe, call_t *call, job_kind_t kind, const char *service, const char *tool,
               job_render_fn *render)
{
    job_t *job = xcalloc(1, sizeof *job);
    id_new(job->id);
    id_format(job->id, job->id_str);
    job->fe = fe;
    job->session = call->session;
    session_hold(job->session);
    job->tenant = call->session->tenant;
    job->call = call;
    call_hold(call);
    call_on_cancel(call, s_on_call_cancelled, job);
    job->kind = kind;
    snprintf(job->service, sizeof job->service, "%s", service);
    job->tool = tool;
    job->render = render;
    job->created_ms = clock_wall_ms();
    return job;
}

static job_t *s_waiting; /* jobs waiting for a broker connection, oldest first */
static uint64_t s_retry_timer;

static void s_on_retry(loop_t *loop, void *arg);

static void s_free(job_t *job)
{
    buf_free(&job->body);
    if (job->call) {
        call_on_cancel(job->call, NULL, NULL);
        call_release(job->call);
    }
    for (size_t i = 0; i < job->n_waiters; i++) call_release(job->waiters[i]);
    free(job->waiters);
    session_release(job->session);
    free(job);
}

void jobs_discard(job_t *job)
{
    s_free(job);
}

job_t *jobs_find(fe_t *fe, const uint8_t id[ID_BYTES])
{
    return idmap_get(fe->jobs, id);
}

static void s_task_notify(job_t *job, const char *status, uint64_t updated_ms)
{
    json_t *p = task_json(job->id_str, status, job->created_ms, updated_ms, job->task_ttl_ms, NULL);
    session_notify(job->session, rpc_notification("notifications/tasks/status", p));
}

/* The job's one ending: render, record, answer, free. */
static void s_finish(job_t *job, const uint8_t *body, size_t len)
{
    fe_t *fe = job->fe;
    result_t res;
    char err[160];
    if (job->submitted_us) job->farm_us = clock_mono_us() - job->submitted_us;
    if (result_decode(body, len, &res, err, sizeof err) < 0) {
        log_warn("event=bad_result job=%s error=\"%s\"", job->id_str, err);
        metric_inc(M.rejections, "bad_result", NULL);
        result_init(&res);
        res.status = ST_INTERNAL_ERROR;
        res.error.present = 1;
        res.error.type = xstrdup("InternalError");
        res.error.message = xstrdup("the farm sent a result the front-end could not read");
    }
    json_t *call_result = job->render(job, &res);
    metric_inc(M.tool_calls, job->tool, status_name(res.status));
    if (job->call) {
        call_t *c = job->call;
        c->farm_us = job->farm_us;
        if (call_alive(c)) {
            call_progress(c, "done");
            /* logging/setLevel subscribers hear how it ended; failures louder than successes */
            call_log(c, res.status == ST_OK ? LOGLEVEL_DEBUG : LOGLEVEL_WARNING, "snakepit",
                     json_pack("{s:s,s:s,s:f}", "execution_id", job->id_str, "status",
                               status_name(res.status), "wall_ms", res.wall_ms));
        }
        call_reply(c, json_incref(call_result));
        http_flush(fe); /* on the wire now: the record below is not on the caller's path */
    }
    /* the answer first; the log line and the record are not on the caller's path */
    log_info("event=job_done job=%s tenant=%s tool=%s status=%s wall_ms=%.3f queue_ms=%.3f",
             job->id_str, job->tenant->name, job->tool, status_name(res.status), res.wall_ms,
             res.queue_ms);
    if (job->record) {
        record_finished(fe, job, &res, call_result);
        resources_execution_updated(fe, job);
    }
    if (job->task) {
        s_task_notify(job, task_status_for(res.status, job->task_cancelled), clock_wall_ms());
        json_t *payload = json_deep_copy(call_result);
        task_mark_related(payload, job->id_str);
        for (size_t i = 0; i < job->n_waiters; i++)
            call_reply(job->waiters[i], json_incref(payload));
        json_decref(payload);
    }
    json_decref(call_result);
    result_clear(&res);
    idmap_del(fe->jobs, job->id);
    metric_set(M.jobs_inflight, (double)idmap_size(fe->jobs), NULL, NULL);
    job->tenant->inflight--;
    s_free(job);
}

/* A progress chunk from the executor: {stream: "stdout"|"stderr", data: bytes}. Anything
 * else is ignored: progress is a courtesy, never a reason to fail a job. */
static void s_progress_chunk(job_t *job, const uint8_t *body, size_t len)
{
    call_t *c = job->call;
    if (!c || !c->progress_token || !call_alive(c)) return;
    if (!job->running_sent) {
        job->running_sent = 1;
        call_progress(c, "running");
    }
    mpr_t r;
    uint32_t n;
    mpr_init(&r, body, len);
    if (mpr_map(&r, &n) < 0) return;
    const uint8_t *data = NULL;
    uint32_t dlen = 0;
    char stream[8] = "";
    for (uint32_t i = 0; i < n && !r.err; i++) {
        const char *k, *v;
        uint32_t kl, vl;
        if (mpr_str(&r, &k, &kl) < 0) return;
        if (mpr_key_is(k, kl, "stream") && mpr_str(&r, &v, &vl) == 0 && vl < sizeof stream) {
            memcpy(stream, v, vl);
            stream[vl] = '\0';
        } else if (mpr_key_is(k, kl, "data")) {
            mpr_bytes(&r, &data, &dlen);
        } else {
            mpr_skip(&r);
        }
    }
    if (r.err || !data || !stream[0]) return;
    buf_t b;
    buf_init(&b);
    buf_printf(&b, "%s: ", stream);
    utf8_sanitize(&b, (const char *)data, utf8_prefix((const char *)data, dlen, 4096));
    call_progress(c, (const char *)b.data);
    buf_free(&b);
}

static void s_on_event(void *arg, const uint8_t id[ID_BYTES], client_event_t ev,
                       const uint8_t *body, size_t len)
{
    fe_t *fe = arg;
    job_t *job = idmap_get(fe->jobs, id);
    if (!job) return;
    switch (ev) {
    case CLIENT_ACCEPTED:
        if (job->call && call_alive(job->call)) call_progress(job->call, "queued");
        break;
    case CLIENT_PROGRESS:
        s_progress_chunk(job, body, len);
        break;
    case CLIENT_RESULT:
        s_finish(job, body, len);
        break;
    }
}

void jobs_init(fe_t *fe)
{
    fe->jobs = idmap_new();
    client_conf_t cc = {
        .endpoint = fe->conf.broker,
        .heartbeat_ms = fe->conf.heartbeat_ms,
        .curve_server_key = fe->conf.curve_server_key[0] ? fe->conf.curve_server_key : NULL,
        .curve_public_key = fe->conf.curve_public_key,
        .curve_secret_key = fe->conf.curve_secret_key,
    };
    fe->client = client_new(fe->zmq_ctx, fe->loop, &cc, s_on_event, fe);
    s_retry_timer = loop_timer_add(fe->loop, 20, 20, s_on_retry, NULL);
}

static void s_abandon(void *arg, const uint8_t *id, void *value)
{
    (void)arg, (void)id;
    s_free(value);
}

void jobs_shutdown(fe_t *fe)
{
    loop_timer_cancel(fe->loop, s_retry_timer);
    s_waiting = NULL;
    client_destroy(&fe->client);
    if (fe->jobs) idmap_each(fe->jobs, s_abandon, NULL);
    idmap_destroy(&fe->jobs);
}

/* A task-augmented call is answered at once with the task (CreateTaskResult); the outcome is
 * fetched later with tasks/get and tasks/result. */
static void s_answer_with_task(job_t *job)
{
    json_t *task =
        task_json(job->id_str, "working", job->created_ms, job->created_ms, job->task_ttl_ms, NULL);
    json_object_set_new(task, "pollInterval", json_integer(250));
    call_t *c = job->call;
    job->call = NULL;
    call_on_cancel(c, NULL, NULL);
    call_reply(c, json_pack("{s:o}", "task", task));
    call_release(c);
}

void jobs_submit(job_t *job, jobspec_t *spec, long wall_ms)
{
    fe_t *fe = job->fe;
    memcpy(spec->id, job->id, ID_BYTES);
    spec->kind = job->kind;
    spec->submitted_ms = job->created_ms;
    route_t route = {0};
    snprintf(route.tenant, sizeof route.tenant, "%s", job->tenant->name);
    route.deadline_ms = job->created_ms + (uint64_t)wall_ms + (uint64_t)fe->conf.queue_allowance_ms;
    route.max_inflight = (uint32_t)job->tenant->max_concurrency;
    buf_init(&job->body);
    jobspec_encode(spec, &job->body);
    job->route = route;
    idmap_put(fe->jobs, job->id, job);
    job->tenant->inflight++;
    metric_set(M.jobs_inflight, (double)idmap_size(fe->jobs), NULL, NULL);
    if (job->task) s_answer_with_task(job);
    job->submitted_us = clock_mono_us();
    int rc = client_submit(fe->client, job->service, job->id, &job->route, job->body.data,
                           job->body.len);
    /* the record is written while the job runs, never before it leaves */
    if (job->record) record_submitted(fe, job, spec);
    if (rc == 0) {
        buf_free(&job->body);
        return;
    }
    /* ZMQ_IMMEDIATE: no broker connection can take it now (starting up, or the broker is
     * restarting). Hold it for a short while rather than fail at the first hiccup. */
    job->broker_wait_until = clock_mono_ms() + (uint64_t)fe->conf.broker_wait_ms;
    job_t **pp = &s_waiting;
    while (*pp) pp = &(*pp)->next_waiting;
    *pp = job;
}

static void s_unavailable(job_t *job)
{
    fe_t *fe = job->fe;
    metric_inc(M.broker_unavailable, NULL, NULL);
    log_warn("event=broker_unavailable job=%s endpoint=%s", job->id_str, fe->conf.broker);
    buf_t r;
    buf_init(&r);
    result_encode_simple(
        &r, ST_REJECTED, "Unavailable",
        "no broker is connected: the sandbox farm is not running or not reachable from "
        "this front-end; try again shortly");
    s_finish(job, r.data, r.len);
    buf_free(&r);
}

/* Retries the jobs held for want of a broker connection, in order. */
static void s_on_retry(loop_t *loop, void *arg)
{
    (void)loop, (void)arg;
    uint64_t now = clock_mono_ms();
    while (s_waiting) {
        job_t *job = s_waiting;
        if (client_submit(job->fe->client, job->service, job->id, &job->route, job->body.data,
                          job->body.len) == 0) {
            s_waiting = job->next_waiting;
            job->broker_wait_until = 0;
            buf_free(&job->body);
            continue;
        }
        if (job->broker_wait_until > now) return; /* still down: keep the rest in order too */
        s_waiting = job->next_waiting;
        job->broker_wait_until = 0;
        s_unavailable(job);
    }
}

/* A job still held for a broker connection never reached the farm: it ends here. */
static int s_cancel_waiting(job_t *job)
{
    for (job_t **pp = &s_waiting; *pp; pp = &(*pp)->next_waiting)
        if (*pp == job) {
            *pp = job->next_waiting;
            buf_t r;
            buf_init(&r);
            result_encode_simple(&r, ST_CANCELLED, "Cancelled",
                                 "cancelled before it reached the farm");
            s_finish(job, r.data, r.len);
            buf_free(&r);
            return 1;
        }
    return 0;
}

int jobs_cancel(job_t *job)
{
    job->task_cancelled = 1;
    record_task_status(job->fe, job, "cancelled");
    if (job->broker_wait_until && s_cancel_waiting(job)) return 0;
    return client_cancel(job->fe->client, job->service, job->id);
}

void jobs_add_waiter(job_t *job, call_t *c)
{
    job->waiters = xrealloc(job->waiters, (job->n_waiters + 1) * sizeof *job->waiters);
    job->waiters[job->n_waiters++] = c;
    call_hold(c);
}
