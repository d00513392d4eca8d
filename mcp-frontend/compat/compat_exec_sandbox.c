/* mcp-frontend/compat/compat_exec_sandbox.c — see compat_exec_sandbox.h. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "common/pep508.h"
#include "common/profiles.h"
#include "common/utf8.h"
#include "mcp-frontend/render/outcome.h"
#include "mcp-frontend/rpc/fe.h"
#include "mcp-frontend/rpc/jsonrpc.h"
#include "mcp-frontend/state/store.h"
#include "compat_exec_sandbox.h"
#include "compat_job.h"
#include "pep723_merge.h"

#define MAX_OUTPUT_BYTES  102400 /* that server's --max-output-bytes default */
#define DEFAULT_TIMEOUT_S 30
#define MAX_TIMEOUT_S     300

/* ---- the script and its dependencies */

/* The script's metadata with `dependencies` merged in: 0, or -1 with the reason in err. */
static int s_metadata(json_t *args, pep723_meta_t *m, char *err, size_t errlen)
{
    json_t *script = json_object_get(args, "script");
    if (pep723_read(json_string_value(script), json_string_length(script), m, err, errlen) < 0)
        return -1;
    size_t i;
    json_t *d;
    json_array_foreach(json_object_get(args, "dependencies"), i, d)
    {
        char why[200];
        if (!json_is_string(d) ||
            pep723_add(m, json_string_value(d), json_string_length(d), why, sizeof why) < 0) {
            snprintf(err, errlen, "dependencies[%zu]: %s", i,
                     json_is_string(d) ? why : "must be a string");
            pep723_meta_clear(m);
            return -1;
        }
    }
    return 0;
}

static int s_too_long(call_t *c, json_t *args)
{
    size_t len = json_string_length(json_object_get(args, "script"));
    if (len <= JOB_MAX_CODE) return 0;
    return tool_bad(c, "script is %zu bytes; the limit is %u", len, JOB_MAX_CODE), 1;
}

static int s_may_use(const profile_t *p, void *tenant)
{
    return tenant_allows_profile(tenant, p->name);
}

static int s_may_write(const profile_t *p, void *tenant)
{
    return p->workspace && tenant_allows_profile(tenant, p->name);
}

/* Where the script runs: that server ran it in a directory of its own that it may write, so the
 * first profile with a workspace (of those the tenant may use) that has every dependency some
 * profile has — the rest is the package source's — else the first without one, else the
 * default (where jobargs names what is wrong). */
static const profile_t *s_profile(const call_t *c, const pep723_meta_t *m)
{
    char names[PEP723_MAX_DEPS][PEP723_MAX_SPEC];
    const char *known[PEP723_MAX_DEPS];
    size_t n = 0;
    for (size_t i = 0; i < m->n_deps; i++) {
        char *name = names[i];
        pep723_unquote(m->deps[i], name, sizeof names[i]);
        size_t k =
            strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-");
        name[k] = '\0';
        for (size_t j = 0; j < n_profiles && k; j++)
            if (profile_provides(&profiles[j], name)) {
                known[n++] = name;
                break;
            }
    }
    const profile_t *p = profile_for_dependencies(known, n, s_may_write, c->tenant);
    if (!p) p = profile_for_dependencies(known, n, s_may_use, c->tenant);
    return p ? p : profile_default();
}

/* A copy of the extras, which were checked as strings by s_metadata. */
static json_t *s_extras(json_t *args)
{
    json_t *d = json_object_get(args, "dependencies");
    return json_is_array(d) ? json_deep_copy(d) : json_array();
}

/* ---- execute_python */

/* A stream as that server printed it: cut to max bytes with its marker. */
static void s_stream(buf_t *b, const char *data, size_t len)
{
    static const char marker[] = "\n... [truncated at 100KB]";
    if (len <= MAX_OUTPUT_BYTES) {
        utf8_sanitize(b, data, len);
        return;
    }
    utf8_sanitize(b, data, utf8_prefix(data, len, MAX_OUTPUT_BYTES - (sizeof marker - 1)));
    buf_puts(b, marker);
}

