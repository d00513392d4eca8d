/* mcp-frontend/mcp/listen.c — see listen.h. A listen stream is a call that is never answered
 * while it lives: notifications go out through call_send on its request's stream, and the
 * call's cancel callback (a closed HTTP stream, notifications/cancelled on stdio, a session
 * ending) takes it off the list. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/log.h"
#include "mcp-frontend/rpc/envelope.h"
#include "mcp-frontend/rpc/fe.h"
#include "mcp-frontend/state/holds.h"
#include "listen.h"

#define MAX_URIS 1000 /* resourceSubscriptions / taskIds of one stream */

typedef struct listener {
    listeners_t *owner;
    call_t *call; /* held until the stream ends */
    hold_t *hold; /* one of its tenant's max_listen_streams, counted farm-wide (holds.h) */
    int tools, prompts;
    json_t *uris;  /* object: uri → true */
    json_t *tasks; /* object: task id → true */
    struct listener *next, **prev;
} listener_t;

struct listeners {
    bus_t *bus;
    store_t **store_p; /* &fe->store: NULL once the store is gone (shutdown) */
    listen_conf_t conf;
    int fixtures;
    listener_t *all;
    listen_stats_t stats;
};

/* ---- delivery */

static void s_send(listener_t *l, const char *method, json_t *params)
{
    json_t *meta = json_object_get(params, "_meta");
    if (!json_is_object(meta)) {
        meta = json_object();
        json_object_set_new(params, "_meta", meta);
    }
    /* the listen request's id, number or string as it came (basic/index §"_meta") */
    json_object_set_new(meta, META_SUBSCRIPTION_ID, json_deep_copy(l->call->id));
    l->owner->stats.delivered++;
    call_send(l->call, rpc_notification(method, params));
}

static int s_same_tenant(const listener_t *l, const json_t *ev)
{
    const char *tn = json_string_value(json_object_get(ev, "tn"));
    return tn && !strcmp(tn, l->call->tenant->name);
}

static void s_on_resource(void *arg, const json_t *ev, int from_self)
{
    (void)from_self;
    listeners_t *self = arg;
    const char *uri = json_string_value(json_object_get(ev, "uri"));
    if (!uri) return;
    for (listener_t *l = self->all, *next; l; l = next) {
        next = l->next; /* a send may end a stream whose client stopped reading */
        if (s_same_tenant(l, ev) && json_object_get(l->uris, uri))
            s_send(l, "notifications/resources/updated", json_pack("{s:s}", "uri", uri));
    }
}

static void s_on_list(void *arg, const json_t *ev, int from_self)
{
    (void)from_self;
    listeners_t *self = arg;
    const char *which = json_string_value(json_object_get(ev, "what"));
    if (!which) return;
    int tools = !strcmp(which, "tools"), prompts = !strcmp(which, "prompts");
    for (listener_t *l = self->all, *next; l; l = next) {
        next = l->next;
        if ((tools && l->tools) || (prompts && l->prompts)) {
            char method[64];
            snprintf(method, sizeof method, "notifications/%s/list_changed", which);
            s_send(l, method, json_object());
        }
    }
}

static void s_on_task(void *arg, const json_t *ev, int from_self)
{
    (void)from_self;
    listeners_t *self = arg;
    const char *id = json_string_value(json_object_get(ev, "id"));
    json_t *task = json_object_get(ev, "task");
    if (!id || !json_is_object(task)) return;
    for (listener_t *l = self->all, *next; l; l = next) {
        next = l->next;
        if (s_same_tenant(l, ev) && json_object_get(l->tasks, id))
            s_send(l, "notifications/tasks", json_deep_copy(task));
    }
}

/* ---- announcements */

void listen_list_changed(bus_t *bus, const char *which)
{
    bus_publish(bus, json_pack("{s:s,s:s}", "t", "list", "what", which));
}

void listen_task_changed(bus_t *bus, const char *tenant, const char *task_id, json_t *task)
{
    bus_publish(bus, json_pack("{s:s,s:s,s:s,s:o}", "t", "task", "tn", tenant, "id", task_id,
                               "task", task));
}

/* ---- the URIs watched, in Redis (mcp_session_store.h's URI sets) */

#define WATCH_TTL_S (7L * 86400) /* as the legacy subscribers' entries: stale ones are harmless */

static int s_watched_elsewhere(const listener_t *l, const char *uri)
{
    for (const listener_t *o = l->owner->all; o; o = o->next)
        if (o != l && o->call->tenant == l->call->tenant && json_object_get(o->uris, uri)) return 1;
    return 0;
}

/* on: this front-end's inbox joins (or leaves) the set of each URI the stream names, unless
 * another of its streams keeps it there. */
