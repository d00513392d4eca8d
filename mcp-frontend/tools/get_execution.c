/* mcp-frontend/tools/get_execution.c — see get_execution.h. */
#define _GNU_SOURCE
#include <stdio.h>

#include "common/ids.h"
#include "mcp-frontend/render/outcome.h"
#include "mcp-frontend/rpc/fe.h"
#include "mcp-frontend/state/history.h"
#include "get_execution.h"

static void s_on_get(void *arg, fetch_status_t st, json_t *fields)
{
    call_t *c = arg;
    if (st == FETCH_UNAVAILABLE) {
        call_reply(c, tool_result("the execution store is unreachable right now; try again shortly",
                                  NULL, 1));
    } else if (st == FETCH_NOT_FOUND) {
        call_reply(
            c, tool_result("no such execution for your tenant (records are kept 7 days)", NULL, 1));
    } else {
        const char *id = json_string_value(
            json_object_get(json_object_get(c->params, "arguments"), "execution_id"));
        char canonical[ID_STR_LEN + 1];
        uint8_t raw[ID_BYTES];
        id_parse(id, raw);
        id_format(raw, canonical);
        json_t *view = record_view(canonical, fields);
        char text[256];
        snprintf(text, sizeof text, "execution %s: %s (profile %s)", canonical,
                 json_string_value(json_object_get(view, "status")),
                 json_string_value(json_object_get(view, "profile")));
        call_reply(c, tool_result(text, view, 0));
    }
    call_release(c);
}

void get_execution_run(call_t *c, json_t *args, const tool_task_t *task)
{
    (void)task; /* the row takes no tasks */
    const char *id = json_string_value(json_object_get(args, "execution_id"));
    uint8_t raw[ID_BYTES];
    if (id_parse(id, raw) < 0) {
        tool_bad(c, "execution_id must be a UUID as returned by execute_code");
        return;
    }
    call_hold(c);
    record_fetch(c->fe->store, id, c->tenant, s_on_get, c);
}
