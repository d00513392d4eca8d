/* cli/usage.c — `snakepit usage`; see usage.h.
 *
 * With a tenant, the N day keys are fetched directly (pipelined HGETALL). Without one, the
 * tenants are found with SCAN MATCH sp:t:*:use:* rather than from the sp:tenants set, so a
 * tenant removed since still shows what it used (the hashes outlive it by their 90-day TTL).
 * Tenant names are [A-Za-z0-9._-] (wire_name_ok), so the key splits unambiguously. */
#define _GNU_SOURCE
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/config.h"
#include "proto/wire.h"
#include "cli/farm/farm.h"
#include "usage.h"

#define EX_USAGE_       64
#define EX_UNAVAILABLE_ 69
#define MAX_DAYS        400
#define MAX_ROWS        100000

typedef struct {
    char state_dir[PATH_MAX];
    char redis[PATH_MAX + 16];
    long days;
    int json;
} usage_args_t;

static const cfg_opt_t s_opts[] = {
    CFG_OPT_INT(usage_args_t, days, "days", 1, MAX_DAYS, "N",
                "today and the N-1 days before it (UTC)"),
    CFG_OPT_STR(usage_args_t, state_dir, "state-dir", "DIR",
                "farm state directory (its ready.json names the Redis)"),
    CFG_OPT_STR(usage_args_t, redis, "redis", "URL",
                "the farm's Redis (default: the state directory's farm, else the installed "
                "farm's, from /etc/snakepit/mcp.conf)"),
    CFG_OPT_BOOL(usage_args_t, json, "json", "print JSON instead of a table"),
    CFG_OPT_END,
};

typedef struct {
    char tenant[65];
    char day[9];    /* yyyymmdd */
    json_t *fields; /* executions, cpu_ms, wall_ms, status:* as integers */
} row_t;

typedef struct {
    row_t *v;
    size_t n, cap;
} rows_t;

static void s_day(long long ms, int back, char out[9])
{
    time_t secs = (time_t)(ms / 1000) - (time_t)back * 86400;
    struct tm tm;
    gmtime_r(&secs, &tm);
    strftime(out, 9, "%Y%m%d", &tm); /* the front-end's key format (records.c s_usage) */
}

static row_t *s_row(rows_t *rows, const char *tenant, const char *day)
{
    if (rows->n == rows->cap) {
        size_t cap = rows->cap ? rows->cap * 2 : 64;
        row_t *v = realloc(rows->v, cap * sizeof *v);
        if (!v) return NULL;
        rows->v = v;
        rows->cap = cap;
    }
    row_t *r = &rows->v[rows->n++];
    snprintf(r->tenant, sizeof r->tenant, "%s", tenant);
    snprintf(r->day, sizeof r->day, "%s", day);
    r->fields = NULL;
    return r;
}

static int s_cmp(const void *a, const void *b)
{
    const row_t *x = a, *y = b;
    int c = strcmp(x->tenant, y->tenant);
    return c ? c : strcmp(x->day, y->day);
}

/* "sp:t:acme:use:20261122" -> tenant "acme", day "20261122" when the day is wanted. */
static int s_parse_key(const char *key, char days[][9], int n_days, char *tenant, char *day)
{
    const char *use = strstr(key, ":use:");
    if (strncmp(key, "sp:t:", 5) != 0 || !use) return -1;
    size_t tl = (size_t)(use - (key + 5));
    if (!wire_name_ok(key + 5, tl) || tl > 64 || strlen(use + 5) != 8) return -1;
    for (int i = 0; i < n_days; i++)
        if (!strcmp(use + 5, days[i])) {
            memcpy(tenant, key + 5, tl);
            tenant[tl] = '\0';
            memcpy(day, use + 5, 9);
            return 0;
        }
    return -1;
}

typedef struct {
    char (*days)[9];
    int  n_days;
    rows_t *rows;
} scan_t;

static int s_page(redisContext *c, redisReply *keys, void *ctx, char *err, size_t errlen)
{
    (void)c;
    scan_t *sc = ctx;
    for (size_t i = 0; i < keys->elements && sc->rows->n < MAX_ROWS; i++) {
        char tenant[65], day[9];
        redisReply *k = keys->element[i];
        if (k->type != REDIS_REPLY_STRING ||
            s_parse_key(k->str, sc->days, sc->n_days, tenant, day) < 0)
            continue;
        if (!s_row(sc->rows, tenant, day)) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
    }
    return sc->rows->n >= MAX_ROWS; /* full: stop scanning */
}

static int s_scan(redisContext *c, char days[][9], int n_days, rows_t *rows, char *err,
                  size_t errlen)
{
    scan_t sc = {days, n_days, rows};
    return farm_scan(c, "sp:t:*:use:*", s_page, &sc, err, errlen);
}