static json_t *s_render_execute(const char *id, const result_t *res, const json_t *ctx)
{
    (void)id, (void)ctx;
    buf_t out, err, text;
    buf_init(&out), buf_init(&err), buf_init(&text);
    s_stream(&out, res->out, res->out_len);
    buf_t raw;
    buf_init(&raw);
    compat_python_stderr(&raw, res);
    s_stream(&err, (const char *)raw.data, raw.len);
    buf_free(&raw);
    int exit_code = compat_exit_code(res), timed_out = res->status == ST_TIMEOUT;
    long duration_ms = (long)(res->wall_ms + 0.5);
    if (out.len) buf_printf(&text, "--- stdout ---\n%s\n", (const char *)out.data);
    if (err.len) buf_printf(&text, "--- stderr ---\n%s\n", (const char *)err.data);
    buf_printf(&text, "--- exit_code: %d ---\n--- duration_ms: %ld ---", exit_code, duration_ms);
    if (timed_out) buf_puts(&text, "\n--- timed_out: true ---");
    json_t *doc = json_pack("{s:s%,s:s%,s:i,s:I,s:b}", "stdout", (const char *)out.data, out.len,
                            "stderr", (const char *)err.data, err.len, "exit_code", exit_code,
                            "duration_ms", (json_int_t)duration_ms, "timed_out", timed_out);
    json_t *r = tool_result((const char *)text.data, doc, compat_farm_failed(res));
    buf_free(&out), buf_free(&err), buf_free(&text);
    return r;
}

static void s_execute_python(call_t *c, json_t *args, const tool_task_t *task)
{
    (void)task;
    pep723_meta_t m;
    char err[300];
    if (s_too_long(c, args)) return;
    if (s_metadata(args, &m, err, sizeof err) < 0) {
        tool_bad(c, "%s", err);
        return;
    }
    json_t *script = json_object_get(args, "script");
    size_t len;
    char *code = pep723_write(json_string_value(script), json_string_length(script), &m, &len);
    const profile_t *p = s_profile(c, &m);
    pep723_meta_clear(&m);
    json_t *job = json_pack("{s:s%,s:o,s:s}", "code", code, len, "dependencies", s_extras(args),
                            "profile", p->name);
    free(code);
    json_object_set_new(job, "timeout", json_integer((json_int_t)compat_clamp(
                                            args, "timeout_seconds", DEFAULT_TIMEOUT_S, 1,
                                            MAX_TIMEOUT_S)));
    compat_job_t spec = {.tool = "execute_python",
                         .kind = JOB_EXEC,
                         .record = 1,
                         .dependencies = 1,
                         .render = s_render_execute};
    compat_job_run(c, job, &spec);
    json_decref(job);
}

/* ---- validate_script: the script's own block (the extras merged as execute_python merges
 * them) runs alone, so that the executor reads its TOML exactly as it would before running the
 * script, and the node and the executor check its dependencies the same way; nothing of the
 * script runs */

static void s_listing(buf_t *b, const json_t *ctx)
{
    json_t *rp = json_object_get(ctx, "requires_python"), *deps = json_object_get(ctx, "deps");
    buf_puts(b, "VALID");
    if (json_is_string(rp)) buf_printf(b, "\nrequires-python: %s", json_string_value(rp));
    if (!json_array_size(deps)) buf_puts(b, "\ndependencies: none");
    else buf_printf(b, "\ndependencies (%zu):", json_array_size(deps));
    size_t i;
    json_t *d;
    json_array_foreach(deps, i, d) buf_printf(b, "\n  - %s", json_string_value(d));
}

static json_t *s_render_validate(const char *id, const result_t *res, const json_t *ctx)
{
    (void)id;
    buf_t b;
    buf_init(&b);
    const char *type = res->error.present && res->error.type ? res->error.type : "";
    int valid = res->status == ST_OK || !strcmp(type, "DependencyError");
    if (valid) {
        s_listing(&b, ctx);
        if (res->status != ST_OK) {
            buf_puts(&b, "\nwarnings:\n  - ");
            compat_error_line(&b, res);
        }
    } else if (!strcmp(type, "ScriptMetadataError") && res->error.message) {
        buf_printf(&b, "INVALID: %s", res->error.message); /* the executor's reading of it */
    } else {
        buf_puts(&b, "INVALID: ");
        compat_error_line(&b, res);
    }
    json_t *r = tool_result((const char *)b.data,
                            json_pack("{s:b,s:s%}", "valid", valid, "report",
                                      (const char *)b.data, b.len),
                            compat_farm_failed(res));
    buf_free(&b);
    return r;
}

static void s_answer_text(call_t *c, const char *text, int valid)
{
    call_reply(c, tool_result(text, json_pack("{s:b,s:s}", "valid", valid, "report", text), 0));
}

/* The merged dependencies as written strings, for the listing: 0, or -1 with the first that is
 * not a PEP 508 requirement named in err (the dependency format that server promised to check). */
