/* mcp-frontend/console/calls.c — a page's data, fetched by the page's script: each request
 * becomes one 2026-07-28 request to the method table (mcp.h's mcp_handle), for the signed-in
 * tenant, answered on this exchange as /mcp answers it (exchange_emit). So a page sees exactly
 * what the tenant's agents see through the tools: the same handlers, tenant scoping, argument
 * checks, rate limit, quotas and records, and nothing the tools do not offer.
 *
 * Only the tools a page uses are reachable, and resources/read only for an execution's own
 * URIs; a tool name outside the list is 404 here even when /mcp has it. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "mcp-frontend/mcp/mcp.h"
#include "mcp-frontend/rpc/envelope.h"
#include "request.h"

/* The tools the pages call (request.h's rows reach them as /console/api/tools/NAME). */
static const char *const s_tools[] = {
    "execute_code",         "validate_code",         "get_sandbox_info",
    "get_execution",        "list_executions",       "get_usage",
    "create_session",       "fork_session",          "close_session",
    "list_sessions",        "create_state_snapshot", "restore_state_snapshot",
    "list_state_snapshots", "delete_state_snapshot", NULL,
};

static int s_tool_allowed(const char *name)
{
    for (const char *const *t = s_tools; *t; t++)
        if (!strcmp(*t, name)) return 1;
    return 0;
}

/* One request to the method table: params gains the 2026-07-28 envelope (no optional client
 * capability: no sampling, no tasks, no logging), parsed as /mcp's bodies are. A page that
 * reads a stream (Accept: text/event-stream, the Run page) asks for progress too, and gets it
 * as /mcp sends it: queued, running, the output as it is printed, done, then the answer. */
static void s_dispatch(console_req_t *r, const char *method, json_t *params)
{
    exchange_t *ex = r->ex;
    fe_t *fe = r->console->fe;
    const char *accept = exchange_header(ex, "Accept");
    int stream = accept && strstr(accept, "text/event-stream");
    json_t *meta = json_pack("{s:s,s:{}}", META_PROTOCOL_VERSION, MCP_MODERN, META_CLIENT_CAPS);
    if (stream) json_object_set_new(meta, "progressToken", json_string("console"));
    json_object_set_new(params, "_meta", meta);
    json_t *msg = json_pack("{s:s,s:i,s:s,s:o}", "jsonrpc", "2.0", "id", 1, "method", method,
                            "params", params);
    char *text = json_dumps(msg, JSON_COMPACT);
    json_decref(msg);
    int rc = text ? rpc_parse(text, strlen(text), &ex->rpc) : -1;
    free(text);
    ex->has_rpc = 1; /* cleared with the exchange */
    envelope_t env;
    char why[128];
    if (rc < 0 || ex->rpc.kind != RPC_REQUEST ||
        envelope_parse(ex->rpc.params, &env, why, sizeof why) != ENVELOPE_OK) {
        console_refuse(r, MHD_HTTP_BAD_REQUEST, CONSOLE_REFUSED_BODY, "not a request we can make");
        return;
    }
    r->console->stats.calls++;
    ex->modern = 1;
    ex->accept_sse = stream; /* else one JSON answer, and the page shows the time it waits */
    ex->session = mcp_session_scope(ex->tenant, TRANSPORT_HTTP);
    ex->state = EX_CALL;
    ex->call = mcp_handle(fe->mcp, ex->session, &ex->rpc, &env, NULL, exchange_emit, ex);
}

/* The body as a JSON object (an empty body is {}); NULL with the request refused. */
static json_t *s_body_object(console_req_t *r)
{
    exchange_t *ex = r->ex;
    if (!ex->body.len) return json_object();
    json_error_t err;
    json_t *v = json_loadb((const char *)ex->body.data, ex->body.len, 0, &err);
    if (!json_is_object(v)) {
        json_decref(v);
        console_refuse(r, MHD_HTTP_BAD_REQUEST, CONSOLE_REFUSED_BODY,
                       "the body must be a JSON object (the tool's arguments)");
        return NULL;
    }
    return v;
}

void calls_tool(console_req_t *r)
{
    if (!s_tool_allowed(r->rest)) {
        console_refuse(r, MHD_HTTP_NOT_FOUND, CONSOLE_REFUSED_NOT_FOUND, "no such tool here");
        return;
    }
    json_t *args = s_body_object(r);
    if (!args) return;
    s_dispatch(r, "tools/call", json_pack("{s:s,s:o}", "name", r->rest, "arguments", args));
}

/* An execution's resources only (its output, its figures): the ids in them are checked
 * against the tenant by the resource's handler, as for /mcp. */
void calls_resource(console_req_t *r)
{
    json_t *body = s_body_object(r);
    if (!body) return;
    const char *uri = json_string_value(json_object_get(body, "uri"));
    if (!uri || strncmp(uri, "sandbox://executions/", 21) != 0 || strlen(uri) > 200) {
        json_decref(body);
        console_refuse(r, MHD_HTTP_BAD_REQUEST, CONSOLE_REFUSED_BODY,
                       "`uri` must be one of an execution's resources");
        return;
    }
    json_t *params = json_pack("{s:s}", "uri", uri);
    json_decref(body);
    s_dispatch(r, "resources/read", params);
}
