/* mcp-frontend/compat/compat_python_sandbox.c — see compat_python_sandbox.h. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/profiles.h"
#include "common/utf8.h"
#include "mcp-frontend/rpc/jsonrpc.h"
#include "mcp-frontend/tools/pyscan.h"
#include "compat_job.h"
#include "compat_python_sandbox.h"

#define DEFAULT_TIMEOUT_S 30
/* That server kept at most SANDBOX_MAX_OUTPUT_SIZE characters (1 MiB by default) of each stream
 * and said so at the end, and the run went on: the job here may print up to the profile's
 * output cap (8 MiB) before it is stopped, and the answer keeps this much of it. */
#define MAX_OUTPUT_CHARS 1048576
#define TRUNCATED_MARK   "\n[Output truncated]"

/* ---- execute_code */

static int s_tenant_may(const profile_t *p, void *tenant)
{
    return tenant_allows_profile(tenant, p->name);
}

/* The first profile the tenant may use whose modules cover the code's imports and the
 * allowed_imports asked for; NULL: the default, where the sandbox names what is missing. */
static const profile_t *s_profile(call_t *c, const pyscan_t *scan, json_t *allowed)
{
    const char *names[PYSCAN_MAX + JOB_MAX_NAMES];
    size_t n = 0;
    for (size_t i = 0; i < scan->n_modules; i++) names[n++] = scan->modules[i];
    size_t i;
    json_t *v;
    json_array_foreach(allowed, i, v) if (json_is_string(v) && n < sizeof names / sizeof *names)
        names[n++] = json_string_value(v);
    return profile_for_dependencies(names, n, s_tenant_may, c->tenant);
}

/* What the sandbox is asked to report: every name the code may bind, and the names the
 * server looked in for a result. */
static json_t *s_inspect(const pyscan_t *scan)
{
    json_t *names = json_pack("[s,s]", "result", "output");
    for (size_t i = 0; i < scan->n_names && json_array_size(names) < JOB_MAX_NAMES; i++)
        if (strcmp(scan->names[i], "result") && strcmp(scan->names[i], "output"))
            json_array_append_new(names, json_string(scan->names[i]));
    return names;
}

/* A repr() as the JSON value it spells, where it is one (4, [1, 2], True, 'text'); else the
 * repr itself, as that server returned str() of what JSON cannot hold. */
static json_t *s_py_value(const char *repr)
{
    if (!repr) return json_null();
    if (!strcmp(repr, "True")) return json_true();
    if (!strcmp(repr, "False")) return json_false();
    if (!strcmp(repr, "None")) return json_null();
    size_t n = strlen(repr);
    if (n >= 2 && (repr[0] == '\'' || repr[0] == '"') && repr[n - 1] == repr[0] &&
        !strchr(repr, '\\') && !memchr(repr + 1, repr[0], n - 2))
        return json_bytes(repr + 1, n - 2);
    json_t *v = json_loads(repr, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, NULL);
    return v ? v : json_str_safe(repr);
}

static json_t *s_result_value(const result_t *res, json_t *vars)
{
    json_t *v = json_object_get(vars, "result");
    if (!v) v = json_object_get(vars, "output");
    return v ? json_incref(v) : s_py_value(res->result);
}

static void s_failure(json_t *doc, const result_t *res, const json_t *ctx)
{
    const char *type = res->error.present && res->error.type ? res->error.type : "";
    const char *msg = res->error.present && res->error.message ? res->error.message : "";
    if (res->status == ST_TIMEOUT || res->status == ST_CPU_LIMIT) {
        json_object_set_new(doc, "error", json_string("Execution timeout"));
        json_object_set(doc, "timeout", json_object_get(ctx, "timeout"));
        return;
    }
    if (res->status == ST_OUTPUT_LIMIT) { /* past the profile's cap, far beyond what is kept */
        json_object_set_new(doc, "error",
                            json_string("Output limit exceeded: the code printed more than the "
                                        "sandbox allows and was stopped there"));
        json_object_set_new(doc, "error_type", json_string("OutputLimit"));
        return;
    }
    buf_t b;
    buf_init(&b);
    char module[128];
    int import = compat_refused_import(res, module, sizeof module);
    if (import)
        buf_printf(&b, "Import of '%s' is not allowed in sandbox", module); /* its words */
    else if (*msg)
        buf_puts(&b, msg);
    else compat_error_line(&b, res);
    json_object_set_new(doc, "error", json_bytes((const char *)b.data, b.len));
    buf_free(&b);
    json_object_set_new(doc, "error_type", json_str_safe(*type ? type : status_name(res->status)));
    if (res->error.traceback) json_object_set_new(doc, "traceback", json_str_safe(res->error.traceback));
    if (import)
        json_object_set_new(doc, "security_event", json_string("blocked_import"));
    else if (compat_refused(res))
        json_object_set_new(doc, "security_event", json_string("blocked_operation"));
}

