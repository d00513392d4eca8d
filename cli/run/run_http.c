/* cli/run/run_http.c — see run_http.h. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/profiles.h"
#include "proto/status.h"
#include "cli/farm/mcp_http.h"
#include "run_http.h"
#include "run_route.h"
#include "run_show.h"

#define ANSWER_GRACE_MS                                                                            \
    60000 /* beyond the job's own limit: the queue, and the way there and back */

/* The exit status of a call that brought no job status back. */
static int s_exit_of(mcp_http_failure_t f)
{
    switch (f) {
    case MCP_HTTP_UNREACHABLE:
        return RUN_EX_UNREACHABLE;
    case MCP_HTTP_REFUSED:
        return RUN_EX_KEY;
    case MCP_HTTP_INVALID:
        return RUN_EX_USAGE;
    case MCP_HTTP_LIMITED:
        return ST_REJECTED;
    case MCP_HTTP_OK:
    case MCP_HTTP_FAILED:
        break;
    }
    return ST_INTERNAL_ERROR;
}

/* The names of a comma-separated list as a JSON array. */
static json_t *s_names(const char *list)
{
    json_t *names = json_array();
    char copy[4096];
    snprintf(copy, sizeof copy, "%s", list);
    for (char *save = NULL, *tok = strtok_r(copy, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save))
        json_array_append_new(names, json_string(tok));
    return names;
}

/* The tool's arguments. No profile unless one was given: the front-end then routes by the
 * code's PEP 723 block, within the profiles the tenant may use. Limits only where given:
 * the profile's defaults apply to the rest. */
static json_t *s_arguments(const run_args_t *a)
{
    json_t *args = json_object();
    json_object_set_new(args, "code", json_stringn(a->code, a->code_len));
    if (a->profile[0]) json_object_set_new(args, "profile", json_string(a->profile));
    if (a->session[0]) json_object_set_new(args, "session_id", json_string(a->session));
    if (a->validate) return args;
    if (a->timeout_s) json_object_set_new(args, "timeout", json_integer(a->timeout_s));
    if (a->memory_mb) json_object_set_new(args, "memory_limit", json_integer(a->memory_mb));
    if (a->output_bytes) json_object_set_new(args, "output_limit", json_integer(a->output_bytes));
    if (a->stdin_text[0]) json_object_set_new(args, "stdin", json_string(a->stdin_text));
    if (a->vars[0]) json_object_set_new(args, "inspect_variables", s_names(a->vars));
    if (a->inputs.n) json_object_set_new(args, "files", runfiles_argument(&a->inputs));
    return args;
}

/* Shows the CallToolResult r; returns the exit status. */
static int s_show(const run_args_t *a, json_t *r)
{
    json_t *structured = json_object_get(r, "structuredContent");
    const char *why;
    mcp_http_failure_t refused = mcp_http_refusal(r, &why);
    if (refused != MCP_HTTP_OK) { /* an argument, or a session id, the farm turned away */
        fprintf(stderr, "snakepit run: %s\n", why ? why : "the farm refused the call");
        return s_exit_of(refused);
    }
    if (!json_is_object(structured)) {
        json_t *text = json_object_get(json_array_get(json_object_get(r, "content"), 0), "text");
        fprintf(stderr, "snakepit run: the answer had no structured content%s%s\n",
                json_is_string(text) ? ": " : "",
                json_is_string(text) ? json_string_value(text) : "");
        return ST_INTERNAL_ERROR;
    }
    runfiles_t figures = {0}, files = {0};
    char err[300];
    int rc;
    if (!a->validate && runfiles_from_tool_result(&figures, &files, r, err, sizeof err) < 0) {
        fprintf(stderr, "snakepit run: %s\n", err);
        rc = ST_INTERNAL_ERROR;
    } else {
        rc = run_show(a, structured, &figures, &files);
    }
    runfiles_clear(&figures);
    runfiles_clear(&files);
    return rc;
}

int run_http(const run_args_t *a, const char *url, const char *key)
{
    /* Wait as long as the job may run: the longest its profile allows when no -t is given
     * (the front-end decides the profile; routing here the way it does tells which). */
    const profile_t *route = run_route(a);
    limits_t wait = {.wall_ms = a->timeout_s * 1000};
    limits_fill(&wait, &(route ? route : profile_default())->max);
    /* a session's profile is the farm's to know: as long as any profile allows */
    for (size_t i = 0; a->session[0] && !a->timeout_s && i < n_profiles; i++)
        if (profiles[i].max.wall_ms > wait.wall_ms) wait.wall_ms = profiles[i].max.wall_ms;
    char err[1024];
    mcp_http_t *c = mcp_http_new(url, key, a->ca_file, wait.wall_ms + ANSWER_GRACE_MS,
                                 a->retry_s * 1000, err, sizeof err);
    if (!c) {
        fprintf(stderr, "snakepit run: %s\n", err);
        return RUN_EX_USAGE;
    }
    int rc;
    json_t *r = NULL;
    if (mcp_http_initialize(c, err, sizeof err) < 0 ||
        !(r = mcp_http_call(c, a->validate ? "validate_code" : "execute_code", s_arguments(a), err,
                            sizeof err))) {
        rc = s_exit_of(mcp_http_failure(c));
        fprintf(stderr, "snakepit run: %s%s\n", err,
                rc == RUN_EX_KEY ? " (give the tenant's key with --key or SNAKEPIT_KEY)" : "");
    } else {
        rc = s_show(a, r);
    }
    json_decref(r);
    mcp_http_destroy(&c);
    return rc;
}
