/* mcp-frontend/state/bus.c — see bus.h. The subscriber connection is made as the store's is, by
 * common/redis_dial.h (so a Sentinel URL is followed to the master), and reconnects with backoff
 * like it; on every (re)connect it subscribes to both channels again, and once Redis confirms
 * after an outage the reconnect hooks run (whatever was learnt only from events may be stale).
 * It also follows the store: when the store connects to another server than the one the bus is
 * subscribed on (a failover the bus's own connection outlived), the bus dials again, so that
 * front-ends publish and listen on the same master. Pub/sub is not scoped by database number,
 * so the channels carry it. */
#define _GNU_SOURCE
#include <assert.h>
#include <hiredis/async.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/redis_dial.h"
#include "common/redis_loop.h"
#include "bus.h"

#define BUS_MAX_TYPES 16
#define BUS_MAX_HOOKS 8

struct bus {
    loop_t *loop;
    redis_url_t url;
    store_t **store_p;
    char instance[80];
    char control[64];      /* the control channel */
    char inbox[160];       /* this process's own channel */
    long timeout_ms;       /* each step of a dial */
    redis_dial_t *dial;    /* a connection being made */
    redisAsyncContext *ac; /* NULL while waiting to reconnect */
    redis_loop_t io;
    char where[300]; /* the server subscribed on */
    int subscribed;  /* both subscriptions confirmed */
    int was_down;    /* lost the connection since the last confirmation: run the hooks */
    int confirmations;
    uint64_t timer;
    uint64_t retry_at_ms;
    long backoff_ms;
    int closing;
    struct {
        char type[16];
        bus_fn *fn;
        void *arg;
    } types[BUS_MAX_TYPES];
    size_t n_types;
    struct {
        bus_reconnect_fn *fn;
        void *arg;
    } hooks[BUS_MAX_HOOKS];
    size_t n_hooks;
    bus_inbox_fn *inbox_fn;
    void *inbox_arg;
    bus_stats_t stats;
};

static void s_connect(bus_t *self);

/* ---- delivery */

static void s_dispatch(bus_t *self, const char *data, size_t len)
{
    json_error_t jerr;
    json_t *ev = json_loadb(data, len, JSON_REJECT_DUPLICATES, &jerr);
    const char *type = json_string_value(json_object_get(ev, "t"));
    if (!type) {
        self->stats.bad_events++;
        log_warn("event=bus_bad_event bytes=%zu", len);
        json_decref(ev);
        return;
    }
    self->stats.received++;
    const char *from = json_string_value(json_object_get(ev, "fe"));
    int from_self = from && !strcmp(from, self->instance);
    for (size_t i = 0; i < self->n_types; i++)
        if (!strcmp(self->types[i].type, type))
            self->types[i].fn(self->types[i].arg, ev, from_self);
    json_decref(ev);
}

static void s_confirmed(bus_t *self)
{
    if (++self->confirmations < 2) return;
    self->subscribed = 1;
    self->backoff_ms = 100;
    log_info("event=bus_subscribed control=%s inbox=%s", self->control, self->inbox);
    if (!self->was_down) return;
    self->was_down = 0;
    self->stats.reconnects++;
    for (size_t i = 0; i < self->n_hooks; i++) self->hooks[i].fn(self->hooks[i].arg);
}

/* SUBSCRIBE's callback, for its confirmation and then every message on the channel. */
static void s_on_message(redisAsyncContext *ac, void *r, void *privdata)
{
    bus_t *self = ac->data;
    redisReply *reply = r;
    int inbox = privdata != NULL;
    if (!reply || reply->type != REDIS_REPLY_ARRAY || reply->elements < 3) return;
    const redisReply *kind = reply->element[0], *payload = reply->element[2];
    if (kind->type != REDIS_REPLY_STRING) return;
    if (!strcmp(kind->str, "subscribe")) {
        s_confirmed(self);
    } else if (!strcmp(kind->str, "message") && payload->type == REDIS_REPLY_STRING) {
        /* the inbox carries stream events (stream_log.c) and, as JSON, events meant for this
         * front-end alone (a resource that one of its listen streams watches changed) */
        if (inbox && payload->len && payload->str[0] != '{') {
            if (self->inbox_fn) self->inbox_fn(self->inbox_arg, payload->str, payload->len);
        } else {
            s_dispatch(self, payload->str, payload->len);
        }
    }
}

/* ---- the connection */

static void s_lost(bus_t *self)
{
    self->ac = NULL;
    self->subscribed = 0;
    self->confirmations = 0;
    self->was_down = 1;
    self->retry_at_ms = clock_mono_ms() + (uint64_t)self->backoff_ms;
    self->backoff_ms = self->backoff_ms * 2 > REDIS_RECONNECT_MAX_MS ? REDIS_RECONNECT_MAX_MS
                                                                     : self->backoff_ms * 2;
}

static void s_on_disconnect(const redisAsyncContext *ac, int status)
{
    bus_t *self = ac->data;
    if (status != REDIS_OK && !self->closing)
        log_warn("event=bus_disconnected server=%s error=\"%s\"", self->where, ac->errstr);
    s_lost(self);
}

