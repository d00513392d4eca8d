/* mcp-frontend/state/records.c — see records.h. Each write is one EVAL of a script from
 * record_scripts.h, its arguments built as an argv array (binary-safe: code may hold any
 * bytes) and handed to the store, which pipelines and journals them. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/base64.h"
#include "common/buf.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/sha256.h"
#include "common/utf8.h"
#include "mcp-frontend/render/outcome.h"
#include "mcp-frontend/rpc/task.h"
#include "record_scripts.h"
#include "records.h"

#define MAX_ARGS    96
#define USAGE_SWEEP 7 /* old usage days deleted at a day's first count, past --usage-days */
#define DAY_MS      (86400ULL * 1000)

struct records {
    store_t *store;
    records_conf_t conf;
    char instance[80];
};

records_t *records_new(store_t *store, const records_conf_t *conf, const char *instance)
{
    records_t *self = xcalloc(1, sizeof *self);
    self->store = store;
    self->conf = *conf;
    snprintf(self->instance, sizeof self->instance, "%s", instance);
    return self;
}

void records_destroy(records_t **self_p)
{
    free(*self_p);
    *self_p = NULL;
}

long records_ttl_ms(const records_t *self)
{
    return self->conf.ttl_s * 1000;
}

/* A script's arguments under construction: values are pointers the call keeps alive, or
 * copies owned here. */
typedef struct {
    const char *argv[MAX_ARGS];
    size_t len[MAX_ARGS];
    char *owned[MAX_ARGS];
    int argc, n_owned;
} args_t;

static void s_arg(args_t *a, const char *value, size_t len)
{
    if (a->argc == MAX_ARGS) return;
    a->argv[a->argc] = value ? value : "";
    a->len[a->argc++] = value ? len : 0;
}

static void s_arg_str(args_t *a, const char *value)
{
    s_arg(a, value, value ? strlen(value) : 0);
}

static void s_arg_own(args_t *a, char *s, size_t len)
{
    if (a->n_owned == MAX_ARGS || a->argc == MAX_ARGS) {
        free(s);
        return;
    }
    a->owned[a->n_owned++] = s;
    s_arg(a, s, len);
}

