/* mcp-frontend/compat/compat_secure_resources.c — see compat_secure_resources.h. The resources
 * read what the tools write (the workspace's session, the state snapshots, the execution
 * records) through the same tools of /mcp (subcall.h), so they show exactly what the tools act
 * on and only the caller's own. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/profiles.h"
#include "mcp-frontend/cells/session_records.h"
#include "mcp-frontend/rpc/fe.h"
#include "mcp-frontend/rpc/jsonrpc.h"
#include "mcp-frontend/tools/list_executions.h"
#include "mcp-frontend/tools/snapshot_tools.h"
#include "compat_secure_resources.h"
#include "compat_secure_sandbox.h"
#include "compat_snapshots.h"
#include "compat_validators.h"
#include "subcall.h"

#define LOGS_MAX      100 /* the traces sandbox://logs shows: list_executions' most */
#define SNAPSHOTS_ALL 500 /* as list_state_snapshots on this endpoint */

/* resources/read's answer: one JSON text (doc stolen). */
static void s_reply_json(call_t *c, const char *uri, json_t *doc)
{
    char *text = json_text(doc, JSON_INDENT(2));
    json_decref(doc);
    call_reply(c, json_pack("{s:[{s:s,s:s,s:s}]}", "contents", "uri", uri, "mimeType",
                            "application/json", "text", text ? text : "{}"));
    free(text);
}

static int s_workspace_profile(const profile_t *p, void *tenant)
{
    return p->workspace && tenant_allows_profile(tenant, p->name);
}

/* ---- sandbox://status */

static void s_on_snapshots(void *arg, call_t *c, const json_t *result, const char *message)
{
    json_t *doc = arg;
    const char *why = NULL;
    json_t *sc = subcall_ok(result, message, &why);
    json_t *list = json_object_get(sc, "snapshots");
    json_object_set_new(doc, "snapshot_count",
                        json_is_array(list) ? json_integer((json_int_t)json_array_size(list))
                                            : json_null());
    if (!json_is_array(list))
        json_object_set_new(doc, "note", json_string("the snapshots could not be counted now"));
    s_reply_json(c, "sandbox://status", doc);
}

static void s_on_workspace(void *arg, call_t *c, int st, const json_t *ws)
{
    json_t *doc = arg;
    json_object_set_new(doc, "workspace",
                        ws ? json_deep_copy(ws)
                           : json_string(st < 0 ? "unknown: the session store did not answer"
                                                : "none yet: the next run_sandbox_code makes one"));
    json_t *args = json_pack("{s:i}", "limit", SNAPSHOTS_ALL);
    subcall_run(c, "list_state_snapshots", list_state_snapshots_run, args, s_on_snapshots, doc);
    json_decref(args);
}

static void s_read_status(call_t *c)
{
    json_t *mine = json_array();
    for (size_t i = 0; i < n_profiles; i++)
        if (s_workspace_profile(&profiles[i], c->tenant))
            json_array_append_new(mine, json_string(profiles[i].name));
    json_t *names = json_array();
    const char *name;
    json_t *schema;
    json_object_foreach(compat_schemas(), name, schema)
        json_array_append_new(names, json_string(name));
    json_t *doc = json_pack(
        "{s:s,s:s,s:{s:i,s:i,s:i,s:o,s:b,s:s},s:o}", "status", "running", "server",
        endpoint_title(c->endpoint), "configuration", "default_timeout_sec", SECURE_TIMEOUT_S,
        "max_timeout_sec", SECURE_MAX_TIMEOUT_S, "workspace_idle_timeout_sec",
        COMPAT_WORKSPACE_IDLE_S, "workspace_profiles", mine, "network", 0, "isolation",
        "each run is a cell of the workspace's sandboxed interpreter (namespaces, Landlock, "
        "seccomp, rlimits); files only in the workspace, no network, no processes",
        "schemas", names);
    compat_workspace_peek(c, s_on_workspace, doc);
}

/* ---- sandbox://logs */

static const char *s_level(const char *status)
{
    if (!strcmp(status, "ok")) return "INFO";
    if (!strcmp(status, "timeout") || !strcmp(status, "cpu_limit") ||
        !strcmp(status, "memory_limit") || !strcmp(status, "output_limit"))
        return "WARNING";
    return "ERROR";
}