static int s_requirements(const pep723_meta_t *m, json_t *deps, char *err, size_t errlen)
{
    for (size_t i = 0; i < m->n_deps; i++) {
        char req[PEP723_MAX_SPEC], why[200];
        pep723_unquote(m->deps[i], req, sizeof req);
        if (pep508_check(req, strlen(req), why, sizeof why) < 0) {
            snprintf(err, errlen, "dependency %s is not a valid requirement: %s", m->deps[i], why);
            return -1;
        }
        json_array_append_new(deps, json_string(req));
    }
    return 0;
}

static void s_validate_script(call_t *c, json_t *args, const tool_task_t *task)
{
    (void)task;
    pep723_meta_t m;
    char err[400], text[500];
    if (s_too_long(c, args)) return;
    if (s_metadata(args, &m, err, sizeof err) < 0) {
        snprintf(text, sizeof text, "INVALID: %s", err);
        s_answer_text(c, text, 0);
        return;
    }
    json_t *deps = json_array();
    if (s_requirements(&m, deps, err, sizeof err) < 0) {
        snprintf(text, sizeof text, "INVALID: %s", err);
        s_answer_text(c, text, 0);
    } else if (!m.found && !m.n_deps) {
        s_answer_text(c, "VALID\ndependencies: none", 1);
    } else {
        char rp[PEP723_MAX_SPEC];
        if (m.requires_python) pep723_unquote(m.requires_python, rp, sizeof rp);
        json_t *ctx = json_pack("{s:O,s:o}", "deps", deps, "requires_python",
                                m.requires_python ? json_string(rp) : json_null());
        json_t *script = json_object_get(args, "script");
        size_t len = 0;
        char *block = pep723_block(json_string_value(script), json_string_length(script), &m, &len);
        static const char no_block[] = "# no block: the dependencies argument alone\n";
        json_t *job = json_pack("{s:s%,s:o,s:s,s:i}", "code", block ? block : no_block,
                                block ? len : sizeof no_block - 1, "dependencies", s_extras(args),
                                "profile", s_profile(c, &m)->name, "timeout", 10);
        free(block);
        compat_job_t spec = {.tool = "validate_script",
                             .kind = JOB_EXEC,
                             .dependencies = 1,
                             .render = s_render_validate,
                             .ctx = ctx};
        compat_job_run(c, job, &spec);
        json_decref(job);
        json_decref(ctx);
    }
    json_decref(deps);
    pep723_meta_clear(&m);
}

/* ---- check_environment: that server's lines, about this sandbox; the Python version and the
 * packages are what the executors report (sp:profiles, executor-node/node/snapshot.c) */

static void s_profiles_line(buf_t *b, const call_t *c, json_t *reported, const char **python)
{
    buf_puts(b, "\nProfiles:");
    for (size_t i = 0; i < n_profiles; i++) {
        const profile_t *p = &profiles[i];
        json_t *entry = json_object_get(reported, p->name);
        json_t *py = json_object_get(entry, "python");
        if (json_is_string(py) && !*python) *python = json_string_value(py);
        buf_printf(b, "\n  - %s (%s)", p->name,
                   tenant_allows_profile(c->tenant, p->name) ? "available" : "not enabled for you");
        const char *k;
        json_t *v;
        int first = 1;
        json_object_foreach(json_object_get(entry, "packages"), k, v)
        {
            buf_printf(b, "%s%s %s", first ? ": " : ", ", k, json_is_string(v) ? json_string_value(v) : "?");
            first = 0;
        }
    }
}

static void s_on_profiles(void *arg, redisReply *r)
{
    call_t *c = arg;
    json_t *reported = json_object();
    for (size_t i = 0; r && r->type == REDIS_REPLY_ARRAY && i + 1 < r->elements; i += 2)
        if (r->element[i]->type == REDIS_REPLY_STRING && r->element[i + 1]->type == REDIS_REPLY_STRING)
            json_object_set_new(reported, r->element[i]->str,
                                json_loads(r->element[i + 1]->str, 0, NULL));
    buf_t profs;
    buf_init(&profs);
    const char *python = NULL;
    s_profiles_line(&profs, c, reported, &python);
    struct utsname u;
    if (uname(&u) < 0) snprintf(u.machine, sizeof u.machine, "unknown");
    buf_t b;
    buf_init(&b);
    buf_printf(&b,
               "Python version: %s\n"
               "uv: not used (dependencies come from the sandbox's installed packages, else from "
               "the operator's package source when there is one; the sandbox has no network)\n"
               "Platform: Linux %s\n"
               "Sandbox backend: snakepit\n"
               "Sandbox status: every script runs in a fresh sandboxed interpreter, in a private "
               "directory it may write (namespaces, Landlock, seccomp, rlimits; no network)\n"
               "Default timeout: %ds\nMax timeout: %lds\nMax output: %d bytes\n"
               "Cache warming: disabled%s",
               python ? python : "3.11", u.machine, DEFAULT_TIMEOUT_S,
               c->tenant->max_timeout_s < MAX_TIMEOUT_S ? c->tenant->max_timeout_s : MAX_TIMEOUT_S,
               MAX_OUTPUT_BYTES, (const char *)profs.data);
    json_decref(reported);
    buf_free(&profs);
    call_reply(c, tool_result((const char *)b.data, NULL, 0));
    buf_free(&b);
    call_release(c);
}