static void s_on_dialled(void *arg, redisAsyncContext *ac, const char *where, const char *err)
{
    bus_t *self = arg;
    self->dial = NULL;
    if (!ac) {
        log_warn("event=bus_connect_failed error=\"%s\"", err);
        s_lost(self);
        return;
    }
    redis_dial_adopt(ac, self, s_on_disconnect);
    self->ac = ac;
    snprintf(self->where, sizeof self->where, "%s", where);
    redisAsyncCommand(ac, s_on_message, NULL, "SUBSCRIBE %s", self->control);
    redisAsyncCommand(ac, s_on_message, self, "SUBSCRIBE %s", self->inbox);
}

static void s_connect(bus_t *self)
{
    self->dial =
        redis_dial_start(self->loop, &self->url, &self->io, self->timeout_ms, s_on_dialled, self);
}

/* Frees the connection from outside hiredis's callbacks (its disconnect callback runs). */
static void s_drop(bus_t *self)
{
    self->closing = 1;
    redisAsyncFree(self->ac);
    self->closing = 0;
    if (self->ac) s_lost(self); /* freed before the disconnect callback could say so */
}

/* The store connected, perhaps to a new master after a failover that this connection, to the
 * old one, outlived (a master demoted to replica keeps its clients): subscribe where the store
 * publishes. */
static void s_on_store_connected(void *arg, store_t *store)
{
    bus_t *self = arg;
    if (!self->ac || !strcmp(self->where, store_where(store))) return;
    log_info("event=bus_follows_store server=%s was=%s", store_where(store), self->where);
    s_drop(self);
}

static void s_on_timer(loop_t *loop, void *arg)
{
    (void)loop;
    bus_t *self = arg;
    if (!self->ac && !self->dial && clock_mono_ms() >= self->retry_at_ms) s_connect(self);
}

bus_t *bus_new(loop_t *loop, const redis_url_t *url, long timeout_ms, store_t **store_p,
               const char *instance)
{
    bus_t *self = xcalloc(1, sizeof *self);
    self->loop = loop;
    self->url = *url;
    self->timeout_ms = timeout_ms;
    self->store_p = store_p;
    self->io.fd = -1;
    self->backoff_ms = 100;
    snprintf(self->instance, sizeof self->instance, "%s", instance);
    snprintf(self->control, sizeof self->control, "sp:bus:%d", url->db);
    /* a restarted process may get its predecessor's pid: the nonce keeps inboxes apart */
    uint32_t nonce = 0;
    if (getrandom(&nonce, sizeof nonce, 0) != (ssize_t)sizeof nonce)
        nonce = (uint32_t)clock_mono_us();
    snprintf(self->inbox, sizeof self->inbox, "sp:fe:%d:%s:%08x", url->db, instance, nonce);
    s_connect(self);
    store_on_connect(*store_p, s_on_store_connected, self);
    self->timer = loop_timer_add(loop, 100, 100, s_on_timer, self);
    return self;
}

void bus_destroy(bus_t **self_p)
{
    bus_t *self = *self_p;
    if (!self) return;
    loop_timer_cancel(self->loop, self->timer);
    redis_dial_cancel(&self->dial);
    if (self->ac) {
        self->closing = 1;
        redisAsyncFree(self->ac);
        self->ac = NULL;
    }
    free(self);
    *self_p = NULL;
}

int bus_connected(const bus_t *self)
{
    return self && self->subscribed;
}

const bus_stats_t *bus_stats(const bus_t *self)
{
    return &self->stats;
}

void bus_drain(bus_t *self)
{
    if (self->ac && self->subscribed) redisAsyncHandleRead(self->ac); /* EAGAIN: nothing there */
}

void bus_on(bus_t *self, const char *type, bus_fn *fn, void *arg)
{
    assert(self->n_types < BUS_MAX_TYPES && strlen(type) < sizeof self->types[0].type);
    snprintf(self->types[self->n_types].type, sizeof self->types[0].type, "%s", type);
    self->types[self->n_types].fn = fn;
    self->types[self->n_types].arg = arg;
    self->n_types++;
}

void bus_on_reconnect(bus_t *self, bus_reconnect_fn *fn, void *arg)
{
    assert(self->n_hooks < BUS_MAX_HOOKS);
    self->hooks[self->n_hooks].fn = fn;
    self->hooks[self->n_hooks].arg = arg;
    self->n_hooks++;
}

void bus_publish(bus_t *self, json_t *event)
{
    assert(json_is_string(json_object_get(event, "t")));
    json_object_set_new(event, "fe", json_string(self->instance));
    char *text = json_dumps(event, JSON_COMPACT);
    json_decref(event);
    if (!text) return;
    self->stats.published++;
    if (self->subscribed && store_connected(*self->store_p))
        store_publish(*self->store_p, self->control, text);
    else
        s_dispatch(self, text, strlen(text)); /* nobody else can hear it now */
    free(text);
}

const char *bus_control(const bus_t *self)
{
    return self->control;
}

const char *bus_inbox(const bus_t *self)
{
    return self->inbox;
}

void bus_on_inbox(bus_t *self, bus_inbox_fn *fn, void *arg)
{
    self->inbox_fn = fn;
    self->inbox_arg = arg;
}
