/* mcp-frontend/state/records.c — see records.h. Each write is one script of record_scripts.h, sent
 * by SHA (store_write_script), its arguments laid out in one buffer (binary-safe: code may hold
 * any bytes) and handed to the store, which pipelines and journals them. */
#define _GNU_SOURCE
#include <math.h>
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

#define MAX_ARGS    128
#define USAGE_SWEEP 7 /* old usage days deleted at a day's first count, past --usage-days */
#define DAY_MS      (86400ULL * 1000)
#define UPKEEP_BUCKETS 64
#define TRIM_EVERY_MAX 64    /* writes between two trims of a tenant's index, at most */
#define TRIM_AGE_MAX_MS 60000 /* ...and milliseconds */

/* What this front-end remembers of a tenant's records between writes, so that the upkeep a
 * write may do — trimming the tenant's index, sweeping old usage days — is done now and then,
 * not by every write (records.h). */
typedef struct upkeep {
    struct upkeep *next;
    uint64_t trimmed_ms; /* monotonic; 0: never here */
    long since_trim;     /* writes since */
    uint64_t swept_day;  /* the last UTC day (days since the epoch) whose sweep went out */
    char tenant[];
} upkeep_t;

struct records {
    store_t *store;
    records_conf_t conf;
    char instance[80];
    store_script_t *submit, *finish, *task, *task_status; /* record_scripts.h, by SHA */
    upkeep_t *upkeep[UPKEEP_BUCKETS];
};

/* A script's arguments: every value copied, back to back, into one buffer. */
typedef struct {
    buf_t bytes;
    size_t off[MAX_ARGS], len[MAX_ARGS];
    const char *argv[MAX_ARGS]; /* s_resolve: pointers into bytes */
    int argc;
} args_t;

/* The fields of a record at its submission, kept from the job's start until they are written
 * (record_submitted, or record_finished in the same script as the final ones). */
struct record_submit {
    args_t fields;
    int written;
};

records_t *records_new(store_t *store, const records_conf_t *conf, const char *instance)
{
    records_t *self = xcalloc(1, sizeof *self);
    self->store = store;
    self->conf = *conf;
    snprintf(self->instance, sizeof self->instance, "%s", instance);
    self->submit = store_script(store, RECORD_SUBMIT_LUA);
    self->finish = store_script(store, RECORD_FINISH_LUA);
    self->task = store_script(store, RECORD_TASK_LUA);
    self->task_status = store_script(store, RECORD_TASK_STATUS_LUA);
    return self;
}

void records_destroy(records_t **self_p)
{
    records_t *self = *self_p;
    if (!self) return;
    for (int i = 0; i < UPKEEP_BUCKETS; i++)
        while (self->upkeep[i]) {
            upkeep_t *u = self->upkeep[i];
            self->upkeep[i] = u->next;
            free(u);
        }
    free(self);
    *self_p = NULL;
}

long records_ttl_ms(const records_t *self)
{
    return self->conf.ttl_s * 1000;
}

/* ---- arguments ---------------------------------------------------------------------------- */

static void s_mark(args_t *a, size_t start)
{
    if (a->argc == MAX_ARGS) { /* never with the fields a record has; refuse, do not overrun */
        a->bytes.len = start;
        return;
    }
    a->off[a->argc] = start;
    a->len[a->argc++] = a->bytes.len - start;
}

static void s_arg(args_t *a, const char *value, size_t len)
{
    size_t start = a->bytes.len;
    if (value && len) buf_append(&a->bytes, value, len);
    s_mark(a, start);
}

static void s_arg_str(args_t *a, const char *value)
{
    s_arg(a, value, value ? strlen(value) : 0);
}

static void s_arg_u64(args_t *a, uint64_t v)
{
    char num[24], *p = num + sizeof num;
    do *--p = (char)('0' + v % 10);
    while ((v /= 10) != 0);
    s_arg(a, p, (size_t)(num + sizeof num - p));
}

static void s_arg_i64(args_t *a, long long v)
{
    if (v >= 0) {
        s_arg_u64(a, (uint64_t)v);
        return;
    }
    size_t start = a->bytes.len;
    buf_append(&a->bytes, "-", 1);
    uint64_t m = (uint64_t)(-(v + 1)) + 1;
    char num[24], *p = num + sizeof num;
    do *--p = (char)('0' + m % 10);
    while ((m /= 10) != 0);
    buf_append(&a->bytes, p, (size_t)(num + sizeof num - p));
    s_mark(a, start);
}

