/* mcp-frontend/tools/list_executions.c — see list_executions.h. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/buf.h"
#include "common/ids.h"
#include "common/profiles.h"
#include "proto/status.h"
#include "mcp-frontend/render/outcome.h"
#include "mcp-frontend/rpc/fe.h"
#include "mcp-frontend/state/history.h"
#include "mcp-frontend/state/store.h"
#include "list_executions.h"
#include "tools.h"

#define LIST_DEFAULT 20
#define LIST_MAX     100
#define LIST_SCAN    400 /* records looked at per page when filtering by status or profile */

/* ---- list_executions: newest first from the tenant's zset, then each record's summary
 * fields (one pipelined HMGET per id). The cursor is "<created_ms>:<id>" of the last entry
 * returned; ids sort by time, so entries sharing that millisecond are told apart by id. */

static const char *const s_summary_fields[] = {"status",      "profile", "tool",       "created_ms",
                                               "finished_ms", "wall_ms", "code_bytes", "error_type",
                                               "task_status", NULL};

typedef struct {
    call_t *call;
    long limit;
    char status[32];
    char profile[64]; /* only this profile's ("": any) */
    size_t n, pending;
    char (*ids)[ID_STR_LEN + 1];
    double *scores;
    json_t **rows;
    int more;  /* the scan stopped before the end of the zset */
    long scan; /* entries asked of the zset */
} listing_t;

static void s_listing_free(listing_t *l)
{
    for (size_t i = 0; i < l->n; i++) json_decref(l->rows[i]);
    free(l->rows);
    free(l->ids);
    free(l->scores);
    call_release(l->call);
    free(l);
}

static void s_iso(long long ms, char out[32])
{
    time_t secs = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&secs, &tm);
    strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* The page as the model reads it: one line per execution (id, status and why, tool, profile,
 * when, how long), and where the rest is. At most 100 lines (the largest page). */
static void s_text(buf_t *b, const json_t *list, const char *next, const char *status)
{
    size_t i, n = json_array_size(list);
    json_t *e;
    buf_printf(b, "%zu execution%s%s%s, newest first%s\n", n, n == 1 ? "" : "s",
               status[0] ? " with status " : "", status, n ? ":" : ".");
    json_array_foreach(list, i, e)
    {
        char when[32];
        const char *et = json_string_value(json_object_get(e, "error_type"));
        json_t *wall = json_object_get(e, "wall_ms");
        s_iso((long long)json_integer_value(json_object_get(e, "created_ms")), when);
        buf_printf(b, "- %s %s%s%s%s %s %s %s",
                   json_string_value(json_object_get(e, "execution_id")),
                   json_string_value(json_object_get(e, "status")), et ? " (" : "", et ? et : "",
                   et ? ")" : "", json_string_value(json_object_get(e, "tool")),
                   json_string_value(json_object_get(e, "profile")), when);
        if (json_is_number(wall)) buf_printf(b, " %.1f ms", json_number_value(wall));
        buf_puts(b, "\n");
    }
    if (next) buf_printf(b, "More: call list_executions with cursor \"%s\".\n", next);
    if (n) buf_puts(b, "get_execution shows one in full (code, output, result).\n");
}

static void s_listing_done(listing_t *l)
{
    json_t *list = json_array();
    char next[80] = "";
    for (size_t i = 0; i < l->n; i++) {
        if (!l->rows[i]) continue;
        if ((long)json_array_size(list) == l->limit) {
            l->more = 1;
            break;
        }
        json_array_append(list, l->rows[i]);
        snprintf(next, sizeof next, "%.0f:%s", l->scores[i], l->ids[i]);
    }
    json_t *out = json_pack("{s:o,s:o}", "executions", list, "next_cursor",
                            l->more && next[0] ? json_string(next) : json_null());
    buf_t text;
    buf_init(&text);
    s_text(&text, list, l->more && next[0] ? next : NULL, l->status);
    call_reply(l->call, tool_result((const char *)text.data, out, 0));
    buf_free(&text);
    s_listing_free(l);
}

static const char *s_or_empty(const json_t *v)
{
    return json_is_string(v) ? json_string_value(v) : "";
}

static void s_on_summary(void *arg, redisReply *reply)
{
    listing_t *l = arg;
    size_t i = l->n - l->pending; /* replies come in the order sent */
    l->pending--;
    if (reply && reply->type == REDIS_REPLY_ARRAY && reply->elements > 0 &&
        reply->element[0]->type == REDIS_REPLY_STRING) {
        json_t *f = json_object();
        for (size_t k = 0; s_summary_fields[k] && k < reply->elements; k++)
            if (reply->element[k]->type == REDIS_REPLY_STRING)
                json_object_set_new(f, s_summary_fields[k],
                                    json_bytes(reply->element[k]->str, reply->element[k]->len));
        const char *st = json_string_value(json_object_get(f, "status"));
        const char *pr = json_string_value(json_object_get(f, "profile"));
        if ((!l->status[0] || (st && strcmp(st, l->status) == 0)) &&
            (!l->profile[0] || (pr && strcmp(pr, l->profile) == 0))) {
            json_t *row =
                json_pack("{s:s,s:s,s:s,s:s,s:o,s:o}", "execution_id", l->ids[i], "status",
                          st ? st : "unknown", "profile", s_or_empty(json_object_get(f, "profile")),
                          "tool", s_or_empty(json_object_get(f, "tool")), "created_ms",
                          field_int(f, "created_ms"), "finished_ms", field_int(f, "finished_ms"));
            const char *w = json_string_value(json_object_get(f, "wall_ms"));
            json_object_set_new(row, "wall_ms", w ? json_real(strtod(w, NULL)) : json_null());
            const char *et = json_string_value(json_object_get(f, "error_type"));
            json_object_set_new(row, "error_type", et && *et ? json_string(et) : json_null());
            l->rows[i] = row;
        }
        json_decref(f);
    }
    if (!l->pending) s_listing_done(l);
}

