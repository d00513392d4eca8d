/* mcp-frontend/tools/session_resource.c — see session_resource.h. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/ids.h"
#include "mcp-frontend/cells/session_job.h"
#include "mcp-frontend/rpc/fe.h"
#include "mcp-frontend/rpc/jsonrpc.h"
#include "session_ops.h"
#include "session_resource.h"

json_t *session_resource_template(void)
{
    return json_pack("{s:s,s:s,s:s,s:s,s:s}", "uriTemplate", SESSION_URI_BASE "{id}", "name",
                     "session", "title", "One of your sessions", "description",
                     "A session's record and, while it lives, its variables (name, type, short "
                     "repr) and workspace files",
                     "mimeType", "application/json");
}

static void s_reply(call_t *c, const char *uri, json_t *body)
{
    char *text = json_text(body, JSON_COMPACT); /* exact reals, as every answer (jsonrpc.h) */
    json_decref(body);
    call_reply(c, json_pack("{s:[{s:s,s:s,s:s}]}", "contents", "uri", uri, "mimeType",
                            "application/json", "text", text ? text : "{}"));
    free(text);
}

static void s_record(json_t *body, const session_record_t *s)
{
    json_t *rec = session_record_json(s);
    json_object_set_new(rec, "state", json_string(s->ended ? "ended" : "active"));
    json_object_set_new(rec, "end_reason", s->ended ? json_string(s->end_reason) : json_null());
    json_object_set_new(body, "session", rec);
}

typedef struct {
    char uri[128];
    session_record_t s;
} info_t;

static void s_on_info(void *arg, call_t *c, result_t *res)
{
    op_t *op = arg;
    info_t *x = op->extra;
    json_t *body = json_object();
    s_record(body, &x->s);
    json_t *sum = res->status == ST_OK && res->session.summary
                      ? json_loads(res->session.summary, 0, NULL)
                      : NULL;
    json_t *vars = json_object_get(json_object_get(sum, "session"), "variables");
    json_t *files = json_object_get(sum, "files");
    json_object_set(body, "variables", json_is_array(vars) ? vars : json_array());
    json_object_set(body, "files", json_is_array(files) ? files : json_array());
    if (res->status != ST_OK)
        json_object_set_new(body, "unavailable",
                            json_string(res->error.message ? res->error.message : "no answer"));
    json_decref(sum);
    s_reply(c, x->uri, body);
    sop_op_free(op);
}

static void s_info(op_t *op, const session_record_t *s)
{
    info_t *x = op->extra;
    x->s = *s;
    sop_submit_on(op, s, JOB_SESSION_INFO, s_on_info);
}

typedef struct {
    call_t *call;
    char uri[128];
} read_t;

/* An ended session shows its record; a live one is asked what it holds. */
static void s_on_found(void *arg, session_record_status_t st, const session_record_t *s)
{
    read_t *r = arg;
    call_t *c = r->call;
    if (st == SESSION_RECORD_UNAVAILABLE) {
        call_error(c, RPC_UNAVAILABLE, "the session store is unreachable right now", NULL);
    } else if (st == SESSION_RECORD_NOT_FOUND) {
        call_error(c, RPC_RESOURCE_NOT_FOUND, "Resource not found",
                   json_pack("{s:s}", "uri", r->uri));
    } else if (s->ended) {
        json_t *body = json_object();
        s_record(body, s);
        s_reply(c, r->uri, body);
    } else {
        op_t *op = sop_op(c);
        info_t *x = xcalloc(1, sizeof *x);
        snprintf(x->uri, sizeof x->uri, "%s", r->uri);
        op->extra = x;
        s_info(op, s);
    }
    call_release(c);
    free(r);
}

int session_resource_read(call_t *c, const char *uri)
{
    size_t n = strlen(SESSION_URI_BASE);
    uint8_t raw[ID_BYTES];
    if (strncmp(uri, SESSION_URI_BASE, n) != 0) return 0;
    if (id_parse(uri + n, raw) < 0) {
        call_error(c, RPC_RESOURCE_NOT_FOUND, "Resource not found", json_pack("{s:s}", "uri", uri));
        return 1;
    }
    read_t *r = xcalloc(1, sizeof *r);
    r->call = c;
    snprintf(r->uri, sizeof r->uri, "%s", uri);
    call_hold(c);
    char id[ID_STR_LEN + 1];
    id_format(raw, id);
    session_records_lookup(c->fe->session_records, c->tenant, id, s_on_found, r);
    return 1;
}
