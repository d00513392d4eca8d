/* cli/run/run.c — `snakepit run`: one job from the command line, printed the way the code wrote
 * it, the exit status the job's status (run_args.h). It goes through a farm's MCP endpoint —
 * --url/--key, or the state directory's ready.json — as any client's run does (run_http.c),
 * or with --broker straight to a broker (run_broker.c). This file reads the command line, the
 * code and the input files, and chooses the way. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/config.h"
#include "common/profiles.h"
#include "proto/job.h"
#include "cli/farm/farm.h"
#include "run.h"
#include "run_args.h"
#include "run_broker.h"
#include "run_http.h"

static const cfg_opt_t s_opts[] = {
    CFG_OPT_INT(run_args_t, timeout_s, "timeout", 1, 3600, "S",
                "wall-clock limit in seconds (default: the profile's)"),
    CFG_OPT_INT(run_args_t, memory_mb, "memory", 1, 1 << 20, "MB",
                "memory limit (default: the profile's)"),
    CFG_OPT_INT(run_args_t, output_bytes, "output-limit", 1, 1L << 30, "BYTES",
                "output limit per stream (default: the profile's)"),
    CFG_OPT_LIST(run_args_t, vars, "var", "NAME", "print this variable afterwards; repeatable"),
    CFG_OPT_STR(run_args_t, profile, "profile", "P",
                "sandbox profile (default: the first whose modules have every dependency of the "
                "code's PEP 723 block, else python.basic)"),
    CFG_OPT_STR(run_args_t, session, "session", "ID",
                "run as the next cell of this session (snakepit session new), in its profile"),
    CFG_OPT_STR(run_args_t, file, "file", "FILE", "run the code in FILE (- for stdin)"),
    CFG_OPT_STR(run_args_t, stdin_text, "stdin", "TEXT", "text the code reads with input()"),
    CFG_OPT_LIST(run_args_t, files_in, "file-in", "PATH",
                 "put this file in the job's workspace under its base name (profiles with a "
                 "workspace); repeatable"),
    CFG_OPT_STR(run_args_t, out_dir, "out", "DIR",
                "save the figures (figure-N.png) and the files the code wrote into DIR"),
    CFG_OPT_STR(run_args_t, url, "url", "URL",
                "a farm's MCP endpoint (default: the state directory's farm)"),
    CFG_OPT_STR(run_args_t, key, "key", "KEY", "the API key for it (default: the local key)"),
    CFG_OPT_STR(run_args_t, ca_file, "ca-file", "FILE",
                "CA certificates (PEM) an https URL's server must be signed by (default: the "
                "system's)"),
    CFG_OPT_INT(run_args_t, retry_s, "retry-for", 0, 3600, "S",
                "keep retrying a rate-limited call this long, as the answer says when"),
    CFG_OPT_STR(run_args_t, tenant, "tenant", "NAME", "tenant to run as with --broker"),
    CFG_OPT_STR(run_args_t, state_dir, "state-dir", "DIR", "farm state directory"),
    CFG_OPT_STR(
        run_args_t, broker, "broker", "ENDPOINT",
        "submit straight to this broker as --tenant, bypassing the MCP endpoint (no records)"),
    CFG_OPT_BOOL(run_args_t, json, "json", "print the structured result as JSON"),
    CFG_OPT_BOOL(run_args_t, validate, "validate", "only validate the code (validate_code)"),
    CFG_OPT_END,
};

static const cfg_short_t s_shorts[] = {
    {'t', "timeout"}, {'m', "memory"}, {'o', "output-limit"},
    {'v', "var"},     {'f', "file"},   CFG_SHORT_END,
};

static const char *s_usage =
    "snakepit run [-t S] [-m MB] [-o BYTES] [-v NAME]... [--profile P] [--stdin TEXT]\n"
    "                    [--file-in PATH]... [--out DIR] [--session ID] [--json] [--validate]\n"
    "                    [--url URL --key KEY [--ca-file FILE] | --broker ENDPOINT]\n"
    "                    (-f FILE | CODE | -)";

static const char *s_summary =
    "Run Python code in the farm's sandbox and print what it printed, then the result\n"
    "and the variables asked for. Exit status: the job's status — 0 ok, 1 error,\n"
    "2 syntax_error, 3 timeout, 4 cpu_limit, 5 memory_limit, 6 output_limit,\n"
    "7 security_violation, 8 cancelled, 9 rejected (also: still rate-limited after\n"
    "--retry-for), 10 lost, 11 internal_error, 12 egress_limit — or 64 usage (also:\n"
    "arguments the farm refused), 69 farm not reachable, 73 --out could not be written,\n"
    "77 API key refused.\n"
    "--validate: 0 valid, 2 a syntax error, 1 anything else it found.";

static char *s_read_all(FILE *f, size_t *len)
{
    buf_t b;
    buf_init(&b);
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        buf_append(&b, chunk, n);
        if (b.len > JOB_MAX_CODE) break;
    }
    char *s = buf_steal(&b, len);
    return s ? s : xstrdup("");
}

/* Reads the options into a; rest gets the arguments that are not options. -1 to go on, or
 * the exit status (--help answered, or a usage error said). */