static void s_arg_fmt(args_t *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void s_arg_fmt(args_t *a, const char *fmt, ...)
{
    char *s;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (n >= 0) s_arg_own(a, s, (size_t)n);
}

/* A field and its value. */
static void s_field(args_t *a, const char *name, const char *value, size_t len)
{
    s_arg_str(a, name);
    s_arg(a, value, len);
}

static void s_field_str(args_t *a, const char *name, const char *value)
{
    s_field(a, name, value, value ? strlen(value) : 0);
}

#define s_field_fmt(a, name, ...) (s_arg_str((a), (name)), s_arg_fmt((a), __VA_ARGS__))

/* A head: valid UTF-8, at most cap bytes. */
static void s_field_head(args_t *a, const char *name, const char *data, size_t len, size_t cap)
{
    buf_t b;
    buf_init(&b);
    utf8_sanitize(&b, data ? data : "", data ? utf8_prefix(data, len, cap) : 0);
    size_t n;
    char *s = buf_steal(&b, &n);
    s_arg_str(a, name);
    s_arg_own(a, s, n);
}

static void s_args_free(args_t *a)
{
    for (int i = 0; i < a->n_owned; i++) free(a->owned[i]);
    a->n_owned = 0;
}

static long s_ttl(const records_t *self, const record_about_t *r)
{
    return r->ttl_s > 0 ? r->ttl_s : self->conf.ttl_s;
}

/* ---- submitted --------------------------------------------------------------------------- */

static void s_code(records_t *self, args_t *a, const jobspec_t *spec)
{
    size_t keep = utf8_prefix(spec->code, spec->code_len, (size_t)self->conf.code_cap);
    s_field(a, "code", spec->code, keep);
    if (keep < spec->code_len) {
        char hex[65];
        sha256_hex(spec->code, spec->code_len, hex);
        s_field_fmt(a, "code_sha256", "%s", hex);
        s_field_str(a, "code_truncated", "1");
    }
    s_field_fmt(a, "code_bytes", "%zu", spec->code_len);
}

void record_submitted(records_t *self, const record_about_t *r, const jobspec_t *spec)
{
    char key[64], execs[96], tasks[96];
    snprintf(key, sizeof key, "sp:exec:%s", r->id);
    snprintf(execs, sizeof execs, "sp:t:%s:execs", r->tenant);
    snprintf(tasks, sizeof tasks, "sp:t:%s:tasks", r->tenant);
    args_t a = {0};
    s_arg_str(&a, key);
    s_arg_str(&a, execs);
    s_arg_str(&a, tasks);
    s_arg_fmt(&a, "%ld", s_ttl(self, r));
    s_arg_fmt(&a, "%llu", (unsigned long long)r->created_ms);
    s_arg_str(&a, r->id);
    s_arg_fmt(&a, "%ld", r->keep > 0 ? r->keep : self->conf.keep);
    s_arg_str(&a, r->task ? "1" : "0");
    s_field_str(&a, "tenant", r->tenant);
    s_field_str(&a, "profile", r->profile);
    if (r->profile_reason) s_field_str(&a, "profile_reason", r->profile_reason);
    s_field_str(&a, "tool", r->tool);
    s_code(self, &a, spec);
    s_field_fmt(&a, "created_ms", "%llu", (unsigned long long)r->created_ms);
    s_field_fmt(&a, "timeout_ms", "%ld", spec->limits.wall_ms);
    s_field_fmt(&a, "memory_mb", "%ld", spec->limits.memory_mb);
    s_field_str(&a, "frontend", self->instance);
    if (spec->has_session) { /* a session's cell (issue 12) */
        char sid[ID_STR_LEN + 1];
        id_format(spec->session, sid);
        s_field_fmt(&a, "session_id", "%s", sid);
    }
    if (r->task) {
        s_field_str(&a, "task", "1");
        s_field_str(&a, "task_status", "working");
        s_field_fmt(&a, "task_ttl_ms", "%ld", r->task_ttl_ms);
        s_field_fmt(&a, "task_updated_ms", "%llu", (unsigned long long)r->created_ms);
    }
    store_write_eval(self->store, RECORD_SUBMIT_LUA, 3, a.argc, a.argv, a.len, NULL, NULL);
    s_args_free(&a);
}

/* ---- finished ---------------------------------------------------------------------------- */

/* The Result as the record keeps it, its msgpack in base64 (records stay text, for every
 * client that reads them as such): whole when that fits --result-cap; else a copy with the
 * streams cut to their heads and no image or file bodies (truncated.* say so), *cut set; NULL
 * (nothing kept) when even that is too big. */
static char *s_result_text(records_t *self, const result_t *res, size_t *len, int *cut)
{
    buf_t b, text;
    buf_init(&b);
    buf_init(&text);
    result_encode(res, &b);
    *cut = 0;
    if ((long)(b.len + 2) / 3 * 4 > self->conf.result_cap) {
        result_t c = *res; /* shallow: only lengths and counts change */
        size_t head = (size_t)self->conf.head_cap;
        if (c.out_len > head) c.out_len = utf8_prefix(c.out, c.out_len, head), c.out_truncated = 1;
        if (c.err_len > head) c.err_len = utf8_prefix(c.err, c.err_len, head), c.err_truncated = 1;
        if (c.n_images) c.n_images = 0, c.images_truncated = 1;
        if (c.n_files) c.n_files = 0, c.files_truncated = 1;
        buf_reset(&b);
        result_encode(&c, &b);
        *cut = 1;
    }
    base64_encode(&text, b.data, b.len);
    buf_free(&b);
    if ((long)text.len > self->conf.result_cap) {
        buf_free(&text);
        return NULL;
    }
    return buf_steal(&text, len);
}

const char *record_usage_key(char out[RECORD_USAGE_KEY_MAX], const char *tenant, uint64_t ms)
{
    time_t secs = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&secs, &tm);
    snprintf(out, RECORD_USAGE_KEY_MAX, "sp:t:%s:use:%04d%02d%02d", tenant, tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday);
    return out;
}

/* Usage days to delete at a day's first count: the week just past --usage-days. */
static void s_usage_keys(records_t *self, args_t *a, const char *tenant, uint64_t created_ms)
{
    char key[RECORD_USAGE_KEY_MAX];
    for (int k = 0; k < USAGE_SWEEP; k++) {
        uint64_t ms = created_ms - (uint64_t)(self->conf.usage_days + 1 + k) * DAY_MS;
        s_arg_fmt(a, "%s", record_usage_key(key, tenant, ms)); /* copied: key goes */
    }
}

/* 1 when the flat fields say everything the Result does, so it need not be kept too (history.c
 * renders from them): no variables, validation, traceback, images, files or rich outputs (but
 * the trailing expression's repr); streams within
 * their heads; error texts and the result's repr within their fields. Most jobs are like
 * that, and it halves what a record costs (README "Failure and recovery"). */
