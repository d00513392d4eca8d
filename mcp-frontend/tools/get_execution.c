/* mcp-frontend/tools/get_execution.c — see get_execution.h. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/buf.h"
#include "common/ids.h"
#include "common/utf8.h"
#include "mcp-frontend/render/outcome.h"
#include "mcp-frontend/rpc/fe.h"
#include "mcp-frontend/state/history.h"
#include "get_execution.h"
#include "tools.h"

static const char *s_str(const json_t *o, const char *key)
{
    const char *v = json_string_value(json_object_get(o, key));
    return v && *v ? v : NULL;
}

static void s_when(buf_t *b, const char *what, const json_t *ms)
{
    if (!json_is_integer(ms) || !json_integer_value(ms)) return;
    long long v = (long long)json_integer_value(ms);
    time_t secs = (time_t)(v / 1000);
    struct tm tm;
    char iso[32];
    gmtime_r(&secs, &tm);
    strftime(iso, sizeof iso, "%Y-%m-%dT%H:%M:%S", &tm);
    buf_printf(b, "%s %s.%03lldZ", what, iso, v % 1000);
}

/* A stream of the kept result, its head: the rest is in structuredContent.result. */
static void s_head(buf_t *b, const json_t *result, const char *name)
{
    const char *s = s_str(result, name);
    if (!s) return;
    size_t len = strlen(s), keep = utf8_prefix(s, len, 1500);
    buf_printf(b, "%s:\n", name);
    buf_append(b, s, keep);
    if (keep < len)
        buf_printf(b, "\n[... %zu more bytes in structuredContent.result.%s]", len - keep, name);
    buf_puts(b, "\n");
}

/* The record as the model reads it: how it ended, where and when, its error, and the heads of
 * its output while the result is kept. */
static void s_text(buf_t *b, const char *id, const json_t *view)
{
    const char *v;
    buf_printf(b, "execution %s: %s", id, s_str(view, "status") ? s_str(view, "status") : "?");
    if ((v = s_str(view, "tool"))) buf_printf(b, " (%s)", v);
    buf_printf(b, "\nprofile: %s", s_str(view, "profile") ? s_str(view, "profile") : "?");
    if ((v = s_str(view, "profile_reason"))) buf_printf(b, " (%s)", v);
    buf_puts(b, "\n");
    s_when(b, "created", json_object_get(view, "created_ms"));
    s_when(b, ", finished", json_object_get(view, "finished_ms"));
    json_t *wall = json_object_get(view, "wall_ms");
    if (json_is_number(wall)) buf_printf(b, ", wall %.1f ms", json_number_value(wall));
    buf_puts(b, "\n");
    if ((v = s_str(view, "session_id")))
        buf_printf(b, "session %s, cell %lld\n", v,
                   (long long)json_integer_value(json_object_get(view, "cell")));
    if ((v = s_str(view, "error_type")))
        buf_printf(b, "error: %s: %.500s\n", v,
                   s_str(view, "error_message") ? s_str(view, "error_message") : "");
    const json_t *result = json_object_get(view, "result");
    if (json_is_object(result)) {
        s_head(b, result, "stdout");
        s_head(b, result, "stderr");
        if ((v = s_str(result, "result"))) buf_printf(b, "result: %.1000s\n", v);
    } else {
        buf_puts(b, "(the full result is no longer kept; the record's fields are in "
                    "structuredContent)\n");
    }
}

static void s_on_get(void *arg, fetch_status_t st, json_t *fields)
{
    call_t *c = arg;
    if (st == FETCH_UNAVAILABLE) {
        tool_refuse(c, TOOL_UNAVAILABLE, NULL,
                    "the execution store is unreachable right now; try again shortly");
    } else if (st == FETCH_NOT_FOUND) {
        tool_refuse(c, TOOL_NOT_FOUND, "execution_id",
                    "`execution_id`: no such execution for your tenant (records are kept 7 days; "
                    "list_executions shows yours)");
    } else {
        const char *id = json_string_value(
            json_object_get(json_object_get(c->params, "arguments"), "execution_id"));
        char canonical[ID_STR_LEN + 1];
        uint8_t raw[ID_BYTES];
        id_parse(id, raw);
        id_format(raw, canonical);
        json_t *view = record_view(canonical, fields);
        buf_t text;
        buf_init(&text);
        s_text(&text, canonical, view);
        call_reply(c, tool_result((const char *)text.data, view, 0));
        buf_free(&text);
    }
    call_release(c);
}

void get_execution_run(call_t *c, json_t *args, const tool_task_t *task)
{
    (void)task; /* the row takes no tasks */
    const char *id = json_string_value(json_object_get(args, "execution_id"));
    uint8_t raw[ID_BYTES];
    if (id_parse(id, raw) < 0) {
        tool_bad_arg(c, "execution_id",
                     "`execution_id` must be a UUID as execute_code returned it; list_executions "
                     "shows yours");
        return;
    }
    call_hold(c);
    record_fetch(c->fe->store, id, c->tenant, s_on_get, c);
}