static void s_check_environment(call_t *c, json_t *args, const tool_task_t *task)
{
    (void)args, (void)task;
    call_hold(c);
    if (store_queryf(c->fe->store, s_on_profiles, c, "HGETALL sp:profiles") < 0)
        s_on_profiles(c, NULL);
}

/* ---- the rows */

#define DEPENDENCIES_ARG                                                                           \
    {                                                                                              \
        "dependencies", ARG_ARRAY, ARG_NULLABLE,                                                   \
            "Extra PEP 508 dependency specifiers to merge into the script's metadata (met from "   \
            "the "                                                                                 \
            "sandbox's installed packages, else from the operator's package source)",              \
            "\"items\": {\"type\": \"string\"}, \"maxItems\": 64, \"default\": []"                 \
    }

/* clang-format off */
static const tool_arg_t s_execute_args[] = {
    {"script", ARG_STRING, ARG_REQUIRED,
     "Python source code to execute. May include PEP 723 metadata (# /// script blocks)",
     "\"maxLength\": 1048576"},
    DEPENDENCIES_ARG,
    {"timeout_seconds", ARG_INTEGER, ARG_NULLABLE, "Maximum execution time (1-300, default 30)",
     "\"default\": 30"},
    {NULL},
};

static const tool_arg_t s_validate_args[] = {
    {"script", ARG_STRING, ARG_REQUIRED,
     "Python source code to validate. May include inline dependency metadata (# /// script "
     "blocks, see PEP 723)", "\"maxLength\": 1048576"},
    DEPENDENCIES_ARG,
    {NULL},
};

static const char s_execute_output[] = "{\"type\": \"object\", \"required\": [\"stdout\", \"stderr\", \"exit_code\", \"duration_ms\", \"timed_out\"],"
  "\"properties\": {\"stdout\": {\"type\": \"string\"}, \"stderr\": {\"type\": \"string\"}, \"exit_code\": {\"type\": \"integer\"},"
    "\"duration_ms\": {\"type\": \"integer\"}, \"timed_out\": {\"type\": \"boolean\"}}}";

static const char s_validate_output[] = "{\"type\": \"object\", \"required\": [\"valid\", \"report\"],"
  "\"properties\": {\"valid\": {\"type\": \"boolean\"}, \"report\": {\"type\": \"string\", \"description\": \"the text answer\"}}}";

const tool_t compat_exec_sandbox_tools[] = {
    {.name = "execute_python",
     .description =
        "Execute a Python script with automatic dependency management.\n\nThe script can include "
        "PEP 723 inline metadata (# /// script blocks) for declaring dependencies. Additional "
        "dependencies can also be passed via the dependencies parameter and will be merged. "
        "Dependencies are met from the packages installed in the sandbox ({profiles}), else from "
        "the operator's package source when there is one; the sandbox has no network. The script "
        "runs in a fresh directory it may write.\n\nReturns formatted output with stdout, stderr, "
        "exit code, and duration.",
     .args = s_execute_args, .output_schema = s_execute_output, .run = s_execute_python},
    {.name = "check_environment",
     .description = "Check the execution environment and report status: Python version, "
                    "platform, sandbox configuration and the installed packages.",
     .annotations = "{\"readOnlyHint\": true, \"openWorldHint\": false}",
     .run = s_check_environment},
    {.name = "validate_script",
     .description = "Validate a Python script's PEP 723 metadata and dependencies without "
                    "executing it. Checks metadata syntax, dependency format, and requires-python "
                    "compatibility.",
     .args = s_validate_args, .output_schema = s_validate_output,
     .annotations = "{\"readOnlyHint\": true, \"openWorldHint\": false}",
     .run = s_validate_script},
    {NULL},
};
/* clang-format on */