/* "%.3f", as the record has always written milliseconds, without printf's float path. */
static void s_arg_ms(args_t *a, double v)
{
    if (!isfinite(v) || fabs(v) > 1e15) {
        char s[64];
        int n = snprintf(s, sizeof s, "%.3f", v);
        s_arg(a, s, n > 0 ? (size_t)n : 0);
        return;
    }
    long long x = llround(v * 1000.0);
    size_t start = a->bytes.len;
    if (x < 0) buf_append(&a->bytes, "-", 1), x = -x;
    char num[24], *p = num + sizeof num;
    uint64_t whole = (uint64_t)x / 1000, frac = (uint64_t)x % 1000;
    do *--p = (char)('0' + whole % 10);
    while ((whole /= 10) != 0);
    buf_append(&a->bytes, p, (size_t)(num + sizeof num - p));
    char f[4] = {'.', (char)('0' + frac / 100), (char)('0' + frac / 10 % 10), (char)('0' + frac % 10)};
    buf_append(&a->bytes, f, 4);
    s_mark(a, start);
}

static void s_append_args(args_t *a, const args_t *b)
{
    for (int i = 0; i < b->argc; i++) s_arg(a, (const char *)b->bytes.data + b->off[i], b->len[i]);
}

static void s_resolve(args_t *a)
{
    for (int i = 0; i < a->argc; i++) a->argv[i] = (const char *)a->bytes.data + a->off[i];
}