/* The one output of a trailing expression that has no richer representation than its repr
 * (rich.py): it is the result_repr the record keeps, so a flag says it (result_out). */
static int s_output_is_repr(const result_t *res)
{
    if (res->n_outputs != 1 || res->outputs_truncated || !res->result) return 0;
    const result_output_t *o = &res->outputs[0];
    return o->index == 0 && o->kind && strcmp(o->kind, "result") == 0 && o->mime &&
           strcmp(o->mime, "text/plain") == 0 && o->len == strlen(res->result) &&
           memcmp(o->data, res->result, o->len) == 0;
}

static int s_flat_is_whole(const records_t *self, const result_t *res)
{
    size_t head = (size_t)self->conf.head_cap;
    return !res->variables && !res->validation && !res->error.traceback && !res->n_images &&
           !res->egress.n && /* the destinations live in the whole Result */
           !res->n_files && !res->images_truncated && !res->files_truncated && !res->exit.code &&
           !res->n_events && !res->events_truncated &&
           (!res->n_outputs || s_output_is_repr(res)) && !res->outputs_truncated &&
           res->out_len <= head && res->err_len <= head && utf8_valid(res->out, res->out_len) &&
           utf8_valid(res->err, res->err_len) &&
           (!res->result || strlen(res->result) <= RECORD_REPR_MAX) &&
           (!res->error.type || strlen(res->error.type) <= 256) &&
           (!res->error.message || strlen(res->error.message) <= 4096);
}

/* The field (its value copied), unless its value is the one a reader assumes when it is
 * missing (0, ""). */
static void s_field_nonzero(args_t *a, const char *name, const char *value)
{
    if (!value || !value[0] || strcmp(value, "0") == 0) return;
    s_arg_str(a, name);
    s_arg_own(a, xstrdup(value), strlen(value));
}

static void s_final_fields(records_t *self, args_t *a, const record_about_t *r, const result_t *res,
                           uint64_t finished)
{
    size_t head = (size_t)self->conf.head_cap;
    char n[24];
    s_field_str(a, "status", status_name(res->status));
    s_field_fmt(a, "started_ms", "%llu",
                (unsigned long long)(r->created_ms + (uint64_t)res->queue_ms));
    s_field_fmt(a, "finished_ms", "%llu", (unsigned long long)finished);
    s_field_fmt(a, "queue_ms", "%.3f", res->queue_ms);
    s_field_fmt(a, "wall_ms", "%.3f", res->wall_ms);
    s_field_fmt(a, "cpu_ms", "%.3f", res->cpu_ms);
    s_field_fmt(a, "max_rss_kb", "%ld", res->max_rss_kb);
    s_field_str(a, "exit_reason", res->exit.reason);
    snprintf(n, sizeof n, "%d", res->exit.signal);
    s_field_nonzero(a, "exit_signal", n);
    s_field_nonzero(a, "exit_syscall", res->exit.syscall);
    snprintf(n, sizeof n, "%d", res->exit.code);
    s_field_nonzero(a, "exit_code", n);
    if (res->n_events) { /* what the sandbox refused, caught or not: [{operation, target, ...}] */
        json_t *events = outcome_security_events(res);
        char *text = json_dumps(events, JSON_COMPACT);
        json_decref(events);
        if (text) {
            s_arg_str(a, "security_events");
            s_arg_own(a, text, strlen(text));
        }
    }
    s_field_head(a, "stdout", res->out, res->out_len, head);
    if (res->err_len) s_field_head(a, "stderr", res->err, res->err_len, head);
    s_field_nonzero(a, "stdout_truncated", res->out_truncated || res->out_len > head ? "1" : "0");
    s_field_nonzero(a, "stderr_truncated", res->err_truncated || res->err_len > head ? "1" : "0");
    if (res->error.present) {
        const char *t = res->error.type, *m = res->error.message;
        s_field_head(a, "error_type", t, t ? strlen(t) : 0, 256);
        s_field_head(a, "error_message", m, m ? strlen(m) : 0, 4096);
        s_field_fmt(a, "error_line", "%ld", res->error.line);
    }
    s_field_str(a, "executor", res->executor);
    snprintf(n, sizeof n, "%u", res->attempt);
    s_field_nonzero(a, "attempt", n);
    if (s_flat_is_whole(self, res)) {
        if (res->result) s_field_str(a, "result_repr", res->result);
        if (s_output_is_repr(res)) s_field_str(a, "result_out", "1");
    } else {
        size_t len = 0;
        int cut = 0;
        char *bytes = s_result_text(self, res, &len, &cut);
        if (bytes) {
            s_arg_str(a, "result");
            s_arg_own(a, bytes, len);
        }
        if (cut || !bytes) s_field_str(a, "result_cut", bytes ? "1" : "dropped");
    }
    if (r->task) {
        s_field_str(a, "task_status", task_status_for(res->status, r->task_cancelled));
        s_field_fmt(a, "task_updated_ms", "%llu", (unsigned long long)finished);
    }
}

