/* mcp-frontend/compat/subcall.c — see subcall.h. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "subcall.h"

typedef struct {
    call_t *outer; /* held */
    subcall_fn *fn;
    void *arg;
    int done;
} sub_t;

/* Not a method of the table: counted apart so that tools/call's numbers stay the client's. */
static call_stats_t s_stats = {.label = "subcall"};

/* call_emit_fn: notifications are dropped (the inner call has no progress token); the final
 * message is the answer. */
static void s_emit(void *ctx, call_t *inner, json_t *msg, int final)
{
    (void)inner;
    sub_t *s = ctx;
    if (!final || s->done) return;
    s->done = 1;
    json_t *result = msg ? json_object_get(msg, "result") : NULL;
    const char *message = msg ? json_string_value(json_object_get(json_object_get(msg, "error"),
                                                                  "message"))
                              : "no answer";
    s->fn(s->arg, s->outer, result, result ? NULL : message ? message : "an error");
    call_release(s->outer);
    free(s);
}

void subcall_run(call_t *outer, const char *name, tool_fn *tool, json_t *args, subcall_fn *fn,
                 void *arg)
{
    sub_t *s = xcalloc(1, sizeof *s);
    *s = (sub_t){outer, fn, arg, 0};
    call_hold(outer);
    json_t *msg = json_pack("{s:s,s:s,s:s,s:{s:s,s:O}}", "jsonrpc", "2.0", "id", "subcall",
                            "method", "tools/call", "params", "name", name, "arguments", args);
    rpc_msg_t m = {.kind = RPC_REQUEST, .msg = msg};
    m.id = json_object_get(msg, "id");
    m.method = "tools/call";
    m.params = json_object_get(msg, "params");
    call_t *inner = call_new(outer->fe, outer->session, &m, &s_stats, s_emit, s);
    inner->tenant = outer->tenant;
    inner->endpoint = outer->endpoint;
    inner->emit_owned = 1; /* not a transport: it always hears the end */
    json_decref(msg);
    tool_task_t none = {.wanted = 0, .ttl_ms = -1};
    /* call_new's reference is the answer's (call.c's s_finish lets go of it): ours is held
     * only while the tool runs, as mcp.c does around a handler */
    call_hold(inner);
    tool(inner, json_object_get(inner->params, "arguments"), &none);
    call_release(inner);
}

json_t *subcall_ok(const json_t *result, const char *message, const char **why)
{
    json_t *sc = result ? json_object_get(result, "structuredContent") : NULL;
    if (result && !json_is_true(json_object_get(result, "isError")) && json_is_object(sc))
        return sc;
    *why = message ? message : "the tool failed";
    json_t *content = result ? json_array_get(json_object_get(result, "content"), 0) : NULL;
    const char *text = json_string_value(json_object_get(content, "text"));
    if (text) *why = text;
    return NULL;
}
