/* mcp-frontend/mcp/resources.c — see resources.h. Unknown URIs are -32002 "Resource not found"
 * with the URI in data (MCP 2025-11-25, resources §"Error Handling"). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/ids.h"
#include "common/log.h"
#include "mcp-frontend/farm/execution.h"
#include "mcp-frontend/rpc/fe.h"
#include "mcp-frontend/rpc/jsonrpc.h"
#include "mcp-frontend/rpc/page.h"
#include "mcp-frontend/state/filestore.h"
#include "mcp-frontend/state/history.h"
#include "mcp-frontend/tools/sandbox_info.h"
#include "mcp-frontend/tools/session_resource.h"
#include "fixtures.h"
#include "resources.h"

#define INFO_URI  "sandbox://info"
#define EXEC_BASE "sandbox://executions/"

struct resources {
    resources_conf_t conf;
    fe_t *fe;
    json_t *resources, *templates; /* the published lists */
};

static void s_on_execution_end(void *arg, const execution_end_t *end);

resources_t *resources_new(fe_t *fe, const resources_conf_t *conf)
{
    resources_t *self = xcalloc(1, sizeof *self);
    self->conf = *conf;
    self->fe = fe;
    self->resources = json_pack(
        "[{s:s,s:s,s:s,s:s,s:s}]", "uri", INFO_URI, "name", "sandbox-info", "title",
        "Sandbox profiles and limits", "description",
        "The sandbox profiles with their modules and limits, your tenant's limits and the "
        "farm's capacity (the same as get_sandbox_info)",
        "mimeType", "application/json");
    self->templates = json_pack(
        "[{s:s,s:s,s:s,s:s,s:s}]", "uriTemplate", EXEC_BASE "{id}", "name", "execution", "title",
        "One of your executions", "description",
        "The record of one of your executions by its execution_id: status, code, timings and "
        "the structured result",
        "mimeType", "application/json");
    json_array_append_new(
        self->templates,
        json_pack("{s:s,s:s,s:s,s:s}", "uriTemplate", EXEC_BASE "{id}/files/{path}", "name",
                  "execution-file", "title", "A file one of your executions wrote",
                  "description",
                  "A file too large to return inline (execute_code links it); kept for a while "
                  "after the execution, readable by your tenant only"));
    json_array_append_new(self->templates, session_resource_template());
    executions_on_end(fe->executions, s_on_execution_end, self);
    if (conf->fixtures) {
        json_t *r = fixtures_resources(), *t = fixtures_resource_templates();
        json_array_extend(self->resources, r);
        json_array_extend(self->templates, t);
        json_decref(r);
        json_decref(t);
    }
    return self;
}

void resources_destroy(resources_t **self_p)
{
    resources_t *self = *self_p;
    if (!self) return;
    json_decref(self->resources);
    json_decref(self->templates);
    free(self);
    *self_p = NULL;
}

/* ---- a drop-in endpoint's own resources (endpoint.h): mcp.c sends their methods here only on
 * an endpoint that has some */

static json_t *s_endpoint_list(const endpoint_t *ep)
{
    json_t *list = json_array();
    for (const endpoint_resource_t *r = ep->resources; r->uri; r++)
        json_array_append_new(list, json_pack("{s:s,s:s,s:s,s:s,s:s}", "uri", r->uri, "name",
                                              r->name, "title", r->title, "description",
                                              r->description, "mimeType", r->mime_type));
    return list;
}

static const endpoint_resource_t *s_endpoint_find(const endpoint_t *ep, const char *uri)
{
    for (const endpoint_resource_t *r = ep->resources; r->uri; r++)
        if (!strcmp(r->uri, uri)) return r;
    return NULL;
}

void resources_list(call_t *c)
{
    resources_t *self = c->fe->resources;
    if (c->endpoint) {
        json_t *list = s_endpoint_list(c->endpoint);
        page_reply(c, list, "resources", "r", self->conf.page_size);
        json_decref(list);
        return;
    }
    page_reply(c, self->resources, "resources", "r", self->conf.page_size);
}

void resources_templates_list(call_t *c)
{
    resources_t *self = c->fe->resources;
    if (c->endpoint) { /* a drop-in's resources are fixed URIs */
        json_t *none = json_array();
        page_reply(c, none, "resourceTemplates", "rt", self->conf.page_size);
        json_decref(none);
        return;
    }
    page_reply(c, self->templates, "resourceTemplates", "rt", self->conf.page_size);
}

static void s_not_found(call_t *c, const char *uri)
{
    call_error(c, RPC_RESOURCE_NOT_FOUND, "Resource not found",
               json_pack("{s:o}", "uri", json_str_safe(uri)));
}

