/* mcp-frontend/compat/compat_validators.c — see compat_validators.h. */
#define _GNU_SOURCE
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp-frontend/rpc/jsonrpc.h"
#include "compat_job.h"
#include "compat_validators.h"
#include "csv_check_py.h"    /* generated from helpers/csv_check.py */
#include "schema_check_py.h" /* generated from helpers/schema_check.py */
#include "schemas_json.h"    /* generated from helpers/schemas.json */

#define VALIDATOR_TIMEOUT_S 10

/* The validator's one JSON line on stdout, as the tool's answer. */
static json_t *s_render(const char *id, const result_t *res, const json_t *ctx)
{
    (void)id, (void)ctx;
    json_t *doc = res->status == ST_OK && res->out_len
                      ? json_loadb(res->out, res->out_len, JSON_REJECT_DUPLICATES, NULL)
                      : NULL;
    if (json_is_object(doc) && !json_object_get(doc, "error")) return compat_json_result(doc, 0);
    buf_t why;
    buf_init(&why);
    if (json_is_string(json_object_get(doc, "error"))) {
        buf_puts(&why, json_string_value(json_object_get(doc, "error")));
    } else if (res->status == ST_TIMEOUT || res->status == ST_CPU_LIMIT) {
        buf_printf(&why, "validation took longer than %d s (a pattern that backtracks, or "
                         "very large input?)", VALIDATOR_TIMEOUT_S);
    } else {
        buf_puts(&why, "the validator could not run: ");
        compat_error_line(&why, res);
    }
    json_decref(doc);
    doc = json_pack("{s:b,s:o}", "valid", 0, "error", json_bytes((const char *)why.data, why.len));
    buf_free(&why);
    return compat_json_result(doc, 1);
}

json_t *compat_schemas(void)
{
    static json_t *schemas; /* parsed once: the text is compiled in and never changes */
    if (!schemas) {
        json_error_t e;
        schemas = json_loads(schemas_json, JSON_REJECT_DUPLICATES, &e);
        assert(json_is_object(schemas) && "helpers/schemas.json is a JSON object");
    }
    return schemas;
}

/* Runs a validator on payload (stolen). */
static void s_run(call_t *c, const char *tool, const char *program, json_t *payload)
{
    char *input = json_dumps(payload, JSON_COMPACT | JSON_ENCODE_ANY);
    json_decref(payload);
    if (!input || strlen(input) > JOB_MAX_STDIN) {
        tool_bad(c, "%s: the data is larger than %u bytes as JSON", tool, JOB_MAX_STDIN);
        free(input);
        return;
    }
    json_t *job = json_pack("{s:s,s:s,s:i}", "code", program, "stdin", input, "timeout",
                            VALIDATOR_TIMEOUT_S);
    free(input);
    compat_job_t spec = {.tool = tool, .kind = JOB_EXEC, .render = s_render};
    compat_job_run(c, job, &spec);
    json_decref(job);
}

void compat_validate_json_data(call_t *c, json_t *args, const tool_task_t *task)
{
    (void)task;
    /* the row publishes its schema as is (schema_name_or_dict has no one type), so the
     * arguments are checked here */
    const char *key;
    json_t *v;
    json_object_foreach(args, key, v) if (strcmp(key, "data") && strcmp(key, "schema_name_or_dict"))
    {
        tool_bad(c, "unknown argument '%.64s'", key);
        return;
    }
    json_t *data = json_object_get(args, "data");
    json_t *schema = json_object_get(args, "schema_name_or_dict");
    if (!json_is_object(data)) {
        tool_bad(c, data ? "data must be an object" : "missing required argument 'data'");
        return;
    }
    if (!json_is_string(schema) && !json_is_object(schema) && !json_is_boolean(schema)) {
        tool_bad(c, schema ? "schema_name_or_dict must be a schema name (config, user, dataset) "
                             "or a JSON Schema object"
                           : "missing required argument 'schema_name_or_dict'");
        return;
    }
    s_run(
        c, "validate_json_data", schema_check_py,
        json_pack("{s:O,s:O,s:O}", "data", data, "schema", schema, "predefined", compat_schemas()));
}

void compat_validate_csv_data(call_t *c, json_t *args, const tool_task_t *task)
{
    (void)task;
    json_t *payload = json_pack("{s:O}", "csv_content", json_object_get(args, "csv_content"));
    json_t *headers = json_object_get(args, "required_headers");
    size_t i;
    json_t *h;
    json_array_foreach(headers, i, h) if (!json_is_string(h))
    {
        json_decref(payload);
        tool_bad(c, "required_headers[%zu] must be a string", i);
        return;
    }
    if (headers) json_object_set(payload, "required_headers", headers);
    json_t *types = json_object_get(args, "type_constraints");
    if (types) json_object_set(payload, "type_constraints", types);
    s_run(c, "validate_csv_data", csv_check_py, payload);
}
