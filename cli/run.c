/* cli/run.c — `snakepit run`: one job from the command line, through the MCP endpoint of a
 * running farm (its ready.json) or straight to a broker, printed the way the code wrote it. The
 * exit status is the job's status: 0 ok, 1 error, 2 syntax_error, 3 timeout, 4 cpu_limit, 5
 * memory_limit, 6 output_limit, 7 security_violation, 8 cancelled, 9 rejected, 10 lost, 11
 * internal_error; 64 for a usage error. */
#define _GNU_SOURCE
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include "../common/buf.h"
#include "../common/clock.h"
#include "../common/config.h"
#include "../common/curve_cert.h"
#include "../common/ids.h"
#include "../common/log.h"
#include "../common/loop.h"
#include "../common/profiles.h"
#include "../proto/client.h"
#include "../proto/job.h"
#include "../proto/result.h"
#include "../proto/result_json.h"
#include "farm.h"
#include "mcp_http.h"
#include "run.h"

#define EX_USAGE_ 64

typedef struct {
    long timeout_s;
    long memory_mb;
    long output_bytes;
    char vars[2048];
    char profile[65];
    char file[PATH_MAX];
    char stdin_text[4096];
    char tenant[65];
    char state_dir[PATH_MAX];
    char broker[PATH_MAX + 64];
    char session[40];
    int json;
    int validate;
} run_args_t;

static const cfg_opt_t s_opts[] = {
    CFG_OPT_INT(run_args_t, timeout_s, "timeout", 1, 3600, "S", "wall-clock limit (-t)"),
    CFG_OPT_INT(run_args_t, memory_mb, "memory", 1, 1 << 20, "MB", "memory limit (-m)"),
    CFG_OPT_INT(run_args_t, output_bytes, "output", 1, 1L << 30, "BYTES",
                "output limit per stream (-o)"),
    CFG_OPT_LIST(run_args_t, vars, "var", "NAME",
                 "print this variable afterwards; repeatable (-v)"),
    CFG_OPT_STR(run_args_t, profile, "profile", "P", "sandbox profile"),
    CFG_OPT_STR(run_args_t, file, "file", "FILE", "run the code in FILE (-f; - for stdin)"),
    CFG_OPT_STR(run_args_t, stdin_text, "stdin", "TEXT", "text the code reads with input()"),
    CFG_OPT_STR(run_args_t, tenant, "tenant", "NAME", "tenant to run as with --broker"),
    CFG_OPT_STR(run_args_t, state_dir, "state-dir", "DIR", "farm state directory"),
    CFG_OPT_STR(
        run_args_t, broker, "broker", "ENDPOINT",
        "submit straight to this broker as --tenant, bypassing the MCP endpoint (no records)"),
    CFG_OPT_STR(run_args_t, session, "session", "ID",
                "run as the next cell of this session (snakepit session new)"),
    CFG_OPT_BOOL(run_args_t, json, "json", "print the structured result as JSON"),
    CFG_OPT_BOOL(run_args_t, validate, "validate", "only validate the code (validate_code)"),
    CFG_OPT_END,
};

typedef struct {
    int done;
    result_t res;
    int decoded;
    char err[256];
} wait_t;

static void s_event(void *arg, const uint8_t id[ID_BYTES], client_event_t ev, const uint8_t *body,
                    size_t len)
{
    (void)id;
    wait_t *w = arg;
    if (ev != CLIENT_RESULT) return;
    w->done = 1;
    w->decoded = result_decode(body, len, &w->res, w->err, sizeof w->err) == 0;
}

static void s_stop(loop_t *loop, void *arg)
{
    wait_t *w = arg;
    if (w->done) loop_stop(loop);
}

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
    return buf_steal(&b, len);
}

static void s_expand_short(int argc, char **argv, char **out)
{
    static const struct {
        const char *s, *l;
    } map[] = {
        {"-t", "--timeout"}, {"-m", "--memory"}, {"-o", "--output"},
        {"-v", "--var"},     {"-f", "--file"},
    };
    for (int i = 0; i < argc; i++) {
        out[i] = argv[i];
        for (size_t k = 0; k < sizeof map / sizeof map[0]; k++)
            if (strcmp(argv[i], map[k].s) == 0) out[i] = (char *)map[k].l;
    }
}

/* Prints a structured result (execute_code's structuredContent) the way the code wrote its
 * output; returns the exit status. */