/* "sandbox://executions/<uuid>" → 1 with the canonical id */
static int s_execution_uri(const char *uri, char id[ID_STR_LEN + 1])
{
    uint8_t raw[ID_BYTES];
    if (strncmp(uri, EXEC_BASE, strlen(EXEC_BASE)) != 0 ||
        id_parse(uri + strlen(EXEC_BASE), raw) < 0)
        return 0;
    id_format(raw, id);
    return 1;
}

static void s_on_execution(void *arg, fetch_status_t st, json_t *fields)
{
    call_t *c = arg;
    const char *uri = call_str(c, "uri");
    char id[ID_STR_LEN + 1];
    if (st == FETCH_UNAVAILABLE) {
        call_error(c, RPC_UNAVAILABLE,
                   "the execution store is unreachable right now; try again shortly", NULL);
    } else if (st == FETCH_NOT_FOUND || !s_execution_uri(uri, id)) {
        s_not_found(c, uri);
    } else {
        json_t *view = record_view(id, fields);
        char *text = json_text(view, JSON_COMPACT);
        json_decref(view);
        call_reply(c, json_pack("{s:[{s:s,s:s,s:s}]}", "contents", "uri", uri, "mimeType",
                                "application/json", "text", text ? text : "{}"));
        free(text);
    }
    call_release(c);
}

/* "sandbox://executions/<uuid>/<what>/<tail>" → 1 with the canonical id and the tail */
static int s_execution_sub_uri(const char *uri, const char *what, char id[ID_STR_LEN + 1],
                               const char **tail)
{
    size_t base = strlen(EXEC_BASE), w = strlen(what);
    uint8_t raw[ID_BYTES];
    char text[ID_STR_LEN + 1];
    if (strncmp(uri, EXEC_BASE, base) != 0 || strlen(uri + base) < ID_STR_LEN + 2 + w) return 0;
    memcpy(text, uri + base, ID_STR_LEN);
    text[ID_STR_LEN] = '\0';
    const char *rest = uri + base + ID_STR_LEN;
    if (id_parse(text, raw) < 0 || rest[0] != '/' || strncmp(rest + 1, what, w) != 0 ||
        rest[1 + w] != '/')
        return 0;
    id_format(raw, id);
    *tail = rest + 2 + w;
    return 1;
}

static const char *s_str_of(const json_t *obj, const char *key)
{
    const char *s = json_string_value(json_object_get(obj, key));
    return s ? s : "";
}

/* An output of a record's result (rich.h's embedded resources), served as it was sent: found
 * among the stored CallToolResult's content blocks by its uri. */
static void s_on_output(void *arg, fetch_status_t st, json_t *fields)
{
    call_t *c = arg;
    const char *uri = call_str(c, "uri");
    json_t *found = NULL, *cr = NULL, *block;
    size_t i;
    if (st == FETCH_UNAVAILABLE) {
        call_error(c, RPC_UNAVAILABLE,
                   "the execution store is unreachable right now; try again shortly", NULL);
        call_release(c);
        return;
    }
    if (st == FETCH_OK) cr = json_loads(s_str_of(fields, "call_result"), 0, NULL);
    json_array_foreach(json_object_get(cr, "content"), i, block)
        if (!found && !strcmp(s_str_of(block, "type"), "resource") &&
            !strcmp(s_str_of(json_object_get(block, "resource"), "uri"), uri))
            found = json_incref(json_object_get(block, "resource"));
    if (found)
        call_reply(c, json_pack("{s:[o]}", "contents", found));
    else
        s_not_found(c, uri);
    json_decref(cr);
    call_release(c);
}

/* A figure of a record's result, by its place among the images (0, 1, ...): the image content
 * blocks the call returned, kept in the stored CallToolResult and served as a blob. */
static void s_on_image(void *arg, fetch_status_t st, json_t *fields)
{
    call_t *c = arg;
    const char *uri = call_str(c, "uri"), *tail = strrchr(uri, '/') + 1;
    json_t *found = NULL, *cr = NULL, *block;
    size_t i, seen = 0;
    char *end;
    long want = strtol(tail, &end, 10);
    if (st == FETCH_UNAVAILABLE) {
        call_error(c, RPC_UNAVAILABLE,
                   "the execution store is unreachable right now; try again shortly", NULL);
        call_release(c);
        return;
    }
    if (st == FETCH_OK && *tail >= '0' && *tail <= '9' && !*end && end - tail <= 3)
        cr = json_loads(s_str_of(fields, "call_result"), 0, NULL);
    json_array_foreach(json_object_get(cr, "content"), i, block)
        if (!found && !strcmp(s_str_of(block, "type"), "image") && (long)seen++ == want)
            found = json_pack("{s:s,s:s,s:s}", "uri", uri, "mimeType",
                              s_str_of(block, "mimeType"), "blob", s_str_of(block, "data"));
    if (found)
        call_reply(c, json_pack("{s:[o]}", "contents", found));
    else
        s_not_found(c, uri);
    json_decref(cr);
    call_release(c);
}

