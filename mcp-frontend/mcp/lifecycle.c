/* mcp-frontend/mcp/lifecycle.c — see lifecycle.h. Legacy rules follow MCP 2025-11-25 "Lifecycle":
 * initialize first (anything but ping before it is refused), version negotiation answers the
 * client's version when we support it and our latest otherwise. server/discover follows
 * 2026-07-28 server/discover. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "mcp-frontend/render/proftext.h"
#include "mcp-frontend/rpc/envelope.h"
#include "mcp-frontend/rpc/fe.h"
#include "lifecycle.h"

/* The server's instructions, profiles named from their table (proftext.h). */
static const char s_instructions[] =
    "snakepit runs Python 3.11 code in a fresh sandboxed interpreter per call. Use execute_code "
    "to run code (print what you need, or end with an expression to get its value as `result`); "
    "each call starts clean, with no network or processes. Profiles: {profile_summaries}. "
    "Without a `profile` the code runs in the smallest of them that has every module it imports. "
    "validate_code checks code without running it, get_sandbox_info lists profiles, modules and "
    "limits, get_execution / list_executions show your earlier runs, get_usage what you used, "
    "and create_session keeps an interpreter alive between calls.";

/* The endpoint's (endpoint.h): snakepit's own on /mcp, the drop-in server's on its own. */
static const char *s_instructions_of(const call_t *c)
{
    return c->endpoint ? c->endpoint->instructions : s_instructions;
}

/* A drop-in endpoint declares what the server it stands in for declared, in either era
 * (endpoint.h): tools (none of which becomes a task), log messages, and its own resources and
 * prompts when it has them — fixed lists, nothing to subscribe to. */
static json_t *s_dropin_caps(const endpoint_t *ep)
{
    json_t *caps = json_pack("{s:{s:b},s:{}}", "tools", "listChanged", 0, "logging");
    if (ep->resources)
        json_object_set_new(caps, "resources",
                            json_pack("{s:b,s:b}", "subscribe", 0, "listChanged", 0));
    if (ep->prompts) json_object_set_new(caps, "prompts", json_pack("{s:b}", "listChanged", 0));
    return caps;
}

static void s_on_stored(void *arg, int rc)
{
    call_t *c = arg;
    mcp_session_t *s = c->session;
    json_t *result = c->pending;
    c->pending = NULL;
    if (rc < 0) {
        json_decref(result);
        /* answered before the session closes: closing cancels the session's calls, and a
         * cancelled initialize would leave its POST without an answer */
        call_error(c, RPC_UNAVAILABLE,
                   "cannot open a session now (the session store is unreachable); try again "
                   "shortly, or use MCP " MCP_MODERN ", which needs none",
                   NULL);
        mcp_session_close(s);
    } else {
        log_info("event=session_initialized session=%.8s tenant=%s protocol=%s client=\"%.40s\"",
                 s->id, s->tenant->name, s->protocol, s->client_name);
        call_reply(c, result);
    }
    call_release(c);
}

void lifecycle_initialize(call_t *c)
{
    mcp_session_t *s = c->session;
    const char *want = call_str(c, "protocolVersion");
    if (!want) {
        call_error(c, RPC_INVALID_PARAMS, "initialize: \"protocolVersion\" (string) is required",
                   NULL);
        return;
    }
    json_t *caps = json_object_get(c->params, "capabilities");
    if (caps && !json_is_object(caps)) {
        call_error(c, RPC_INVALID_PARAMS, "initialize: \"capabilities\" must be an object", NULL);
        return;
    }
    if (s->protocol[0]) {
        call_error(c, RPC_INVALID_REQUEST, "the session is already initialized", NULL);
        return;
    }
    snprintf(s->protocol, sizeof s->protocol, "%s",
             envelope_legacy_supported(want) ? want : MCP_LEGACY);
    s->client_tasks = json_object_get(caps, "tasks") != NULL;
    const char *name =
        json_string_value(json_object_get(json_object_get(c->params, "clientInfo"), "name"));
    snprintf(s->client_name, sizeof s->client_name, "%s", name ? name : "");
    json_t *server_caps =
        c->endpoint
            ? s_dropin_caps(c->endpoint)
            : json_pack("{s:{s:b},s:{s:b,s:b},s:{s:b},s:{},s:{},s:{s:{},s:{},s:{s:{s:{}}}}}",
                        "tools", "listChanged", 0, "resources", "subscribe", 1, "listChanged", 1,
                        "prompts", "listChanged", 0, "logging", "completions", "tasks", "list",
                        "cancel", "requests", "tools", "call");
    char *instructions = proftext(s_instructions_of(c));
    json_t *result =
        json_pack("{s:s,s:o,s:{s:s,s:s,s:s},s:s}", "protocolVersion", s->protocol, "capabilities",
                  server_caps, "serverInfo", "name", "snakepit", "title",
                  endpoint_title(c->endpoint), "version", FE_VERSION, "instructions", instructions);
    free(instructions);
    /* the id may leave only once any front-end can find the session (mcp_session_keep) */
    c->pending = result;
    call_hold(c);
    mcp_session_keep(s, s_on_stored, c);
}

void lifecycle_ping(call_t *c)
{
    call_reply(c, json_object());
}

static void s_on_level_set(void *arg, int rc)
{
    call_t *c = arg;
    if (rc < 0)
        call_error(c, RPC_UNAVAILABLE, "cannot store the level now (session store unreachable)",
                   NULL);
    else
        call_reply(c, json_object());
    call_release(c);
}

void lifecycle_set_level(call_t *c)
{
    int level = loglevel_parse(call_str(c, "level"));
    if (level < 0) {
        call_error(c, RPC_INVALID_PARAMS,
                   "logging/setLevel: \"level\" must be one of debug, info, notice, "
                   "warning, error, critical, alert, emergency",
                   NULL);
        return;
    }
    call_hold(c);
    mcp_session_set_level(c->session, level, s_on_level_set, c);
}

/* What a 2026-07-28 client may use. The tool and prompt lists are fixed for a deployment, so
 * they announce no changes — except the conformance fixtures, which change them on demand.
 * Resources: execution records (and any resource of ours) can be watched through
 * subscriptions/listen; tasks are the io.modelcontextprotocol/tasks extension (SEP-2663),
 * which replaces 2025-11-25's capabilities.tasks. */
static json_t *s_modern_caps(const call_t *c)
{
    if (c->endpoint) return s_dropin_caps(c->endpoint);
    int fixtures = c->fe->fixtures;
    return json_pack("{s:{s:b},s:{s:b,s:b},s:{s:b},s:{},s:{},s:{s:{}}}", "tools", "listChanged",
                     fixtures, "resources", "subscribe", 1, "listChanged", 0, "prompts",
                     "listChanged", fixtures, "logging", "completions", "extensions", EXT_TASKS);
}

void lifecycle_discover(call_t *c)
{
    char *instructions = proftext(s_instructions_of(c));
    json_t *result = json_pack("{s:o,s:o,s:s}", "supportedVersions", envelope_supported_json(),
                               "capabilities", s_modern_caps(c), "instructions", instructions);
    free(instructions);
    call_reply(c, result);
}
