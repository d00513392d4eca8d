/* mcp-frontend/compat/compat_code_sandbox.c — see compat_code_sandbox.h. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp-frontend/render/outcome.h"
#include "mcp-frontend/rpc/jsonrpc.h"
#include "compat_code_sandbox.h"
#include "compat_job.h"

/* That server answered with json.dumps(result): ", " and ": " between items. */
static json_t *s_answer(json_t *doc, int is_error)
{
    char *text = json_text(doc, 0);
    json_t *r = tool_result(text ? text : "{}", doc, is_error);
    free(text);
    return r;
}

/* Line `line` (1-based) of the code, without its indentation, as that server's context. */
static json_t *s_context(const json_t *ctx, long line)
{
    const char *code = json_string_value(json_object_get(ctx, "code"));
    const char *p = code ? code : "", *end = p + strlen(p);
    for (long n = 1; n < line && p < end; n++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        p = nl ? nl + 1 : end;
    }
    if (line < 1 || p >= end) return json_string("");
    const char *e = memchr(p, '\n', (size_t)(end - p));
    size_t n = e ? (size_t)(e - p) : (size_t)(end - p);
    while (n && (*p == ' ' || *p == '\t')) p++, n--;
    while (n && (p[n - 1] == ' ' || p[n - 1] == '\t' || p[n - 1] == '\r')) n--;
    return json_bytes(p, n);
}

static json_t *s_syntax_error(const json_t *ctx, const char *msg, size_t msg_len, long line,
                              long offset)
{
    return json_pack("{s:b,s:o,s:o,s:o,s:o}", "valid", 0, "error", json_bytes(msg, msg_len),
                     "line", line > 0 ? json_integer(line) : json_null(), "offset",
                     offset > 0 ? json_integer(offset) : json_null(), "context",
                     s_context(ctx, line));
}

/* ---- check_syntax: the first syntax error of validate.py's analysis */

/* The first syntax error validation v found, in that server's shape; NULL when none. */
static json_t *s_first_syntax_error(const json_t *ctx, const json_t *v)
{
    size_t i;
    json_t *d;
    json_array_foreach(json_object_get(v, "details"), i, d)
    {
        const char *kind = json_string_value(json_object_get(d, "kind"));
        const char *msg = json_string_value(json_object_get(d, "message"));
        if (!kind || strcmp(kind, "syntax") != 0) continue;
        if (!msg) msg = "invalid syntax";
        const char *colon = strncmp(msg, "Line ", 5) ? NULL : strstr(msg, ": ");
        if (colon) msg = colon + 2; /* "Line 3: expected ':'" */
        return s_syntax_error(ctx, msg, strlen(msg), json_integer_value(json_object_get(d, "line")),
                              json_integer_value(json_object_get(d, "column")));
    }
    return NULL;
}

static json_t *s_checker_failed(const result_t *res)
{
    buf_t b;
    buf_init(&b);
    buf_puts(&b, "Internal syntax checker error: ");
    compat_error_line(&b, res);
    json_t *doc = json_pack("{s:b,s:s%,s:n,s:n,s:s}", "valid", 0, "error", (const char *)b.data,
                            b.len, "line", "offset", "context", "");
    buf_free(&b);
    return s_answer(doc, 1);
}

static json_t *s_render_check(const char *id, const result_t *res, const json_t *ctx)
{
    (void)id;
    json_t *v = compat_validation(res);
    if (!v) return s_checker_failed(res);
    json_t *doc = s_first_syntax_error(ctx, v);
    json_decref(v);
    return s_answer(doc ? doc : json_pack("{s:b}", "valid", 1), 0);
}

static void s_check_syntax(call_t *c, json_t *args, const tool_task_t *task)
{
    (void)task;
    json_t *ctx = json_pack("{s:O}", "code", json_object_get(args, "code"));
    compat_job_t spec = {.tool = "check_syntax", .kind = JOB_VALIDATE, .render = s_render_check,
                         .ctx = ctx};
    compat_job_run(c, ctx, &spec);
    json_decref(ctx);
}

/* ---- test_code */

/* runner.py words a syntax error "msg (line L, column C)". */
static json_t *s_syntax_phase(const result_t *res, const json_t *ctx)
{
    const char *msg = res->error.message ? res->error.message : "invalid syntax";
    const char *at = strstr(msg, " (line ");
    long line = res->error.line, column = 0;
    if (at) {
        long l = 0, col = 0;
        if (sscanf(at, " (line %ld, column %ld)", &l, &col) == 2) line = l, column = col;
    }
    json_t *doc = s_syntax_error(ctx, msg, at ? (size_t)(at - msg) : strlen(msg), line, column);
    json_object_set_new(doc, "phase", json_string("syntax_check"));
    return doc;
}

