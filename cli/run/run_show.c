/* cli/run/run_show.c — see run_show.h. */
#define _GNU_SOURCE
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/buf.h"
#include "proto/status.h"
#include "run_show.h"

/* What each status means when the answer says no more than its name (a memory_limit kill
 * carries no exception message): one row per status, so no failure is ever shown bare. */
static const struct {
    status_t status;
    const char *reason;
} s_reasons[] = {
    {ST_ERROR, "the code raised an exception"},
    {ST_SYNTAX_ERROR, "the code is not valid Python"},
    {ST_TIMEOUT, "the code ran past its time limit (-t raises it)"},
    {ST_CPU_LIMIT, "the code used up its CPU time (-t raises it)"},
    {ST_MEMORY_LIMIT, "the code went past its memory limit (-m raises it)"},
    {ST_OUTPUT_LIMIT, "the code printed more than its output limit (-o raises it)"},
    {ST_SECURITY_VIOLATION, "the sandbox stopped an operation it does not allow"},
    {ST_CANCELLED, "the job was cancelled"},
    {ST_REJECTED, "the farm turned the job away (queue full or a quota)"},
    {ST_LOST, "the executor running the job died, twice"},
    {ST_INTERNAL_ERROR, "the farm failed to run the job"},
    {ST_EGRESS_LIMIT, "the code moved more bytes over the network than its tenant may "
                      "(snakepit tenant set NAME --egress-max-bytes raises it)"},
};

static const char *s_reason(status_t st)
{
    for (size_t i = 0; i < sizeof s_reasons / sizeof s_reasons[0]; i++)
        if (s_reasons[i].status == st) return s_reasons[i].reason;
    return "failed";
}

/* ---- numbers ----------------------------------------------------------------------------- */

/* The shortest %g text that reads back as d, still looking like a real (jansson's ".0"). */
static void s_shortest(double d, char *out, size_t cap)
{
    for (int digits = 1; digits <= 17; digits++) {
        snprintf(out, cap, "%.*g", digits, d);
        if (strtod(out, NULL) == d) break;
    }
    if (!strpbrk(out, ".eEn")) strncat(out, ".0", cap - strlen(out) - 1);
}

char *run_show_dumps(const json_t *value, size_t flags)
{
    char *text = json_dumps(value, flags | JSON_ENCODE_ANY);
    if (!text) return NULL;
    buf_t out;
    buf_init(&out);
    for (const char *p = text; *p;) {
        if (*p == '"') { /* a string, escapes and all, as it is */
            const char *q = p + 1;
            while (*q && *q != '"') q += *q == '\\' && q[1] ? 2 : 1;
            buf_append(&out, p, (size_t)(q - p) + (*q ? 1 : 0));
            p = *q ? q + 1 : q;
        } else if (*p == '-' || isdigit((unsigned char)*p)) {
            size_t n = strspn(p, "-+0123456789.eE");
            char num[64];
            if (memchr(p, '.', n) || memchr(p, 'e', n) || memchr(p, 'E', n)) {
                s_shortest(strtod(p, NULL), num, sizeof num);
                buf_puts(&out, num);
            } else {
                buf_append(&out, p, n);
            }
            p += n;
        } else {
            buf_append(&out, p++, 1);
        }
    }
    free(text);
    size_t len;
    char *s = buf_steal(&out, &len);
    return s ? s : xstrdup("");
}

/* Timings to the microsecond: what the clocks behind them can tell apart. */
static void s_round_timings(json_t *structured)
{
    const char *k;
    json_t *v;
    json_object_foreach(json_object_get(structured, "timings"), k, v)
    {
        if (json_is_real(v)) json_real_set(v, round(json_real_value(v) * 1000) / 1000);
    }
}

/* ---- the text form ----------------------------------------------------------------------- */

static status_t s_status(json_t *structured)
{
    const char *name = json_string_value(json_object_get(structured, "status"));
    status_t st = ST_INTERNAL_ERROR;
    if (name) status_parse(name, &st);
    return st;
}

/* "snakepit: memory_limit: MemoryError: … — syscall", with the status's own reason where the
 * answer has no message. */
static void s_failure_line(json_t *structured, status_t st)
{
    json_t *e = json_object_get(structured, "error");
    const char *tb = json_string_value(json_object_get(e, "traceback"));
    const char *type = json_string_value(json_object_get(e, "type"));
    const char *msg = json_string_value(json_object_get(e, "message"));
    const char *sys =
        json_string_value(json_object_get(json_object_get(structured, "exit"), "syscall"));
    if (tb && *tb) fputs(tb, stderr);
    fprintf(stderr, "snakepit: %s: ", status_name(st));
    if (type && *type && msg && *msg)
        fprintf(stderr, "%s: %s", type, msg);
    else if (msg && *msg)
        fputs(msg, stderr);
    else if (type && *type)
        fprintf(stderr, "%s: %s", type, s_reason(st));
    else
        fputs(s_reason(st), stderr);
    if (sys && *sys) fprintf(stderr, " — %s", sys);
    fputc('\n', stderr);
}