/* A stream as that server returned it: its first MAX_OUTPUT_CHARS characters, then the mark
 * when there was more (or when the sandbox cut it). */
static json_t *s_stream(const char *data, size_t len, int cut)
{
    size_t n = 0, chars = 0;
    for (; n < len; n++) /* a character starts at every byte that is not a continuation */
        if (((unsigned char)data[n] & 0xC0) != 0x80 && chars++ == MAX_OUTPUT_CHARS) break;
    if (n == len && !cut) return json_bytes(data, len);
    buf_t b;
    buf_init(&b);
    utf8_sanitize(&b, data, n);
    buf_puts(&b, TRUNCATED_MARK);
    json_t *s = json_bytes((const char *)b.data, b.len);
    buf_free(&b);
    return s;
}

static json_t *s_render_execute(const char *id, const result_t *res, const json_t *ctx)
{
    json_t *vars = compat_variables(res);
    json_t *doc = json_pack("{s:b,s:s}", "success", res->status == ST_OK, "execution_id", id);
    if (res->status == ST_OK) {
        json_object_set_new(doc, "result", s_result_value(res, vars));
    } else {
        s_failure(doc, res, ctx);
    }
    json_object_set_new(doc, "stdout", s_stream(res->out, res->out_len, res->out_truncated));
    json_object_set_new(doc, "stderr", s_stream(res->err, res->err_len, res->err_truncated));
    json_object_set_new(doc, "execution_time", json_real(res->wall_ms / 1000.0));
    if (res->status == ST_OK) {
        json_t *names = json_array();
        const char *k;
        json_t *v;
        json_object_foreach(vars, k, v) json_array_append_new(names, json_string(k));
        json_object_set_new(doc, "variables", names);
    }
    json_decref(vars);
    return compat_json_result(doc, compat_farm_failed(res));
}

static void s_execute_code(call_t *c, json_t *args, const tool_task_t *task)
{
    (void)task;
    json_t *code = json_object_get(args, "code");
    pyscan_t *scan = xmalloc(sizeof *scan);
    pyscan(json_string_value(code), json_string_length(code), scan);
    json_t *allowed = json_object_get(args, "allowed_imports");
    const profile_t *p = s_profile(c, scan, allowed);
    json_t *job = json_pack("{s:O,s:o}", "code", code, "inspect_variables", s_inspect(scan));
    free(scan);
    static const char *const passed[] = {"timeout", "memory_limit", "allowed_imports",
                                         "capture_output", NULL};
    for (const char *const *k = passed; *k; k++)
        if (json_object_get(args, *k)) json_object_set(job, *k, json_object_get(args, *k));
    /* the profile's cap (jobargs_limits clamps to it): the answer keeps MAX_OUTPUT_CHARS */
    json_object_set_new(job, "output_limit", json_integer(RESULT_MAX_STREAM));
    if (p) json_object_set_new(job, "profile", json_string(p->name));
    json_t *timeout = json_object_get(args, "timeout");
    json_t *ctx = json_pack("{s:I}", "timeout",
                            json_is_integer(timeout) ? json_integer_value(timeout)
                                                     : (json_int_t)DEFAULT_TIMEOUT_S);
    compat_job_t spec = {.tool = "execute_code",
                         .narrow_imports = 1,
                         .kind = JOB_EXEC,
                         .record = 1,
                         .render = s_render_execute,
                         .ctx = ctx};
    compat_job_run(c, job, &spec);
    json_decref(ctx);
    json_decref(job);
}

/* ---- validate_code: validate.py's analysis (validate_code on /mcp), in that server's shape */

/* The analysis's errors, an import refusal in that server's words ("Line 1: Import 'os' is not
 * allowed"), the rest as they are. */
static json_t *s_errors(const json_t *errors)
{
    json_t *out = json_array();
    size_t i;
    json_t *e;
    json_array_foreach(errors, i, e) {
        const char *text = json_string_value(e);
        int line, n = 0;
        char module[128];
        if (text && sscanf(text, "Line %d: import of '%127[^']' is not allowed%n", &line, module, &n) == 2 &&
            n > 0)
            json_array_append_new(out, json_sprintf("Line %d: Import '%s' is not allowed", line, module));
        else
            json_array_append(out, e);
    }
    return out;
}