/* Fills each row's fields; rows whose hash is gone or empty get an empty object. */
static int s_fetch(redisContext *c, rows_t *rows, char *err, size_t errlen)
{
    for (size_t i = 0; i < rows->n; i++)
        redisAppendCommand(c, "HGETALL sp:t:%s:use:%s", rows->v[i].tenant, rows->v[i].day);
    for (size_t i = 0; i < rows->n; i++) {
        redisReply *h = NULL;
        if (redisGetReply(c, (void **)&h) != REDIS_OK) {
            snprintf(err, errlen, "redis: %s", c->errstr);
            return -1;
        }
        json_t *f = json_object();
        if (h->type == REDIS_REPLY_ARRAY)
            for (size_t j = 0; j + 1 < h->elements; j += 2)
                if (h->element[j]->type == REDIS_REPLY_STRING &&
                    h->element[j + 1]->type == REDIS_REPLY_STRING)
                    json_object_set_new(f, h->element[j]->str,
                                        json_integer(strtoll(h->element[j + 1]->str, NULL, 10)));
        rows->v[i].fields = f;
        freeReplyObject(h);
    }
    return 0;
}

static long long s_get(const json_t *f, const char *name)
{
    return (long long)json_integer_value(json_object_get(f, name));
}

/* "ok=3 error=1 timeout=1" in the order the statuses were first seen by Redis. */
static void s_by_status(const json_t *f, char *out, size_t cap)
{
    const char *name;
    json_t *v;
    size_t len = 0;
    out[0] = '\0';
    json_object_foreach((json_t *)f, name, v)
    {
        if (strncmp(name, "status:", 7) != 0 || len >= cap) continue;
        int n = snprintf(out + len, cap - len, "%s%s=%lld", len ? " " : "", name + 7,
                         (long long)json_integer_value(v));
        if (n > 0) len += (size_t)n;
    }
}

static void s_add_into(json_t *total, const json_t *f)
{
    const char *name;
    json_t *v;
    json_object_foreach((json_t *)f, name, v)
        json_object_set_new(total, name, json_integer(s_get(total, name) + json_integer_value(v)));
}

static void s_print_row(const char *tenant, const char *day, const json_t *f)
{
    char by[512];
    s_by_status(f, by, sizeof by);
    printf("%-24s %-10s %10lld %11.3f %11.3f %6lld %8lld %9lld  %s\n", tenant, day,
           s_get(f, "executions"), (double)s_get(f, "cpu_ms") / 1000.0,
           (double)s_get(f, "wall_ms") / 1000.0, s_get(f, "cells"), s_get(f, "sessions"),
           s_get(f, "snapshots"), by[0] ? by : "-");
}

static void s_print(const rows_t *rows)
{
    printf("%-24s %-10s %10s %11s %11s %6s %8s %9s  %s\n", "TENANT", "DAY (UTC)", "EXECUTIONS",
           "CPU S", "WALL S", "CELLS", "SESSIONS", "SNAPSHOTS", "BY STATUS");
    json_t *total = NULL;
    size_t first = 0; /* the tenant's first row */
    for (size_t i = 0; i < rows->n; i++) {
        const row_t *r = &rows->v[i];
        char day[11];
        snprintf(day, sizeof day, "%.4s-%.2s-%.2s", r->day, r->day + 4, r->day + 6);
        s_print_row(r->tenant, day, r->fields);
        if (!total) total = json_object();
        s_add_into(total, r->fields);
        int last = i + 1 == rows->n || strcmp(rows->v[i + 1].tenant, r->tenant) != 0;
        if (last) {
            if (i > first) s_print_row(r->tenant, "total", total);
            json_decref(total);
            total = NULL;
            first = i + 1;
        }
    }
    if (!rows->n) printf("(no usage recorded in these days)\n");
}

/* One day (or a total) in the JSON output: the fields Redis holds plus statuses grouped. */
static json_t *s_day_json(const json_t *f)
{
    json_t *statuses = json_object();
    const char *name;
    json_t *v;
    json_object_foreach((json_t *)f, name, v) if (!strncmp(name, "status:", 7))
        json_object_set(statuses, name + 7, v);
    return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:o, s:O}", "executions",
                     (json_int_t)s_get(f, "executions"), "cpu_ms", (json_int_t)s_get(f, "cpu_ms"),
                     "wall_ms", (json_int_t)s_get(f, "wall_ms"), "cells",
                     (json_int_t)s_get(f, "cells"), "sessions", (json_int_t)s_get(f, "sessions"),
                     "snapshots", (json_int_t)s_get(f, "snapshots"), "by_status", statuses,
                     "fields", f);
}

static json_t *s_to_json(const rows_t *rows, char days[][9], int n_days)
{
    json_t *tenants = json_object(), *totals = json_object();
    for (size_t i = 0; i < rows->n; i++) {
        const row_t *r = &rows->v[i];
        json_t *t = json_object_get(tenants, r->tenant);
        if (!t) {
            t = json_pack("{s:o}", "days", json_object());
            json_object_set_new(tenants, r->tenant, t);
            json_object_set_new(totals, r->tenant, json_object());
        }
        json_object_set_new(json_object_get(t, "days"), r->day, s_day_json(r->fields));
        s_add_into(json_object_get(totals, r->tenant), r->fields);
    }
    const char *name;
    json_t *total;
    json_object_foreach(totals, name, total)
        json_object_set_new(json_object_get(tenants, name), "total", s_day_json(total));
    json_decref(totals);
    return json_pack("{s:s, s:s, s:i, s:o}", "from", days[n_days - 1], "to", days[0], "days",
                     n_days, "tenants", tenants);
}