static void s_print_text(const run_args_t *a, json_t *s)
{
    const char *out = json_string_value(json_object_get(s, "stdout"));
    const char *errs = json_string_value(json_object_get(s, "stderr"));
    if (out) fputs(out, stdout);
    if (errs) fputs(errs, stderr);
    fflush(stdout);
    json_t *trunc = json_object_get(s, "truncated");
    if (json_is_true(json_object_get(trunc, "stdout")) ||
        json_is_true(json_object_get(trunc, "stderr"))) {
        /* output cut mid-line would run into the note on a terminal */
        if (out && *out && out[strlen(out) - 1] != '\n' && isatty(STDOUT_FILENO)) putchar('\n');
        fflush(stdout);
        fprintf(stderr, "[output truncated at the output limit]\n");
    }
    const char *result = json_string_value(json_object_get(s, "result"));
    if (result) printf("%s\n", result);
    json_t *vars = json_object_get(s, "variables");
    char list[sizeof a->vars];
    snprintf(list, sizeof list, "%s", a->vars);
    for (char *save = NULL, *name = strtok_r(list, ",", &save); name;
         name = strtok_r(NULL, ",", &save)) {
        json_t *v = json_object_get(vars, name);
        char *text = v ? run_show_dumps(v, 0) : NULL;
        if (text)
            printf("%s = %s\n", name, text);
        else
            fprintf(stderr, "snakepit: variable '%s' is not defined\n", name);
        free(text);
    }
}

/* --validate: 0 valid, 2 a syntax error, 1 anything else it found. */
static int s_validate_status(json_t *v)
{
    if (json_is_true(json_object_get(v, "valid"))) return ST_OK;
    size_t i;
    json_t *d;
    json_array_foreach(json_object_get(v, "details"), i, d)
    {
        const char *kind = json_string_value(json_object_get(d, "kind"));
        if (kind && strcmp(kind, "syntax") == 0) return ST_SYNTAX_ERROR;
    }
    return ST_ERROR;
}

static void s_print_json(json_t *v)
{
    char *text = run_show_dumps(v, JSON_INDENT(2));
    printf("%s\n", text ? text : "{}");
    free(text);
}

/* ---- figures and files ------------------------------------------------------------------- */

/* --json carries the figures themselves, not only their sizes. */
static void s_embed_figures(json_t *structured, const runfiles_t *figures)
{
    json_t *images = json_object_get(structured, "images");
    for (size_t i = 0; i < figures->n && i < json_array_size(images); i++) {
        char *b64 = runfiles_base64(figures->items[i].data, figures->items[i].len);
        json_object_set_new(json_array_get(images, i), "data", json_string(b64));
        free(b64);
    }
}

/* Saves them under --out, or says they are there. -1 (said) when saving failed. */
static int s_figures_and_files(const run_args_t *a, json_t *structured, const runfiles_t *figures,
                               const runfiles_t *files)
{
    if (!a->out_dir[0]) {
        if ((figures->n || files->n) && !a->json)
            fprintf(stderr,
                    "snakepit: the code made %zu figure%s and wrote %zu file%s "
                    "(--out DIR saves them)\n",
                    figures->n, figures->n == 1 ? "" : "s", files->n, files->n == 1 ? "" : "s");
        return 0;
    }
    json_t *saved = json_array();
    char err[600];
    int rc = runfiles_save(figures, a->out_dir, saved, err, sizeof err) == 0 &&
                     runfiles_save(files, a->out_dir, saved, err, sizeof err) == 0
                 ? 0
                 : -1;
    if (rc < 0) fprintf(stderr, "snakepit run: %s\n", err);
    size_t i;
    json_t *path;
    if (!a->json)
        json_array_foreach(saved, i, path) fprintf(stderr, "saved %s\n", json_string_value(path));
    json_object_set_new(structured, "saved", saved);
    return rc;
}

int run_show(const run_args_t *a, json_t *structured, const runfiles_t *figures,
             const runfiles_t *files)
{
    if (a->validate) {
        s_print_json(structured);
        return s_validate_status(structured);
    }
    status_t st = s_status(structured);
    s_round_timings(structured);
    if (a->json) s_embed_figures(structured, figures);
    int saved = s_figures_and_files(a, structured, figures, files);
    if (a->json)
        s_print_json(structured);
    else
        s_print_text(a, structured);
    if (st != ST_OK && !a->json) s_failure_line(structured, st);
    /* the job's status says more than a failed save, but a failed save must not exit 0 */
    return st == ST_OK && saved < 0 ? RUN_EX_CANTSAVE : (int)st;
}
