/* mcp-frontend/records.c — see records.h. Commands are built as argv arrays (binary-safe:
 * code and output may hold any bytes) and handed to the store one by one; the store
 * pipelines them. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../common/buf.h"
#include "../common/clock.h"
#include "../common/log.h"
#include "filestore.h"
#include "jsonrpc.h"
#include "records.h"
#include "../common/sha256.h"
#include "task.h"
#include "utf8.h"

#define MAX_FIELDS 64

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

/* An HSET under construction. Values are copied: the argv outlives nothing but this call. */
typedef struct {
    const char *argv[2 + 2 * MAX_FIELDS];
    size_t len[2 + 2 * MAX_FIELDS];
    char *owned[2 * MAX_FIELDS];
    int argc, n_owned;
} hset_t;

static void s_hset_init(hset_t *h, const char *key)
{
    h->argc = 0;
    h->n_owned = 0;
    h->argv[h->argc] = "HSET", h->len[h->argc++] = 4;
    h->argv[h->argc] = key, h->len[h->argc++] = strlen(key);
}

static void s_field(hset_t *h, const char *name, const char *value, size_t len)
{
    if (h->argc + 2 > (int)(sizeof h->argv / sizeof h->argv[0])) return;
    h->argv[h->argc] = name, h->len[h->argc++] = strlen(name);
    h->argv[h->argc] = value ? value : "", h->len[h->argc++] = value ? len : 0;
}

static void s_field_str(hset_t *h, const char *name, const char *value)
{
    s_field(h, name, value, value ? strlen(value) : 0);
}

