/* mcp-frontend/compat/compat_secure_sandbox.c — see compat_secure_sandbox.h. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "mcp-frontend/rpc/fe.h"
#include "mcp-frontend/rpc/jsonrpc.h"
#include "mcp-frontend/state/store.h"
#include "compat_job.h"
#include "compat_secure_sandbox.h"
#include "compat_snapshots.h"
#include "compat_validators.h"

/* ---- run_sandbox_code */

static json_t *s_render_run(const char *id, const result_t *res, const json_t *ctx)
{
    (void)id, (void)ctx;
    buf_t err;
    buf_init(&err);
    compat_python_stderr(&err, res);
    json_t *doc = json_pack("{s:b,s:o,s:o,s:i,s:f}", "success", res->status == ST_OK, "stdout",
                            json_bytes(res->out, res->out_len), "stderr",
                            json_bytes((const char *)err.data, err.len), "exit_code",
                            compat_exit_code(res), "execution_time", res->wall_ms / 1000.0);
    buf_reset(&err);
    if (res->status != ST_OK) compat_error_line(&err, res);
    json_object_set_new(doc, "error", res->status == ST_OK
                                          ? json_null()
                                          : json_bytes((const char *)err.data, err.len));
    buf_free(&err);
    json_t *files = json_array();
    for (size_t i = 0; i < res->n_files; i++)
        json_array_append_new(files, json_str_safe(res->files[i].path));
    json_object_set_new(doc, "files_written", files);
    return compat_json_result(doc, compat_farm_failed(res));
}

/* That server's AST safety checker refused these before running anything. */
const char *const compat_secure_refused_modules[] = {
    "os",     "sys",       "subprocess", "socket", "shutil",   "ctypes", "multiprocessing",
    "signal", "importlib", "builtins",   "pty",    "resource", NULL};
const char *const compat_secure_refused_calls[] = {"exec", "eval", "compile", "__import__", NULL};
static const compat_rules_t s_rules = {compat_secure_refused_modules, compat_secure_refused_calls,
                                       1};

static void s_safety_violation(void *arg, compat_use_t use, const char *name)
{
    buf_t *b = arg;
    buf_printf(b, "SafetyViolation: %s '%s' is not allowed\n",
               use == COMPAT_IMPORT ? "import of"
               : use == COMPAT_CALL ? "call to"
                                    : "attribute",
               name);
}

static void s_run_sandbox_code(call_t *c, json_t *args, const tool_task_t *task)
{
    (void)task;
    json_t *code = json_object_get(args, "code");
    buf_t why;
    buf_init(&why);
    if (compat_refusals(json_string_value(code), json_string_length(code), &s_rules,
                        s_safety_violation, &why)) {
        size_t first = strcspn((const char *)why.data, "\n");
        json_t *doc =
            json_pack("{s:b,s:s,s:s%,s:i,s:f,s:s%,s:[]}", "success", 0, "stdout", "", "stderr",
                      (const char *)why.data, why.len, "exit_code", 1, "execution_time", 0.0,
                      "error", (const char *)why.data, first, "files_written");
        buf_free(&why);
        call_reply(c, compat_json_result(doc, 0));
        return;
    }
    buf_free(&why);
    json_t *job =
        json_pack("{s:O,s:f}", "code", code, "timeout",
                  compat_clamp(args, "timeout_sec", SECURE_TIMEOUT_S, 0.1, SECURE_MAX_TIMEOUT_S));
    compat_job_t spec = {.tool = "run_sandbox_code", .kind = JOB_EXEC, .record = 1,
                         .render = s_render_run};
    compat_workspace_run(c, job, &spec);
    json_decref(job);
}

/* ---- get_sandbox_metrics: the tenant's usage hash of today (records.c writes it) */

typedef struct {
    call_t *call;   /* held */
    json_t *memory; /* the workspace's memory now, or null when there is none */
} usage_t;

