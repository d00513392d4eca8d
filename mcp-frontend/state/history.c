/* mcp-frontend/state/history.c — see history.h. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base64.h"
#include "common/buf.h"
#include "common/ids.h"
#include "common/log.h"
#include "proto/result.h"
#include "proto/status.h"
#include "mcp-frontend/render/outcome.h"
#include "mcp-frontend/rpc/jsonrpc.h"
#include "history.h"
#include "store.h"

typedef struct {
    char tenant[65];
    char id[ID_STR_LEN + 1];
    record_fn *fn;
    void *arg;
} fetch_t;

json_t *field_int(const json_t *fields, const char *name)
{
    const char *s = json_string_value(json_object_get(fields, name));
    if (!s || !*s) return json_null();
    char *end;
    long long v = strtoll(s, &end, 10);
    return end != s && (*end == '\0' || *end == '.') ? json_integer(v) : json_null();
}

static const char *s_str(const json_t *o, const char *name)
{
    const char *v = json_string_value(json_object_get(o, name));
    return v && *v ? v : NULL;
}

static double s_real(const json_t *o, const char *name)
{
    const char *v = s_str(o, name);
    return v ? strtod(v, NULL) : 0.0;
}

/* A final record whose Result was not kept: its flat fields say all of it (records.c
 * s_flat_is_whole), the trailing expression's output (in *repr) included. The Result borrows
 * the fields' strings and *repr: render it, never clear it. 0, or -1 when the record is not
 * final. */
static int s_result_from_fields(const json_t *o, result_t *res, result_output_t *repr)
{
    const char *st = s_str(o, "status");
    result_init(res);
    if (!st || strcmp(st, "queued") == 0 || status_parse(st, &res->status) < 0) return -1;
    const char *out = s_str(o, "stdout"), *err = s_str(o, "stderr");
    res->out = (char *)(out ? out : "");
    res->out_len = strlen(res->out);
    res->err = (char *)(err ? err : "");
    res->err_len = strlen(res->err);
    res->out_truncated = s_str(o, "stdout_truncated") != NULL;
    res->err_truncated = s_str(o, "stderr_truncated") != NULL;
    res->result = (char *)s_str(o, "result_repr");
    if (res->result && s_str(o, "result_out")) {
        repr->kind = "result";
        repr->index = 0;
        repr->mime = "text/plain";
        repr->data = res->result;
        repr->len = strlen(res->result);
        res->outputs = repr;
        res->n_outputs = 1;
    }
    res->error.type = (char *)s_str(o, "error_type");
    res->error.message = (char *)s_str(o, "error_message");
    res->error.present = res->error.type || res->error.message;
    res->error.line = (long)s_real(o, "error_line");
    res->queue_ms = s_real(o, "queue_ms");
    res->wall_ms = s_real(o, "wall_ms");
    res->cpu_ms = s_real(o, "cpu_ms");
    res->max_rss_kb = (long)s_real(o, "max_rss_kb");
    res->exit.reason = (char *)s_str(o, "exit_reason");
    res->exit.signal = (int)s_real(o, "exit_signal");
    res->exit.syscall = (char *)s_str(o, "exit_syscall");
    res->executor = (char *)s_str(o, "executor");
    res->attempt = (uint32_t)s_real(o, "attempt");
    return 0;
}

/* The CallToolResult a final record renders to, as JSON text: what the call returned, rendered
 * again by the same code, from the kept Result (v: base64 of its msgpack, records.h) or, when
 * none was kept, from the flat fields. A record cut to fit says so in
 * structuredContent.record_truncated and in its text. NULL when there is nothing to render
 * (not final yet) or it does not decode. */
static char *s_render(const char *id, const json_t *o, const redisReply *v)
{
    result_t res;
    result_output_t repr;
    char err[128] = "not base64";
    buf_t raw;
    buf_init(&raw);
    result_init(&res);
    int owned = v != NULL;
    if (!v) {
        if (s_result_from_fields(o, &res, &repr) < 0) return NULL;
    } else if (base64_decode(&raw, v->str, v->len) < 0 ||
               result_decode(raw.data, raw.len, &res, err, sizeof err) < 0) {
        log_warn("event=bad_record_result id=%s error=\"%s\"", id, err);
        result_clear(&res);
        buf_free(&raw);
        return NULL;
    }
    buf_free(&raw);
    const char *tool = json_string_value(json_object_get(o, "tool"));
    json_t *cr = tool && strcmp(tool, "validate_code") == 0 ? outcome_validate(id, &res)
                                                            : outcome_execute(id, &res);
    if (owned) result_clear(&res);
    if (json_object_get(o, "result_cut")) {
        json_object_set_new(json_object_get(cr, "structuredContent"), "record_truncated",
                            json_true());
        json_object_set_new(cr, "content",
                            json_pack("[{s:s,s:s}]", "type", "text", "text",
                                      "(the stored record was cut to fit; this is its head)"));
    }
    char *text = json_text(cr, JSON_COMPACT);
    json_decref(cr);
    return text;
}