static void s_watch(listener_t *l, int on)
{
    const char *uri;
    json_t *v;
    json_object_foreach(l->uris, uri, v)
    {
        if (s_watched_elsewhere(l, uri)) continue;
        char set[600], member[200];
        snprintf(set, sizeof set, "sp:t:{%s}:uri:%s", l->call->tenant->name, uri);
        snprintf(member, sizeof member, "L:%s", bus_inbox(l->owner->bus));
        if (on) {
            store_writef(*l->owner->store_p, "SADD %s %s", set, member);
            store_writef(*l->owner->store_p, "EXPIRE %s %ld", set, WATCH_TTL_S);
        } else {
            store_writef(*l->owner->store_p, "SREM %s %s", set, member);
        }
    }
}

/* ---- streams */

static void s_on_hold(void *arg, hold_t *hold, long held);

static void s_unlink(listener_t *l)
{
    holds_release(&l->hold);
    s_watch(l, 0);
    *l->prev = l->next;
    if (l->next) l->next->prev = l->prev;
    l->owner->stats.open--;
}

static void s_free(listener_t *l)
{
    json_decref(l->uris);
    json_decref(l->tasks);
    call_release(l->call);
    free(l);
}

/* A stream not opened: its filter freed, and the call's hold dropped when it had one. */
static void s_discard(listener_t *l, int held)
{
    json_decref(l->uris);
    json_decref(l->tasks);
    if (held) call_release(l->call);
    free(l);
}

/* The client closed the stream (or its session ended): nothing more is sent. */
static void s_on_cancelled(void *arg, call_t *c)
{
    (void)c;
    listener_t *l = arg;
    s_unlink(l);
    s_free(l);
}

/* Reads a list of strings into an object used as a set. -1 when it is not one. */
static int s_string_set(const json_t *list, json_t *set)
{
    if (!json_is_array(list) || json_array_size(list) > MAX_URIS) return -1;
    size_t i;
    json_t *v;
    json_array_foreach(list, i, v)
    {
        if (!json_is_string(v)) return -1;
        json_object_set_new(set, json_string_value(v), json_true());
    }
    return 0;
}

static int s_flag(const json_t *filter, const char *name, int *out)
{
    json_t *v = json_object_get(filter, name);
    if (v && !json_is_boolean(v)) return -1;
    *out = json_is_true(v);
    return 0;
}

/* The filter a request asks for; -1 when it is malformed (answered -32602). */
static int s_filter(listener_t *l, const json_t *f, int *resources_list)
{
    json_t *uris = json_object_get(f, "resourceSubscriptions");
    json_t *tasks = json_object_get(f, "taskIds");
    return s_flag(f, "toolsListChanged", &l->tools) < 0 ||
                   s_flag(f, "promptsListChanged", &l->prompts) < 0 ||
                   s_flag(f, "resourcesListChanged", resources_list) < 0 ||
                   (uris && s_string_set(uris, l->uris) < 0) ||
                   (tasks && s_string_set(tasks, l->tasks) < 0)
               ? -1
               : 0;
}

/* The acknowledged subset: what this server can ever send (the lists only change under the
 * conformance fixtures; the resource list never does). */
static json_t *s_honoured(const listener_t *l)
{
    json_t *h = json_object();
    if (l->tools) json_object_set_new(h, "toolsListChanged", json_true());
    if (l->prompts) json_object_set_new(h, "promptsListChanged", json_true());
    if (json_object_size(l->uris)) {
        json_t *a = json_array();
        const char *k;
        json_t *v;
        json_object_foreach(l->uris, k, v) json_array_append_new(a, json_string(k));
        json_object_set_new(h, "resourceSubscriptions", a);
    }
    if (json_object_size(l->tasks)) {
        json_t *a = json_array();
        const char *k;
        json_t *v;
        json_object_foreach(l->tasks, k, v) json_array_append_new(a, json_string(k));
        json_object_set_new(h, "taskIds", a);
    }
    return h;
}

