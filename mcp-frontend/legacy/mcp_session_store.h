/* mcp-frontend/legacy/mcp_session_store.h — legacy HTTP sessions in Redis, so that any front-end
 * answers any request of any session and a restarted front-end loses none. Keys, all
 * under the tenant's hash tag (one cluster slot per tenant, so a script may touch several):
 *
 *   sp:t:{T}:sess:<id>        hash: proto, client, ep (the endpoint it belongs to, compat.h;
 *                             empty: /mcp), tasks, level, created_ms; expires after
 *                             --session-idle-s without use
 *   sp:t:{T}:sessions         zset: session id → last use (ms): the tenant's count, and who
 *                             goes first when a new session would pass --max-sessions-per-tenant
 *   sp:t:{T}:sess:<id>:subs   set: the URIs the session subscribed to (resources/subscribe)
 *   sp:t:{T}:uri:<uri>        set: the sessions subscribed to a URI, and "L:<inbox>" for each
 *                             front-end whose subscriptions/listen streams watch it (listen.h)
 *
 * A tenant at its cap is never refused a session: its least recently used one is evicted and
 * told so on every front-end (a client that comes back with it gets 404 and initializes
 * again, as the transport prescribes). Reads go through this process's copy (mcp_session.h) while
 * it is fresh; a use resets the session's idle clock in Redis at most once a second. Changes
 * other front-ends must hear of at once — a session deleted or evicted, its log level set, a
 * cancellation for a call running elsewhere — go over the bus (bus.h). */
#ifndef SP_FE_MCP_SESSION_STORE_H
#define SP_FE_MCP_SESSION_STORE_H
#include "mcp-frontend/rpc/mcp_session.h"
#include "mcp-frontend/state/bus.h"
#include "mcp-frontend/state/store.h"

typedef struct mcp_session_store mcp_session_store_t;

typedef struct {
    uint64_t evicted;   /* sessions evicted for a new one (the tenant was at its cap) */
    uint64_t deleted;   /* ended by DELETE */
    uint64_t hits;      /* lookups answered from this process's copy */
    uint64_t misses;    /* lookups that read Redis */
    uint64_t not_found; /* ids Redis did not know (ended, expired, evicted, made up) */
} mcp_session_store_stats_t;

mcp_session_store_t *mcp_session_store_new(store_t **store_p, bus_t *bus, mcp_sessions_t *sessions);
/* The one place the legacy era joins the rest: this store becomes what keeps the session table's
 * sessions beyond this process (mcp_session.h's mcp_session_keeper_t), and log's replay window
 * bounds the fan-out of resource updates (stream_log.h). */
struct stream_log;
void mcp_session_store_join(mcp_session_store_t *self, const struct stream_log *log);
void mcp_session_store_destroy(mcp_session_store_t **self_p);
const mcp_session_store_stats_t *mcp_session_store_stats(const mcp_session_store_t *self);

/* The outcome of an asynchronous operation: 0, or -1 when Redis could not be asked or refused
 * (and NULL for a lookup of a session it does not know). */
typedef void(mcp_session_store_done_fn)(void *arg, int rc);
typedef void(mcp_session_store_found_fn)(void *arg, mcp_session_t *s, int unavailable);

/* The tenant's session id: at once from a fresh copy, else from Redis. fn is called exactly
 * once, possibly before this returns; s is not held for the caller. */
void mcp_session_store_find(mcp_session_store_t *self, tenant_t *tenant, const char *id,
                            mcp_session_store_found_fn *fn, void *arg);
/* Stores a session initialize has just filled (evicting the tenant's least recently used one
 * when at its cap). done hears when Redis has it: only then may its id leave. */
void mcp_session_store_open(mcp_session_store_t *self, mcp_session_t *s,
                            mcp_session_store_done_fn *done, void *arg);
/* Resets the session's idle clock (at most once a second; fire and forget). */
void mcp_session_store_touch(mcp_session_store_t *self, mcp_session_t *s);
/* logging/setLevel: stored, and every front-end's copy updated. */
void mcp_session_store_set_level(mcp_session_store_t *self, mcp_session_t *s, int level,
                                 mcp_session_store_done_fn *done, void *arg);
/* resources/subscribe and unsubscribe. */
void mcp_session_store_subscribe(mcp_session_store_t *self, mcp_session_t *s, const char *uri,
                                 int on, mcp_session_store_done_fn *done, void *arg);
/* DELETE: gone from Redis and from every front-end (its calls there are cancelled). */
void mcp_session_store_delete(mcp_session_store_t *self, mcp_session_t *s,
                              mcp_session_store_done_fn *done, void *arg);
/* notifications/cancelled for a call that does not run here: the front-end that runs it
 * cancels it. */
void mcp_session_store_cancel_elsewhere(mcp_session_store_t *self, mcp_session_t *s,
                                        const json_t *request_id, const char *reason);
/* A resource changed: every session subscribed to it, on any front-end, hears
 * notifications/resources/updated on its GET stream (through its event log, stream_log.h), and
 * every front-end whose listen streams watch it gets the change in its inbox. One script. */
void mcp_session_store_resource_updated(mcp_session_store_t *self, const char *tenant,
                                        const char *uri, long replay_ms);

#endif