/* The hash as a JSON object of strings, with `call_result`, the CallToolResult's JSON text that
 * records written before these (and tasks.c) know, rendered again from what was kept. */
static json_t *s_hash_to_json(const char *id, const redisReply *r)
{
    json_t *o = json_object();
    const redisReply *result = NULL;
    for (size_t i = 0; i + 1 < r->elements; i += 2) {
        const redisReply *k = r->element[i], *v = r->element[i + 1];
        if (k->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING) continue;
        if (strcmp(k->str, "result") == 0)
            result = v;
        else
            json_object_set_new(o, k->str, json_bytes(v->str, v->len));
    }
    char *text = json_object_get(o, "call_result") ? NULL : s_render(id, o, result);
    if (text) json_object_set_new(o, "call_result", json_string(text));
    free(text);
    return o;
}

static void s_on_record(void *arg, redisReply *reply)
{
    fetch_t *f = arg;
    if (!reply || reply->type != REDIS_REPLY_ARRAY) {
        f->fn(f->arg, FETCH_UNAVAILABLE, NULL);
    } else {
        json_t *fields = s_hash_to_json(f->id, reply);
        const char *owner = json_string_value(json_object_get(fields, "tenant"));
        if (!owner || strcmp(owner, f->tenant) != 0) {
            json_decref(fields);
            f->fn(f->arg, FETCH_NOT_FOUND, NULL);
        } else {
            f->fn(f->arg, FETCH_OK, fields);
            json_decref(fields);
        }
    }
    free(f);
}

void record_fetch(store_t *store, const char *id, const tenant_t *tenant, record_fn *fn, void *arg)
{
    uint8_t raw[ID_BYTES];
    if (!id || id_parse(id, raw) < 0) {
        fn(arg, FETCH_NOT_FOUND, NULL);
        return;
    }
    fetch_t *f = xcalloc(1, sizeof *f);
    snprintf(f->tenant, sizeof f->tenant, "%s", tenant->name);
    f->fn = fn;
    f->arg = arg;
    id_format(raw, f->id); /* lower case, as written */
    if (store_queryf(store, s_on_record, f, "HGETALL sp:exec:%s", f->id) < 0) {
        free(f);
        fn(arg, FETCH_UNAVAILABLE, NULL);
    }
}

json_t *record_view(const char *id, const json_t *fields)
{
    json_t *v = json_object();
    const char *s;
    json_object_set_new(v, "execution_id", json_string(id));
    const char *strs[] = {"status",        "profile",     "profile_reason", "tool",
                          "code",          "code_sha256", "exit_reason",    "error_type",
                          "error_message", "executor",    "task_status",    NULL};
    for (int i = 0; strs[i]; i++)
        if ((s = json_string_value(json_object_get(fields, strs[i]))) && *s)
            json_object_set_new(v, strs[i], json_string(s));
    const char *ints[] = {"created_ms", "started_ms", "finished_ms", "timeout_ms",
                          "memory_mb",  "code_bytes", "max_rss_kb",  NULL};
    for (int i = 0; ints[i]; i++) json_object_set_new(v, ints[i], field_int(fields, ints[i]));
    const char *nums[] = {"queue_ms", "wall_ms", "cpu_ms", NULL};
    for (int i = 0; nums[i]; i++)
        if ((s = json_string_value(json_object_get(fields, nums[i]))) && *s)
            json_object_set_new(v, nums[i], json_real(strtod(s, NULL)));
    if (!json_object_get(v, "code")) json_object_set_new(v, "code", json_null());
    if (!json_object_get(v, "code_sha256")) json_object_set_new(v, "code_sha256", json_null());
    if (!json_object_get(v, "status")) json_object_set_new(v, "status", json_string("unknown"));
    if (!json_object_get(v, "profile")) json_object_set_new(v, "profile", json_string(""));
    if (json_is_null(json_object_get(v, "created_ms")))
        json_object_set_new(v, "created_ms", json_integer(0));
    if ((s = json_string_value(json_object_get(fields, "session_id"))) && *s) { /* a session's cell */
        json_object_set_new(v, "session_id", json_string(s));
        json_object_set_new(v, "cell", field_int(fields, "cell"));
    }
    /* the network's totals, when the job used it (its destinations are in result.egress) */
    const char *egress[] = {"egress_bytes_out", "egress_bytes_in", "egress_connections",
                            "egress_refused", NULL};
    for (int i = 0; egress[i]; i++)
        if (json_object_get(fields, egress[i]))
            json_object_set_new(v, egress[i], field_int(fields, egress[i]));
    json_t *result = NULL;
    if ((s = json_string_value(json_object_get(fields, "call_result")))) {
        json_t *cr = json_loads(s, 0, NULL);
        result = json_incref(json_object_get(cr, "structuredContent"));
        json_decref(cr);
    }
    json_object_set_new(v, "result", result ? result : json_null());
    return v;
}
