/* mcp-frontend/rpc/mcp_session.h — MCP sessions of the legacy revisions (MCP 2025-11-25 "Lifecycle"
 * and, for HTTP, "Transports" §Session Management), as this process holds them: what
 * initialize negotiated, the client's logging level, and the calls in flight on it (call.h).
 *
 * Over HTTP a session lives in Redis (mcp_session_store.h), so that any front-end answers any
 * request of it; the object here is this process's copy: made by initialize or read back from
 * Redis, trusted for --session-cache-ms (and only while the bus carries the other front-ends' news
 * of deletions and level changes), then read again. A copy nobody uses is forgotten after a
 * while — the session itself lives on in Redis. The stdio session is the process's own and
 * never leaves it. A 2026-07-28 request over HTTP gets a request scope: a session object with
 * no id and no table, gone with its last call.
 *
 * Closing a session here ends its calls through the hook its owner gave mcp_sessions_new, so this
 * module never reaches up into the call module. Everything runs on the loop thread. */
#ifndef SP_FE_MCP_SESSION_H
#define SP_FE_MCP_SESSION_H
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "common/loop.h"
#include "loglevel.h"
#include "tenant.h"

typedef struct mcp_session mcp_session_t;
typedef struct mcp_sessions mcp_sessions_t;
typedef struct call call_t; /* call.h */

typedef enum { TRANSPORT_STDIO, TRANSPORT_HTTP, TRANSPORT__COUNT } transport_t;

/* Where messages not tied to a request go: stdout for stdio; for HTTP the session's event log
 * in Redis (stream_log.h), from which the front-end holding its GET stream writes them out. */
typedef void(mcp_session_notify_fn)(void *ctx, mcp_session_t *s, json_t *msg);
/* The session ended: its calls are to be cancelled (call.h's calls_cancel_all). */
typedef void(mcp_session_end_calls_fn)(mcp_session_t *s, const char *why);

struct mcp_session {
    mcp_sessions_t *table; /* NULL for a request scope */
    char id[40];           /* Mcp-Session-Id (HTTP); "stdio" for stdio; "" for a request scope */
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
    mcp_session_notify_fn *notify; /* NULL: messages not tied to a request are dropped */
    void *notify_ctx;
    uint64_t last_used_ms; /* monotonic */
    int closed;            /* deleted, evicted or expired: no new requests */
    int refs;
    mcp_session_t *next; /* in the table's bucket */
};

typedef struct {
    long open[TRANSPORT__COUNT];       /* copies held in this process now */
    uint64_t opened[TRANSPORT__COUNT]; /* sessions initialized here, ever */
    uint64_t restored;                 /* copies read back from Redis */
    uint64_t forgotten;                /* idle copies dropped (the sessions live on in Redis) */
} mcp_sessions_stats_t;

typedef struct {
    long max_sessions;   /* copies held in this process at most (idle ones are forgotten) */
    long max_per_tenant; /* a tenant's sessions in Redis: beyond, its least recently used goes */
    long idle_s;         /* a session unused this long expires (in Redis) */
    long cache_ms;       /* a copy read from Redis is trusted this long */
} mcp_sessions_conf_t;

mcp_sessions_t *mcp_sessions_new(loop_t *loop, const mcp_sessions_conf_t *conf,
                                 mcp_session_end_calls_fn *end_calls);
void mcp_sessions_destroy(mcp_sessions_t **self_p); /* closes every session */
const mcp_sessions_conf_t *mcp_sessions_conf(const mcp_sessions_t *self);
/* Where HTTP sessions' notifications go (stream_log.c subscribes at start). */
void mcp_sessions_on_notify(mcp_sessions_t *self, mcp_session_notify_fn *fn, void *ctx);