static json_t *s_render_test(const char *id, const result_t *res, const json_t *ctx)
{
    (void)id;
    if (res->status == ST_SYNTAX_ERROR) return s_answer(s_syntax_phase(res, ctx), 0);
    buf_t b;
    buf_init(&b);
    json_t *doc;
    char module[128];
    if (compat_refused(res)) { /* what that server's scan refused before running */
        if (compat_refused_import(res, module, sizeof module))
            buf_printf(&b, "Import of dangerous module: %s", module);
        else
            compat_error_line(&b, res);
        doc = json_pack("{s:b,s:s,s:[s%],s:s}", "valid", 0, "phase", "security_check",
                        "violations", (const char *)b.data, b.len, "platform_warning", "");
    } else {
        if (res->status == ST_TIMEOUT) {
            buf_printf(&b, "Execution timed out after %g seconds",
                       json_number_value(json_object_get(ctx, "timeout")));
        } else if (res->status == ST_CPU_LIMIT) {
            buf_printf(&b, "CPU time limit of %g seconds exceeded",
                       json_number_value(json_object_get(ctx, "cpu_limit_sec")));
        } else {
            buf_append(&b, res->err, res->err_len);
            if (res->status != ST_OK) {
                compat_error_line(&b, res);
                buf_puts(&b, "\n");
            }
        }
        doc = json_pack("{s:o,s:o,s:i,s:s,s:s}", "stdout", json_bytes(res->out, res->out_len),
                        "stderr", json_bytes((const char *)b.data, b.len), "exit_code",
                        res->status == ST_TIMEOUT ? 124 : compat_exit_code(res), "phase",
                        "execution", "platform_warning", "");
    }
    buf_free(&b);
    return s_answer(doc, compat_farm_failed(res));
}

/* That server's scan, after its syntax check and before running anything: these imports and
 * calls it refused, in its words. */
static const char *const s_refused_modules[] = {
    "os",      "sys",      "subprocess", "shutil",   "socket", "requests",
    "urllib",  "pathlib",  "inspect",    "types",    "ctypes", "pickle",
    "marshal", "builtins", "platform",   "resource", "signal", NULL};
static const char *const s_refused_calls[] = {
    "open",   "__import__", "eval", "exec", "compile", "getattr",    "setattr",    "globals",
    "locals", "input",      "help", "dir",  "vars",    "breakpoint", "memoryview", NULL};
static const compat_rules_t s_rules = {s_refused_modules, s_refused_calls, 0};

static void s_violation(void *arg, compat_use_t use, const char *name)
{
    char text[200];
    if (use == COMPAT_IMPORT)
        snprintf(text, sizeof text, "Import of dangerous module: %.*s", (int)strcspn(name, "."),
                 name);
    else
        snprintf(text, sizeof text, "Call to dangerous function: %s", name);
    json_array_append_new(arg, json_string(text));
}

/* Code the scan refuses is only parsed: a syntax error still comes first, as there. */
static json_t *s_render_refused(const char *id, const result_t *res, const json_t *ctx)
{
    (void)id;
    json_t *v = compat_validation(res);
    if (!v) return s_checker_failed(res);
    json_t *doc = s_first_syntax_error(ctx, v);
    json_decref(v);
    if (doc) {
        json_object_set_new(doc, "phase", json_string("syntax_check"));
        return s_answer(doc, 0);
    }
    return s_answer(json_pack("{s:b,s:s,s:O,s:s}", "valid", 0, "phase", "security_check",
                              "violations", json_object_get(ctx, "violations"), "platform_warning",
                              ""),
                    0);
}