/* One trace from one of list_executions' rows. */
static json_t *s_trace(const json_t *row)
{
    const char *status = json_string_value(json_object_get(row, "status"));
    const char *tool = json_string_value(json_object_get(row, "tool"));
    const char *error = json_string_value(json_object_get(row, "error_type"));
    json_t *wall = json_object_get(row, "wall_ms");
    json_int_t created = json_integer_value(json_object_get(row, "created_ms"));
    char when[32];
    buf_t msg;
    buf_init(&msg);
    buf_printf(&msg, "%s: %s", tool && *tool ? tool : "execution", status ? status : "unknown");
    if (error) buf_printf(&msg, " (%s)", error);
    if (json_is_number(wall)) buf_printf(&msg, " in %.1f ms", json_number_value(wall));
    json_t *t = json_pack(
        "{s:s,s:s,s:s%,s:O,s:O,s:s}", "timestamp", session_record_iso((uint64_t)created, when),
        "level", s_level(status ? status : ""), "message", (const char *)msg.data, msg.len,
        "execution_id", json_object_get(row, "execution_id"), "duration_ms",
        json_is_number(wall) ? wall : json_null(), "status", status ? status : "unknown");
    buf_free(&msg);
    return t;
}

static void s_on_executions(void *arg, call_t *c, const json_t *result, const char *message)
{
    (void)arg;
    const char *why = NULL;
    json_t *sc = subcall_ok(result, message, &why);
    const json_t *rows = json_object_get(sc, "executions");
    if (!json_is_array(rows)) {
        call_error(c, RPC_UNAVAILABLE, why ? why : "the execution records cannot be read now",
                   NULL);
        return;
    }
    json_t *logs = json_array();
    for (size_t i = json_array_size(rows); i-- > 0;) /* oldest first, as a log reads */
        json_array_append_new(logs, s_trace(json_array_get(rows, i)));
    s_reply_json(c, "sandbox://logs",
                 json_pack("{s:I,s:s,s:o}", "count", (json_int_t)json_array_size(logs), "scope",
                           "your last executions through every endpoint, oldest first", "logs",
                           logs));
}

static void s_read_logs(call_t *c)
{
    json_t *args = json_pack("{s:i}", "limit", LOGS_MAX);
    subcall_run(c, "list_executions", list_executions_run, args, s_on_executions, NULL);
    json_decref(args);
}

/* ---- sandbox://schemas */

static void s_read_schemas(call_t *c)
{
    json_t *schemas = compat_schemas();
    s_reply_json(
        c, "sandbox://schemas",
        json_pack("{s:I,s:O}", "count", (json_int_t)json_object_size(schemas), "schemas", schemas));
}

const endpoint_resource_t compat_secure_sandbox_resources[] = {
    {"sandbox://status", "status", "Sandbox status",
     "The active configuration, your workspace and how many snapshots you keep", "application/json",
     s_read_status},
    {"sandbox://logs", "logs", "Execution log",
     "Your last 100 executions as traces: timestamp, level, message and duration",
     "application/json", s_read_logs},
    {"sandbox://schemas", "schemas", "Validation schemas",
     "The predefined schemas validate_json_data knows by name: config, user and dataset",
     "application/json", s_read_schemas},
    {NULL},
};

/* ---- the prompts */

/* The first of names that args has as a non-empty string, else NULL. */
static const char *s_arg(json_t *args, const char *const *names)
{
    for (; *names; names++) {
        const char *v = json_string_value(json_object_get(args, *names));
        if (v && *v) return v;
    }
    return NULL;
}

static void s_prompt_reply(call_t *c, const char *description, buf_t *text)
{
    call_reply(c, json_pack("{s:s,s:[{s:s,s:{s:s,s:o}}]}", "description", description, "messages",
                            "role", "user", "content", "type", "text", "text",
                            json_bytes((const char *)text->data, text->len)));
}

