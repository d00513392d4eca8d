/* mcp-frontend/tools.c — tools/list, tools/call and the two tools that run on the farm. Bad
 * arguments are JSON-RPC errors (-32602) naming the argument and what was wrong with it; a
 * call that ran and failed is a result with isError (MCP 2025-11-25, tools §"Error Handling"). */
#define _GNU_SOURCE
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/buf.h"
#include "../common/log.h"
#include "../common/profiles.h"
#include "base64.h"
#include "execution.h"
#include "methods.h"
#include "metrics.h"
#include "outcome.h"
#include "pep723.h"
#include "tooldefs.h"
#include "tools.h"
#include "units.h"

#define DEFAULT_PROFILE "python.basic"

static json_t *s_tools; /* the published list, fixtures appended when enabled */

void tools_init(fe_t *fe)
{
    s_tools = tooldefs_load();
    if (fe->conf.test_fixtures) {
        json_t *fx = fixtures_tools();
        json_array_extend(s_tools, fx);
        json_decref(fx);
    }
}

void tools_shutdown(void)
{
    json_decref(s_tools);
    s_tools = NULL;
}

/* Cursors are opaque to clients; ours is "t:<index>". */
void methods_tools_list(call_t *c)
{
    size_t start = 0, n = json_array_size(s_tools), page = (size_t)c->fe->conf.page_size;
    const char *cursor = call_str(c, "cursor");
    if (json_object_get(c->params, "cursor") && !cursor) {
        call_error(c, RPC_INVALID_PARAMS, "tools/list: \"cursor\" must be a string", NULL);
        return;
    }
    if (cursor) {
        char *end;
        if (strncmp(cursor, "t:", 2) != 0 || (start = strtoul(cursor + 2, &end, 10), *end) ||
            start > n) {
            call_error(c, RPC_INVALID_PARAMS, "tools/list: unknown cursor", NULL);
            return;
        }
    }
    json_t *list = json_array();
    for (size_t i = start; i < n && i < start + page; i++)
        json_array_append(list, json_array_get(s_tools, i));
    json_t *result = json_pack("{s:o}", "tools", list);
    if (start + page < n) {
        char next[32];
        snprintf(next, sizeof next, "t:%zu", start + page);
        json_object_set_new(result, "nextCursor", json_string(next));
    }
    call_reply(c, result);
}