static int s_print(json_t *s, int as_json, int validate)
{
    if (as_json || validate) {
        char *text = json_dumps(s, JSON_INDENT(2));
        printf("%s\n", text ? text : "{}");
        free(text);
        if (validate) return json_is_true(json_object_get(s, "valid")) ? 0 : ST_ERROR;
    } else {
        const char *out = json_string_value(json_object_get(s, "stdout"));
        const char *errs = json_string_value(json_object_get(s, "stderr"));
        if (out) fputs(out, stdout);
        if (errs) fputs(errs, stderr);
        json_t *trunc = json_object_get(s, "truncated");
        if (json_is_true(json_object_get(trunc, "stdout")) ||
            json_is_true(json_object_get(trunc, "stderr")))
            fprintf(stderr, "[output truncated]\n");
        const char *result = json_string_value(json_object_get(s, "result"));
        if (result) printf("%s\n", result);
        const char *k;
        json_t *v;
        json_object_foreach(json_object_get(s, "variables"), k, v)
        {
            char *t = json_dumps(v, JSON_ENCODE_ANY);
            printf("%s = %s\n", k, t ? t : "?");
            free(t);
        }
    }
    const char *name = json_string_value(json_object_get(s, "status"));
    status_t st = ST_INTERNAL_ERROR;
    if (name) status_parse(name, &st);
    if (st != ST_OK && !as_json) {
        json_t *e = json_object_get(s, "error");
        const char *tb = json_string_value(json_object_get(e, "traceback"));
        const char *msg = json_string_value(json_object_get(e, "message"));
        const char *sys = json_string_value(json_object_get(json_object_get(s, "exit"), "syscall"));
        if (tb) fputs(tb, stderr);
        fprintf(stderr, "snakepit: %s%s%s%s%s\n", status_name(st), msg ? ": " : "", msg ? msg : "",
                sys ? " — " : "", sys ? sys : "");
    }
    return (int)st;
}

/* The limits the call asks for; 0 where it names none (the profile's default applies). The
 * CPU limit follows the wall-clock one. */
static limits_t s_limits(const run_args_t *a)
{
    limits_t l = {0};
    l.wall_ms = a->timeout_s * 1000;
    l.cpu_ms = a->timeout_s * 1000;
    l.memory_mb = a->memory_mb;
    l.output_bytes = a->output_bytes;
    return l;
}

/* Through the farm's MCP endpoint, as the farm's local tenant: authenticated, rate-limited
 * and recorded like any client's run. */
static int s_run_http(const run_args_t *a, const char *url, const char *key, const char *code)
{
    /* Wait as long as the job may run (the profile's longest when no -t; the front-end
     * checks the profile), and a minute more for the queue and the way there and back. */
    const profile_t *prof = profile_find(a->profile);
    limits_t wait = s_limits(a);
    limits_fill(&wait, &(prof ? prof : profile_default())->max);
    mcp_http_t c;
    char err[512];
    if (mcp_http_open(&c, url, key, wait.wall_ms + 60000, err, sizeof err) < 0 ||
        mcp_http_initialize(&c, err, sizeof err) < 0) {
        fprintf(stderr, "snakepit run: %s\n", err);
        return ST_REJECTED;
    }
    json_t *args = json_pack("{s:s}", "code", code);
    if (a->session[0]) /* the session's own profile */
        json_object_set_new(args, "session_id", json_string(a->session));
    else
        json_object_set_new(args, "profile", json_string(a->profile));
    if (!a->validate) {
        if (a->timeout_s) json_object_set_new(args, "timeout", json_integer(a->timeout_s));
        if (a->memory_mb) json_object_set_new(args, "memory_limit", json_integer(a->memory_mb));
        if (a->stdin_text[0]) json_object_set_new(args, "stdin", json_string(a->stdin_text));
        if (a->vars[0]) {
            json_t *names = json_array();
            char list[sizeof a->vars];
            snprintf(list, sizeof list, "%s", a->vars);
            for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok;
                 tok = strtok_r(NULL, ",", &save))
                json_array_append_new(names, json_string(tok));
            json_object_set_new(args, "inspect_variables", names);
        }
    }
    json_t *r =
        mcp_http_call(&c, a->validate ? "validate_code" : "execute_code", args, err, sizeof err);
    if (!r) {
        fprintf(stderr, "snakepit run: %s\n", err);
        return ST_REJECTED;
    }
    json_t *structured = json_object_get(r, "structuredContent");
    int rc = structured ? s_print(structured, a->json, a->validate) : ST_INTERNAL_ERROR;
    if (!structured) fprintf(stderr, "snakepit run: the answer had no structured content\n");
    json_decref(r);
    return rc;
}

/* ---- options and code ---------------------------------------------------------------------- */