int record_finished(records_t *self, const record_about_t *r, const result_t *res,
                    store_reply_fn *landed, void *arg)
{
    char key[64], use[RECORD_USAGE_KEY_MAX];
    snprintf(key, sizeof key, "sp:exec:%s", r->id);
    record_usage_key(use, r->tenant, r->created_ms);
    args_t a = {0};
    s_arg_str(&a, key);
    s_arg_str(&a, use);
    s_arg_str(&a, self->conf.export_stream);
    s_usage_keys(self, &a, r->tenant, r->created_ms);
    int nkeys = a.argc;
    s_arg_fmt(&a, "%ld", s_ttl(self, r));
    s_arg_str(&a, status_name(res->status));
    s_arg_fmt(&a, "%lld", (long long)(res->cpu_ms + 0.5));
    s_arg_fmt(&a, "%lld", (long long)(res->wall_ms + 0.5));
    s_arg_fmt(&a, "%ld", self->conf.export_maxlen);
    s_arg_str(&a, r->id);
    if (res->session.present) { /* RECORD_FINISH_LUA counts the cell's usage from these */
        s_field_fmt(&a, "cell", "%u", res->session.cell);
        s_field_fmt(&a, "session_memory_kb", "%llu", (unsigned long long)res->session.memory_kb);
    }
    if (res->egress.n) { /* the network's totals, which RECORD_FINISH_LUA adds to the usage */
        uint64_t out = 0, in = 0, conns = 0, refused = 0;
        for (size_t i = 0; i < res->egress.n; i++) {
            const result_egress_t *e = &res->egress.list[i];
            out += e->bytes_out, in += e->bytes_in, conns += e->connections;
            if (e->verdict && !strcmp(e->verdict, "refused")) refused += e->connections;
        }
        s_field_fmt(&a, "egress_bytes_out", "%llu", (unsigned long long)out);
        s_field_fmt(&a, "egress_bytes_in", "%llu", (unsigned long long)in);
        s_field_fmt(&a, "egress_connections", "%llu", (unsigned long long)conns);
        s_field_fmt(&a, "egress_refused", "%llu", (unsigned long long)refused);
    }
    s_final_fields(self, &a, r, res, clock_wall_ms());
    /* Redis answers in order, so this write's answer also says the earlier ones are in (the
     * linked files' among them: filestore.h) */
    int acked = store_write_eval(self->store, RECORD_FINISH_LUA, nkeys, a.argc, a.argv, a.len,
                                 landed, arg) == 0;
    s_args_free(&a);
    return acked;
}

int record_task_started(records_t *self, const record_about_t *r, store_reply_fn *landed, void *arg)
{
    char key[64], tasks[96];
    snprintf(key, sizeof key, "sp:exec:%s", r->id);
    snprintf(tasks, sizeof tasks, "sp:t:%s:tasks", r->tenant);
    args_t a = {0};
    s_arg_str(&a, key);
    s_arg_str(&a, tasks);
    s_arg_fmt(&a, "%ld", s_ttl(self, r));
    s_arg_fmt(&a, "%llu", (unsigned long long)r->created_ms);
    s_arg_str(&a, r->id);
    s_arg_fmt(&a, "%ld", r->keep > 0 ? r->keep : self->conf.keep);
    s_arg_fmt(&a, "%ld", r->task_ttl_ms);
    s_arg_fmt(&a, "%llu", (unsigned long long)clock_wall_ms());
    /* after the submit script on the same connection: its answer covers both */
    int acked =
        store_write_eval(self->store, RECORD_TASK_LUA, 2, a.argc, a.argv, a.len, landed, arg) == 0;
    s_args_free(&a);
    return acked;
}

void record_task_status(records_t *self, const char *id, const char *task_status)
{
    char key[64];
    snprintf(key, sizeof key, "sp:exec:%s", id);
    args_t a = {0};
    s_arg_str(&a, key);
    s_arg_str(&a, task_status);
    s_arg_fmt(&a, "%llu", (unsigned long long)clock_wall_ms());
    store_write_eval(self->store, RECORD_TASK_STATUS_LUA, 1, a.argc, a.argv, a.len, NULL, NULL);
    s_args_free(&a);
}
