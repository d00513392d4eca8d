/* mcp-frontend/farm/execution.c — see execution.h. An execution is freed once it has concluded
 * (answered and announced) and nothing else holds it: the running map and a record
 * confirmation still to come each hold one reference. */
#define _GNU_SOURCE
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/idmap.h"
#include "common/log.h"
#include "common/utf8.h"
#include "proto/mpack.h"
#include "mcp-frontend/render/outcome.h"
#include "mcp-frontend/render/rich.h"
#include "mcp-frontend/rpc/jsonrpc.h"
#include "mcp-frontend/rpc/task.h"
#include "mcp-frontend/state/holds.h"
#include "execution.h"

#define END_HOOKS_MAX       8
#define TASK_POLL_MS        250  /* pollInterval of the CreateTaskResult */
#define TASK_POLL_MODERN_MS 1000 /* pollIntervalMs of a 2026-07-28 task */

struct executions {
    loop_t *loop;
    executions_io_t io; /* the farm's and Redis's verbs (execution.h) */
    jobs_t *jobs;
    records_t *records;
    filestore_t *files; /* linked files kept within their bounds (filestore.h) */
    holds_t *holds;     /* tasks counted against their tenant's max_tasks (holds.h) */
    executions_conf_t conf;
    idmap_t *running; /* id → execution_t, until it concludes */
    struct {
        execution_end_fn *fn;
        void *arg;
    } hooks[END_HOOKS_MAX];
    size_t n_hooks;
    executions_stats_t stats;
};

struct execution {
    executions_t *owner;
    uint8_t id[ID_BYTES];
    char id_str[ID_STR_LEN + 1];
    call_t *call; /* held: the waiting tools/call; NULL once answered (tasks) or cancelled */
    mcp_session_t *session; /* held: task status and resource notifications go there */
    tenant_t *tenant;
    job_t *job; /* until its result */
    char service[JOB_MAX_SERVICE + 1];
    char *profile_reason; /* opts.profile_reason, copied */
    execution_opts_t opts;
    uint64_t created_ms;   /* wall clock */
    uint64_t submitted_us; /* monotonic, when handed to the broker client */
    uint64_t farm_us;      /* submit → result */
    int running_sent;      /* "running" progress already sent */
    int task_cancelled;
    int legacy_task; /* a 2025-11-25 task-augmented call: answered with its task, never more */
    /* after the result */
    int ended;
    result_t res;
    json_t *unkept; /* linked files the store did not keep: [{path, bytes, note}] */
    json_t *call_result;
    uint64_t record_timer;  /* the answer's wait for its record */
    uint64_t promote_timer; /* 2026-07-28: becoming a task if still running */
    record_submit_t *sub;   /* the record's fields at submission (records.h) */
    uint64_t queued_timer;  /* its queued record is written if it still runs then */
    int queued_written;     /* ...and was */
    int exposed;            /* its id left before its end (a task, its queued record) */
    int rendering;          /* its answer is being rendered: a confirmation only marks landed */
    int record_landed;
    int concluded;
    int refs;
};

static void s_unref(execution_t *ex)
{
    if (--ex->refs > 0) return;
    if (ex->promote_timer) loop_timer_cancel(ex->owner->loop, ex->promote_timer);
    if (ex->queued_timer) loop_timer_cancel(ex->owner->loop, ex->queued_timer);
    ex->owner->io.submit_destroy(&ex->sub);
    if (ex->call) {
        call_on_cancel(ex->call, NULL, NULL);
        call_release(ex->call);
    }
    if (ex->ended) result_clear(&ex->res);
    ex->owner->io.release_hold(&ex->opts.task_hold);
    json_decref(ex->unkept);
    json_decref(ex->call_result);
    json_decref(ex->opts.render_ctx);
    json_decref(ex->opts.adjusted);
    free(ex->profile_reason);
    mcp_session_release(ex->session);
    free(ex);
}

static record_about_t s_about(const execution_t *ex)
{
    return (record_about_t){.id = ex->id_str,
                            .tenant = ex->tenant->name,
                            .profile = ex->service,
                            .profile_reason = ex->profile_reason,
                            .tool = ex->opts.tool,
                            .created_ms = ex->created_ms,
                            .ttl_s = ex->tenant->record_ttl_s,
                            .keep = ex->tenant->record_max,
                            .task = ex->opts.task,
                            .task_ttl_ms = ex->opts.task_ttl_ms,
                            .task_cancelled = ex->task_cancelled};
}

/* ---- the end: answer, announce */

