/* mcp-frontend/compat/compat_py_sandbox.c — see compat_py_sandbox.h. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "common/utf8.h"
#include "mcp-frontend/rpc/jsonrpc.h"
#include "compat_job.h"
#include "compat_py_sandbox.h"

/* What the sandbox did to the code, as py-sandbox's return codes say it: -1 for what that
 * server refused (it refused before running; here the sandbox refuses when it is attempted)
 * and for what a limit stopped. */
static int s_return_code(const result_t *res)
{
    if (res->status == ST_OK) return 0;
    if (res->status != ST_ERROR || compat_refused(res)) return -1;
    return 1;
}

/* The error line, in that server's words for a refused import. */
static json_t *s_error(const result_t *res)
{
    char module[128];
    buf_t b;
    buf_init(&b);
    if (compat_refused_import(res, module, sizeof module))
        buf_printf(&b, "Import of module '%s' is not allowed in the sandbox", module);
    else
        compat_error_line(&b, res);
    json_t *e = json_bytes((const char *)b.data, b.len);
    buf_free(&b);
    return e;
}

/* A stream cut at limit bytes (at a character boundary); sets *cut when it was. */
static json_t *s_capped(const char *data, size_t len, size_t limit, int *cut)
{
    size_t n = utf8_prefix(data, len, limit);
    if (n < len) *cut = 1;
    return json_bytes(data, n);
}

static json_t *s_render(const char *id, const result_t *res, const json_t *ctx)
{
    (void)id;
    size_t limit = (size_t)json_integer_value(json_object_get(ctx, "output_limit"));
    int cut = res->out_truncated || res->err_truncated;
    json_t *doc = json_object();
    json_object_set_new(doc, "stdout", s_capped(res->out, res->out_len, limit, &cut));
    json_object_set_new(doc, "stderr", s_capped(res->err, res->err_len, limit, &cut));
    json_object_set_new(doc, "return_code", json_integer(s_return_code(res)));
    if (res->status == ST_OK) {
        json_object_set_new(doc, "error", json_null());
    } else {
        json_object_set_new(doc, "error", s_error(res));
        if (res->error.traceback)
            json_object_set_new(doc, "traceback", json_str_safe(res->error.traceback));
    }
    json_object_set_new(doc, "variables", compat_variables(res));
    json_object_set_new(doc, "timed_out", json_boolean(res->status == ST_TIMEOUT));
    json_object_set_new(doc, "truncated", json_boolean(cut));
    return compat_json_result(doc, compat_farm_failed(res));
}

/* That server's AST validator refused these before running anything (its imports it refused
 * too; the sandbox refuses those here, in the same words: s_error). */
static const char *const s_refused_calls[] = {
    "exec",    "eval",    "compile", "open", "__import__", "getattr",    "setattr",
    "delattr", "globals", "locals",  "vars", "input",      "breakpoint", NULL};
static const compat_rules_t s_rules = {NULL, s_refused_calls, 1};

static void s_first_refusal(void *arg, compat_use_t use, const char *name)
{
    buf_t *b = arg;
    if (b->len) return;
    if (use == COMPAT_CALL)
        buf_printf(b, "Use of builtin '%s' is not allowed in the sandbox", name);
    else
        buf_printf(b, "Access to attribute '%s' is not allowed in the sandbox", name);
}

static void s_run_python(call_t *c, json_t *args, const tool_task_t *task)
{
    (void)task;
    json_t *code = json_object_get(args, "code");
    buf_t why;
    buf_init(&why);
    if (compat_refusals(json_string_value(code), json_string_length(code), &s_rules,
                        s_first_refusal, &why)) {
        json_t *doc = json_pack("{s:s,s:s,s:i,s:s%,s:{},s:b,s:b}", "stdout", "", "stderr", "",
                                "return_code", -1, "error", (const char *)why.data, why.len,
                                "variables", "timed_out", 0, "truncated", 0);
        buf_free(&why);
        call_reply(c, compat_json_result(doc, 0));
        return;
    }
    buf_free(&why);
    json_t *job = json_pack("{s:O,s:f,s:I}", "code", json_object_get(args, "code"), "timeout",
                            compat_clamp(args, "timeout", 30, 1, 60), "memory_limit",
                            (json_int_t)compat_clamp(args, "memory", 256, 16, 1024));
    json_t *names = json_object_get(args, "inspect_variables");
    if (names) json_object_set(job, "inspect_variables", names);
    json_t *ctx = json_pack("{s:I}", "output_limit",
                            (json_int_t)compat_clamp(args, "output_limit", 65536, 1, 262144));
    compat_job_t spec = {.tool = "run_python",
                         .narrow_imports = 1,
                         .kind = JOB_EXEC,
                         .record = 1,
                         .render = s_render,
                         .ctx = ctx};
    compat_job_run(c, job, &spec);
    json_decref(ctx);
    json_decref(job);
}

/* clang-format off */
static const tool_arg_t s_args[] = {
    {"code", ARG_STRING, ARG_REQUIRED, "Python code to execute", "\"maxLength\": 1048576"},
    {"timeout", ARG_INTEGER, ARG_NULLABLE, "Timeout in seconds (default 30, max 60)",
     "\"default\": 30, \"minimum\": 1, \"maximum\": 60"},
    {"memory", ARG_INTEGER, ARG_NULLABLE, "Memory limit in MB (default 256, max 1024)",
     "\"default\": 256, \"minimum\": 16, \"maximum\": 1024"},
    {"output_limit", ARG_INTEGER, ARG_NULLABLE, "Output limit in bytes (default 65536, max 262144)",
     "\"default\": 65536, \"minimum\": 1, \"maximum\": 262144"},
    {"inspect_variables", ARG_ARRAY, ARG_NULLABLE, "Variable names to inspect after execution",
     "\"items\": {\"type\": \"string\"}, \"maxItems\": 64"},
    {NULL},
};

static const char s_output[] = "{\"type\": \"object\", \"required\": [\"stdout\", \"stderr\", \"return_code\", \"error\", \"variables\"],"
  "\"properties\": {"
    "\"stdout\": {\"type\": \"string\"}, \"stderr\": {\"type\": \"string\"},"
    "\"return_code\": {\"type\": \"integer\", \"description\": \"0 ran to its end, 1 raised, -1 refused or stopped by the sandbox\"},"
    "\"error\": {\"anyOf\": [{\"type\": \"string\"}, {\"type\": \"null\"}]}, \"traceback\": {\"type\": \"string\"},"
    "\"variables\": {\"type\": \"object\"}, \"timed_out\": {\"type\": \"boolean\"}, \"truncated\": {\"type\": \"boolean\"}"
  "}}";

const tool_t compat_py_sandbox_tools[] = {
    {.name = "run_python",
     .description = "Execute Python code in a sandbox with strict resource limits (timeout, "
                    "memory, output size) and return stdout, stderr, return_code, error and the "
                    "values of the variables named in inspect_variables. Safe modules only "
                    "(math, json, re, collections, datetime, ...); no files, network or processes. "
                    "Code that calls exec, eval, compile, open, getattr and the like or reads "
                    "double-underscore attributes is refused before it runs (return_code -1).",
     .args = s_args, .output_schema = s_output, .run = s_run_python},
    {NULL},
};
/* clang-format on */
