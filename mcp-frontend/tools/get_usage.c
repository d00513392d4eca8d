/* mcp-frontend/tools/get_usage.c — see get_usage.h. One pipelined round of reads: a HGETALL per
 * day asked for, then the counts of what the tenant holds now; the answer is made when the last
 * reply is in. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/session_keys.h"
#include "mcp-frontend/render/outcome.h"
#include "mcp-frontend/rpc/fe.h"
#include "mcp-frontend/state/records.h"
#include "mcp-frontend/state/store.h"
#include "get_usage.h"

#define DAY_MS (86400 * 1000ULL)

/* The day's counters, as get_usage names them (the hash's own name, where it differs). */
static const struct {
    const char *field; /* in sp:t:<tenant>:use:<day> */
    const char *name;  /* in the answer */
} s_counters[] = {
    {"executions", "executions"}, {"cells", "cells"},        {"sessions", "sessions"},
    {"snapshots", "snapshots"},   {"cpu_ms", "cpu_seconds"}, {"wall_ms", "wall_seconds"},
};
#define N_COUNTERS (sizeof s_counters / sizeof s_counters[0])

typedef struct {
    call_t *call; /* held */
    long days;
    uint64_t now_ms;
    json_t *rows;  /* one per day, newest first */
    size_t filled; /* rows whose hash has come back */
    long long live_sessions, snapshots, snapshot_bytes;
    int pending, failed;
} usage_t;

static json_t *s_day(uint64_t ms)
{
    char day[16];
    time_t secs = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&secs, &tm);
    strftime(day, sizeof day, "%Y-%m-%d", &tm);
    json_t *row = json_pack("{s:s}", "day", day);
    for (size_t i = 0; i < N_COUNTERS; i++)
        json_object_set_new(row, s_counters[i].name,
                            strstr(s_counters[i].name, "seconds") ? json_real(0) : json_integer(0));
    json_object_set_new(row, "statuses", json_object());
    return row;
}

/* A day's hash into its row: counters, ms as seconds, status:<s> as statuses{s}. */
static void s_fill_day(json_t *row, const redisReply *r)
{
    for (size_t i = 0; r && r->type == REDIS_REPLY_ARRAY && i + 1 < r->elements; i += 2) {
        const redisReply *k = r->element[i], *v = r->element[i + 1];
        if (k->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING) continue;
        long long n = strtoll(v->str, NULL, 10);
        if (!strncmp(k->str, "status:", 7)) {
            json_object_set_new(json_object_get(row, "statuses"), k->str + 7, json_integer(n));
            continue;
        }
        for (size_t c = 0; c < N_COUNTERS; c++) {
            if (strcmp(k->str, s_counters[c].field) != 0) continue;
            json_object_set_new(row, s_counters[c].name,
                                strstr(s_counters[c].name, "seconds") ? json_real((double)n / 1000)
                                                                      : json_integer(n));
        }
    }
}

static json_t *s_total(const json_t *rows)
{
    json_t *total = s_day(0), *row;
    json_object_del(total, "day");
    size_t i;
    json_array_foreach(rows, i, row)
    {
        for (size_t c = 0; c < N_COUNTERS; c++) {
            const char *name = s_counters[c].name;
            json_t *sum = json_object_get(total, name), *add = json_object_get(row, name);
            json_object_set_new(
                total, name,
                json_is_real(sum)
                    ? json_real(json_real_value(sum) + json_number_value(add))
                    : json_integer(json_integer_value(sum) + json_integer_value(add)));
        }
        const char *st;
        json_t *n, *statuses = json_object_get(total, "statuses");
        json_object_foreach(json_object_get(row, "statuses"), st, n)
            json_object_set_new(statuses, st,
                                json_integer(json_integer_value(json_object_get(statuses, st)) +
                                             json_integer_value(n)));
    }
    return total;
}

/* "12 executions (10 ok, 2 error), CPU 1.234 s, wall 2.5 s, 3 cells, 1 session, 0 snapshots" */
static void s_counts_text(buf_t *b, const json_t *row)
{
    const char *st;
    json_t *n;
    size_t k = 0;
    buf_printf(b, "%lld executions",
               (long long)json_integer_value(json_object_get(row, "executions")));
    json_object_foreach(json_object_get(row, "statuses"), st, n)
        buf_printf(b, "%s%lld %s", k++ ? ", " : " (", (long long)json_integer_value(n), st);
    if (k) buf_puts(b, ")");
    buf_printf(b,
               ", CPU %.3f s, wall %.3f s, %lld cells, %lld sessions started, %lld snapshots saved",
               json_number_value(json_object_get(row, "cpu_seconds")),
               json_number_value(json_object_get(row, "wall_seconds")),
               (long long)json_integer_value(json_object_get(row, "cells")),
               (long long)json_integer_value(json_object_get(row, "sessions")),
               (long long)json_integer_value(json_object_get(row, "snapshots")));
}

static int s_empty(const json_t *row)
{
    for (size_t c = 0; c < N_COUNTERS; c++)
        if (json_number_value(json_object_get(row, s_counters[c].name)) != 0) return 0;
    return 1;
}

