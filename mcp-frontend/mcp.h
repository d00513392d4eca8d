/* mcp-frontend/mcp.h — the MCP protocol core, independent of the transport: sessions (one per
 * initialize), calls (one per JSON-RPC request in flight), and the method table.
 *
 * A transport (stdio.c, http.c) parses a message, finds or makes the session, and hands the
 * message to mcp_handle with an emitter: the function through which every message belonging
 * to that request leaves — notifications (progress, log) with final = 0, then the response
 * with final = 1 (msg NULL then means "no response": the request was cancelled). For HTTP the
 * emitter is the POST's response stream; for stdio it is stdout. Messages not tied to a
 * request (resource updates) go to the session's notify sink.
 *
 * Handlers answer at once or later (a job, a Redis read). A call is freed only after its
 * final answer and once no asynchronous operation holds it (call_hold / call_release), so a
 * late Redis reply or job result never touches freed memory. */
#ifndef SP_FE_MCP_H
#define SP_FE_MCP_H
#include <jansson.h>
#include <stdint.h>

#include "fe.h"
#include "jsonrpc.h"
#include "tenants.h"

#define MCP_LATEST "2025-11-25"

typedef struct session session_t;
typedef struct call call_t;

typedef void(call_emit_fn)(void *ctx, call_t *call, json_t *msg, int final);
typedef void(session_notify_fn)(void *ctx, session_t *s, json_t *msg);

typedef enum { TRANSPORT_STDIO, TRANSPORT_HTTP } transport_t;

/* MCP logging levels (RFC 5424 order); LOGLEVEL_NONE until logging/setLevel */
enum {
    LOGLEVEL_DEBUG,
    LOGLEVEL_INFO,
    LOGLEVEL_NOTICE,
    LOGLEVEL_WARNING,
    LOGLEVEL_ERROR,
    LOGLEVEL_CRITICAL,
    LOGLEVEL_ALERT,
    LOGLEVEL_EMERGENCY,
    LOGLEVEL_NONE
};

struct session {
    fe_t *fe;
    char id[40]; /* Mcp-Session-Id (HTTP); "stdio" for stdio */
    transport_t transport;
    tenant_t *tenant;
    char protocol[16]; /* negotiated version; empty before initialize */
    int initialized;   /* notifications/initialized received */
    int log_level;
    char client_name[64];
    int client_tasks;      /* the client declared tasks support */
    json_t *subscriptions; /* object: uri → true */
    call_t *calls;         /* in flight */
    long n_calls;
    session_notify_fn *notify; /* the GET stream or stdout; NULL when none */
    void *notify_ctx;
    void (*notify_end)(void *ctx); /* the session ended: close that stream */
    uint64_t last_used_ms;         /* monotonic, for idle expiry */
    int closed;                    /* DELETEd or expired: no new requests */
    int refs;
    session_t *next;
};

struct call {
    fe_t *fe;
    session_t *session;
    json_t *msg;        /* the request (owned reference) */
    json_t *id;         /* borrowed from msg */
    const char *method; /* borrowed from msg */
    json_t *params;     /* borrowed from msg, never NULL (an empty object at worst) */
    json_t *progress_token;
    double progress; /* last value sent: each notification must increase it */
    uint64_t start_us;
    call_emit_fn *emit; /* NULL once the transport is gone */
    void *emit_ctx;
    int answered;
    int cancelled; /* notifications/cancelled: answer nothing */
    int refs;
    void *job;        /* the job_t this call waits on, if any */
    uint64_t farm_us; /* time the job spent beyond this process (submit → result) */
    call_t *next;     /* in the session's list */
};

/* ---- sessions */
sessions_t *sessions_new(fe_t *fe);
void sessions_destroy(sessions_t **self_p);
session_t *session_new(fe_t *fe, transport_t transport, tenant_t *tenant);
session_t *session_find(fe_t *fe, const char *id);
void session_close(session_t *s); /* ends it: in-flight calls are cancelled */
void session_hold(session_t *s);
void session_release(session_t *s);
size_t sessions_count(fe_t *fe);
/* Sends a message not tied to a request (dropped when the session has no sink). */
void session_notify(session_t *s, json_t *msg);
int mcp_version_supported(const char *v);

/* ---- the entry point for transports: takes a reference to m->msg. Returns the call when
 * it is still in flight (valid until its final emit or call_detach), else NULL. */
call_t *mcp_handle(fe_t *fe, session_t *s, rpc_msg_t *m, call_emit_fn *emit, void *emit_ctx);
/* The answer to a message that did not parse, on the same emitter. */
void mcp_reject(fe_t *fe, const rpc_msg_t *m, const char *transport, call_emit_fn *emit,
                void *emit_ctx);

/* ---- calls, for handlers */
void call_reply(call_t *c, json_t *result);
void call_error(call_t *c, int code, const char *message, json_t *data);
void call_send(call_t *c, json_t *msg); /* a notification on the request's stream */
void call_progress(call_t *c, const char *message);
void call_log(call_t *c, int level, const char *logger, json_t *data);
void call_detach(call_t *c);                  /* the transport is gone; the work goes on */
void call_cancel(call_t *c, const char *why); /* stop the work; no response will be sent */
void call_hold(call_t *c);
void call_release(call_t *c);
int call_alive(const call_t *c); /* still worth answering */

/* Calls a handler may make of its own: the params as an object (possibly empty). */
const char *call_str(const call_t *c, const char *name);

#endif