static json_t *s_render_validate(const char *id, const result_t *res, const json_t *ctx)
{
    (void)id, (void)ctx;
    json_t *v = compat_validation(res);
    if (!v) {
        buf_t b;
        buf_init(&b);
        buf_puts(&b, "Validation error: ");
        compat_error_line(&b, res);
        json_t *doc = json_pack("{s:{s:b,s:o}}", "validation", "valid", 0, "message",
                                json_bytes((const char *)b.data, b.len));
        buf_free(&b);
        return compat_json_result(doc, 1);
    }
    int valid = json_is_true(json_object_get(v, "valid"));
    json_t *validation = json_pack("{s:b,s:o,s:s}", "valid", valid, "errors",
                                   s_errors(json_object_get(v, "errors")), "message",
                                   valid ? "Code passed validation"
                                         : "Code contains restricted operations");
    json_t *warnings = json_object_get(v, "warnings");
    if (json_array_size(warnings)) json_object_set(validation, "warnings", warnings);
    json_t *doc = json_pack("{s:o,s:O,s:O}", "validation", validation, "analysis",
                            json_object_get(v, "analysis"), "recommendations",
                            json_object_get(v, "recommendations"));
    json_decref(v);
    return compat_json_result(doc, 0);
}

static void s_validate_code(call_t *c, json_t *args, const tool_task_t *task)
{
    (void)task;
    json_t *code = json_object_get(args, "code");
    pyscan_t *scan = xmalloc(sizeof *scan);
    pyscan(json_string_value(code), json_string_length(code), scan);
    const profile_t *p = s_profile(c, scan, NULL);
    free(scan);
    json_t *job = json_pack("{s:O}", "code", code);
    if (p) json_object_set_new(job, "profile", json_string(p->name));
    compat_job_t spec = {.tool = "validate_code",
                         .narrow_imports = 1,
                         .kind = JOB_VALIDATE,
                         .render = s_render_validate};
    compat_job_run(c, job, &spec);
    json_decref(job);
}

/* ---- get_sandbox_info: that server's four capability tiers, from the profile table */

/* The modules a profile adds to python.basic's (all of them for python.basic itself). */
static json_t *s_tier(const call_t *c, const char *profile, const profile_t *base)
{
    const profile_t *p = profile_find(profile);
    json_t *mods = json_array();
    for (const char *const *m = p ? p->modules : NULL; m && *m; m++)
        if (!base || base == p || !profile_allows(base, *m))
            json_array_append_new(mods, json_string(*m));
    return json_pack("{s:b,s:o}", "enabled", p && tenant_allows_profile(c->tenant, p->name),
                     "modules", mods);
}

/* A tier that is about what its profile may do rather than what it may import (files, the
 * network): the modules of that server's tier, of those the profile has. */
static json_t *s_capability_tier(const call_t *c, const char *profile, const char *const *names)
{
    const profile_t *p = profile ? profile_find(profile) : NULL;
    json_t *mods = json_array();
    for (; *names; names++)
        if (!p || profile_allows(p, *names)) json_array_append_new(mods, json_string(*names));
    return json_pack("{s:b,s:o}", "enabled", p && tenant_allows_profile(c->tenant, p->name),
                     "modules", mods);
}

static void s_sandbox_info(call_t *c, json_t *args, const tool_task_t *task)
{
    (void)args, (void)task;
    const profile_t *basic = profile_default();
    char memory[32];
    snprintf(memory, sizeof memory, "%ldm", basic->defaults.memory_mb);
    /* never enabled: the sandbox has no network */
    static const char *const network[] = {"httpx", "requests", "urllib", NULL};
    static const char *const files[] = {"pathlib", "os.path", "tempfile", "shutil",
                                        "glob",    "zipfile", "tarfile",  NULL};
    json_t *doc = json_pack(
        "{s:b,s:{s:o,s:o,s:o,s:o},s:{s:I,s:I,s:s},s:{s:b,s:b,s:s}}", "success", 1,
        "security_profiles", "basic", s_tier(c, "python.basic", basic), "data_science",
        s_tier(c, "python.data_science", basic), "network", s_capability_tier(c, NULL, network),
        "filesystem", s_capability_tier(c, "python.filesystem", files), "resource_limits",
        "timeout", (json_int_t)(basic->defaults.wall_ms / 1000), "max_output_size",
        (json_int_t)basic->defaults.output_bytes, "memory_limit", memory, "container_mode",
        "available", 1, "enabled", 1, "isolation",
        "every execution runs in its own sandboxed process (namespaces, Landlock, seccomp, "
        "rlimits) with no network; use_container changes nothing");
    call_reply(c, compat_json_result(doc, 0));
}

/* ---- the rows: names, parameters, defaults and descriptions as that server published them */

#define NAMES "\"items\": {\"type\": \"string\"}, \"maxItems\": 64"

