/* mcp-frontend/state/bus.h — what one front-end must tell the others, over Redis pub/sub. Any
 * front-end answers any request, so an event raised on one may concern a client
 * connected to another: an execution ended that a listen stream on another front-end watches,
 * a legacy session deleted here whose id another front-end has cached, a cancellation for a
 * call running elsewhere, the next events of a stream a client resumed on another front-end.
 *
 * Two channels per front-end, on a connection of its own (a subscribed Redis connection can do
 * nothing else), and nothing subscribed or unsubscribed per request:
 *   - the control channel, which every front-end listens to: small JSON events {"t": type,
 *     ...}, dispatched by type to the handlers registered with bus_on (one row per type; the
 *     modules that care subscribe). A front-end hears its own events too, so a handler serves
 *     local and remote causes alike; while the channel is down bus_publish delivers locally at
 *     once (nothing else could hear it) and the event is lost for the others.
 *   - this front-end's inbox, for messages meant for it alone: Redis scripts route there the
 *     next events of a stream that this front-end follows (stream_log.h writes the inbox's name
 *     where the stream's writer will find it), and events in the control channel's JSON for the
 *     resources its listen streams watch (listen.h registers the inbox with each URI), which go
 *     to the same typed handlers.
 * Publishing goes through the store's connection and its journal (store_publish), so a PUBLISH
 * leaves after every write made before it — whoever hears an event finds in Redis what was
 * written first — and, unlike those writes, is never sent again after a reconnect.
 * Pub/sub delivers at most once: whatever relies on it (session caches) also ages out, and the
 * reconnect hook tells modules that they may have missed events. */
#ifndef SP_FE_BUS_H
#define SP_FE_BUS_H
#include <jansson.h>
#include <stdint.h>

#include "common/loop.h"
#include "common/redis_url.h"
#include "store.h"

typedef struct bus bus_t;

/* A control event (borrowed, valid during the call); from_self: published by this process. */
typedef void(bus_fn)(void *arg, const json_t *event, int from_self);
/* The channels were (re)subscribed after having been down: events may have been missed. */
typedef void(bus_reconnect_fn)(void *arg);
/* A stream event in this front-end's inbox (a message that is not a JSON event). */
typedef void(bus_inbox_fn)(void *arg, const char *data, size_t len);

typedef struct {
    uint64_t published, received, bad_events, reconnects;
} bus_stats_t;

/* instance: this process's name (fe.h), to tell own events apart. store_p: where the store is
 * (fe->store); once it is NULL (shutdown), events are delivered locally only. url is reached
 * as the store reaches it (common/redis_dial.h: Sentinel URLs too), timeout_ms bounding each
 * step of a connect. */
bus_t *bus_new(loop_t *loop, const redis_url_t *url, long timeout_ms, store_t **store_p,
               const char *instance);
void bus_destroy(bus_t **self_p);
int bus_connected(const bus_t *self);
const bus_stats_t *bus_stats(const bus_t *self);

/* Handles whatever has already reached this process's subscriber socket, now rather than at the
 * loop's next turn: before a copy of shared state is trusted, news of its change that is already
 * here is applied (a session deleted on another front-end just before its client came here). */
void bus_drain(bus_t *self);
/* Subscribes fn to the control events of one type (at start; a fixed set). */
void bus_on(bus_t *self, const char *type, bus_fn *fn, void *arg);
void bus_on_reconnect(bus_t *self, bus_reconnect_fn *fn, void *arg);
/* Sends an event to every front-end, this one included. Steals event; "t" must be set. */
void bus_publish(bus_t *self, json_t *event);

/* The control channel's name (for Redis scripts that announce what they did). */
const char *bus_control(const bus_t *self);

/* This front-end's inbox: its channel name (what a stream's follower key holds), and the one
 * handler of its messages (stream_log.c). */
const char *bus_inbox(const bus_t *self);
void bus_on_inbox(bus_t *self, bus_inbox_fn *fn, void *arg);

#endif
