/* cli/session.c — `snakepit session new|run|fork|close|list` (issue 12): sessions from a
 * shell, through the farm's MCP endpoint as its local tenant, like `snakepit run`. `new` and
 * `fork` print the session id alone on stdout, so S=$(snakepit session new) works; `run ID` is
 * `snakepit run --session ID` (same options, output and exit status). Exit status: 0 done, 1
 * the farm said no (its reason on stderr), 64 usage, 69 the farm not reachable. */
#define _GNU_SOURCE
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "../common/buf.h"
#include "../common/config.h"
#include "../common/profiles.h"
#include "farm.h"
#include "mcp_http.h"
#include "run.h"
#include "session.h"

typedef struct {
    char profile[65];
    long memory_mb;
    long idle_timeout_s;
    char state_dir[PATH_MAX];
    int json;
} session_args_t;

static const cfg_opt_t s_opts[] = {
    CFG_OPT_STR(session_args_t, profile, "profile", "P", "new: the session's sandbox profile"),
    CFG_OPT_INT(session_args_t, memory_mb, "memory", 0, 1 << 20, "MB",
                "new: memory limit of the whole session (default: the profile's)"),
    CFG_OPT_INT(session_args_t, idle_timeout_s, "idle-timeout", 0, 7 * 86400, "S",
                "new: the session ends after this long without a cell (default 600)"),
    CFG_OPT_STR(session_args_t, state_dir, "state-dir", "DIR", "farm state directory"),
    CFG_OPT_BOOL(session_args_t, json, "json", "print the structured answer as JSON"),
    CFG_OPT_END,
};

static const char *s_usage =
    "snakepit session new [--profile P] [--memory MB] [--idle-timeout S]\n"
    "       snakepit session run ID [snakepit run's options] (CODE | -f FILE | -)\n"
    "       snakepit session fork ID\n"
    "       snakepit session close ID\n"
    "       snakepit session list\n"
    "       (each takes --state-dir DIR and --json)";

static const char *s_about =
    "Sessions keep a sandboxed interpreter alive between runs: variables, imports and files\n"
    "stay. new and fork print the new session's id; run ID runs code as its next cell.";

/* The farm's MCP endpoint, initialized. 0, or the exit status (said). */
static int s_connect(const session_args_t *a, mcp_http_t *c)
{
    char dir[PATH_MAX], err[512];
    farm_info_t info;
    farm_state_dir(a->state_dir, dir, sizeof dir);
    if (farm_read_ready(dir, &info, err, sizeof err) < 0) {
        fprintf(stderr, "snakepit session: %s\n", err);
        return EX_UNAVAILABLE;
    }
    if (!info.url[0] || !info.api_key[0]) {
        fprintf(stderr, "snakepit session: the farm has no MCP endpoint to reach\n");
        return EX_UNAVAILABLE;
    }
    if (mcp_http_open(c, info.url, info.api_key, 120000, err, sizeof err) < 0 ||
        mcp_http_initialize(c, err, sizeof err) < 0) {
        fprintf(stderr, "snakepit session: %s\n", err);
        return EX_UNAVAILABLE;
    }
    return 0;
}

/* Calls the tool; its structured answer (caller decrefs), or NULL with the reason said. */
static json_t *s_call(mcp_http_t *c, const char *tool, json_t *args)
{
    char err[512];
    json_t *r = mcp_http_call(c, tool, args, err, sizeof err);
    if (!r) {
        fprintf(stderr, "snakepit session: %s\n", err);
        return NULL;
    }
    json_t *sc = json_incref(json_object_get(r, "structuredContent"));
    if (json_is_true(json_object_get(r, "isError")) || !sc) {
        const char *text = json_string_value(
            json_object_get(json_array_get(json_object_get(r, "content"), 0), "text"));
        fprintf(stderr, "snakepit session %s: %s\n", tool, text ? text : "failed");
        json_decref(sc);
        sc = NULL;
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
static int s_simple(const session_args_t *a, const char *verb, const char *id)
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
    mcp_http_t c;
    int rc = s_connect(a, &c);
    if (rc) {
        json_decref(args);
        return rc;
    }
    json_t *sc = s_call(&c, tool, args);
    if (!sc) return 1;
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

int session_main(int argc, char **argv)
{
    /* run ID ...: snakepit run --session ID ..., options and all */
    if (argc >= 3 && !strcmp(argv[1], "run") && argv[2][0] != '-') {
        char **args = xcalloc((size_t)argc + 2, sizeof *args);
        args[0] = "run";
        args[1] = "--session";
        args[2] = argv[2];
        for (int i = 3; i < argc; i++) args[i] = argv[i];
        int rc = run_main(argc, args);
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
    return s_simple(&a, verb, wants_id ? rest[1] : NULL);
}
