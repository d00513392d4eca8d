/* mcp-frontend/session.h — MCP sessions (MCP 2025-11-25 "Lifecycle" and, for HTTP,
 * "Transports" §Session Management): one per initialize over HTTP, found by its
 * Mcp-Session-Id, and one for stdio. A session remembers what initialize negotiated, the
 * client's logging level and subscriptions, where messages not tied to a request go (the GET
 * stream, or stdout), and the calls in flight on it (call.h).
 *
 * The table finds sessions by id, counts them, and closes HTTP sessions left idle. Closing a
 * session ends its calls through the hook its owner gave sessions_new, so this module never
 * reaches up into the call module. Everything runs on the loop thread. */
#ifndef SP_FE_SESSION_H
#define SP_FE_SESSION_H
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "../common/loop.h"
#include "loglevel.h"
#include "tenants.h"

typedef struct session session_t;
typedef struct sessions sessions_t;
typedef struct call call_t; /* call.h */

typedef enum { TRANSPORT_STDIO, TRANSPORT_HTTP, TRANSPORT__COUNT } transport_t;

/* Where messages not tied to a request go (the session's GET stream, or stdout). */
typedef void(session_notify_fn)(void *ctx, session_t *s, json_t *msg);
/* The session ended: its calls are to be cancelled (call.h's calls_cancel_all). */
typedef void(session_end_calls_fn)(session_t *s, const char *why);

struct session {
    sessions_t *table;
    char id[40]; /* Mcp-Session-Id (HTTP); "stdio" for stdio; "" for a request scope */
    transport_t transport;
    tenant_t *tenant;
    char protocol[16]; /* negotiated version; empty before initialize */
    int initialized;   /* notifications/initialized received */
    int log_level;
    char client_name[64];
    int client_tasks;      /* the client declared tasks support */
    json_t *subscriptions; /* object: uri → true */
    call_t *calls;         /* in flight, linked through call_t.next (call.c keeps the list) */
    long n_calls;
    session_notify_fn *notify; /* the GET stream or stdout; NULL when none */
    void *notify_ctx;
    void (*notify_end)(void *ctx); /* the session ended: close that stream */
    uint64_t last_used_ms;         /* monotonic, for idle expiry */
    int closed;                    /* DELETEd or expired: no new requests */
    int refs;
    session_t *next; /* in the table's bucket */
};

typedef struct {
    long open[TRANSPORT__COUNT];       /* now */
    uint64_t opened[TRANSPORT__COUNT]; /* ever */
} sessions_stats_t;

typedef struct {
    long max_sessions;   /* open HTTP sessions at most */
    long max_per_tenant; /* one tenant cannot take every session */
    long idle_s;         /* an HTTP session idle this long is closed */
} sessions_conf_t;

sessions_t *sessions_new(loop_t *loop, const sessions_conf_t *conf,
                         session_end_calls_fn *end_calls);
void sessions_destroy(sessions_t **self_p); /* closes every session */
/* A new session, held by the table until session_close. NULL when no unguessable id can be
 * made (getrandom failed). */
session_t *session_new(sessions_t *self, transport_t transport, tenant_t *tenant);
session_t *session_find(sessions_t *self, const char *id);
/* The scope of one 2026-07-28 request over HTTP: no id, no table, no state beyond its calls;
 * freed with its last reference (the exchange's and its calls'). */
session_t *session_scope(tenant_t *tenant, transport_t transport);
/* 1 when another HTTP session would pass --max-sessions or the tenant's share of it. */
int sessions_full(const sessions_t *self, const tenant_t *tenant);
void session_close(session_t *s); /* ends it: in-flight calls are cancelled */
void session_hold(session_t *s);
void session_release(session_t *s);
size_t sessions_count(const sessions_t *self);
const sessions_stats_t *sessions_stats(const sessions_t *self);
const char *transport_name(transport_t t);
/* Sends a message not tied to a request (dropped when the session has no sink). Steals msg. */
void session_notify(session_t *s, json_t *msg);

#endif