static void s_on_usage(void *arg, redisReply *r)
{
    usage_t *u = arg;
    call_t *c = u->call;
    const tenant_t *t = c->tenant;
    json_t *by_status = json_object();
    long long n[3] = {0, 0, 0}; /* executions, cpu_ms, wall_ms */
    static const char *const totals[] = {"executions", "cpu_ms", "wall_ms"};
    for (size_t i = 0; r && r->type == REDIS_REPLY_ARRAY && i + 1 < r->elements; i += 2) {
        const redisReply *k = r->element[i], *v = r->element[i + 1];
        if (k->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING) continue;
        long long x = strtoll(v->str, NULL, 10);
        if (!strncmp(k->str, "status:", 7)) json_object_set_new(by_status, k->str + 7, json_integer(x));
        for (int j = 0; j < 3; j++)
            if (!strcmp(k->str, totals[j])) n[j] = x;
    }
    json_t *doc = json_pack(
        "{s:{s:I,s:I,s:{s:I,s:I,s:I,s:f}},s:{s:I,s:o},s:s}", "resource_usage", "cpu_ms_today",
        (json_int_t)n[1], "wall_ms_today", (json_int_t)n[2], "limits", "max_timeout_s",
        (json_int_t)t->max_timeout_s, "max_memory_mb", (json_int_t)t->max_memory_mb,
        "max_concurrency", (json_int_t)t->max_concurrency, "rate_per_s", t->rate,
        "tool_statistics", "executions_today", (json_int_t)n[0], "by_status", by_status,
        "period", "today (UTC), this tenant's executions through every endpoint");
    json_object_set_new(json_object_get(doc, "resource_usage"), "memory", u->memory);
    if (!r || r->type == REDIS_REPLY_ERROR)
        json_object_set_new(doc, "note", json_string("usage is unavailable: Redis did not answer"));
    call_reply(c, compat_json_result(doc, 0));
    call_release(c);
    free(u);
}

static void s_on_metrics_workspace(void *arg, call_t *c, int st, const json_t *ws)
{
    (void)arg, (void)st;
    usage_t *u = xcalloc(1, sizeof *u);
    u->call = c;
    u->memory =
        ws ? json_pack("{s:O,s:O}", "workspace_in_use_mb", json_object_get(ws, "memory_in_use_mb"),
                       "workspace_limit_mb", json_object_get(ws, "memory_limit_mb"))
           : json_null();
    time_t secs = (time_t)(clock_wall_ms() / 1000);
    struct tm tm;
    gmtime_r(&secs, &tm);
    call_hold(c);
    if (store_queryf(c->fe->store, s_on_usage, u, "HGETALL sp:t:%s:use:%04d%02d%02d",
                     c->tenant->name, tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday) < 0)
        s_on_usage(u, NULL);
}

/* The usage of today and, for memory, the workspace's as it stands (none made for it). */
static void s_sandbox_metrics(call_t *c, json_t *args, const tool_task_t *task)
{
    (void)args, (void)task;
    compat_workspace_peek(c, s_on_metrics_workspace, NULL);
}

/* ---- the rows */

/* clang-format off */
static const tool_arg_t s_run_args[] = {
    {"code", ARG_STRING, ARG_REQUIRED, "Python code to run", "\"maxLength\": 1048576"},
    {"timeout_sec", ARG_NUMBER, ARG_NULLABLE, "Timeout in seconds (default 30, at most 300)",
     "\"default\": 30, \"exclusiveMinimum\": 0, \"maximum\": 300"},
    {NULL},
};

static const char s_json_input[] = "{\"type\": \"object\", \"additionalProperties\": false,"
  "\"required\": [\"data\", \"schema_name_or_dict\"], \"properties\": {"
    "\"data\": {\"type\": \"object\", \"description\": \"The JSON payload to validate\"},"
    "\"schema_name_or_dict\": {\"description\": \"A predefined schema's name (config, user, dataset) or a JSON Schema (draft 7) object\","
      "\"anyOf\": [{\"type\": \"string\", \"enum\": [\"config\", \"user\", \"dataset\"]}, {\"type\": \"object\"}, {\"type\": \"boolean\", \"description\": \"draft 7's true (anything) or false (nothing)\"}]}"
  "}}";

static const tool_arg_t s_csv_args[] = {
    {"csv_content", ARG_STRING, ARG_REQUIRED, "The CSV text, its first row the header", "\"maxLength\": 1048576"},
    {"required_headers", ARG_ARRAY, ARG_NULLABLE, "Column names the header must contain",
     "\"items\": {\"type\": \"string\"}"},
    {"type_constraints", ARG_OBJECT, ARG_NULLABLE,
     "Column name to type: int, float, str, bool, date (YYYY-MM-DD) or datetime (ISO 8601)",
     "\"additionalProperties\": {\"type\": \"string\"}"},
    {NULL},
};

static const tool_arg_t s_description_args[] = {
    {"description", ARG_STRING, ARG_REQUIRED, "What the snapshot holds", NULL},
    {NULL},
};

static const tool_arg_t s_snapshot_id_args[] = {
    {"snapshot_id", ARG_STRING, ARG_REQUIRED, "The snapshot's id", NULL},
    {NULL},
};