/* Reads the options into a; rest gets the arguments that are not options. -1 to go on, or
 * the exit status (--help answered, or a usage error said). */
static int s_options(run_args_t *a, int argc, char **argv, char **rest, int *n_rest)
{
    run_args_t defaults = {0};
    snprintf(defaults.profile, sizeof defaults.profile, "%s", profile_default()->name);
    snprintf(defaults.tenant, sizeof defaults.tenant, "local");
    *a = defaults;
    char **args = xcalloc((size_t)argc + 1, sizeof *args);
    s_expand_short(argc, argv, args);
    char err[512];
    config_rc_t rc = config_load(a, s_opts, argc, args, rest, n_rest, err, sizeof err);
    free(args);
    if (rc == CONFIG_HELP) {
        config_usage(stdout,
                     "snakepit run [-t S] [-m MB] [-o BYTES] [-v NAME]... [--profile P] "
                     "[--session ID] [--json] (-f FILE | CODE | -)",
                     "Run Python code in the farm's sandbox and print what it printed. Exit "
                     "status:\n"
                     "0 ok, 1 error, 2 syntax_error, 3 timeout, 4 cpu_limit, 5 memory_limit,\n"
                     "6 output_limit, 7 security_violation, 8 cancelled, 9 rejected, 10 lost,\n"
                     "11 internal_error, 64 usage.",
                     s_opts, &defaults);
        return 0;
    }
    if (rc == CONFIG_ERROR) {
        fprintf(stderr, "snakepit run: %s\n", err);
        return EX_USAGE_;
    }
    return -1;
}

/* The code to run: -f FILE, - (or -f -) for stdin, or the one argument. NULL (said) when
 * there is none or it is too large. */
static char *s_read_code(const run_args_t *a, char **rest, int n_rest, size_t *len)
{
    char *code = NULL;
    if (a->file[0] && strcmp(a->file, "-") != 0) {
        FILE *f = fopen(a->file, "r");
        if (!f) {
            fprintf(stderr, "snakepit run: %s: %s\n", a->file, strerror(errno));
            return NULL;
        }
        code = s_read_all(f, len);
        fclose(f);
    } else if (strcmp(a->file, "-") == 0 || (n_rest == 1 && strcmp(rest[0], "-") == 0)) {
        code = s_read_all(stdin, len);
    } else if (n_rest == 1) {
        code = xstrdup(rest[0]);
        *len = strlen(code);
    } else {
        fprintf(stderr, "snakepit run: give the code as an argument, -f FILE, or - for stdin\n");
        return NULL;
    }
    if (*len > JOB_MAX_CODE) {
        fprintf(stderr, "snakepit run: code larger than %u bytes\n", JOB_MAX_CODE);
        free(code);
        return NULL;
    }
    return code;
}

/* ---- straight to a broker ----------------------------------------------------------------- */

/* The JobSpec of this run, with its limits as asked: the executor resolves them against its
 * own profile table. */
static void s_encode_job(run_args_t *a, char *code, size_t code_len, buf_t *body)
{
    jobspec_t job;
    jobspec_init(&job);
    job.kind = a->validate ? JOB_VALIDATE : JOB_EXEC;
    job.tenant = a->tenant;
    job.service = a->profile;
    job.code = code;
    job.code_len = code_len;
    job.limits = s_limits(a);
    char *names[JOB_MAX_NAMES];
    size_t n_names = 0;
    for (char *save = NULL, *tok = strtok_r(a->vars, ",", &save); tok && n_names < JOB_MAX_NAMES;
         tok = strtok_r(NULL, ",", &save))
        names[n_names++] = tok;
    job.inspect = names;
    job.n_inspect = n_names;
    if (a->stdin_text[0]) {
        job.stdin_data = a->stdin_text;
        job.stdin_len = strlen(a->stdin_text);
    }
    job.submitted_ms = clock_wall_ms();
    jobspec_encode(&job, body);
}

/* Prints the answer the broker gave; returns the exit status. */
static int s_print_answer(const run_args_t *a, wait_t *w, const uint8_t id[ID_BYTES])
{
    if (!w->decoded) {
        fprintf(stderr, "snakepit run: bad answer from the farm: %s\n", w->err);
        return ST_INTERNAL_ERROR;
    }
    result_t *r = &w->res;
    char idstr[ID_STR_LEN + 1];
    id_format(id, idstr);
    json_t *o = a->validate && r->validation ? json_loads(r->validation, 0, NULL)
                                             : result_to_json(r, idstr);
    int status = s_print(o ? o : json_object(), a->json, a->validate && r->validation);
    json_decref(o);
    result_clear(r);
    return status;
}