static int s_options(run_args_t *a, int argc, char **argv, char **rest, int *n_rest)
{
    run_args_t defaults = {0};
    snprintf(defaults.tenant, sizeof defaults.tenant, "local");
    defaults.retry_s = 30;
    *a = defaults;
    char err[512];
    config_rc_t rc =
        config_load_short(a, s_opts, s_shorts, argc, argv, rest, n_rest, err, sizeof err);
    if (rc == CONFIG_HELP) {
        config_usage_short(stdout, s_usage, s_summary, s_opts, s_shorts, &defaults);
        return 0;
    }
    if (rc == CONFIG_ERROR) {
        fprintf(stderr, "snakepit run: %s\n", err);
        return RUN_EX_USAGE;
    }
    if (a->profile[0] && !profile_find(a->profile)) {
        char names[512];
        profiles_join(names, sizeof names, ", ", NULL);
        fprintf(stderr, "snakepit run: unknown profile '%s' (profiles: %s)\n", a->profile, names);
        return RUN_EX_USAGE;
    }
    if (a->session[0] && a->profile[0]) {
        fprintf(stderr, "snakepit run: a session's cell runs in the session's profile: leave out "
                        "--profile\n");
        return RUN_EX_USAGE;
    }
    if (a->session[0] && a->broker[0]) { /* sessions are the MCP endpoint's tools */
        fprintf(stderr, "snakepit run: --session needs the farm's MCP endpoint (not --broker)\n");
        return RUN_EX_USAGE;
    }
    return -1;
}

/* The code to run: -f FILE, - (or -f -) for stdin, or the one argument. -1 (said) when there
 * is none or it is too large. */
static int s_read_code(run_args_t *a, char **rest, int n_rest)
{
    int from_stdin =
        strcmp(a->file, "-") == 0 || (!a->file[0] && n_rest == 1 && !strcmp(rest[0], "-"));
    if ((a->file[0] && n_rest) || (!a->file[0] && n_rest != 1)) {
        fprintf(stderr, "snakepit run: give the code as one argument, -f FILE, or - for stdin\n");
        return -1;
    }
    if (from_stdin) {
        a->code = s_read_all(stdin, &a->code_len);
    } else if (a->file[0]) {
        FILE *f = fopen(a->file, "r");
        if (!f) {
            fprintf(stderr, "snakepit run: %s: %s\n", a->file, strerror(errno));
            return -1;
        }
        a->code = s_read_all(f, &a->code_len);
        fclose(f);
    } else {
        a->code = xstrdup(rest[0]);
        a->code_len = strlen(a->code);
    }
    if (a->code_len > JOB_MAX_CODE) {
        fprintf(stderr, "snakepit run: code larger than %u bytes\n", JOB_MAX_CODE);
        return -1;
    }
    return 0;
}

/* Through the farm of --url, or of the state directory (its MCP endpoint, else its broker). */
static int s_run_farm(run_args_t *a)
{
    char dir[PATH_MAX], err[PATH_MAX + 128];
    farm_info_t info;
    farm_state_dir(a->state_dir, dir, sizeof dir);
    int have_farm = farm_read_running(dir, &info, err, sizeof err) == 0;
    if (!a->ca_file[0] && have_farm && (!a->url[0] || !strcmp(info.url, a->url)))
        snprintf(a->ca_file, sizeof a->ca_file, "%s", info.ca_file); /* its own certificate */
    if (a->url[0]) /* the local key serves the local farm's URL given explicitly */
        return run_http(a, a->url,
                        a->key[0]                                ? a->key
                        : have_farm && !strcmp(info.url, a->url) ? info.api_key
                                                                 : "");
    if (!have_farm) {
        fprintf(stderr, "snakepit run: %s, or give --url\n", err);
        return RUN_EX_UNREACHABLE;
    }
    if (info.url[0] && (info.api_key[0] || a->key[0]))
        return run_http(a, info.url, a->key[0] ? a->key : info.api_key);
    if (a->session[0]) { /* sessions are the MCP endpoint's tools */
        fprintf(stderr, "snakepit run: --session needs the farm's MCP endpoint (not its broker)\n");
        return RUN_EX_USAGE;
    }
    snprintf(a->broker, sizeof a->broker, "%s", info.broker);
    return run_broker(a, info.curve_broker_key, info.curve_client_cert);
}

/* session_first: the first argument that is not an option is a session id (`session run`). */
static int s_main(int argc, char **argv, int session_first)
{
    run_args_t a;
    char *rest[3], err[600];
    int n_rest = 3;
    int rc = s_options(&a, argc, argv, rest, &n_rest);
    if (rc >= 0) return rc;
    char **code_args = rest;
    if (session_first) {
        if (!n_rest || a.session[0]) {
            fprintf(stderr, "snakepit session run: give the session id once, as `snakepit session "
                            "run ID [options] (CODE | -f FILE | -)`\n");
            return RUN_EX_USAGE;
        }
        snprintf(a.session, sizeof a.session, "%s", rest[0]);
        code_args++;
        n_rest--;
    }
    if (s_read_code(&a, code_args, n_rest) < 0) {
        rc = RUN_EX_USAGE;
    } else if (a.files_in[0] && runfiles_read(&a.inputs, a.files_in, err, sizeof err) < 0) {
        fprintf(stderr, "snakepit run: %s\n", err);
        rc = RUN_EX_USAGE;
    } else {
        rc = a.broker[0] ? run_broker(&a, "", "") : s_run_farm(&a);
    }
    free(a.code);
    runfiles_clear(&a.inputs);
    explicit_bzero(a.key, sizeof a.key);
    return rc;
}

int run_main(int argc, char **argv)
{
    return s_main(argc, argv, 0);
}

int run_session_main(int argc, char **argv)
{
    return s_main(argc, argv, 1);
}
