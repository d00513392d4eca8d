/* mcp-frontend/compat/compat_job.c — see compat_job.h. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/utf8.h"
#include "mcp-frontend/render/outcome.h"
#include "mcp-frontend/rpc/fe.h"
#include "mcp-frontend/rpc/jsonrpc.h"
#include "mcp-frontend/tools/execute_code.h"
#include "mcp-frontend/tools/jobargs.h"
#include "mcp-frontend/tools/session_cell.h"
#include "mcp-frontend/tools/pyscan.h"
#include "compat_job.h"

#define VALIDATE_WALL_MS 10000 /* as validate_code's: parsing is quick or hostile */

/* Limits as execute_code resolves them; a validation gets the profile's defaults and at most
 * VALIDATE_WALL_MS, like validate_code. */
static int s_limits(call_t *c, json_t *args, const profile_t *p, const compat_job_t *job,
                    limits_t *l)
{
    if (job->kind == JOB_VALIDATE) {
        profile_apply_limits(p, l);
        limits_t cap = {.wall_ms = VALIDATE_WALL_MS};
        limits_cap(l, &cap);
        return 0;
    }
    if (jobargs_limits(c, args, p, l) < 0) return -1;
    if (job->cpu_ms > 0 && job->cpu_ms < l->cpu_ms) l->cpu_ms = job->cpu_ms;
    return 0;
}

/* What the servers these endpoints stand in for did (every profile here imports the ordinary
 * standard library): the job may import what its code imports, less os, sys, subprocess,
 * socket and the like (pathlib stays where there is a workspace), so importing one ends in
 * the ImportError those servers' clients expect. An empty list would mean "the
 * profile's", hence a harmless module when nothing else is left. */
static void s_narrow_imports(jobspec_t *spec, const profile_t *p)
{
    pyscan_t *scan = xmalloc(sizeof *scan);
    pyscan(spec->code, spec->code_len, scan);
    spec->allowed_imports = xcalloc(scan->n_modules + 1, sizeof *spec->allowed_imports);
    for (size_t i = 0; i < scan->n_modules && spec->n_allowed_imports < JOB_MAX_NAMES; i++) {
        const char *m = scan->modules[i];
        int kept = profile_allows(p, m) &&
                   (!profile_module_is_ordinary(m) || (p->workspace && !strcmp(m, "pathlib")));
        if (kept) spec->allowed_imports[spec->n_allowed_imports++] = xstrdup(m);
    }
    if (!spec->n_allowed_imports) spec->allowed_imports[spec->n_allowed_imports++] = xstrdup("math");
    free(scan);
}

void compat_job_run(call_t *c, json_t *args, const compat_job_t *job)
{
    jobspec_t spec;
    jobspec_init(&spec);
    const profile_t *p = NULL;
    if (jobargs_code(c, args, &spec) < 0 || !(p = jobargs_profile(c, args)) ||
        s_limits(c, args, p, job, &spec.limits) < 0 ||
        jobargs_names(c, args, "allowed_imports", p, &spec.allowed_imports,
                      &spec.n_allowed_imports) < 0 ||
        jobargs_names(c, args, "inspect_variables", NULL, &spec.inspect, &spec.n_inspect) < 0 ||
        (job->dependencies && jobargs_dependencies(c, args, &spec) < 0)) {
        jobspec_clear(&spec);
        return;
    }
    if (job->narrow_imports && !spec.n_allowed_imports) s_narrow_imports(&spec, p);
    json_t *in = json_object_get(args, "stdin");
    if (json_is_string(in)) {
        if (json_string_length(in) > JOB_MAX_STDIN) {
            tool_bad(c, "the input is %zu bytes; the limit is %u", json_string_length(in),
                     JOB_MAX_STDIN);
            jobspec_clear(&spec);
            return;
        }
        spec.stdin_data = xstrndup(json_string_value(in), json_string_length(in));
        spec.stdin_len = json_string_length(in);
    }
    json_t *capture = json_object_get(args, "capture_output");
    spec.capture_output = capture ? json_is_true(capture) : 1;
    spec.kind = job->kind;
    spec.tenant = xstrdup(c->tenant->name);
    spec.service = xstrdup(p->name);
    execution_opts_t opts = {.tool = job->tool,
                             .render_with = job->render,
                             .render_ctx = job->ctx,
                             .record = job->record,
                             .task_ttl_ms = -1};
    if (job->session) execute_code_as_cell(c, &spec, &opts, job->session);
    execution_start(c->fe->executions, c, &spec, &opts);
    jobspec_clear(&spec);
}

int compat_farm_failed(const result_t *res)
{
    return res->status == ST_REJECTED || res->status == ST_LOST ||
           res->status == ST_CANCELLED || res->status == ST_INTERNAL_ERROR;
}

void compat_error_line(buf_t *b, const result_t *res)
{
    const char *type = res->error.present && res->error.type ? res->error.type : NULL;
    const char *msg = res->error.present ? res->error.message : NULL;
    if (!type) {
        buf_puts(b, status_name(res->status));
        if (msg && *msg) buf_puts(b, ": ");
    } else {
        utf8_sanitize(b, type, strlen(type));
        if (msg && *msg) buf_puts(b, ": ");
    }
    if (msg && *msg) utf8_sanitize(b, msg, strlen(msg));
}