static void s_finish(usage_t *u)
{
    call_t *c = u->call;
    const tenant_t *t = c->tenant;
    if (u->failed) {
        tool_refuse(c, TOOL_UNAVAILABLE, NULL,
                    "the usage store is unreachable right now; try again shortly");
    } else {
        json_t *total = s_total(u->rows);
        json_t *now = json_pack(
            "{s:I,s:I,s:I,s:I,s:I,s:I}", "live_sessions", (json_int_t)u->live_sessions,
            "max_sessions", (json_int_t)t->max_sessions, "snapshots", (json_int_t)u->snapshots,
            "max_snapshots", (json_int_t)t->max_snapshots, "snapshot_bytes",
            (json_int_t)u->snapshot_bytes, "max_snapshot_mb", (json_int_t)t->max_snapshot_mb);
        buf_t b;
        buf_init(&b);
        buf_printf(&b, "Usage of tenant %s, the last %ld day%s (UTC), newest first:\n", t->name,
                   u->days, u->days == 1 ? "" : "s");
        size_t i, shown = 0;
        json_t *row;
        json_array_foreach(u->rows, i, row)
        {
            if (s_empty(row)) continue;
            buf_printf(&b, "- %s: ", json_string_value(json_object_get(row, "day")));
            s_counts_text(&b, row);
            buf_puts(&b, "\n");
            shown++;
        }
        if (!shown) buf_puts(&b, "- nothing used in these days\n");
        buf_puts(&b, "Total: ");
        s_counts_text(&b, total);
        buf_printf(&b,
                   ".\nNow: %lld live sessions (at most %ld), %lld snapshots of %lld bytes (at "
                   "most %ld, %ld MB).\n",
                   u->live_sessions, t->max_sessions, u->snapshots, u->snapshot_bytes,
                   t->max_snapshots, t->max_snapshot_mb);
        buf_puts(&b, "Counted: an execution when it ends (execute_code, a session's cell, a "
                     "drop-in endpoint's run) with its CPU and wall time; a session when it starts "
                     "(created, forked, restored into a new one); a snapshot when it is saved. "
                     "list_executions shows the executions themselves.");
        json_t *out = json_pack("{s:s,s:I,s:O,s:o,s:o}", "tenant", t->name, "days_asked",
                                (json_int_t)u->days, "days", u->rows, "total", total, "now", now);
        call_reply(c, tool_result((const char *)b.data, out, 0));
        buf_free(&b);
    }
    json_decref(u->rows);
    call_release(c);
    free(u);
}

static void s_settle(usage_t *u)
{
    if (--u->pending == 0) s_finish(u);
}

/* Day replies come in the order sent: each fills the next row. */
static void s_on_day(void *arg, redisReply *r)
{
    usage_t *u = arg;
    if (!r || r->type != REDIS_REPLY_ARRAY) u->failed = 1;
    s_fill_day(json_array_get(u->rows, u->filled++), r);
    s_settle(u);
}

static long long s_int_reply(const redisReply *r, int *failed)
{
    if (r && r->type == REDIS_REPLY_INTEGER) return r->integer;
    if (r && r->type == REDIS_REPLY_STRING) return strtoll(r->str, NULL, 10);
    if (!r || r->type != REDIS_REPLY_NIL) *failed = 1;
    return 0;
}

static void s_on_live(void *arg, redisReply *r)
{
    usage_t *u = arg;
    u->live_sessions = s_int_reply(r, &u->failed);
    s_settle(u);
}

static void s_on_snapshots(void *arg, redisReply *r)
{
    usage_t *u = arg;
    u->snapshots = s_int_reply(r, &u->failed);
    s_settle(u);
}

static void s_on_snapshot_bytes(void *arg, redisReply *r)
{
    usage_t *u = arg;
    u->snapshot_bytes = s_int_reply(r, &u->failed);
    s_settle(u);
}

static void s_query(usage_t *u, store_reply_fn *fn, const char *fmt, const char *key)
{
    u->pending++;
    if (store_queryf(u->call->fe->store, fn, u, fmt, key) < 0) {
        u->failed = 1;
        u->pending--;
    }
}

void get_usage_run(call_t *c, json_t *args, const tool_task_t *task)
{
    (void)task; /* the row takes no tasks */
    json_t *d = json_object_get(args, "days");
    if (json_is_null(d)) d = NULL;
    long days = d ? (long)json_integer_value(d) : USAGE_DAYS_DEFAULT;
    if (d && (days < 1 || days > USAGE_DAYS_MAX)) {
        tool_bad_arg(c, "days", "`days` must be 1-%d; got %ld", USAGE_DAYS_MAX, days);
        return;
    }
    usage_t *u = xcalloc(1, sizeof *u);
    u->call = c;
    u->days = days;
    u->now_ms = clock_wall_ms();
    u->rows = json_array();
    call_hold(c);
    u->pending = 1; /* this function's own, settled last */
    char key[SESSION_KEY_MAX > RECORD_USAGE_KEY_MAX ? SESSION_KEY_MAX : RECORD_USAGE_KEY_MAX];
    for (long i = 0; i < days; i++) {
        uint64_t ms = u->now_ms - (uint64_t)i * DAY_MS;
        json_array_append_new(u->rows, s_day(ms));
        s_query(u, s_on_day, "HGETALL %s", record_usage_key(key, c->tenant->name, ms));
    }
    char live[SESSION_KEY_MAX];
    session_records_key(live, c->tenant->name);
    u->pending++;
    if (store_queryf(c->fe->store, s_on_live, u, "ZCOUNT %s (%llu +inf", live,
                     (unsigned long long)u->now_ms) < 0) {
        u->failed = 1;
        u->pending--;
    }
    snapshots_key(key, c->tenant->name);
    s_query(u, s_on_snapshots, "ZCARD %s", key);
    snapshot_bytes_key(key, c->tenant->name);
    s_query(u, s_on_snapshot_bytes, "GET %s", key);
    s_settle(u);
}