static void s_args_free(args_t *a)
{
    buf_free(&a->bytes);
    a->argc = 0;
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

static void s_field_u64(args_t *a, const char *name, uint64_t v)
{
    s_arg_str(a, name);
    s_arg_u64(a, v);
}

static void s_field_i64(args_t *a, const char *name, long long v)
{
    s_arg_str(a, name);
    s_arg_i64(a, v);
}

static void s_field_ms(args_t *a, const char *name, double v)
{
    s_arg_str(a, name);
    s_arg_ms(a, v);
}

/* A head: valid UTF-8, at most cap bytes. */
static void s_field_head(args_t *a, const char *name, const char *data, size_t len, size_t cap)
{
    s_arg_str(a, name);
    size_t start = a->bytes.len;
    utf8_sanitize(&a->bytes, data ? data : "", data ? utf8_prefix(data, len, cap) : 0);
    s_mark(a, start);
}

/* The field, unless its value is the one a reader assumes when it is missing (0, ""). */
static void s_field_nonzero(args_t *a, const char *name, const char *value)
{
    if (!value || !value[0] || strcmp(value, "0") == 0) return;
    s_field_str(a, name, value);
}

static long s_ttl(const records_t *self, const record_about_t *r)
{
    return r->ttl_s > 0 ? r->ttl_s : self->conf.ttl_s;
}

static long s_keep(const records_t *self, const record_about_t *r)
{
    return r->keep > 0 ? r->keep : self->conf.keep;
}

/* ---- upkeep ------------------------------------------------------------------------------- */

static upkeep_t *s_upkeep(records_t *self, const char *tenant)
{
    uint32_t h = 2166136261u; /* FNV-1a: tenant names are ours, not an attacker's choice */
    for (const char *p = tenant; *p; p++) h = (h ^ (uint8_t)*p) * 16777619u;
    upkeep_t **head = &self->upkeep[h % UPKEEP_BUCKETS];
    for (upkeep_t *u = *head; u; u = u->next)
        if (strcmp(u->tenant, tenant) == 0) return u;
    size_t n = strlen(tenant);
    upkeep_t *u = xcalloc(1, sizeof *u + n + 1);
    memcpy(u->tenant, tenant, n + 1);
    u->next = *head;
    *head = u;
    return u;
}

/* The keep to pass when this write trims the tenant's index (and refreshes its TTL), 0 when it
 * only adds to it: every keep/16 + 1 writes (at most TRIM_EVERY_MAX) and at least every
 * ttl/16 (at most TRIM_AGE_MAX_MS) — so the index holds at most keep + keep/16 entries per
 * front-end, and expires at most ttl/16 before its newest record. */
static long s_trim(records_t *self, const record_about_t *r)
{
    upkeep_t *u = s_upkeep(self, r->tenant);
    long keep = s_keep(self, r), every = keep / 16 + 1;
    if (every > TRIM_EVERY_MAX) every = TRIM_EVERY_MAX;
    uint64_t age = (uint64_t)s_ttl(self, r) * 1000 / 16, now = clock_mono_ms();
    if (age > TRIM_AGE_MAX_MS) age = TRIM_AGE_MAX_MS;
    if (++u->since_trim < every && u->trimmed_ms && now - u->trimmed_ms < age) return 0;
    u->since_trim = 0;
    u->trimmed_ms = now ? now : 1;
    return keep;
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

static void s_usage_key(args_t *a, const char *tenant, uint64_t ms)
{
    char key[RECORD_USAGE_KEY_MAX];
    s_arg_str(a, record_usage_key(key, tenant, ms));
}

/* Usage days to delete: the week just past --usage-days, at this front-end's first count of the
 * tenant's day (usage has no TTL, so it is pruned; a day missed is covered by the next day's). */
static void s_sweep_keys(records_t *self, args_t *a, const char *tenant, uint64_t created_ms)
{
    upkeep_t *u = s_upkeep(self, tenant);
    uint64_t day = created_ms / DAY_MS;
    if (u->swept_day == day) return;
    u->swept_day = day;
    for (int k = 0; k < USAGE_SWEEP; k++)
        s_usage_key(a, tenant, created_ms - (uint64_t)(self->conf.usage_days + 1 + k) * DAY_MS);
}

/* ---- submitted ---------------------------------------------------------------------------- */

static void s_code(records_t *self, args_t *a, const jobspec_t *spec)
{
    size_t keep = utf8_prefix(spec->code, spec->code_len, (size_t)self->conf.code_cap);
    s_field(a, "code", spec->code, keep);
    if (keep < spec->code_len) {
        char hex[65];
        sha256_hex(spec->code, spec->code_len, hex);
        s_field_str(a, "code_sha256", hex);
        s_field_str(a, "code_truncated", "1");
    }
    s_field_u64(a, "code_bytes", spec->code_len);
}

record_submit_t *record_submit_new(records_t *self, const record_about_t *r, const jobspec_t *spec)
{
    record_submit_t *sub = xcalloc(1, sizeof *sub);
    args_t *a = &sub->fields;
    buf_init(&a->bytes);
    s_field_str(a, "tenant", r->tenant);
    s_field_str(a, "profile", r->profile);
    if (r->profile_reason) s_field_str(a, "profile_reason", r->profile_reason);
    s_field_str(a, "tool", r->tool);
    s_code(self, a, spec);
    s_field_u64(a, "created_ms", r->created_ms);
    s_field_i64(a, "timeout_ms", spec->limits.wall_ms);
    s_field_i64(a, "memory_mb", spec->limits.memory_mb);
    s_field_str(a, "frontend", self->instance);
    if (spec->has_session) { /* a session's cell */
        char sid[ID_STR_LEN + 1];
        id_format(spec->session, sid);
        s_field_str(a, "session_id", sid);
    }
    if (r->task) {
        s_field_str(a, "task", "1");
        s_field_str(a, "task_status", "working");
        s_field_i64(a, "task_ttl_ms", r->task_ttl_ms);
        s_field_u64(a, "task_updated_ms", r->created_ms);
    }
    return sub;
}

void record_submit_destroy(record_submit_t **self_p)
{
    record_submit_t *sub = *self_p;
    if (!sub) return;
    s_args_free(&sub->fields);
    free(sub);
    *self_p = NULL;
}

int record_submit_written(const record_submit_t *sub)
{
    return sub && sub->written;
}

void record_submitted(records_t *self, const record_about_t *r, record_submit_t *sub)
{
    char key[64], execs[96], tasks[96];
    snprintf(key, sizeof key, "sp:exec:%s", r->id);
    snprintf(execs, sizeof execs, "sp:t:%s:execs", r->tenant);
    snprintf(tasks, sizeof tasks, "sp:t:%s:tasks", r->tenant);
    args_t a = {0};
    buf_init(&a.bytes);
    s_arg_str(&a, key);
    s_arg_str(&a, execs);
    s_arg_str(&a, tasks);
    s_arg_i64(&a, s_ttl(self, r));
    s_arg_u64(&a, r->created_ms);
    s_arg_str(&a, r->id);
    s_arg_i64(&a, s_trim(self, r));
    s_arg_str(&a, r->task ? "1" : "0");
    s_append_args(&a, &sub->fields);
    s_resolve(&a);
    store_write_script(self->store, self->submit, 3, a.argc, a.argv, a.len, NULL, NULL);
    s_args_free(&a);
    sub->written = 1;
}

/* ---- finished ----------------------------------------------------------------------------- */

/* The Result as the record keeps it, its msgpack in base64 (records stay text, for every
 * client that reads them as such), appended to out: whole when that fits --result-cap; else a
 * copy with the streams cut to their heads and no image or file bodies (truncated.* say so),
 * *cut set; nothing (0 returned) when even that is too big. */
static int s_result_text(records_t *self, const result_t *res, buf_t *out, int *cut)
{
    buf_t b;
    buf_init(&b);
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
    int fits = (long)(b.len + 2) / 3 * 4 <= self->conf.result_cap;
    if (fits) base64_encode(out, b.data, b.len);
    buf_free(&b);
    return fits;
}

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

/* 1 when the flat fields say everything the Result does, so it need not be kept too (history.c
 * renders from them): no variables, validation, traceback, images, files or rich outputs (but
 * the trailing expression's repr); streams within their heads; error texts and the result's
 * repr within their fields. Most jobs are like that, and it halves what a record costs (README
 * "Failure and recovery"). */
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

static void s_final_fields(records_t *self, args_t *a, const record_about_t *r, const result_t *res,
                           uint64_t finished)
{
    size_t head = (size_t)self->conf.head_cap;
    s_field_str(a, "status", status_name(res->status));
    s_field_u64(a, "started_ms", r->created_ms + (uint64_t)res->queue_ms);
    s_field_u64(a, "finished_ms", finished);
    s_field_ms(a, "queue_ms", res->queue_ms);
    s_field_ms(a, "wall_ms", res->wall_ms);
    s_field_ms(a, "cpu_ms", res->cpu_ms);
    s_field_i64(a, "max_rss_kb", res->max_rss_kb);
    s_field_str(a, "exit_reason", res->exit.reason);
    if (res->exit.signal) s_field_i64(a, "exit_signal", res->exit.signal);
    s_field_nonzero(a, "exit_syscall", res->exit.syscall);
    if (res->exit.code) s_field_i64(a, "exit_code", res->exit.code);
    if (res->n_events) { /* what the sandbox refused, caught or not: [{operation, target, ...}] */
        json_t *events = outcome_security_events(res);
        char *text = json_dumps(events, JSON_COMPACT);
        json_decref(events);
        if (text) {
            s_field_str(a, "security_events", text);
            free(text);
        }
    }
    s_field_head(a, "stdout", res->out, res->out_len, head);
    if (res->err_len) s_field_head(a, "stderr", res->err, res->err_len, head);
    if (res->out_truncated || res->out_len > head) s_field_str(a, "stdout_truncated", "1");
    if (res->err_truncated || res->err_len > head) s_field_str(a, "stderr_truncated", "1");
    if (res->error.present) {
        const char *t = res->error.type, *m = res->error.message;
        s_field_head(a, "error_type", t, t ? strlen(t) : 0, 256);
        s_field_head(a, "error_message", m, m ? strlen(m) : 0, 4096);
        s_field_i64(a, "error_line", res->error.line);
    }
    s_field_str(a, "executor", res->executor);
    if (res->attempt) s_field_u64(a, "attempt", res->attempt);
    if (s_flat_is_whole(self, res)) {
        if (res->result) s_field_str(a, "result_repr", res->result);
        if (s_output_is_repr(res)) s_field_str(a, "result_out", "1");
    } else {
        int cut = 0;
        s_arg_str(a, "result");
        size_t start = a->bytes.len;
        int kept = s_result_text(self, res, &a->bytes, &cut);
        if (kept) s_mark(a, start);
        else a->argc--, a->bytes.len = a->off[a->argc]; /* no value: the name goes too */
        if (cut || !kept) s_field_str(a, "result_cut", kept ? "1" : "dropped");
    }
    if (r->task) {
        s_field_str(a, "task_status", task_status_for(res->status, r->task_cancelled));
        s_field_u64(a, "task_updated_ms", finished);
    }
}

/* The first form of a final write (store_write_first): what RECORD_FINISH_LUA does, as plain
 * commands, which the store sends as one transaction — the fields by HSET, the TTL, the id into
 * the index when this is the job's only write, the usage by HINCRBY. Without Lua Redis spends
 * about a third less CPU on it, and on a quiet farm (Redis waking for each call) answers ~100 µs
 * sooner (bench/redis_cost.py). The script stays the write's replayable form: it counts usage
 * only when the final fields are new, so a replay after this landed counts nothing again. Only
 * for a write with none of the script's upkeep (no trim due, no old usage days to delete, no
 * export stream): 0 then. Every value points into a, the script's arguments (ARGV[k] is
 * a->argv[nkeys + k - 1]). */
#define FIRST_MAX_CMDS 16
#define FIRST_MAX_ARGS (MAX_ARGS + 3 * FIRST_MAX_CMDS)
typedef struct {
    int n, argc[FIRST_MAX_CMDS];
    const char *argv[FIRST_MAX_ARGS];
    size_t len[FIRST_MAX_ARGS];
    int at;
    char status[64];
} first_t;

static void s_first_arg(first_t *f, const char *v, size_t len)
{
    f->argv[f->at] = v, f->len[f->at++] = len;
    f->argc[f->n - 1]++;
}

/* HINCRBY of the usage hash (KEYS[3]) */
static void s_first_incr(first_t *f, const args_t *a, const char *field, size_t flen,
                         const char *by, size_t bylen)
{
    f->argc[f->n++] = 0;
    s_first_arg(f, "HINCRBY", 7);
    s_first_arg(f, a->argv[2], a->len[2]);
    s_first_arg(f, field, flen);
    s_first_arg(f, by, bylen);
}

static int s_first_form(first_t *f, const args_t *a, int nkeys)
{
#define ARGV(k) a->argv[nkeys + (k) - 1], a->len[nkeys + (k) - 1]
    const int fields = nkeys + 10; /* ARGV[11]: the record's fields and values */
    if (nkeys != 4 || a->len[3] || a->len[nkeys + 3] != 1 || a->argv[nkeys + 3][0] != '0' ||
        a->argc <= fields || a->len[nkeys + 4] + 8 > sizeof f->status)
        return 0;
    f->n = f->at = 0;
    f->argc[f->n++] = 0;
    s_first_arg(f, "HSET", 4);
    s_first_arg(f, a->argv[0], a->len[0]);
    for (int i = fields; i < a->argc; i++) s_first_arg(f, a->argv[i], a->len[i]);
    f->argc[f->n++] = 0;
    s_first_arg(f, "EXPIRE", 6);
    s_first_arg(f, a->argv[0], a->len[0]);
    s_first_arg(f, ARGV(1));
    if (a->len[1]) { /* the job's only write: the id into the tenant's index */
        f->argc[f->n++] = 0;
        s_first_arg(f, "ZADD", 4);
        s_first_arg(f, a->argv[1], a->len[1]);
        s_first_arg(f, ARGV(2));
        s_first_arg(f, ARGV(3));
    }
    int n = snprintf(f->status, sizeof f->status, "status:%.*s", (int)a->len[nkeys + 4],
                     a->argv[nkeys + 4]);
    s_first_incr(f, a, "executions", 10, "1", 1);
    s_first_incr(f, a, f->status, (size_t)n, "1", 1);
    s_first_incr(f, a, "cpu_ms", 6, ARGV(6));
    s_first_incr(f, a, "wall_ms", 7, ARGV(7));
    if (a->len[nkeys + 7] == 1 && a->argv[nkeys + 7][0] == '1') { /* a session's cell */
        s_first_incr(f, a, "cells", 5, "1", 1);
        s_first_incr(f, a, "session_memory_mb_cells", 23, ARGV(9));
    }
    static const char *const egress[] = {"egress_bytes_out", "egress_bytes_in",
                                         "egress_connections", "egress_refused"};
    for (int i = fields; i + 1 < a->argc; i += 2) /* the network's, as the script finds them */
        for (size_t e = 0; e < sizeof egress / sizeof egress[0]; e++)
            if (a->len[i] == strlen(egress[e]) && !memcmp(a->argv[i], egress[e], a->len[i])) {
                if (f->n == FIRST_MAX_CMDS) return 0;
                s_first_incr(f, a, egress[e], a->len[i], a->argv[i + 1], a->len[i + 1]);
            }
    return 1;
#undef ARGV
}

int record_finished(records_t *self, const record_about_t *r, const record_submit_t *sub,
                    const result_t *res, store_reply_fn *landed, void *arg)
{
    /* One script either way (RECORD_FINISH_LUA): the final fields, and when the submitted
     * ones were never written (the job ended before --record-queued-after-ms), those too and
     * the id into the tenant's index — a job's only write. */
    int whole = sub && !sub->written;
    char key[64], execs[96];
    snprintf(key, sizeof key, "sp:exec:%s", r->id);
    snprintf(execs, sizeof execs, "sp:t:%s:execs", r->tenant);
    args_t a = {0};
    buf_init(&a.bytes);
    s_arg_str(&a, key);
    s_arg_str(&a, whole ? execs : "");
    s_usage_key(&a, r->tenant, r->created_ms);
    s_arg_str(&a, self->conf.export_stream);
    s_sweep_keys(self, &a, r->tenant, r->created_ms);
    int nkeys = a.argc;
    s_arg_i64(&a, s_ttl(self, r));
    s_arg_u64(&a, r->created_ms);
    s_arg_str(&a, r->id);
    s_arg_i64(&a, whole ? s_trim(self, r) : 0);
    s_arg_str(&a, status_name(res->status));
    s_arg_i64(&a, (long long)(res->cpu_ms + 0.5));
    s_arg_i64(&a, (long long)(res->wall_ms + 0.5));
    s_arg_str(&a, res->session.present ? "1" : "0"); /* a session's cell: its usage too */
    s_arg_u64(&a, res->session.present ? res->session.memory_kb / 1024 : 0);
    s_arg_i64(&a, self->conf.export_maxlen);
    if (whole) s_append_args(&a, &sub->fields);
    if (res->session.present) {
        s_field_u64(&a, "cell", res->session.cell);
        s_field_u64(&a, "session_memory_kb", res->session.memory_kb);
    }
    if (res->egress.n) { /* the network's totals, which RECORD_FINISH_LUA adds to the usage */
        uint64_t out = 0, in = 0, conns = 0, refused = 0;
        for (size_t i = 0; i < res->egress.n; i++) {
            const result_egress_t *e = &res->egress.list[i];
            out += e->bytes_out, in += e->bytes_in, conns += e->connections;
            if (e->verdict && !strcmp(e->verdict, "refused")) refused += e->connections;
        }
        s_field_u64(&a, "egress_bytes_out", out);
        s_field_u64(&a, "egress_bytes_in", in);
        s_field_u64(&a, "egress_connections", conns);
        s_field_u64(&a, "egress_refused", refused);
    }
    s_final_fields(self, &a, r, res, clock_wall_ms());
    s_resolve(&a);
    /* Redis answers in order, so this write's answer also says the earlier ones are in (the
     * linked files' among them: filestore.h) */
    first_t f;
    int acked = (s_first_form(&f, &a, nkeys)
                     ? store_write_script_first(self->store, self->finish, nkeys, a.argc, a.argv,
                                                a.len, f.n, f.argc, f.argv, f.len, landed, arg)
                     : store_write_script(self->store, self->finish, nkeys, a.argc, a.argv, a.len,
                                          landed, arg)) == 0;
    s_args_free(&a);
    return acked;
}

int record_task_started(records_t *self, const record_about_t *r, store_reply_fn *landed, void *arg)
{
    char key[64], tasks[96];
    snprintf(key, sizeof key, "sp:exec:%s", r->id);
    snprintf(tasks, sizeof tasks, "sp:t:%s:tasks", r->tenant);
    args_t a = {0};
    buf_init(&a.bytes);
    s_arg_str(&a, key);
    s_arg_str(&a, tasks);
    s_arg_i64(&a, s_ttl(self, r));
    s_arg_u64(&a, r->created_ms);
    s_arg_str(&a, r->id);
    s_arg_i64(&a, s_keep(self, r));
    s_arg_i64(&a, r->task_ttl_ms);
    s_arg_u64(&a, clock_wall_ms());
    s_resolve(&a);
    /* after the submit script on the same connection: its answer covers both */
    int acked =
        store_write_script(self->store, self->task, 2, a.argc, a.argv, a.len, landed, arg) == 0;
    s_args_free(&a);
    return acked;
}

void record_task_status(records_t *self, const char *id, const char *task_status)
{
    char key[64];
    snprintf(key, sizeof key, "sp:exec:%s", id);
    args_t a = {0};
    buf_init(&a.bytes);
    s_arg_str(&a, key);
    s_arg_str(&a, task_status);
    s_arg_u64(&a, clock_wall_ms());
    s_resolve(&a);
    store_write_script(self->store, self->task_status, 1, a.argc, a.argv, a.len, NULL, NULL);
    s_args_free(&a);
}