/* Submits to the broker at a->broker as a->tenant, without a record; CURVE when the farm's
 * ready.json named keys (curve_key: the broker's public key, curve_cert: ours). */
static int s_run_broker(run_args_t *a, char *code, size_t code_len, const char *curve_key,
                        const char *curve_cert)
{
    const profile_t *prof = profile_find(a->profile);
    if (!prof) {
        fprintf(stderr, "snakepit run: unknown profile '%s'\n", a->profile);
        return EX_USAGE_;
    }
    /* the job's deadline comes from the limits it will run with */
    limits_t eff = s_limits(a);
    profile_apply_limits(prof, &eff);
    buf_t body;
    buf_init(&body);
    s_encode_job(a, code, code_len, &body);

    log_init("run", LOG_WARN);
    char err[512];
    client_conf_t cc = {.endpoint = a->broker, .heartbeat_ms = 1000, .grace_ms = 5000};
    char server_z85[CURVE_Z85_LEN + 1];
    curve_cert_t mine;
    if (curve_key[0]) { /* the farm is a CURVE hub: speak CURVE even on its local socket */
        if (curve_key_resolve(curve_key, server_z85, err, sizeof err) < 0 ||
            curve_cert_load(curve_cert, &mine, err, sizeof err) < 0) {
            fprintf(stderr, "snakepit run: CURVE keys: %s\n", err);
            buf_free(&body);
            return ST_REJECTED;
        }
        cc.curve_server_key = server_z85;
        cc.curve_public_key = mine.public_key;
        cc.curve_secret_key = mine.secret_key;
    }
    void *ctx = zmq_ctx_new();
    loop_t *loop = loop_new();
    wait_t w = {0};
    client_t *cl = client_new(ctx, loop, &cc, s_event, &w);
    uint8_t id[ID_BYTES];
    id_new(id);
    route_t route = {.deadline_ms = clock_wall_ms() + (uint64_t)eff.wall_ms + 30000};
    snprintf(route.tenant, sizeof route.tenant, "%s", a->tenant);
    /* ZMQ_IMMEDIATE: the submit fails until the connection is up, so retry briefly. */
    uint64_t give_up = clock_mono_ms() + 3000;
    int sent = 0;
    while (!(sent = client_submit(cl, a->profile, id, &route, body.data, body.len) == 0) &&
           clock_mono_ms() < give_up)
        usleep(10000);
    int status = ST_REJECTED;
    if (!sent) {
        fprintf(stderr, "snakepit run: cannot reach the broker at %s\n", a->broker);
    } else {
        loop_timer_add(loop, 20, 20, s_stop, &w);
        loop_run(loop);
        status = s_print_answer(a, &w, id);
    }
    explicit_bzero(&mine, sizeof mine);
    buf_free(&body);
    client_destroy(&cl);
    loop_destroy(&loop);
    zmq_ctx_term(ctx);
    return status;
}

/* ---- main --------------------------------------------------------------------------------- */

int run_main(int argc, char **argv)
{
    run_args_t a;
    char *rest[2];
    int n_rest = 2;
    int rc = s_options(&a, argc, argv, rest, &n_rest);
    if (rc >= 0) return rc;
    size_t code_len = 0;
    char *code = s_read_code(&a, rest, n_rest, &code_len);
    if (!code) return EX_USAGE_;
    char curve_key[PATH_MAX] = "", curve_cert[PATH_MAX] = "";
    if (!a.broker[0]) {
        char dir[PATH_MAX], err[512];
        farm_info_t info;
        farm_state_dir(a.state_dir, dir, sizeof dir);
        if (farm_read_ready(dir, &info, err, sizeof err) < 0) {
            fprintf(stderr, "snakepit run: %s\n", err);
            free(code);
            return ST_REJECTED;
        }
        if (info.url[0] && info.api_key[0]) {
            rc = s_run_http(&a, info.url, info.api_key, code);
            free(code);
            return rc;
        }
        snprintf(a.broker, sizeof a.broker, "%s", info.broker);
        snprintf(curve_key, sizeof curve_key, "%s", info.curve_broker_key);
        snprintf(curve_cert, sizeof curve_cert, "%s", info.curve_client_cert);
    }
    if (a.session[0]) {
        fprintf(stderr, "snakepit run: --session needs the farm's MCP endpoint (not --broker)\n");
        free(code);
        return EX_USAGE_;
    }
    rc = s_run_broker(&a, code, code_len, curve_key, curve_cert);
    free(code);
    return rc;
}
