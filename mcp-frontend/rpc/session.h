/* mcp-frontend/rpc/session.h — MCP sessions of the legacy revisions (MCP 2025-11-25 "Lifecycle"
 * and, for HTTP, "Transports" §Session Management), as this process holds them: what
 * initialize negotiated, the client's logging level, and the calls in flight on it (call.h).
 *
 * Over HTTP a session lives in Redis (sessdb.h), so that any front-end answers any request of
 * it; the object here is this process's copy: made by initialize or read back from Redis,
 * trusted for --session-cache-ms (and only while the bus carries the other front-ends' news
 * of deletions and level changes), then read again. A copy nobody uses is forgotten after a
 * while — the session itself lives on in Redis. The stdio session is the process's own and
 * never leaves it. A 2026-07-28 request over HTTP gets a request scope: a session object with
 * no id and no table, gone with its last call.
 *
 * Closing a session here ends its calls through the hook its owner gave sessions_new, so this
 * module never reaches up into the call module. Everything runs on the loop thread. */
#ifndef SP_FE_SESSION_H
#define SP_FE_SESSION_H
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "common/loop.h"
#include "loglevel.h"
#include "tenant.h"

typedef struct session session_t;
typedef struct sessions sessions_t;
typedef struct call call_t; /* call.h */

typedef enum { TRANSPORT_STDIO, TRANSPORT_HTTP, TRANSPORT__COUNT } transport_t;

/* Where messages not tied to a request go: stdout for stdio; for HTTP the session's event log
 * in Redis (sselog.h), from which the front-end holding its GET stream writes them out. */
typedef void(session_notify_fn)(void *ctx, session_t *s, json_t *msg);
/* The session ended: its calls are to be cancelled (call.h's calls_cancel_all). */
typedef void(session_end_calls_fn)(session_t *s, const char *why);

struct session {
    sessions_t *table; /* NULL for a request scope */
    char id[40];       /* Mcp-Session-Id (HTTP); "stdio" for stdio; "" for a request scope */
    transport_t transport;
    tenant_t *tenant;
    char protocol[16]; /* negotiated version; empty before initialize */
    char endpoint[64]; /* the endpoint it was opened on (endpoint.h's name; "" for /mcp): its
                        * tools and identity, so it is valid there only */
    int initialized;   /* notifications/initialized received */
    int log_level;
    char client_name[64];
    int client_tasks;        /* the client declared tasks support */
    json_t *subscriptions;   /* stdio: uri → true (HTTP sessions keep theirs in Redis) */
    int stored;              /* kept in Redis (HTTP sessions, once initialize stored it) */
    uint64_t fresh_until_ms; /* monotonic: this copy is trusted until then (stored ones) */
    uint64_t touched_ms;     /* monotonic: the last time its idle clock was reset in Redis */
    call_t *calls;           /* in flight here, linked through call_t.next (call.c's list) */
    long n_calls;
    session_notify_fn *notify; /* NULL: messages not tied to a request are dropped */
    void *notify_ctx;
    uint64_t last_used_ms; /* monotonic */
    int closed;            /* deleted, evicted or expired: no new requests */
    int refs;
    session_t *next; /* in the table's bucket */
};

typedef struct {
    long open[TRANSPORT__COUNT];       /* copies held in this process now */
    uint64_t opened[TRANSPORT__COUNT]; /* sessions initialized here, ever */
    uint64_t restored;                 /* copies read back from Redis */
    uint64_t forgotten;                /* idle copies dropped (the sessions live on in Redis) */
} sessions_stats_t;

typedef struct {
    long max_sessions;   /* copies held in this process at most (idle ones are forgotten) */
    long max_per_tenant; /* a tenant's sessions in Redis: beyond, its least recently used goes */
    long idle_s;         /* a session unused this long expires (in Redis) */
    long cache_ms;       /* a copy read from Redis is trusted this long */
} sessions_conf_t;

sessions_t *sessions_new(loop_t *loop, const sessions_conf_t *conf,
                         session_end_calls_fn *end_calls);
void sessions_destroy(sessions_t **self_p); /* closes every session */
const sessions_conf_t *sessions_conf(const sessions_t *self);
/* Where HTTP sessions' notifications go (sselog.c subscribes at start). */
void sessions_on_notify(sessions_t *self, session_notify_fn *fn, void *ctx);

/* A new session with a fresh id, held by the table until session_close. NULL when no
 * unguessable id can be made (getrandom failed). */
session_t *session_new(sessions_t *self, transport_t transport, tenant_t *tenant);
/* The copy of a session held here (fresh or not; closed ones are not found), or NULL. */
session_t *session_find(sessions_t *self, const char *id);
/* A session read back from Redis (fields: its hash, as sessdb.c writes it): the copy held
 * here, refreshed or made. */
session_t *session_restore(sessions_t *self, tenant_t *tenant, const char *id,
                           const json_t *fields);
/* 1 while the copy may be used without asking Redis again. */
int session_fresh(const session_t *s);
/* Every stored copy is to be read again before its next use (the bus was down: news of
 * deletions may have been missed). */
void sessions_stale(sessions_t *self);
/* The scope of one 2026-07-28 request over HTTP: no id, no table, no state beyond its calls;
 * freed with its last reference (the exchange's and its calls'). */
session_t *session_scope(tenant_t *tenant, transport_t transport);
void session_close(session_t *s); /* ends it here: in-flight calls are cancelled */
void session_hold(session_t *s);
void session_release(session_t *s);
size_t sessions_count(const sessions_t *self);
const sessions_stats_t *sessions_stats(const sessions_t *self);
const char *transport_name(transport_t t);
/* The Redis key of an HTTP session, "sp:t:{<tenant>}:sess:<id>" (sessdb.h), which its event
 * logs extend (sselog.h). */
void session_key(char *out, size_t cap, const char *tenant, const char *id);
/* Sends a message not tied to a request (dropped when the session has no sink). Steals msg. */
void session_notify(session_t *s, json_t *msg);

#endif