/* ---- where legacy sessions are kept beyond this process
 * legacy/ (the 2025-era sessions in Redis and their streams' logs) registers itself here at
 * start; the method handlers reach it through the session table, so that only the transport of
 * that era includes legacy/. rc: 0, or -1 when the keeping could not be done (-2: refused, as
 * the keeper says). */
typedef void(mcp_session_done_fn)(void *arg, int rc);
typedef struct {
    /* initialize filled s: keep it (done: only then may its id leave) */
    void (*keep)(void *self, mcp_session_t *s, mcp_session_done_fn *done, void *arg);
    /* logging/setLevel */
    void (*set_level)(void *self, mcp_session_t *s, int level, mcp_session_done_fn *done,
                      void *arg);
    /* resources/subscribe and unsubscribe */
    void (*subscribe)(void *self, mcp_session_t *s, const char *uri, int on,
                      mcp_session_done_fn *done, void *arg);
    /* notifications/cancelled for a call that does not run here */
    void (*cancel_elsewhere)(void *self, mcp_session_t *s, const json_t *request_id,
                             const char *reason);
    /* a resource changed: every session subscribed to it, wherever it is, hears of it */
    void (*resource_updated)(void *self, const char *tenant, const char *uri);
    void *self;
} mcp_session_keeper_t;

void mcp_sessions_kept_by(mcp_sessions_t *self, const mcp_session_keeper_t *keeper);
/* The keeper's verbs, for a session of the table (never a request scope). */
void mcp_session_keep(mcp_session_t *s, mcp_session_done_fn *done, void *arg);
void mcp_session_set_level(mcp_session_t *s, int level, mcp_session_done_fn *done, void *arg);
void mcp_session_subscribe(mcp_session_t *s, const char *uri, int on, mcp_session_done_fn *done,
                           void *arg);
void mcp_session_cancel_elsewhere(mcp_session_t *s, const json_t *request_id, const char *reason);
void mcp_sessions_resource_updated(mcp_sessions_t *self, const char *tenant, const char *uri);

/* A new session with a fresh id, held by the table until mcp_session_close. NULL when no
 * unguessable id can be made (getrandom failed). */
mcp_session_t *mcp_session_new(mcp_sessions_t *self, transport_t transport, tenant_t *tenant);
/* The copy of a session held here (fresh or not; closed ones are not found), or NULL. */
mcp_session_t *mcp_session_find(mcp_sessions_t *self, const char *id);
/* A session read back from Redis (fields: its hash, as mcp_session_store.c writes it): the copy
 * held here, refreshed or made. */
mcp_session_t *mcp_session_restore(mcp_sessions_t *self, tenant_t *tenant, const char *id,
                                   const json_t *fields);
/* 1 while the copy may be used without asking Redis again. */
int mcp_session_fresh(const mcp_session_t *s);
/* Every stored copy is to be read again before its next use (the bus was down: news of
 * deletions may have been missed). */
void mcp_sessions_stale(mcp_sessions_t *self);
/* The scope of one 2026-07-28 request over HTTP: no id, no table, no state beyond its calls;
 * freed with its last reference (the exchange's and its calls'). */
mcp_session_t *mcp_session_scope(tenant_t *tenant, transport_t transport);
void mcp_session_close(mcp_session_t *s); /* ends it here: in-flight calls are cancelled */
void mcp_session_hold(mcp_session_t *s);
void mcp_session_release(mcp_session_t *s);
size_t mcp_sessions_count(const mcp_sessions_t *self);
const mcp_sessions_stats_t *mcp_sessions_stats(const mcp_sessions_t *self);
const char *transport_name(transport_t t);
/* The Redis key of an HTTP session, "sp:t:{<tenant>}:sess:<id>" (mcp_session_store.h), which its
 * event logs extend (stream_log.h). */
void mcp_session_key(char *out, size_t cap, const char *tenant, const char *id);
/* Sends a message not tied to a request (dropped when the session has no sink). Steals msg. */
void mcp_session_notify(mcp_session_t *s, json_t *msg);

#endif
