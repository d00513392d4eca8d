/* cli/session.c — `snakepit session new|run|fork|close|list`: sessions from a
 * shell, through the farm's MCP endpoint as its local tenant, like `snakepit run`. `new` and
 * `fork` print the session id alone on stdout, so S=$(snakepit session new) works; `run ID` is
 * `snakepit run --session ID` (same options, output and exit status). Exit status: 0 done, 1
 * the farm said no (its reason on stderr), 64 usage, 69 the farm not reachable, 77 the API key
 * refused — run_args.h's. */
#define _GNU_SOURCE
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "common/buf.h"
#include "common/config.h"
#include "common/profiles.h"
#include "cli/farm/farm.h"
#include "cli/farm/mcp_http.h"
#include "cli/run/run.h"
#include "session.h"

typedef struct {
    char profile[65];
    long memory_mb;
    long idle_timeout_s;
    char state_dir[PATH_MAX];
    char url[512];          /* a farm's MCP endpoint; empty: the state directory's */
    char key[600];          /* its API key; empty: the local key */
    char ca_file[PATH_MAX]; /* CAs for an https URL */
    int json;
} session_args_t;

static const cfg_opt_t s_opts[] = {
    CFG_OPT_STR(session_args_t, profile, "profile", "P", "new: the session's sandbox profile"),
    CFG_OPT_INT(session_args_t, memory_mb, "memory", 0, 1 << 20, "MB",
                "new: memory limit of the whole session (default: the profile's)"),
    CFG_OPT_INT(session_args_t, idle_timeout_s, "idle-timeout", 0, 7 * 86400, "S",
                "new: the session ends after this long without a cell (default 600)"),
    CFG_OPT_STR(session_args_t, state_dir, "state-dir", "DIR", "farm state directory"),
    CFG_OPT_STR(session_args_t, url, "url", "URL",
                "a farm's MCP endpoint (default: the state directory's farm)"),
    CFG_OPT_STR(session_args_t, key, "key", "KEY", "the API key for it (default: the local key)"),
    CFG_OPT_STR(session_args_t, ca_file, "ca-file", "FILE",
                "CA certificates (PEM) an https URL's server must be signed by"),
    CFG_OPT_BOOL(session_args_t, json, "json", "print the structured answer as JSON"),
    CFG_OPT_END,
};

static const char *s_usage =
    "snakepit session new [--profile P] [--memory MB] [--idle-timeout S]\n"
    "       snakepit session run ID [snakepit run's options, anywhere] (CODE | -f FILE | -)\n"
    "       snakepit session fork ID\n"
    "       snakepit session close ID\n"
    "       snakepit session list\n"
    "       (each takes --state-dir DIR or --url URL --key KEY [--ca-file FILE], and --json)";

static const char *s_about =
    "Sessions keep a sandboxed interpreter alive between runs: variables, imports and files\n"
    "stay. new and fork print the new session's id; run ID runs code as its next cell (the\n"
    "exit status is then snakepit run's). Exit status: 0 done, 1 the farm said no (why on\n"
    "stderr), 64 usage (also: arguments the farm refused, such as an id that is not one),\n"
    "69 farm not reachable, 77 API key refused.";

/* The exit status of a call that brought no answer. */
static int s_exit_of(mcp_http_failure_t f)
{
    switch (f) {
    case MCP_HTTP_UNREACHABLE:
        return EX_UNAVAILABLE;
    case MCP_HTTP_REFUSED:
        return EX_NOPERM;
    case MCP_HTTP_INVALID:
        return EX_USAGE;
    default:
        return 1;
    }
}

/* The farm's MCP endpoint (--url, else the state directory's), initialized: the client, or
 * NULL with the exit status in *rc (said). */
static mcp_http_t *s_connect(session_args_t *a, int *rc)
{
    char dir[PATH_MAX], err[1024];
    farm_info_t info;
    farm_state_dir(a->state_dir, dir, sizeof dir);
    int have_farm = farm_read_running(dir, &info, err, sizeof err) == 0;
    const char *url = a->url[0] ? a->url : have_farm ? info.url : "";
    const char *key = a->key[0]                                ? a->key
                      : have_farm && !strcmp(info.url, url) ? info.api_key
                                                            : "";
    if (!a->ca_file[0] && have_farm && !strcmp(info.url, url)) /* its own certificate */
        snprintf(a->ca_file, sizeof a->ca_file, "%s", info.ca_file);
    *rc = EX_UNAVAILABLE;
    if (!url[0]) {
        fprintf(stderr, "snakepit session: %s\n",
                have_farm ? "the farm has no MCP endpoint to reach" : err);
        return NULL;
    }
    mcp_http_t *c = mcp_http_new(url, key, a->ca_file, 120000, 30000, err, sizeof err);
    if (!c) {
        fprintf(stderr, "snakepit session: %s\n", err);
        *rc = EX_USAGE;
        return NULL;
    }
    if (mcp_http_initialize(c, err, sizeof err) < 0) {
        *rc = s_exit_of(mcp_http_failure(c));
        fprintf(stderr, "snakepit session: %s\n", err);
        mcp_http_destroy(&c);
        return NULL;
    }
    return c;
}

/* Calls the tool; its structured answer (caller decrefs), or NULL with the exit status in *rc
 * (the reason said). */