static void s_on_ids(void *arg, redisReply *reply)
{
    listing_t *l = arg;
    if (!reply || reply->type != REDIS_REPLY_ARRAY) {
        tool_refuse(l->call, TOOL_UNAVAILABLE, NULL,
                    "the execution store is unreachable right now; try again shortly");
        s_listing_free(l);
        return;
    }
    size_t n = reply->elements / 2;
    l->ids = xcalloc(n + 1, sizeof *l->ids);
    l->scores = xcalloc(n + 1, sizeof *l->scores);
    l->rows = xcalloc(n + 1, sizeof *l->rows);
    const char *cursor =
        json_string_value(json_object_get(json_object_get(l->call->params, "arguments"), "cursor"));
    const char *after = cursor ? strchr(cursor, ':') : NULL;
    double cursor_ms = cursor ? strtod(cursor, NULL) : 0;
    for (size_t i = 0; i < n; i++) {
        const redisReply *id = reply->element[2 * i], *score = reply->element[2 * i + 1];
        if (id->type != REDIS_REPLY_STRING || id->len != ID_STR_LEN) continue;
        double sc = strtod(score->str ? score->str : "0", NULL);
        /* skip what the previous page returned: same millisecond, id not older than the cursor */
        if (after && sc == cursor_ms && strcmp(id->str, after + 1) >= 0) continue;
        memcpy(l->ids[l->n], id->str, ID_STR_LEN + 1);
        l->scores[l->n++] = sc;
    }
    l->more = (long)n == l->scan;
    if (!l->n) {
        s_listing_done(l);
        return;
    }
    for (size_t i = 0; i < l->n; i++) {
        const char *argv[3 + 16] = {"HMGET"};
        size_t argl[3 + 16] = {5};
        char key[64];
        snprintf(key, sizeof key, "sp:exec:%s", l->ids[i]);
        argv[1] = key, argl[1] = strlen(key);
        int argc = 2;
        for (int k = 0; s_summary_fields[k]; k++, argc++)
            argv[argc] = s_summary_fields[k], argl[argc] = strlen(s_summary_fields[k]);
        if (store_query(l->call->fe->store, s_on_summary, l, argc, argv, argl) == 0) l->pending++;
    }
    if (!l->pending) s_listing_done(l);
}

void list_executions_run(call_t *c, json_t *args, const tool_task_t *task)
{
    (void)task; /* the row takes no tasks */
    json_t *limit = json_object_get(args, "limit"), *cursor = json_object_get(args, "cursor"),
           *status = json_object_get(args, "status"), *profile = json_object_get(args, "profile");
    if (limit && (json_integer_value(limit) < 1 || json_integer_value(limit) > LIST_MAX)) {
        tool_bad_arg(c, "limit", "`limit` must be 1-%d; got %lld", LIST_MAX,
                     (long long)json_integer_value(limit));
        return;
    }
    status_t st;
    if (status && status_parse(json_string_value(status), &st) < 0 &&
        strcmp(json_string_value(status), "queued") != 0) {
        tool_bad_arg(c, "status",
                     "`status` must be queued or one of execute_code's statuses (ok, error, "
                     "syntax_error, timeout, cpu_limit, memory_limit, output_limit, "
                     "security_violation, cancelled, rejected, lost, internal_error); got "
                     "\"%.40s\"",
                     json_string_value(status));
        return;
    }
    if (profile && !profile_find(json_string_value(profile))) {
        char names[256];
        profiles_join(names, sizeof names, ", ", NULL);
        tool_bad_arg(c, "profile", "`profile` must be a profile's name (%s); got \"%.40s\"", names,
                     json_string_value(profile));
        return;
    }
    char max[40] = "+inf";
    if (json_is_string(cursor)) {
        const char *cs = json_string_value(cursor), *colon = strchr(cs, ':');
        char *end;
        double ms = strtod(cs, &end);
        uint8_t raw[ID_BYTES];
        if (!colon || end != colon || ms < 0 || id_parse(colon + 1, raw) < 0) {
            tool_bad_arg(c, "cursor",
                         "`cursor` must be a next_cursor list_executions returned; got \"%.80s\"",
                         cs);
            return;
        }
        snprintf(max, sizeof max, "%.0f", ms);
    }
    listing_t *l = xcalloc(1, sizeof *l);
    l->call = c;
    call_hold(c);
    l->limit = limit ? (long)json_integer_value(limit) : LIST_DEFAULT;
    if (status) snprintf(l->status, sizeof l->status, "%s", json_string_value(status));
    if (profile) snprintf(l->profile, sizeof l->profile, "%s", json_string_value(profile));
    long scan = l->status[0] || l->profile[0]
                    ? LIST_SCAN
                    : l->limit + 1 + 16; /* + room for same-millisecond skips */
    if (scan > LIST_SCAN) scan = LIST_SCAN;
    l->scan = scan;
    if (store_queryf(c->fe->store, s_on_ids, l,
                     "ZREVRANGEBYSCORE sp:t:%s:execs %s -inf WITHSCORES LIMIT 0 %ld",
                     c->tenant->name, max, scan) < 0) {
        tool_refuse(c, TOOL_UNAVAILABLE, NULL,
                    "the execution store is unreachable right now; try again shortly");
        s_listing_free(l);
    }
}