static void s_test_code(call_t *c, json_t *args, const tool_task_t *task)
{
    (void)task;
    json_t *source = json_object_get(args, "code"), *violations = json_array();
    if (compat_refusals(json_string_value(source), json_string_length(source), &s_rules,
                        s_violation, violations)) {
        json_t *ctx = json_pack("{s:O,s:o}", "code", source, "violations", violations);
        compat_job_t spec = {
            .tool = "test_code", .kind = JOB_VALIDATE, .render = s_render_refused, .ctx = ctx};
        compat_job_run(c, ctx, &spec);
        json_decref(ctx);
        return;
    }
    json_decref(violations);
    double timeout = compat_clamp(args, "timeout", 15.0, 0.001, 300);
    double cpu = compat_clamp(args, "cpu_limit_sec", 10.0, 0.001, 300);
    json_t *code = json_object_get(args, "code");
    json_t *job = json_pack("{s:O,s:f,s:I}", "code", code, "timeout", timeout, "memory_limit",
                            (json_int_t)compat_clamp(args, "memory_limit_mb", 100, 16, 4096));
    json_t *ctx = json_pack("{s:O,s:f,s:f}", "code", code, "timeout", timeout, "cpu_limit_sec", cpu);
    compat_job_t spec = {.tool = "test_code",
                         .narrow_imports = 1,
                         .kind = JOB_EXEC,
                         .record = 1,
                         .cpu_ms = (long)(cpu * 1000),
                         .render = s_render_test,
                         .ctx = ctx};
    compat_job_run(c, job, &spec);
    json_decref(job);
    json_decref(ctx);
}

/* ---- the rows */

/* clang-format off */
static const tool_arg_t s_syntax_args[] = {
    {"code", ARG_STRING, ARG_REQUIRED, "A string containing Python code to be checked for syntax",
     "\"maxLength\": 1048576"},
    {NULL},
};

static const tool_arg_t s_test_args[] = {
    {"code", ARG_STRING, ARG_REQUIRED, "The code to execute", "\"maxLength\": 1048576"},
    {"timeout", ARG_NUMBER, ARG_NULLABLE,
     "Overall real-time execution timeout in seconds. If the code does not finish within this "
     "time, it will be terminated.", "\"default\": 15.0"},
    {"cpu_limit_sec", ARG_NUMBER, ARG_NULLABLE,
     "CPU time limit for code execution (in seconds). This is not the same as timeout! It "
     "represents the actual CPU time consumed.", "\"default\": 10.0"},
    {"memory_limit_mb", ARG_INTEGER, ARG_NULLABLE,
     "Memory limit for the code (in MB), on top of the interpreter.", "\"default\": 100"},
    {NULL},
};

static const char s_syntax_output[] = "{\"type\": \"object\", \"required\": [\"valid\"],"
  "\"properties\": {\"valid\": {\"type\": \"boolean\"}, \"error\": {\"type\": \"string\"},"
    "\"line\": {\"anyOf\": [{\"type\": \"integer\"}, {\"type\": \"null\"}]}, \"offset\": {\"anyOf\": [{\"type\": \"integer\"}, {\"type\": \"null\"}]}, \"context\": {\"type\": \"string\"},"
    "\"phase\": {\"type\": \"string\"}}}";

static const char s_test_output[] = "{\"type\": \"object\", \"required\": [\"phase\"],"
  "\"properties\": {\"stdout\": {\"type\": \"string\"}, \"stderr\": {\"type\": \"string\"}, \"exit_code\": {\"type\": \"integer\"},"
    "\"phase\": {\"type\": \"string\", \"enum\": [\"syntax_check\", \"security_check\", \"execution\"]},"
    "\"platform_warning\": {\"type\": \"string\"}, \"valid\": {\"type\": \"boolean\"},"
    "\"violations\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}},"
    "\"error\": {\"type\": \"string\"}, \"line\": {\"anyOf\": [{\"type\": \"integer\"}, {\"type\": \"null\"}]}, \"offset\": {\"anyOf\": [{\"type\": \"integer\"}, {\"type\": \"null\"}]},"
    "\"context\": {\"type\": \"string\"}}}";

const tool_t compat_code_sandbox_tools[] = {
    {.name = "check_syntax",
     .description =
        "Safely checks Python code syntax without executing it. This check is the first "
        "validation step before executing code in the sandbox. It quickly identifies syntax "
        "errors such as missing colons, incorrect bracket placement, indentation issues, etc. "
        "Returns a JSON string: {\"valid\": true}, or {\"valid\": false, \"error\", \"line\", "
        "\"offset\" (1-indexed), \"context\"}.",
     .args = s_syntax_args, .output_schema = s_syntax_output,
     .annotations = "{\"readOnlyHint\": true, \"openWorldHint\": false}", .run = s_check_syntax},
    {.name = "test_code",
     .description =
        "Safely executes Python code with prior syntax validation. Code runs in an isolated "
        "sandbox with limits on time, memory, and CPU to prevent malicious behavior or excessive "
        "resource consumption. Returns a JSON string with results: stdout, stderr, exit_code, "
        "phase.",
     .args = s_test_args, .output_schema = s_test_output, .run = s_test_code},
    {NULL},
};
/* clang-format on */