static void s_answer_with_task(execution_t *ex);

static void s_answer(execution_t *ex)
{
    call_t *c = ex->call;
    if (!c) return;
    if (ex->legacy_task) { /* its record was slow: the task goes first, as it must */
        s_answer_with_task(ex);
        return;
    }
    ex->call = NULL;
    call_on_cancel(c, NULL, NULL);
    c->farm_us = ex->farm_us;
    if (call_alive(c)) {
        call_progress(c, "done");
        /* logging/setLevel subscribers hear how it ended; failures louder than successes */
        call_log(c, ex->res.status == ST_OK ? LOGLEVEL_DEBUG : LOGLEVEL_WARNING, "snakepit",
                 json_pack("{s:s,s:s,s:f}", "execution_id", ex->id_str, "status",
                           status_name(ex->res.status), "wall_ms", ex->res.wall_ms));
    }
    call_reply(c, json_incref(ex->call_result));
    call_release(c);
}

static void s_conclude(execution_t *ex)
{
    executions_t *self = ex->owner;
    ex->concluded = 1;
    if (ex->promote_timer) {
        loop_timer_cancel(self->loop, ex->promote_timer);
        ex->promote_timer = 0;
    }
    self->io.release_hold(&ex->opts.task_hold); /* an ended task holds nothing on a front-end */
    s_answer(ex);
    log_info("event=job_done job=%s tenant=%s tool=%s status=%s wall_ms=%.3f queue_ms=%.3f",
             ex->id_str, ex->tenant->name, ex->opts.tool, status_name(ex->res.status),
             ex->res.wall_ms, ex->res.queue_ms);
    execution_end_t end = {.id = ex->id_str,
                           .session = ex->session,
                           .tenant = ex->tenant,
                           .status = ex->res.status,
                           .call_result = ex->call_result,
                           .created_ms = ex->created_ms,
                           .task = ex->opts.task,
                           .task_ttl_ms = ex->opts.task_ttl_ms,
                           .task_cancelled = ex->task_cancelled,
                           .exposed = ex->exposed || ex->opts.task};
    for (size_t i = 0; i < self->n_hooks; i++) self->hooks[i].fn(self->hooks[i].arg, &end);
    idmap_del(self->running, ex->id);
    s_unref(ex);
}

static void s_on_record_landed(void *arg, redisReply *reply)
{
    execution_t *ex = arg;
    executions_t *self = ex->owner;
    if (!ex->concluded && !ex->record_landed) {
        if (ex->record_timer) loop_timer_cancel(ex->owner->loop, ex->record_timer);
        if (!reply || reply->type == REDIS_REPLY_ERROR)
            self->stats.unconfirmed[UNCONFIRMED_FAILED]++;
        ex->record_landed = 1;
        if (!ex->rendering) s_conclude(ex); /* else once the answer is rendered */
    }
    s_unref(ex);
}

static void s_on_record_late(loop_t *loop, void *arg)
{
    (void)loop;
    execution_t *ex = arg;
    log_warn("event=record_slow job=%s waited_ms=%ld", ex->id_str, ex->owner->conf.record_wait_ms);
    ex->owner->stats.unconfirmed[UNCONFIRMED_SLOW]++;
    s_conclude(ex); /* the write is on its way; the answer goes without it */
}

/* ---- job events */

static void s_on_accepted(void *owner)
{
    execution_t *ex = owner;
    if (ex->call && call_alive(ex->call)) call_progress(ex->call, "queued");
}

/* A progress chunk from the executor: {stream: "stdout"|"stderr", data: bytes}. Anything
 * else is ignored: progress is a courtesy, never a reason to fail a job. */