static void s_field_fmt(hset_t *h, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void s_field_fmt(hset_t *h, const char *name, const char *fmt, ...)
{
    if (h->n_owned >= 2 * MAX_FIELDS) return;
    char *s;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    h->owned[h->n_owned++] = s;
    s_field(h, name, s, (size_t)n);
}

/* A head of a stream: valid UTF-8, at most cap bytes. */
static void s_field_head(hset_t *h, const char *name, const char *data, size_t len, size_t cap)
{
    if (h->n_owned >= 2 * MAX_FIELDS) return;
    buf_t b;
    buf_init(&b);
    utf8_sanitize(&b, data ? data : "", data ? utf8_prefix(data, len, cap) : 0);
    size_t n;
    char *s = buf_steal(&b, &n);
    h->owned[h->n_owned++] = s;
    s_field(h, name, s, n);
}

static void s_hset_free(hset_t *h)
{
    for (int i = 0; i < h->n_owned; i++) free(h->owned[i]);
    h->n_owned = 0;
}

static void s_hset_send(records_t *self, hset_t *h)
{
    store_write(self->store, h->argc, h->argv, h->len);
    s_hset_free(h);
}

static void s_expire(records_t *self, const char *key, long seconds)
{
    store_writef(self->store, "EXPIRE %s %ld", key, seconds);
}

void record_submitted(records_t *self, const record_about_t *r, const jobspec_t *spec)
{
    char key[64], zkey[96];
    snprintf(key, sizeof key, "sp:exec:%s", r->id);
    snprintf(zkey, sizeof zkey, "sp:t:%s:execs", r->tenant);
    hset_t h;
    s_hset_init(&h, key);
    s_field_str(&h, "tenant", r->tenant);
    s_field_str(&h, "status", "queued");
    s_field_str(&h, "profile", r->profile);
    s_field_str(&h, "tool", r->tool);
    if ((long)spec->code_len <= self->conf.code_cap) {
        s_field(&h, "code", spec->code, spec->code_len);
    } else {
        char hex[65];
        sha256_hex(spec->code, spec->code_len, hex);
        s_field_fmt(&h, "code_sha256", "%s", hex);
    }
    s_field_fmt(&h, "code_bytes", "%zu", spec->code_len);
    s_field_fmt(&h, "created_ms", "%llu", (unsigned long long)r->created_ms);
    s_field_fmt(&h, "timeout_ms", "%ld", spec->limits.wall_ms);
    s_field_fmt(&h, "memory_mb", "%ld", spec->limits.memory_mb);
    s_field_str(&h, "frontend", self->instance);
    if (r->task) {
        s_field_str(&h, "task", "1");
        s_field_str(&h, "task_status", "working");
        s_field_fmt(&h, "task_ttl_ms", "%ld", r->task_ttl_ms);
        s_field_fmt(&h, "task_updated_ms", "%llu", (unsigned long long)r->created_ms);
    }
    s_hset_send(self, &h);
    s_expire(self, key, self->conf.ttl_s);
    if (r->task) { /* tasks/list reads this one */
        char tkey[96];
        snprintf(tkey, sizeof tkey, "sp:t:%s:tasks", r->tenant);
        store_writef(self->store, "ZADD %s %llu %s", tkey, (unsigned long long)r->created_ms,
                     r->id);
        store_writef(self->store, "ZREMRANGEBYRANK %s 0 %d", tkey, -(RECORD_MAX_PER_TENANT + 1));
        s_expire(self, tkey, self->conf.ttl_s);
    }
    store_writef(self->store, "ZADD %s %llu %s", zkey, (unsigned long long)r->created_ms, r->id);
    store_writef(self->store, "ZREMRANGEBYRANK %s 0 %d", zkey, -(RECORD_MAX_PER_TENANT + 1));
    s_expire(self, zkey, self->conf.ttl_s);
}

/* The CallToolResult as stored: whole when it fits the cap, else with stdout/stderr cut to the
 * head cap (and marked), which is what makes results large. */
static char *s_call_result_text(records_t *self, const json_t *call_result, size_t *len)
{
    char *s = json_text(call_result, JSON_COMPACT);
    if (!s) return NULL;
    *len = strlen(s);
    if ((long)*len <= self->conf.result_cap) return s;
    free(s);
    json_t *copy = json_deep_copy(call_result);
    json_t *sc = json_object_get(copy, "structuredContent");
    const char *names[] = {"stdout", "stderr"};
    for (int k = 0; k < 2; k++) {
        const char *v = json_string_value(json_object_get(sc, names[k]));
        if (!v) continue;
        size_t n = utf8_prefix(v, strlen(v), (size_t)self->conf.head_cap);
        json_object_set_new(sc, names[k], json_stringn(v, n));
    }
    /* written files keep their names and sizes; their contents went back with the answer */
    size_t i;
    json_t *f;
    json_array_foreach(json_object_get(sc, "files"), i, f)
        json_object_set_new(f, "content", json_null());
    json_object_set_new(copy, "content",
                        json_pack("[{s:s,s:s}]", "type", "text", "text",
                                  "(the stored record was cut to fit; this is its head)"));
    json_object_set_new(sc, "record_truncated", json_true());
    s = json_text(copy, JSON_COMPACT);
    json_decref(copy);
    if (s && (long)strlen(s) > self->conf.result_cap) { /* still too big (variables, images) */
        free(s);
        return NULL;
    }
    if (s) *len = strlen(s);
    return s;
}

static void s_usage(records_t *self, const record_about_t *r, const result_t *res)
{
    time_t secs = (time_t)(r->created_ms / 1000);
    struct tm tm;
    gmtime_r(&secs, &tm);
    char key[128];
    snprintf(key, sizeof key, "sp:t:%s:use:%04d%02d%02d", r->tenant, tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday);
    store_writef(self->store, "HINCRBY %s executions 1", key);
    store_writef(self->store, "HINCRBY %s status:%s 1", key, status_name(res->status));
    store_writef(self->store, "HINCRBY %s cpu_ms %lld", key, (long long)(res->cpu_ms + 0.5));
    store_writef(self->store, "HINCRBY %s wall_ms %lld", key, (long long)(res->wall_ms + 0.5));
    s_expire(self, key, USAGE_TTL_S);
}

int record_finished(records_t *self, const record_about_t *r, const result_t *res,
                    const json_t *call_result, store_reply_fn *landed, void *arg)
{
    char key[64];
    snprintf(key, sizeof key, "sp:exec:%s", r->id);
    uint64_t finished = clock_wall_ms();
    hset_t h;
    s_hset_init(&h, key);
    s_field_str(&h, "status", status_name(res->status));
    s_field_fmt(&h, "started_ms", "%llu",
                (unsigned long long)(r->created_ms + (uint64_t)res->queue_ms));
    s_field_fmt(&h, "finished_ms", "%llu", (unsigned long long)finished);
    s_field_fmt(&h, "queue_ms", "%.3f", res->queue_ms);
    s_field_fmt(&h, "wall_ms", "%.3f", res->wall_ms);
    s_field_fmt(&h, "cpu_ms", "%.3f", res->cpu_ms);
    s_field_fmt(&h, "max_rss_kb", "%ld", res->max_rss_kb);
    s_field_str(&h, "exit_reason", res->exit.reason);
    s_field_fmt(&h, "exit_signal", "%d", res->exit.signal);
    s_field_str(&h, "exit_syscall", res->exit.syscall);
    s_field_head(&h, "stdout", res->out, res->out_len, (size_t)self->conf.head_cap);
    s_field_head(&h, "stderr", res->err, res->err_len, (size_t)self->conf.head_cap);
    s_field_str(&h, "stdout_truncated", res->out_truncated ? "1" : "0");
    s_field_str(&h, "stderr_truncated", res->err_truncated ? "1" : "0");
    if (res->error.present) {
        s_field_head(&h, "error_type", res->error.type,
                     res->error.type ? strlen(res->error.type) : 0, 256);
        s_field_head(&h, "error_message", res->error.message,
                     res->error.message ? strlen(res->error.message) : 0, 4096);
        s_field_fmt(&h, "error_line", "%ld", res->error.line);
    }
    s_field_str(&h, "executor", res->executor);
    s_field_fmt(&h, "attempt", "%u", res->attempt);
    /* the linked files first: the final record's acknowledgement covers them (filestore.h) */
    filestore_put(self->store, r->id, res, self->conf.file_ttl_s);
    size_t len = 0;
    char *text = call_result ? s_call_result_text(self, call_result, &len) : NULL;
    if (text) s_field(&h, "call_result", text, len);
    if (r->task) {
        s_field_str(&h, "task_status", task_status_for(res->status, r->task_cancelled));
        s_field_fmt(&h, "task_updated_ms", "%llu", (unsigned long long)finished);
    }
    /* Redis answers in order, so this write's answer also says the earlier ones are in */
    int acked = store_write_acked(self->store, landed, arg, h.argc, h.argv, h.len) == 0;
    s_hset_free(&h);
    free(text);
    s_expire(self, key, self->conf.ttl_s);
    s_usage(self, r, res);
    return acked;
}

int record_task_started(records_t *self, const record_about_t *r, store_reply_fn *landed, void *arg)
{
    char key[64], tkey[96];
    snprintf(key, sizeof key, "sp:exec:%s", r->id);
    snprintf(tkey, sizeof tkey, "sp:t:%s:tasks", r->tenant);
    store_writef(self->store, "ZADD %s %llu %s", tkey, (unsigned long long)r->created_ms, r->id);
    store_writef(self->store, "ZREMRANGEBYRANK %s 0 %d", tkey, -(RECORD_MAX_PER_TENANT + 1));
    s_expire(self, tkey, self->conf.ttl_s);
    hset_t h;
    s_hset_init(&h, key);
    s_field_str(&h, "task", "1");
    s_field_str(&h, "task_status", "working");
    s_field_fmt(&h, "task_ttl_ms", "%ld", r->task_ttl_ms);
    s_field_fmt(&h, "task_updated_ms", "%llu", (unsigned long long)clock_wall_ms());
    /* written after the ZADD on the same connection: its answer covers both */
    int acked = store_write_acked(self->store, landed, arg, h.argc, h.argv, h.len) == 0;
    s_hset_free(&h);
    return acked;
}

void record_task_status(records_t *self, const char *id, const char *task_status)
{
    char key[64];
    snprintf(key, sizeof key, "sp:exec:%s", id);
    store_writef(self->store, "HSET %s task_status %s task_updated_ms %llu", key, task_status,
                 (unsigned long long)clock_wall_ms());
}