void compat_python_stderr(buf_t *b, const result_t *res)
{
    utf8_sanitize(b, res->err, res->err_len);
    if (res->status == ST_OK) return;
    if (b->len && b->data[b->len - 1] != '\n') buf_puts(b, "\n");
    if (res->error.present && res->error.traceback && *res->error.traceback) {
        utf8_sanitize(b, res->error.traceback, strlen(res->error.traceback));
    } else {
        compat_error_line(b, res);
        buf_puts(b, "\n");
    }
}

static int s_error_is(const result_t *res, const char *type)
{
    return res->status == ST_ERROR && res->error.present && res->error.type &&
           !strcmp(res->error.type, type) && res->error.message;
}

int compat_refused_import(const result_t *res, char *module, size_t cap)
{
    static const char lead[] = "import of '";
    /* ModuleNotFoundError: a module the profile lacks; ImportError: one the call narrowed away */
    int import = s_error_is(res, "ImportError") || s_error_is(res, "ModuleNotFoundError");
    if (!import || strncmp(res->error.message, lead, sizeof lead - 1) ||
        !strstr(res->error.message, "is not allowed"))
        return 0;
    const char *name = res->error.message + sizeof lead - 1;
    size_t n = strcspn(name, "'");
    if (!cap) return 1;
    snprintf(module, cap, "%.*s", (int)(n < cap ? n : cap - 1), name);
    return 1;
}

int compat_refused(const result_t *res)
{
    if (res->status == ST_SECURITY_VIOLATION || compat_refused_import(res, NULL, 0)) return 1;
    if (s_error_is(res, "ImportError") && strstr(res->error.message, "relative imports"))
        return 1; /* the runner's: there is no package to be relative to */
    /* the sandbox's own refusals (executor-node/python: audit.c's "[sandbox] ..." and the
     * runner's words for file work in a profile without a workspace) */
    return s_error_is(res, "PermissionError") &&
           (!strncmp(res->error.message, "[sandbox]", 9) ||
            strstr(res->error.message, "is not available in profile"));
}

static int s_listed(const char *const *list, const char *name, size_t n)
{
    for (; list && *list; list++)
        if (strlen(*list) == n && !memcmp(*list, name, n)) return 1;
    return 0;
}

size_t compat_refusals(const char *code, size_t len, const compat_rules_t *rules,
                       void (*fn)(void *arg, compat_use_t use, const char *name), void *arg)
{
    pyscan_t *scan = xmalloc(sizeof *scan);
    pyscan(code, len, scan);
    size_t count = 0;
    for (size_t i = 0; i < scan->n_modules; i++) {
        const char *m = scan->modules[i];
        if (s_listed(rules->modules, m, strcspn(m, "."))) fn(arg, COMPAT_IMPORT, m), count++;
    }
    for (size_t i = 0; i < scan->n_calls; i++)
        if (s_listed(rules->calls, scan->calls[i], strlen(scan->calls[i])))
            fn(arg, COMPAT_CALL, scan->calls[i]), count++;
    for (size_t i = 0; rules->dunders && i < scan->n_dunders; i++)
        fn(arg, COMPAT_DUNDER, scan->dunders[i]), count++;
    free(scan);
    return count;
}

int compat_exit_code(const result_t *res)
{
    if (res->status == ST_OK) return 0;
    if (res->exit.signal > 0) return -res->exit.signal;
    if (res->status == ST_TIMEOUT || res->status == ST_CPU_LIMIT) return -9;
    return 1;
}

json_t *compat_validation(const result_t *res)
{
    if (res->status != ST_OK || !res->validation) return NULL;
    json_t *v = json_loads(res->validation, JSON_REJECT_DUPLICATES, NULL);
    if (json_is_object(v)) return v;
    json_decref(v);
    return NULL;
}

json_t *compat_variables(const result_t *res)
{
    json_t *v = res->variables ? json_loads(res->variables, JSON_REJECT_DUPLICATES, NULL) : NULL;
    if (json_is_object(v)) return v;
    json_decref(v);
    return json_object();
}

json_t *compat_json_result(json_t *doc, int is_error)
{
    char *text = json_text(doc, JSON_INDENT(2));
    json_t *r = tool_result(text ? text : "{}", doc, is_error);
    free(text);
    return r;
}

void compat_failed(call_t *c, const char *why)
{
    call_reply(c, compat_json_result(json_pack("{s:b,s:s}", "success", 0, "error", why), 1));
}

double compat_clamp(json_t *args, const char *name, double dflt, double lo, double hi)
{
    json_t *v = json_object_get(args, name);
    double x = json_is_number(v) ? json_number_value(v) : dflt;
    if (!(x >= lo)) x = lo; /* NaN cannot arrive in JSON, but a comparison is cheap */
    return x > hi ? hi : x;
}