static int s_bad(call_t *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int s_bad(call_t *c, const char *fmt, ...)
{
    char msg[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    metric_inc(M.rejections, "invalid_params", NULL);
    call_error(c, RPC_INVALID_PARAMS, msg, NULL);
    return -1;
}

/* A list of names (inspect_variables, allowed_imports) into spec arrays. */
static int s_names(call_t *c, json_t *args, const char *key, const profile_t *p, char ***out,
                   size_t *n)
{
    json_t *v = json_object_get(args, key);
    if (!v || json_is_null(v)) return 0;
    if (!json_is_array(v)) return s_bad(c, "%s must be an array of strings", key);
    if (json_array_size(v) > JOB_MAX_NAMES)
        return s_bad(c, "%s has more than %u names", key, JOB_MAX_NAMES);
    *out = xcalloc(json_array_size(v) + 1, sizeof **out);
    size_t i;
    json_t *e;
    json_array_foreach(v, i, e)
    {
        const char *s = json_string_value(e);
        if (!s) return s_bad(c, "%s[%zu] must be a string", key, i);
        size_t len = json_string_length(e);
        if (!len || len > JOB_MAX_NAME)
            return s_bad(c, "%s[%zu] must be 1-%u characters", key, i, JOB_MAX_NAME);
        for (size_t k = 0; k < len; k++)
            if (!(isalnum((unsigned char)s[k]) || s[k] == '_' || (p && s[k] == '.')))
                return s_bad(c, "%s[%zu] is not a valid %s name", key, i,
                             p ? "module" : "variable");
        if (p && !profile_allows(p, s))
            return s_bad(c,
                         "allowed_imports: module '%s' is not available in profile %s (see "
                         "get_sandbox_info)",
                         s, p->name);
        (*out)[(*n)++] = xstrndup(s, len);
    }
    return 0;
}

/* A call without a profile whose code has a PEP 723 block runs in the first profile, in table
 * order, that the tenant may use and whose modules include every dependency; else in the
 * default, where the executor names what is missing. */
static const char *s_pep723_profile(call_t *c, json_t *args)
{
    json_t *code = json_object_get(args, "code");
    char deps[32][PEP723_NAME];
    int n = json_is_string(code)
                ? pep723_dependencies(json_string_value(code), json_string_length(code), deps, 32)
                : -1;
    if (n <= 0) return DEFAULT_PROFILE;
    for (size_t i = 0; i < n_profiles; i++) {
        const profile_t *p = &profiles[i];
        int all = tenant_allows_profile(c->session->tenant, p->name);
        for (int k = 0; k < n && all; k++) all = profile_allows(p, deps[k]);
        if (all) return p->name;
    }
    return DEFAULT_PROFILE;
}

static const profile_t *s_profile(call_t *c, json_t *args)
{
    json_t *v = json_object_get(args, "profile");
    if (v && !json_is_string(v) && !json_is_null(v))
        return s_bad(c, "profile must be a string"), NULL;
    const char *name = json_is_string(v) ? json_string_value(v) : s_pep723_profile(c, args);
    const profile_t *p = profile_find(name);
    if (!p) {
        buf_t b;
        buf_init(&b);
        for (size_t i = 0; i < n_profiles; i++)
            buf_printf(&b, "%s%s", i ? ", " : "", profiles[i].name);
        s_bad(c, "unknown profile '%.64s' (available: %s)", name, (const char *)b.data);
        buf_free(&b);
        return NULL;
    }
    if (!tenant_allows_profile(c->session->tenant, p->name))
        return s_bad(c, "profile %s is not enabled for tenant %s", p->name,
                     c->session->tenant->name),
               NULL;
    return p;
}

static const char *const s_execute_args[] = {"code",
                                             "timeout",
                                             "memory_limit",
                                             "profile",
                                             "allowed_imports",
                                             "capture_output",
                                             "inspect_variables",
                                             "stdin",
                                             "use_container",
                                             "files",
                                             NULL};
static const char *const s_validate_args[] = {"code", "profile", "allowed_imports", NULL};

static int s_known_args(call_t *c, json_t *args, const char *const *known)
{
    const char *key;
    json_t *v;
    json_object_foreach(args, key, v)
    {
        int ok = 0;
        for (int i = 0; known[i] && !ok; i++) ok = strcmp(key, known[i]) == 0;
        if (!ok) return s_bad(c, "unknown argument '%.64s'", key);
    }
    return 0;
}

static int s_code(call_t *c, json_t *args, jobspec_t *spec)
{
    json_t *code = json_object_get(args, "code");
    if (!code) return s_bad(c, "missing required argument 'code'");
    if (!json_is_string(code)) return s_bad(c, "code must be a string");
    size_t len = json_string_length(code);
    if (len > JOB_MAX_CODE)
        return s_bad(c, "code is %zu bytes; the limit is %u", len, JOB_MAX_CODE);
    spec->code = xstrndup(json_string_value(code), len);
    spec->code_len = len;
    return 0;
}

/* Limits: the call's values, clamped to the tenant's maxima, then to the profile's. */
static int s_limits(call_t *c, json_t *args, const profile_t *p, limits_t *l)
{
    tenant_t *t = c->session->tenant;
    json_t *v = json_object_get(args, "timeout");
    if (v && !json_is_null(v)) {
        if (!json_is_number(v) || !(json_number_value(v) > 0) || json_number_value(v) > 86400)
            return s_bad(c, "timeout must be a positive number of seconds");
        l->wall_ms = (long)ceil(json_number_value(v) * 1000);
    }
    if (!l->wall_ms) l->wall_ms = p->defaults.wall_ms;
    if (l->wall_ms > t->max_timeout_s * 1000) l->wall_ms = t->max_timeout_s * 1000;
    l->cpu_ms = l->wall_ms;
    v = json_object_get(args, "memory_limit");
    if (v && !json_is_null(v) && parse_memory_mb(v, &l->memory_mb) < 0)
        return s_bad(
            c, "memory_limit must be MB as a positive integer or a string like \"256m\" or \"1g\"");
    if (!l->memory_mb) l->memory_mb = p->defaults.memory_mb;
    if (l->memory_mb > t->max_memory_mb) l->memory_mb = t->max_memory_mb;
    profile_apply_limits(p, l);
    return 0;
}

static int s_task(call_t *c, execution_opts_t *opts)
{
    json_t *task = json_object_get(c->params, "task");
    if (!task) return 0;
    if (!json_is_object(task)) return s_bad(c, "task must be an object");
    json_t *ttl = json_object_get(task, "ttl");
    if (ttl && !json_is_null(ttl) && (!json_is_integer(ttl) || json_integer_value(ttl) < 0))
        return s_bad(c, "task.ttl must be a non-negative integer (ms)");
    opts->task = 1;
    opts->task_ttl_ms = json_is_integer(ttl) ? (long)json_integer_value(ttl) : -1;
    return 0;
}

#define FILES_MAX_BYTES (6u << 20) /* all input files: the JobSpec must fit the 8 MiB job area */

/* files: {path: "text"} or {path: {"content": "...", "encoding": "utf-8" | "base64"}}, into the
 * job's workspace. Paths follow the executor's rule (jobspec_check_path), checked here so a
 * bad one is an argument error naming it rather than a rejected execution. */
static int s_files(call_t *c, json_t *args, const profile_t *p, jobspec_t *spec)
{
    json_t *v = json_object_get(args, "files");
    if (!v || json_is_null(v)) return 0;
    if (!json_is_object(v))
        return s_bad(c, "files must be an object {path: content} (content a string, or "
                        "{\"content\": ..., \"encoding\": \"base64\"})");
    if (!json_object_size(v)) return 0;
    if (!p->workspace)
        return s_bad(c,
                     "profile %s has no workspace for files; use python.filesystem or "
                     "python.data_science",
                     p->name);
    if (json_object_size(v) > JOB_MAX_FILES)
        return s_bad(c, "files has more than %u entries", JOB_MAX_FILES);
    spec->files = xcalloc(json_object_size(v), sizeof *spec->files);
    size_t total = 0;
    const char *path;
    json_t *f;
    json_object_foreach(v, path, f)
    {
        char err[200];
        if (jobspec_check_path(path, err, sizeof err) < 0) return s_bad(c, "files: %s", err);
        json_t *content = json_is_object(f) ? json_object_get(f, "content") : f;
        json_t *enc = json_is_object(f) ? json_object_get(f, "encoding") : NULL;
        const char *e = enc ? json_string_value(enc) : "utf-8";
        if (!json_is_string(content) || !e || (strcmp(e, "utf-8") && strcmp(e, "base64")))
            return s_bad(c,
                         "files['%.100s'] must be a string, or {\"content\": string, "
                         "\"encoding\": \"utf-8\" | \"base64\"}",
                         path);
        buf_t data;
        buf_init(&data);
        if (!strcmp(e, "base64")) {
            if (base64_decode(&data, json_string_value(content), json_string_length(content)) < 0) {
                buf_free(&data);
                return s_bad(c, "files['%.100s'] is not valid base64", path);
            }
        } else {
            buf_append(&data, json_string_value(content), json_string_length(content));
        }
        total += data.len;
        if (data.len > JOB_MAX_FILE || total > FILES_MAX_BYTES) {
            buf_free(&data);
            return s_bad(c,
                         "files: '%.100s' makes the files too large (at most %u bytes each, "
                         "%u in all)",
                         path, JOB_MAX_FILE, FILES_MAX_BYTES);
        }
        job_file_t *jf = &spec->files[spec->n_files++];
        jf->path = xstrdup(path);
        jf->len = data.len;
        jf->data = buf_steal(&data, &jf->len);
        if (!jf->data) jf->data = xstrdup("");
    }
    return 0;
}

static void s_execute_code(call_t *c, json_t *args)
{
    jobspec_t spec;
    jobspec_init(&spec);
    const profile_t *p = NULL;
    json_t *v;
    if (s_known_args(c, args, s_execute_args) < 0 || s_code(c, args, &spec) < 0 ||
        !(p = s_profile(c, args)) || s_limits(c, args, p, &spec.limits) < 0 ||
        s_names(c, args, "allowed_imports", p, &spec.allowed_imports, &spec.n_allowed_imports) <
            0 ||
        s_names(c, args, "inspect_variables", NULL, &spec.inspect, &spec.n_inspect) < 0 ||
        s_files(c, args, p, &spec) < 0)
        goto out;
    v = json_object_get(args, "use_container");
    if (v && !json_is_boolean(v)) {
        s_bad(c, "use_container must be a boolean");
        goto out;
    }
    v = json_object_get(args, "capture_output");
    if (v && !json_is_boolean(v)) {
        s_bad(c, "capture_output must be a boolean");
        goto out;
    }
    spec.capture_output = v ? json_is_true(v) : 1;
    v = json_object_get(args, "stdin");
    if (v && !json_is_null(v)) {
        if (!json_is_string(v) || json_string_length(v) > JOB_MAX_STDIN) {
            s_bad(c, "stdin must be a string of at most %u bytes", JOB_MAX_STDIN);
            goto out;
        }
        spec.stdin_data = xstrndup(json_string_value(v), json_string_length(v));
        spec.stdin_len = json_string_length(v);
    }
    execution_opts_t opts = {.tool = "execute_code", .render = outcome_execute, .record = 1};
    if (s_task(c, &opts) < 0) goto out;
    spec.kind = JOB_EXEC;
    spec.tenant = xstrdup(c->session->tenant->name);
    spec.service = xstrdup(p->name);
    execution_start(c->fe->executions, c, &spec, &opts);
out:
    jobspec_clear(&spec);
}

static void s_validate_code(call_t *c, json_t *args)
{
    jobspec_t spec;
    jobspec_init(&spec);
    const profile_t *p = NULL;
    if (s_known_args(c, args, s_validate_args) < 0 || s_code(c, args, &spec) < 0 ||
        !(p = s_profile(c, args)) ||
        s_names(c, args, "allowed_imports", p, &spec.allowed_imports, &spec.n_allowed_imports) < 0)
        goto out;
    if (json_object_get(c->params, "task")) {
        s_bad(c, "validate_code does not support tasks");
        goto out;
    }
    /* parsing hostile code can itself exhaust memory: it runs in a child with the defaults */
    profile_apply_limits(p, &spec.limits);
    spec.limits.wall_ms = 10000 < spec.limits.wall_ms ? 10000 : spec.limits.wall_ms;
    spec.kind = JOB_VALIDATE;
    spec.tenant = xstrdup(c->session->tenant->name);
    spec.service = xstrdup(p->name);
    execution_opts_t opts = {.tool = "validate_code", .render = outcome_validate};
    execution_start(c->fe->executions, c, &spec, &opts);
out:
    jobspec_clear(&spec);
}

void methods_tools_call(call_t *c)
{
    const char *name = call_str(c, "name");
    if (!name) {
        s_bad(c, "tools/call: \"name\" (string) is required");
        return;
    }
    json_t *args = json_object_get(c->params, "arguments");
    if (args && json_is_null(args)) args = NULL;
    if (args && !json_is_object(args)) {
        s_bad(c, "tools/call: \"arguments\" must be an object");
        return;
    }
    json_t *empty = args ? NULL : json_object();
    if (!args) args = empty;
    int task_ok = strcmp(name, "execute_code") == 0;
    if (!task_ok && json_object_get(c->params, "task") && strcmp(name, "validate_code") != 0) {
        s_bad(c, "tool %.64s does not support task-augmented calls", name);
    } else if (strcmp(name, "execute_code") == 0) {
        s_execute_code(c, args);
    } else if (strcmp(name, "validate_code") == 0) {
        s_validate_code(c, args);
    } else if (strcmp(name, "get_sandbox_info") == 0) {
        tool_get_sandbox_info(c, args);
    } else if (strcmp(name, "get_execution") == 0) {
        tool_get_execution(c, args);
    } else if (strcmp(name, "list_executions") == 0) {
        tool_list_executions(c, args);
    } else if (!(c->fe->conf.test_fixtures && fixtures_call(c, name, args))) {
        metric_inc(M.tool_calls, "unknown", "rejected");
        s_bad(c, "unknown tool: %.64s", name);
    }
    json_decref(empty);
}