static json_t *s_call(mcp_http_t *c, const char *tool, json_t *args, int *rc)
{
    char err[1024];
    json_t *r = mcp_http_call(c, tool, args, err, sizeof err);
    if (!r) {
        *rc = s_exit_of(mcp_http_failure(c));
        fprintf(stderr, "snakepit session: %s\n", err);
        return NULL;
    }
    json_t *sc = json_incref(json_object_get(r, "structuredContent"));
    const char *text;
    mcp_http_failure_t refused = mcp_http_refusal(r, &text);
    if (json_is_true(json_object_get(r, "isError")) || !sc) {
        fprintf(stderr, "snakepit session %s: %s\n", tool, text ? text : "failed");
        json_decref(sc);
        sc = NULL;
        /* an id that names no session is the command line's mistake, as a malformed one is */
        *rc = refused == MCP_HTTP_OK || refused == MCP_HTTP_FAILED ? 1 : s_exit_of(refused);
    }
    json_decref(r);
    return sc;
}

static void s_print_json(json_t *o)
{
    char *text = json_dumps(o, JSON_INDENT(2));
    printf("%s\n", text ? text : "{}");
    free(text);
}

static void s_print_list(json_t *sc)
{
    json_t *list = json_object_get(sc, "sessions"), *s;
    size_t i;
    if (json_array_size(list) == 0) {
        printf("no sessions\n");
        return;
    }
    printf("%-36s  %-20s %6s %8s  %s\n", "SESSION", "PROFILE", "CELLS", "MEMORY", "LAST USED");
    json_array_foreach(list, i, s)
    {
        printf("%-36s  %-20s %6lld %5lld MB  %s\n",
               json_string_value(json_object_get(s, "session_id")),
               json_string_value(json_object_get(s, "profile")),
               (long long)json_integer_value(json_object_get(s, "cells")),
               (long long)json_integer_value(json_object_get(s, "memory_in_use_mb")),
               json_string_value(json_object_get(s, "last_used")));
    }
}

/* new, fork, close and list: one tool call each. */
static int s_simple(session_args_t *a, const char *verb, const char *id)
{
    json_t *args = json_object();
    const char *tool;
    if (!strcmp(verb, "new")) {
        tool = "create_session";
        if (a->profile[0]) json_object_set_new(args, "profile", json_string(a->profile));
        if (a->memory_mb) json_object_set_new(args, "memory_limit", json_integer(a->memory_mb));
        if (a->idle_timeout_s)
            json_object_set_new(args, "idle_timeout", json_integer(a->idle_timeout_s));
    } else if (!strcmp(verb, "list")) {
        tool = "list_sessions";
    } else {
        tool = !strcmp(verb, "fork") ? "fork_session" : "close_session";
        json_object_set_new(args, "session_id", json_string(id));
    }
    int rc = 0;
    mcp_http_t *c = s_connect(a, &rc);
    json_t *sc = c ? s_call(c, tool, args, &rc) : (json_decref(args), NULL);
    mcp_http_destroy(&c);
    if (!sc) return rc;
    if (a->json)
        s_print_json(sc);
    else if (!strcmp(verb, "list"))
        s_print_list(sc);
    else if (!strcmp(verb, "close"))
        fprintf(stderr, "session %s closed\n", id);
    else
        printf("%s\n", json_string_value(json_object_get(sc, "session_id")));
    json_decref(sc);
    return 0;
}

/* The index of the verb: the first argument that is neither an option nor an option's value
 * (session's own options that take one), or 0. */
static int s_verb_at(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--")) return i + 1 < argc ? i + 1 : 0;
        if (argv[i][0] != '-' || !strcmp(argv[i], "-")) return i;
        if (strchr(argv[i], '=')) continue;
        for (const cfg_opt_t *o = s_opts; o->name; o++)
            if (o->type != CFG_BOOL && !strcmp(argv[i] + 2, o->name)) {
                i++; /* its value */
                break;
            }
    }
    return 0;
}

int session_main(int argc, char **argv)
{
    /* run ID ...: `snakepit run` whose first argument names the session; options anywhere */
    int at = s_verb_at(argc, argv);
    if (at && !strcmp(argv[at], "run")) {
        char **args = xcalloc((size_t)argc + 1, sizeof *args);
        int n = 0;
        args[n++] = "run";
        for (int i = 1; i < argc; i++)
            if (i != at) args[n++] = argv[i];
        int rc = run_session_main(n, args);
        free(args);
        return rc;
    }
    session_args_t a = {0}, defaults = {0};
    char *rest[3];
    int n_rest = 3;
    char err[512];
    switch (config_load(&a, s_opts, argc, argv, rest, &n_rest, err, sizeof err)) {
    case CONFIG_HELP:
        config_usage(stdout, s_usage, s_about, s_opts, &defaults);
        return 0;
    case CONFIG_ERROR:
        fprintf(stderr, "snakepit session: %s\n", err);
        return EX_USAGE;
    case CONFIG_OK:
        break;
    }
    const char *verb = n_rest > 0 ? rest[0] : "";
    int rc;
    int wants_id = !strcmp(verb, "fork") || !strcmp(verb, "close");
    int known = wants_id || !strcmp(verb, "new") || !strcmp(verb, "list");
    if (!known || n_rest != (wants_id ? 2 : 1)) {
        fprintf(stderr, "usage: %s\n", s_usage);
        return EX_USAGE;
    }
    if (a.profile[0] && !profile_find(a.profile)) {
        fprintf(stderr, "snakepit session: unknown profile '%s'\n", a.profile);
        return EX_USAGE;
    }
    rc = s_simple(&a, verb, wants_id ? rest[1] : NULL);
    explicit_bzero(a.key, sizeof a.key);
    return rc;
}