static void s_generate_secure_script(call_t *c, json_t *args)
{
    static const char *const task_names[] = {"task_description", "task", "description",
                                             "requirements", NULL};
    const char *task = s_arg(args, task_names);
    buf_t b;
    buf_init(&b);
    buf_printf(&b,
               "Write a Python script for the task below. It will run with this server's "
               "run_sandbox_code tool, in a sandboxed workspace.\n\nTask: %s\n\n"
               "The script must keep to these rules, or it is stopped:\n"
               "- Files: read and write only inside the workspace, with relative paths "
               "(notes.txt, data/out.csv). Absolute paths and '..' are refused.\n"
               "- No network, no subprocesses, no other programs.\n"
               "- Time: it must finish within timeout_sec (default %d s, at most %d s).\n"
               "- Modules: the standard library, in these profiles:",
               task ? task : "(no task was given: ask what the script should do)", SECURE_TIMEOUT_S,
               SECURE_MAX_TIMEOUT_S);
    for (size_t i = 0; i < n_profiles; i++)
        if (s_workspace_profile(&profiles[i], c->tenant))
            buf_printf(&b, "\n  - %s: %s", profiles[i].name, profiles[i].summary);
    buf_puts(&b, "\n- Refused before it runs: imports of");
    for (const char *const *m = compat_secure_refused_modules; *m; m++)
        buf_printf(&b, "%s %s", m == compat_secure_refused_modules ? "" : ",", *m);
    buf_puts(&b, "; calls of");
    for (const char *const *f = compat_secure_refused_calls; *f; f++)
        buf_printf(&b, "%s %s()", f == compat_secure_refused_calls ? "" : ",", *f);
    buf_puts(&b, "; any double-underscore attribute (x.__class__). Use open() and pathlib for "
                 "files.");
    buf_puts(&b,
             "\n- Output: print what the caller should see; the files a run writes are listed "
             "in files_written.\n"
             "The workspace's files and variables persist between runs. Save a state worth "
             "keeping with create_state_snapshot, and go back to it with "
             "restore_state_snapshot.\n\nAnswer with the script only, in one Python code block.");
    s_prompt_reply(c, "A script that keeps to the sandbox's rules", &b);
    buf_free(&b);
}

static void s_diagnose_validation_error(call_t *c, json_t *args)
{
    static const char *const data_names[] = {"data", "json_data", "payload", "invalid_data", NULL};
    static const char *const schema_names[] = {"schema_name", "schema_name_or_dict", "schema",
                                               NULL};
    static const char *const error_names[] = {"error_message", "errors", "validation_errors",
                                              "error", NULL};
    const char *data = s_arg(args, data_names), *schema = s_arg(args, schema_names);
    const char *errors = s_arg(args, error_names);
    json_t *predefined = schema ? json_object_get(compat_schemas(), schema) : NULL;
    buf_t b;
    buf_init(&b);
    buf_printf(&b,
               "A JSON payload failed validation with this server's validate_json_data tool "
               "(JSON Schema draft 7).\n\nSchema: %s\n",
               schema ? schema : "(not given: ask which schema, or read sandbox://schemas)");
    if (predefined) {
        char *text = json_text(predefined, JSON_INDENT(2));
        buf_printf(&b, "The predefined schema %s is:\n%s\n", schema, text ? text : "{}");
        free(text);
    }
    buf_printf(&b, "\nData:\n%s\n\nValidation errors:\n%s\n\n",
               data ? data : "(not given: ask for the payload)",
               errors ? errors : "(not given: run validate_json_data on the data to get them)");
    buf_puts(&b, "Explain each error in one sentence: which value (by its JSON Pointer path) "
                 "breaks which rule of the schema. Then give the corrected JSON payload, "
                 "changing as little as possible, and check it with validate_json_data.");
    s_prompt_reply(c, "Why the data fails its schema, and the data corrected", &b);
    buf_free(&b);
}

static const endpoint_prompt_arg_t s_script_args[] = {
    {"task_description", "What the script should do", 0},
    {NULL},
};

static const endpoint_prompt_arg_t s_diagnose_args[] = {
    {"data", "The JSON payload that failed validation, as JSON text", 0},
    {"schema_name", "A predefined schema's name (config, user, dataset) or the JSON Schema used",
     0},
    {"error_message", "The errors validate_json_data reported", 0},
    {NULL},
};

const endpoint_prompt_t compat_secure_sandbox_prompts[] = {
    {"generate_secure_script", "Generate a secure script",
     "Asks for a Python script that keeps to the sandbox's rules: files only in the workspace "
     "by relative path, no network or processes, within the time limit",
     s_script_args, s_generate_secure_script},
    {"diagnose_validation_error", "Diagnose a validation error",
     "Asks for an explanation of JSON Schema validation errors and a corrected payload",
     s_diagnose_args, s_diagnose_validation_error},
    {NULL},
};