/* clang-format off */
static const tool_arg_t s_execute_args[] = {
    {"code", ARG_STRING, ARG_REQUIRED, "Python code to execute", "\"maxLength\": 1048576"},
    {"timeout", ARG_INTEGER, ARG_NULLABLE, "Execution timeout in seconds (default: 30, max: 300)",
     "\"default\": 30, \"minimum\": 1, \"maximum\": 300"},
    {"capture_output", ARG_BOOLEAN, ARG_NULLABLE, "Capture stdout/stderr (default: true)",
     "\"default\": true"},
    {"allowed_imports", ARG_ARRAY, ARG_NULLABLE,
     "List of allowed modules (within the sandbox's profiles: {profiles})", NAMES},
    {"use_container", ARG_BOOLEAN, ARG_NULLABLE,
     "Use container isolation (default: false). Every execution here is isolated in its own "
     "sandboxed process already", "\"default\": false"},
    {"memory_limit", ARG_STRING, ARG_NULLABLE,
     "Memory limit for container mode, e.g. \"128m\", \"512m\" (default: the profile's)", NULL},
    {NULL},
};

static const tool_arg_t s_validate_args[] = {
    {"code", ARG_STRING, ARG_REQUIRED, "Python code to validate", "\"maxLength\": 1048576"},
    {NULL},
};

static const char s_execute_output[] = "{\"type\": \"object\", \"required\": [\"success\", \"execution_id\"],"
  "\"properties\": {"
    "\"success\": {\"type\": \"boolean\"}, \"execution_id\": {\"type\": \"string\"},"
    "\"result\": {\"description\": \"the final value of result (or output, or the last expression): JSON where it is a JSON value, else its repr\", "
    "\"anyOf\": [{\"type\": \"string\"}, {\"type\": \"number\"}, {\"type\": \"boolean\"}, {\"type\": \"object\"}, {\"type\": \"array\"}, {\"type\": \"null\"}]}, \"stdout\": {\"type\": \"string\"}, \"stderr\": {\"type\": \"string\"},"
    "\"execution_time\": {\"type\": \"number\", \"description\": \"seconds\"},"
    "\"variables\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}},"
    "\"error\": {\"type\": \"string\"}, \"error_type\": {\"type\": \"string\"},"
    "\"traceback\": {\"type\": \"string\"}, \"timeout\": {\"type\": \"integer\"},"
    "\"security_event\": {\"type\": \"string\"}"
  "}}";

static const char s_validate_output[] = "{\"type\": \"object\", \"required\": [\"validation\"],"
  "\"properties\": {"
    "\"validation\": {\"type\": \"object\", \"required\": [\"valid\", \"message\"], \"properties\": {"
      "\"valid\": {\"type\": \"boolean\"}, \"errors\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}},"
      "\"warnings\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}}, \"message\": {\"type\": \"string\"}}},"
    "\"analysis\": {\"type\": \"object\", \"properties\": {\"line_count\": {\"type\": \"integer\"},"
      "\"character_count\": {\"type\": \"integer\"}, \"estimated_complexity\": {\"type\": \"string\"}}},"
    "\"recommendations\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}}"
  "}}";

static const char s_info_output[] = "{\"type\": \"object\", \"required\": [\"success\", \"security_profiles\", \"resource_limits\", \"container_mode\"],"
  "\"properties\": {"
    "\"success\": {\"type\": \"boolean\"},"
    "\"security_profiles\": {\"type\": \"object\", \"additionalProperties\": {\"type\": \"object\", \"required\": [\"enabled\", \"modules\"],"
      "\"properties\": {\"enabled\": {\"type\": \"boolean\"}, \"modules\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}}}}},"
    "\"resource_limits\": {\"type\": \"object\", \"properties\": {\"timeout\": {\"type\": \"integer\"},"
      "\"max_output_size\": {\"type\": \"integer\"}, \"memory_limit\": {\"type\": \"string\"}}},"
    "\"container_mode\": {\"type\": \"object\", \"properties\": {\"available\": {\"type\": \"boolean\"}, \"enabled\": {\"type\": \"boolean\"}}}"
  "}}";

const tool_t compat_python_sandbox_tools[] = {
    {.name = "execute_code",
     .description = "Execute Python code in secure sandbox. Returns success, stdout, stderr, the "
                    "value of `result` (or of the last expression), execution_time and the "
                    "names of the variables the code defined.",
     .args = s_execute_args, .output_schema = s_execute_output, .run = s_execute_code},
    {.name = "validate_code", .description = "Validate code without execution.",
     .args = s_validate_args, .output_schema = s_validate_output, .run = s_validate_code},
    {.name = "get_sandbox_info", .description = "Get sandbox capabilities and configuration.",
     .output_schema = s_info_output, .run = s_sandbox_info},
    {NULL},
};
/* clang-format on */