static const char s_run_output[] = "{\"type\": \"object\", \"required\": [\"success\", \"stdout\", \"stderr\", \"exit_code\", \"execution_time\"],"
  "\"properties\": {\"success\": {\"type\": \"boolean\"}, \"stdout\": {\"type\": \"string\"}, \"stderr\": {\"type\": \"string\"},"
    "\"exit_code\": {\"type\": \"integer\"}, \"execution_time\": {\"type\": \"number\"}, \"error\": {\"anyOf\": [{\"type\": \"string\"}, {\"type\": \"null\"}]},"
    "\"files_written\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}}}}";

static const char s_json_output[] = "{\"type\": \"object\", \"required\": [\"valid\"],"
  "\"properties\": {\"valid\": {\"type\": \"boolean\"}, \"schema\": {\"type\": \"string\"}, \"error_count\": {\"type\": \"integer\"},"
    "\"errors\": {\"type\": \"array\", \"items\": {\"type\": \"object\", \"required\": [\"path\", \"keyword\", \"message\"],"
      "\"properties\": {\"path\": {\"type\": \"string\", \"description\": \"JSON Pointer into data\"}, \"keyword\": {\"type\": \"string\"}, \"message\": {\"type\": \"string\"}}}},"
    "\"note\": {\"type\": \"string\"}, \"error\": {\"type\": \"string\"}}}";

static const char s_csv_output[] = "{\"type\": \"object\", \"required\": [\"valid\"],"
  "\"properties\": {\"valid\": {\"type\": \"boolean\"}, \"errors\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}},"
    "\"error_count\": {\"type\": \"integer\"}, \"row_count\": {\"type\": \"integer\"}, \"column_count\": {\"type\": \"integer\"},"
    "\"headers\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}}, \"missing_headers\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}},"
    "\"error\": {\"type\": \"string\"}}}";

static const char s_metrics_output[] = "{\"type\": \"object\", \"required\": [\"resource_usage\", \"tool_statistics\"],"
  "\"properties\": {\"resource_usage\": {\"type\": \"object\"}, \"tool_statistics\": {\"type\": \"object\"}, \"period\": {\"type\": \"string\"}}}";

#define READ_ONLY "{\"readOnlyHint\": true, \"openWorldHint\": false}"

const tool_t compat_secure_sandbox_tools[] = {
    {.name = "run_sandbox_code",
     .description = "Validates and executes code in the isolated workspace: code that calls "
                    "exec or eval, reads double-underscore attributes or imports os, sys, "
                    "subprocess, socket and the like is refused before it runs. The workspace "
                    "persists between calls: read and write files there with relative paths "
                    "(files_written lists what this call wrote); variables persist too. It is "
                    "replaced by an empty one after an hour unused: save it with "
                    "create_state_snapshot.",
     .args = s_run_args, .output_schema = s_run_output, .run = s_run_sandbox_code},
    {.name = "validate_json_data",
     .description = "Validates JSON payloads against predefined (config, user, dataset) or custom "
                    "schemas (JSON Schema draft 7). Errors carry a JSON Pointer to the offending "
                    "value.",
     .input_schema = s_json_input, .output_schema = s_json_output, .annotations = READ_ONLY,
     .run = compat_validate_json_data},
    {.name = "validate_csv_data",
     .description = "Enforces column headers and datatype rules on CSV data.",
     .args = s_csv_args, .output_schema = s_csv_output, .annotations = READ_ONLY,
     .run = compat_validate_csv_data},
    {.name = "create_state_snapshot",
     .description = "Saves a snapshot of the workspace (files, hashes, metadata).",
     .args = s_description_args, .run = compat_create_snapshot},
    {.name = "restore_state_snapshot",
     .description = "Reverts the workspace filesystem to a saved snapshot: files it lacks are "
                    "deleted, the others rewritten with their modification times.",
     .args = s_snapshot_id_args, .run = compat_restore_snapshot},
    {.name = "list_state_snapshots",
     .description = "Lists all saved snapshots chronologically.",
     .annotations = READ_ONLY, .run = compat_list_snapshots},
    {.name = "delete_state_snapshot",
     .description = "Permanently deletes a saved snapshot file.",
     .args = s_snapshot_id_args, .run = compat_delete_snapshot},
    {.name = "get_sandbox_metrics",
     .description = "Returns resource usage (memory, CPU) and tool execution statistics: your "
                    "workspace's memory, your own executions today (CPU and wall time, by "
                    "status), and your limits.",
     .output_schema = s_metrics_output, .annotations = READ_ONLY, .run = s_sandbox_metrics},
    {NULL},
};
/* clang-format on */