static void s_on_progress(void *owner, const uint8_t *body, size_t len)
{
    execution_t *ex = owner;
    call_t *c = ex->call;
    if (!c || !c->progress_token || !call_alive(c)) return;
    if (!ex->running_sent) {
        ex->running_sent = 1;
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

static void s_go_on(execution_t *ex);

static const char *const s_refusal_layers[REFUSAL__COUNT] = {"python", "seccomp", "egress", "other"};

const char *refusal_layer_name(refusal_layer_t layer)
{
    return layer < REFUSAL__COUNT ? s_refusal_layers[layer] : "other";
}

/* Each refused operation of a Result, into the counters by layer and by whether it ended the
 * run. */
static void s_count_refusals(executions_t *self, const result_t *res)
{
    int ended = res->status == ST_SECURITY_VIOLATION;
    for (size_t i = 0; i < res->n_events; i++) {
        refusal_layer_t l = REFUSAL_OTHER;
        for (int k = 0; k < REFUSAL_OTHER; k++)
            if (res->events[i].layer && !strcmp(res->events[i].layer, s_refusal_layers[k]))
                l = (refusal_layer_t)k;
        self->stats.refusals[l][ended] += res->events[i].count;
    }
}

static void s_count(executions_t *self, const char *tool, status_t st)
{
    executions_stats_t *stats = &self->stats;
    size_t i = 0;
    while (i < stats->n_tools && strcmp(stats->tools[i].tool, tool) != 0) i++;
    if (i == stats->n_tools) {
        assert(i < EXECUTIONS_MAX_TOOLS); /* a fixed set: the tools that run on the farm */
        stats->tools[stats->n_tools++].tool = tool;
    }
    stats->tools[i].by_status[st]++;
}

static void s_on_finished(void *owner, const uint8_t *body, size_t len)
{
    execution_t *ex = owner;
    executions_t *self = ex->owner;
    char err[160];
    ex->job = NULL;
    if (ex->queued_timer) { /* it ended before its queued record was due: none is written */
        loop_timer_cancel(self->loop, ex->queued_timer);
        ex->queued_timer = 0;
    }
    ex->farm_us = clock_mono_us() - ex->submitted_us;
    ex->ended = 1;
    if (result_decode(body, len, &ex->res, err, sizeof err) < 0) {
        log_warn("event=bad_result job=%s error=\"%s\"", ex->id_str, err);
        self->stats.bad_results++;
        result_init(&ex->res);
        ex->res.status = ST_INTERNAL_ERROR;
        ex->res.error.present = 1;
        ex->res.error.type = xstrdup("InternalError");
        ex->res.error.message = xstrdup("the farm sent a result the front-end could not read");
    }
    /* No component stamps the wait before a sandbox started (the broker relays results
     * without decoding them): what the farm took beyond the sandbox's own wall time is that
     * wait — the broker's queue, a slot, a pooled child — plus the hops (~0.3 ms here). */
    if (ex->res.queue_ms <= 0) {
        double waited = (double)ex->farm_us / 1000.0 - ex->res.wall_ms;
        ex->res.queue_ms = waited > 0 ? waited : 0;
    }
    if (ex->opts.on_result) {
        ex->refs++; /* until execution_go_on */
        ex->opts.on_result(ex->opts.on_result_arg, ex, &ex->res);
        return;
    }
    s_go_on(ex);
}

void execution_go_on(execution_t *ex)
{
    s_go_on(ex);
    s_unref(ex);
}

static void s_render(execution_t *ex)
{
    ex->call_result = ex->opts.render_with
                          ? ex->opts.render_with(ex->id_str, &ex->res, ex->opts.render_ctx)
                          : ex->opts.render(ex->id_str, &ex->res);
    if (ex->unkept) rich_add_unkept(ex->call_result, ex->unkept);
    if (ex->profile_reason || ex->opts.adjusted)
        outcome_annotate(ex->call_result, ex->service, ex->profile_reason, ex->opts.adjusted);
}

static void s_render_and_record(execution_t *ex)
{
    executions_t *self = ex->owner;
    s_count(self, ex->opts.tool, ex->res.status);
    s_count_refusals(self, &ex->res);
    if (!ex->opts.record) {
        s_render(ex);
        s_conclude(ex);
        return;
    }
    record_about_t about = s_about(ex);
    /* s_on_record_landed may run before record_finished returns (a connection failing as the
     * write goes out answers it at once): its reference is taken first, and one of ours keeps
     * ex across the call (ASan caught a use after free). The record goes first, and Redis
     * writes it while the answer is rendered; a confirmation meanwhile only marks it landed. */
    ex->refs += 2;
    ex->rendering = 1;
    int acked = self->io.finished(self->records, &about, ex->queued_written ? NULL : ex->sub,
                                  &ex->res, s_on_record_landed, ex);
    s_render(ex);
    ex->rendering = 0;
    if (!acked) {
        ex->refs--; /* buffered: no reply will come */
        self->stats.unconfirmed[UNCONFIRMED_BUFFERED]++;
    } else if (!ex->record_landed && self->conf.record_wait_ms > 0) {
        ex->record_timer = loop_timer_add(self->loop, (uint64_t)self->conf.record_wait_ms, 0,
                                          s_on_record_late, ex);
        s_unref(ex);
        return;
    }
    if (!ex->concluded) s_conclude(ex);
    s_unref(ex);
}

/* The store's verdict on the linked files: those it did not keep leave the Result (neither the
 * answer nor the record links to a file that is not there) and are named with the reason. */
static void s_on_files_kept(void *arg, const file_unkept_t *unkept, size_t n)
{
    execution_t *ex = arg;
    result_t *res = &ex->res;
    if (n) ex->unkept = json_array();
    for (size_t i = n; i-- > 0;) { /* highest index first: the lower ones stay where they are */
        result_file_t *f = &res->files[unkept[i].index];
        json_array_insert_new(ex->unkept, 0,
                              json_pack("{s:o,s:I,s:s}", "path", json_str_safe(f->path), "bytes",
                                        (json_int_t)f->len, "note", unkept[i].note));
        free(f->path);
        free(f->data);
        memmove(f, f + 1, (res->n_files - unkept[i].index - 1) * sizeof *f);
        res->n_files--;
    }
    s_render_and_record(ex);
    s_unref(ex);
}

static void s_go_on(execution_t *ex)
{
    if (ex->opts.record && filestore_has_links(&ex->res)) {
        ex->refs++; /* until the store says which it kept */
        ex->owner->io.keep_files(ex->owner->files, ex->tenant, ex->id_str, &ex->res,
                                 s_on_files_kept, ex);
        return;
    }
    s_render_and_record(ex);
}

static const job_events_t s_events = {s_on_accepted, s_on_progress, s_on_finished};

/* ---- the call's side */

/* notifications/cancelled, or the session ended (call.h's cancel callback): the call will not
 * be answered; the job goes on to its (cancelled) result and record. */
static void s_on_call_cancelled(void *arg, call_t *c)
{
    execution_t *ex = arg;
    ex->call = NULL;
    if (ex->job) ex->owner->io.cancel(ex->owner->jobs, ex->job); /* may conclude ex at once */
    call_release(c);
}

/* A task-augmented call is answered at once with the task (CreateTaskResult); the outcome is
 * fetched later with tasks/get and tasks/result. */
static void s_answer_with_task(execution_t *ex)
{
    json_t *task = task_json(ex->id_str, "working", ex->created_ms, ex->created_ms,
                             ex->opts.task_ttl_ms, NULL);
    json_object_set_new(task, "pollInterval", json_integer(TASK_POLL_MS));
    call_t *c = ex->call;
    ex->call = NULL;
    call_on_cancel(c, NULL, NULL);
    call_reply(c, json_pack("{s:o}", "task", task));
    call_release(c);
}

/* The task's record is in Redis (or cannot be now): its id may leave, since a tasks/get on any
 * front-end now finds it. */
static void s_on_legacy_task_recorded(void *arg, redisReply *reply)
{
    (void)reply;
    execution_t *ex = arg;
    if (ex->call) s_answer_with_task(ex);
    s_unref(ex);
}

/* ---- the queued record: written when the job still runs after --record-queued-after-ms (so
 * that it can be looked up meanwhile), or at once when its id leaves before its end (a task) */

static void s_write_queued(execution_t *ex)
{
    if (!ex->sub || ex->queued_written) return;
    if (ex->queued_timer) {
        loop_timer_cancel(ex->owner->loop, ex->queued_timer);
        ex->queued_timer = 0;
    }
    record_about_t about = s_about(ex);
    ex->owner->io.submitted(ex->owner->records, &about, ex->sub);
    ex->queued_written = 1;
    ex->exposed = 1; /* listed while it runs: its id may be subscribed to */
}

static void s_on_queued_due(loop_t *loop, void *arg)
{
    (void)loop;
    execution_t *ex = arg;
    ex->queued_timer = 0;
    if (!ex->ended) s_write_queued(ex);
}

/* ---- 2026-07-28 tasks: the server turns a call still running into a task */

/* Redis has the task (or could not take it): answer with the task, unless the result won. */
static void s_on_task_recorded(void *arg, redisReply *reply)
{
    execution_t *ex = arg;
    call_t *c = ex->call;
    int ok = reply && reply->type != REDIS_REPLY_ERROR;
    if (c && !ex->ended && ok) {
        ex->call = NULL;
        call_on_cancel(c, NULL, NULL); /* a task outlives its request's stream */
        json_t *t = execution_task_modern(ex);
        json_object_set_new(t, "resultType", json_string("task"));
        call_reply(c, t);
        call_release(c);
        log_info("event=task_created job=%s tenant=%s", ex->id_str, ex->tenant->name);
    }
    /* else the call keeps waiting for its result; the task fields may still reach the record
     * (the journal sends the write again on the next connection), so the final record keeps
     * writing them too and never leaves a finished task `working` */
    s_unref(ex);
}

/* Its place among the tenant's max_tasks (or not: then it stays a call, which is all a
 * 2026-07-28 client asked for — the server decides, and nothing is refused). */
static void s_on_promote_hold(void *arg, hold_t *hold, long held)
{
    execution_t *ex = arg;
    if (!hold || ex->ended || !ex->call || !call_alive(ex->call)) {
        if (!hold && held >= 0)
            log_info("event=task_not_created job=%s tenant=%s reason=max_tasks held=%ld "
                     "limit=%ld",
                     ex->id_str, ex->tenant->name, held, ex->tenant->max_tasks);
        ex->owner->io.release_hold(&hold);
        s_unref(ex);
        return;
    }
    ex->opts.task_hold = hold;
    s_write_queued(ex); /* as the call it was: the task script adds the task */
    ex->opts.task = 1;
    ex->opts.task_ttl_ms = ex->owner->io.ttl_ms(ex->owner->records);
    record_about_t about = s_about(ex);
    /* our reference passes to s_on_task_recorded */
    if (!ex->owner->io.task_started(ex->owner->records, &about, s_on_task_recorded, ex))
        s_on_task_recorded(ex, NULL); /* Redis away: no task can be promised now */
}

static void s_on_promote(loop_t *loop, void *arg)
{
    (void)loop;
    execution_t *ex = arg;
    ex->promote_timer = 0;
    if (ex->ended || !ex->call || !call_alive(ex->call)) return;
    ex->refs++; /* for s_on_promote_hold, then s_on_task_recorded */
    ex->owner->io.take_hold(ex->owner->holds, HOLD_TASK, ex->tenant->name, ex->tenant->max_tasks,
                            ex->id_str, s_on_promote_hold, ex);
}

void execution_start(executions_t *self, call_t *c, jobspec_t *spec, const execution_opts_t *opts)
{
    execution_t *ex = xcalloc(1, sizeof *ex);
    ex->owner = self;
    id_new(ex->id);
    id_format(ex->id, ex->id_str);
    ex->opts = *opts;
    ex->legacy_task = opts->task;
    json_incref(ex->opts.render_ctx);
    json_incref(ex->opts.adjusted);
    if (opts->profile_reason) ex->profile_reason = xstrdup(opts->profile_reason);
    ex->opts.profile_reason = NULL;                /* ours is ex->profile_reason */
    long ttl_max = self->io.ttl_ms(self->records); /* the task lives in the record */
    if (ex->opts.task && (ex->opts.task_ttl_ms < 0 || ex->opts.task_ttl_ms >= ttl_max))
        ex->opts.task_ttl_ms = ttl_max;
    ex->call = c;
    call_hold(c);
    call_on_cancel(c, s_on_call_cancelled, ex);
    ex->session = c->session;
    mcp_session_hold(ex->session);
    ex->tenant = c->tenant;
    snprintf(ex->service, sizeof ex->service, "%s", spec->service);
    ex->created_ms = clock_wall_ms();
    ex->refs = 1; /* the running map's, dropped when it concludes */
    idmap_put(self->running, ex->id, ex);
    memcpy(spec->id, ex->id, ID_BYTES);
    spec->submitted_ms = ex->created_ms;
    if (ex->opts.may_become_task && !ex->opts.task && self->conf.task_after_ms > 0)
        ex->promote_timer =
            loop_timer_add(self->loop, (uint64_t)self->conf.task_after_ms, 0, s_on_promote, ex);
    record_about_t about = s_about(ex);
    if (ex->opts.record) ex->sub = self->io.submit_new(self->records, &about, spec);
    ex->submitted_us = clock_mono_us();
    ex->job = self->io.submit(self->jobs, spec, ex->tenant->max_concurrency, &s_events, ex);
    /* the record is written while the job runs, never before it leaves: at its end, and when
     * it is submitted too only if it is a task or still runs after --record-queued-after-ms */
    if (ex->opts.record) {
        if (ex->opts.task || self->conf.record_queued_after_ms <= 0)
            s_write_queued(ex);
        else if (!ex->ended)
            ex->queued_timer = loop_timer_add(self->loop, (uint64_t)self->conf.record_queued_after_ms,
                                              0, s_on_queued_due, ex);
        if (ex->opts.task) { /* 2025-11-25 tasks: answered once the record is in */
            ex->refs++;
            if (!self->io.task_started(self->records, &about, s_on_legacy_task_recorded, ex))
                s_on_legacy_task_recorded(ex, NULL); /* Redis away: as before, at once */
        }
    } else if (ex->opts.task) {
        s_answer_with_task(ex);
    }
}

/* ---- tasks */

execution_t *executions_find_task(executions_t *self, const char *id, const tenant_t *tenant)
{
    uint8_t raw[ID_BYTES];
    if (!id || id_parse(id, raw) < 0) return NULL;
    execution_t *ex = idmap_get(self->running, raw);
    return ex && ex->opts.task && (!tenant || ex->tenant == tenant) ? ex : NULL;
}

json_t *execution_task(const execution_t *ex)
{
    return task_json(ex->id_str, ex->task_cancelled ? "cancelled" : "working", ex->created_ms,
                     ex->created_ms, ex->opts.task_ttl_ms,
                     ex->task_cancelled ? "cancellation requested" : NULL);
}

json_t *execution_task_modern(const execution_t *ex)
{
    uint64_t now = clock_wall_ms();
    return task_json_modern(ex->id_str, ex->task_cancelled ? "cancelled" : "working",
                            ex->created_ms, ex->task_cancelled ? now : ex->created_ms,
                            ex->opts.task_ttl_ms, TASK_POLL_MODERN_MS,
                            ex->task_cancelled ? "cancellation requested" : NULL);
}

tenant_t *execution_tenant(const execution_t *ex)
{
    return ex->tenant;
}

int execution_ended(const execution_t *ex)
{
    return ex->ended;
}

json_t *execution_cancel_task(execution_t *ex)
{
    assert(!ex->ended); /* tasks.c refuses to cancel a task whose result is in */
    ex->task_cancelled = 1;
    ex->owner->io.task_status(ex->owner->records, ex->id_str, "cancelled");
    json_t *t = task_json(ex->id_str, "cancelled", ex->created_ms, clock_wall_ms(),
                          ex->opts.task_ttl_ms, "cancellation requested");
    if (ex->job) ex->owner->io.cancel(ex->owner->jobs, ex->job); /* may conclude ex at once */
    return t;
}

/* ---- the table */

executions_t *executions_new(loop_t *loop, jobs_t *jobs, records_t *records, filestore_t *files,
                             holds_t *holds, const executions_conf_t *conf)
{
    static const executions_io_t io = {
        jobs_submit,         jobs_cancel,           records_ttl_ms, record_submit_new,
        record_submit_destroy, record_submitted,    record_finished, record_task_started,
        record_task_status,  filestore_keep,        holds_take,     holds_release};
    return executions_new_io(loop, &io, jobs, records, files, holds, conf);
}

executions_t *executions_new_io(loop_t *loop, const executions_io_t *io, jobs_t *jobs,
                                records_t *records, filestore_t *files, holds_t *holds,
                                const executions_conf_t *conf)
{
    executions_t *self = xcalloc(1, sizeof *self);
    self->loop = loop;
    self->io = *io;
    self->jobs = jobs;
    self->records = records;
    self->files = files;
    self->holds = holds;
    self->conf = *conf;
    self->running = idmap_new();
    return self;
}

static void s_drop(void *arg, const uint8_t *id, void *value)
{
    (void)arg, (void)id;
    execution_t *ex = value;
    if (ex->record_timer && !ex->concluded) loop_timer_cancel(ex->owner->loop, ex->record_timer);
    ex->refs = 1;
    s_unref(ex);
}

void executions_destroy(executions_t **self_p)
{
    executions_t *self = *self_p;
    if (!self) return;
    idmap_each(self->running, s_drop, NULL);
    idmap_destroy(&self->running);
    free(self);
    *self_p = NULL;
}

void executions_on_end(executions_t *self, execution_end_fn *fn, void *arg)
{
    assert(self->n_hooks < END_HOOKS_MAX); /* a fixed set of subscribers, made at start */
    self->hooks[self->n_hooks].fn = fn;
    self->hooks[self->n_hooks].arg = arg;
    self->n_hooks++;
}

const executions_stats_t *executions_stats(const executions_t *self)
{
    return &self->stats;
}

const char *unconfirmed_name(unconfirmed_t why)
{
    static const char *const names[UNCONFIRMED__COUNT] = {[UNCONFIRMED_BUFFERED] = "buffered",
                                                          [UNCONFIRMED_SLOW] = "slow",
                                                          [UNCONFIRMED_FAILED] = "failed"};
    return names[why];
}