static redisContext *s_connect(usage_args_t *a)
{
    return farm_connect("snakepit usage", a->state_dir, a->redis, sizeof a->redis);
}

int usage_main(int argc, char **argv)
{
    usage_args_t a = {.days = 7}, defaults = a;
    char *rest[2];
    int n_rest = 2;
    char err[512];
    switch (config_load(&a, s_opts, argc, argv, rest, &n_rest, err, sizeof err)) {
    case CONFIG_HELP:
        config_usage(
            stdout, "snakepit usage [TENANT] [--days N] [--json] [--state-dir DIR | --redis URL]",
            "What each tenant (or TENANT) used per day (UTC), from the front-ends'\n"
            "sp:t:TENANT:use:YYYYMMDD counters (a tenant sees its own with the get_usage tool):\n"
            "  executions  every run that reached the farm and ended, counted when it ends, by\n"
            "              status: execute_code, a session's cells, the drop-in endpoints' runs\n"
            "              and `snakepit run` (not `snakepit run --broker`, which bypasses the\n"
            "              front-end; validate_code is not counted)\n"
            "  CPU, wall   seconds those executions took in their sandboxes\n"
            "  cells       the executions that were a session's cells\n"
            "  sessions    sessions started (created, forked, restored into a new one)\n"
            "  snapshots   state snapshots saved\n"
            "Days are kept --usage-days (90) by the front-end. Exit status: 0, 1 when TENANT is\n"
            "no tenant and has no usage recorded, 64 usage, 69 Redis not reachable.",
            s_opts, &defaults);
        return 0;
    case CONFIG_ERROR:
        fprintf(stderr, "snakepit usage: %s\n", err);
        return EX_USAGE_;
    case CONFIG_OK:
        break;
    }
    if (n_rest > 1) {
        fprintf(stderr, "snakepit usage: at most one TENANT (see --help)\n");
        return EX_USAGE_;
    }
    const char *tenant = n_rest ? rest[0] : NULL;
    if (tenant && !wire_name_ok(tenant, strlen(tenant))) {
        fprintf(stderr, "snakepit usage: TENANT must be 1-64 of [A-Za-z0-9._-]\n");
        return EX_USAGE_;
    }
    static char days[MAX_DAYS][9];
    long long now = (long long)clock_wall_ms();
    for (int i = 0; i < a.days; i++) s_day(now, i, days[i]);

    redisContext *c = s_connect(&a);
    if (!c) return EX_UNAVAILABLE_;
    rows_t rows = {0};
    int rc = 0;
    if (tenant) {
        for (int i = (int)a.days - 1; i >= 0 && rc == 0; i--)
            if (!s_row(&rows, tenant, days[i])) rc = -1, snprintf(err, sizeof err, "out of memory");
    } else {
        rc = s_scan(c, days, (int)a.days, &rows, err, sizeof err);
    }
    if (rc == 0) rc = s_fetch(c, &rows, err, sizeof err);
    int exists = 1; /* a named tenant: is it one? (one removed since still shows its usage) */
    if (rc == 0 && tenant) {
        redisReply *e = redisCommand(c, "EXISTS sp:t:%s", tenant);
        exists = !e || e->type != REDIS_REPLY_INTEGER || e->integer > 0;
        if (e) freeReplyObject(e);
    }
    redisFree(c);
    if (rc < 0) {
        fprintf(stderr, "snakepit usage: %s\n", err);
        for (size_t i = 0; i < rows.n; i++) json_decref(rows.v[i].fields);
        free(rows.v);
        return EX_UNAVAILABLE_;
    }
    /* a named tenant's empty days are left out, like the days of a scan that found nothing */
    size_t kept = 0;
    for (size_t i = 0; i < rows.n; i++) {
        if (json_object_size(rows.v[i].fields) == 0) {
            json_decref(rows.v[i].fields);
            continue;
        }
        rows.v[kept++] = rows.v[i];
    }
    rows.n = kept;
    if (!exists && !rows.n) {
        fprintf(stderr, "snakepit usage: no tenant %s (`snakepit tenant list` names them)\n",
                tenant);
        free(rows.v);
        return 1;
    }
    qsort(rows.v, rows.n, sizeof *rows.v, s_cmp);
    if (a.json) {
        json_t *o = s_to_json(&rows, days, (int)a.days);
        json_dumpf(o, stdout, JSON_INDENT(2));
        printf("\n");
        json_decref(o);
    } else {
        s_print(&rows);
    }
    for (size_t i = 0; i < rows.n; i++) json_decref(rows.v[i].fields);
    free(rows.v);
    return 0;
}