void resources_read(call_t *c)
{
    const char *uri = call_str(c, "uri");
    const char *tail;
    char id[ID_STR_LEN + 1];
    if (!uri) {
        call_error(c, RPC_INVALID_PARAMS, "resources/read: \"uri\" (string) is required", NULL);
        return;
    }
    if (c->endpoint) {
        const endpoint_resource_t *r = s_endpoint_find(c->endpoint, uri);
        if (r)
            r->read(c);
        else
            s_not_found(c, uri);
        return;
    }
    if (!strcmp(uri, INFO_URI)) {
        sandbox_info_request(c, 1);
        return;
    }
    if (s_execution_uri(uri, id)) {
        call_hold(c);
        record_fetch(c->fe->store, id, c->tenant, s_on_execution, c);
        return;
    }
    if (s_execution_sub_uri(uri, "files", id, &tail)) { /* rich.h's links */
        filestore_read(c, id, tail);
        return;
    }
    if (s_execution_sub_uri(uri, "outputs", id, &tail)) { /* rich.h's embedded resources */
        call_hold(c);
        record_fetch(c->fe->store, id, c->tenant, s_on_output, c);
        return;
    }
    if (s_execution_sub_uri(uri, "images", id, &tail)) { /* its figures, the image blocks */
        call_hold(c);
        record_fetch(c->fe->store, id, c->tenant, s_on_image, c);
        return;
    }
    if (session_resource_read(c, uri)) return;
    json_t *fx = c->fe->resources->conf.fixtures ? fixtures_read(uri) : NULL;
    if (fx)
        call_reply(c, fx);
    else
        s_not_found(c, uri);
}

static int s_subscribable(const resources_t *self, const char *uri)
{
    char id[ID_STR_LEN + 1];
    return !strcmp(uri, INFO_URI) || s_execution_uri(uri, id) ||
           (self->conf.fixtures && fixtures_subscribable(uri));
}

static void s_on_subscribed(void *arg, int rc)
{
    call_t *c = arg;
    if (rc == -2)
        call_error(c, RPC_QUOTA, "too many subscriptions on this session", NULL);
    else if (rc < 0)
        call_error(c, RPC_UNAVAILABLE,
                   "cannot store the subscription now (session store unreachable)", NULL);
    else
        call_reply(c, json_object());
    call_release(c);
}

static void s_subscription(call_t *c, int on)
{
    const char *uri = call_str(c, "uri");
    if (!uri) {
        call_error(c, RPC_INVALID_PARAMS, "resources/(un)subscribe: \"uri\" (string) is required",
                   NULL);
        return;
    }
    if (on && !s_subscribable(c->fe->resources, uri)) {
        s_not_found(c, uri);
        return;
    }
    /* in Redis, so that an update raised on any front-end reaches the session (mcp_session.h's
     * keeper) */
    call_hold(c);
    mcp_session_subscribe(c->session, uri, on, s_on_subscribed, c);
}

void resources_subscribe(call_t *c)
{
    s_subscription(c, 1);
}

void resources_unsubscribe(call_t *c)
{
    s_subscription(c, 0);
}

/* An execution ended (its record is in Redis by then): whoever watches its URI hears it. */
static void s_on_execution_end(void *arg, const execution_end_t *end)
{
    resources_t *self = arg;
    char uri[sizeof EXEC_BASE + ID_STR_LEN];
    snprintf(uri, sizeof uri, EXEC_BASE "%s", end->id);
    /* Subscriptions and listen streams name exact URIs, and this one is first named to anyone
     * by the answer (a record found while the job runs, or a task, make it exposed): most
     * executions end before anything could have subscribed, and ask Redis nothing here. */
    if (end->exposed) resources_updated(self->fe, end->tenant->name, uri);
    if (!end->session->stored && json_object_get(end->session->subscriptions, uri))
        mcp_session_notify(end->session, rpc_notification("notifications/resources/updated",
                                                          json_pack("{s:s}", "uri", uri)));
}

void resources_updated(fe_t *fe, const char *tenant, const char *uri)
{
    /* legacy sessions subscribed to it and listen streams watching it, wherever they are */
    mcp_sessions_resource_updated(fe->mcp_sessions, tenant, uri);
}