void listen_open(call_t *c)
{
    listeners_t *self = c->fe->listeners;
    json_t *f = json_object_get(c->params, "notifications");
    if (!json_is_object(f)) {
        self->stats.refused++;
        call_error(c, RPC_INVALID_PARAMS,
                   "subscriptions/listen: \"notifications\" (an object, the filter) is required",
                   NULL);
        return;
    }
    listener_t *l = xcalloc(1, sizeof *l);
    l->owner = self;
    l->call = c;
    l->uris = json_object();
    l->tasks = json_object();
    int resources_list = 0;
    if (s_filter(l, f, &resources_list) < 0) {
        self->stats.refused++;
        call_error(c, RPC_INVALID_PARAMS,
                   "subscriptions/listen: the filter's flags are booleans, resourceSubscriptions "
                   "and taskIds lists of at most 1000 strings",
                   NULL);
        l->call = NULL;
        json_decref(l->uris), json_decref(l->tasks), free(l);
        return;
    }
    if (json_object_size(l->tasks) && !envelope_has_extension(c->caps, EXT_TASKS)) {
        self->stats.refused++;
        call_missing_capability(c, "the " EXT_TASKS " extension (taskIds)",
                                json_pack("{s:{s:{}}}", "extensions", EXT_TASKS));
        json_decref(l->uris), json_decref(l->tasks), free(l);
        return;
    }
    if (self->stats.open >= self->conf.max_streams) {
        self->stats.refused++;
        log_warn("event=listen_refused reason=frontend_cap tenant=%s open=%ld cap=%ld",
                 c->tenant->name, self->stats.open, self->conf.max_streams);
        call_error(c, RPC_QUOTA, "Subscription limit reached on this server; try again later",
                   NULL);
        s_discard(l, 0);
        return;
    }
    l->tools &= self->fixtures;
    l->prompts &= self->fixtures;
    call_hold(c); /* until the stream ends, or until the take is answered if it is refused */
    holds_take(c->fe->holds, HOLD_LISTEN, c->tenant->name, c->tenant->max_listen_streams, NULL,
               s_on_hold, l);
}

/* The refusal names the cap, whose it is and what holds it: the tenant's own open streams,
 * on whichever front-ends (holds.h), never another tenant's. */
static void s_refuse(listeners_t *self, call_t *c, long held)
{
    self->stats.refused++;
    log_warn("event=tenant_cap_refused cap=max_listen_streams tenant=%s held=%ld limit=%ld",
             c->tenant->name, held, c->tenant->max_listen_streams);
    char msg[320];
    snprintf(msg, sizeof msg,
             "tenant %s already has %ld subscriptions/listen stream%s open, its cap "
             "(max_listen_streams %ld, counted across every front-end): close one of its "
             "streams, or ask the operator to raise the cap",
             c->tenant->name, held, held == 1 ? "" : "s", c->tenant->max_listen_streams);
    call_error(c, RPC_QUOTA, msg,
               json_pack("{s:s,s:I,s:I}", "cap", "max_listen_streams", "limit",
                         (json_int_t)c->tenant->max_listen_streams, "held", (json_int_t)held));
}

/* The tenant's count across the farm had room (or not): the stream opens, or the request is
 * refused. */
static void s_on_hold(void *arg, hold_t *hold, long held)
{
    listener_t *l = arg;
    call_t *c = l->call;
    listeners_t *self = c->fe->listeners; /* NULL once the front-end stops */
    if (hold && self && call_alive(c)) {
        l->hold = hold;
        l->next = self->all;
        if (self->all) self->all->prev = &l->next;
        l->prev = &self->all;
        self->all = l;
        self->stats.open++;
        self->stats.opened++;
        s_watch(l, 1);
        call_on_cancel(c, s_on_cancelled, l);
        json_t *ack = json_pack("{s:o}", "notifications", s_honoured(l));
        s_send(l, "notifications/subscriptions/acknowledged", ack);
        return;
    }
    int granted = hold != NULL;
    holds_release(&hold); /* the client left meanwhile, or the front-end stops */
    if (call_alive(c)) {
        if (self && !granted && held >= 0)
            s_refuse(self, c, held);
        else
            call_error(c, RPC_UNAVAILABLE, "the server is stopping; listen again", NULL);
    }
    s_discard(l, 1);
}

/* ---- the registry */

listeners_t *listeners_new(bus_t *bus, store_t **store_p, const listen_conf_t *conf, int fixtures)
{
    listeners_t *self = xcalloc(1, sizeof *self);
    self->bus = bus;
    self->store_p = store_p;
    self->conf = *conf;
    self->fixtures = fixtures;
    bus_on(bus, "res", s_on_resource, self);
    bus_on(bus, "list", s_on_list, self);
    bus_on(bus, "task", s_on_task, self);
    return self;
}

void listeners_destroy(listeners_t **self_p)
{
    listeners_t *self = *self_p;
    if (!self) return;
    /* the graceful end (subscriptions §"Graceful Closure"): the listen request's result */
    while (self->all) {
        listener_t *l = self->all;
        s_unlink(l);
        call_on_cancel(l->call, NULL, NULL);
        call_reply(l->call, json_pack("{s:{s:O}}", "_meta", META_SUBSCRIPTION_ID, l->call->id));
        s_free(l);
    }
    free(self);
    *self_p = NULL;
}

const listen_stats_t *listeners_stats(const listeners_t *self)
{
    return &self->stats;
}
