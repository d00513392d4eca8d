/* mcp-frontend/rpc/call.h — one JSON-RPC request in flight, whatever its transport.
 *
 * Every message belonging to a request leaves through the emitter its transport gave:
 * notifications (progress, log) with final = 0, then the response with final = 1 (msg NULL then
 * means "no response": the request was cancelled). For HTTP the emitter is the POST's response
 * stream; for stdio it is stdout.
 *
 * Handlers answer at once or later (a job, a Redis read). A call is freed only after its final
 * answer and once no asynchronous operation holds it (call_hold / call_release), so a late Redis
 * reply or job result never touches freed memory. Work that runs on behalf of a call and can be
 * stopped registers a cancel callback (call_on_cancel): notifications/cancelled and a closing
 * session stop it through that, without this module knowing what the work is. */
#ifndef SP_FE_CALL_H
#define SP_FE_CALL_H
#include <jansson.h>
#include <stdint.h>

#include "common/prom.h"
#include "endpoint.h"
#include "jsonrpc.h"
#include "mcp_session.h"

struct fe; /* fe.h: the process's parts, which handlers reach through the call */

typedef enum {
    OUTCOME_OK,
    OUTCOME_ERROR,
    OUTCOME_CANCELLED,
    OUTCOME_IGNORED,
    OUTCOME__COUNT
} outcome_t;

/* What is counted of the requests of one method (mcp.c keeps one per method). */
typedef struct {
    const char *label;                 /* the method, as a bounded metric label */
    uint64_t outcomes[OUTCOME__COUNT]; /* final answers: ok, error, cancelled (none sent) */
    prom_hist_t seconds;               /* arrival → final answer */
    prom_hist_t overhead;              /* that minus the job's time in the farm (job-backed) */
} call_stats_t;

const char *outcome_name(outcome_t o);

typedef void(call_emit_fn)(void *ctx, call_t *call, json_t *msg, int final);
typedef void(call_cancel_fn)(void *arg, call_t *c);

/* How a 2026-07-28 result may be cached (server/utilities/caching): mcp.c sets it from the
 * method's row; call_reply adds ttlMs and cacheScope to complete results. */
typedef struct {
    int cacheable;
    long ttl_ms;
    int private_scope; /* "private": depends on who asks; else "public" */
} call_cache_t;

struct call {
    struct fe *fe;
    mcp_session_t *session; /* held */
    tenant_t *tenant;       /* the session's */
    json_t *msg;            /* the request (owned reference) */
    json_t *id;             /* borrowed from msg */
    const char *method;     /* borrowed from msg */
    call_stats_t *stats;    /* its method's, where it is counted when it ends */
    json_t *params;         /* borrowed from msg, never NULL (an empty object at worst) */
    json_t *progress_token;
    double progress; /* last value sent: each notification must increase it */
    uint64_t start_us;
    call_emit_fn *emit; /* NULL once the transport is gone */
    void *emit_ctx;
    int emit_owned; /* emit is not a transport (call_redirect): it always hears the end */
    int answered;
    int cancelled; /* notifications/cancelled: answer nothing */
    int refs;
    call_cancel_fn *on_cancel; /* stops the work behind the call; NULL when there is none */
    void *cancel_arg;
    uint64_t farm_us; /* time the call's job spent beyond this process (submit → result) */
    /* the revision: a 2026-07-28 request carries everything in its own envelope */
    int modern;    /* served statelessly (envelope.h); else under the session's version */
    json_t *caps;  /* modern: the capabilities this request declares (borrowed from msg) */
    int log_level; /* modern: this request's logLevel (LOGLEVEL_NONE: no log messages) */
    call_cache_t cache;
    json_t *pending;            /* a handler's result kept while it waits for Redis (owned) */
    const endpoint_t *endpoint; /* where the request came in (endpoint.h); NULL: /mcp */
    call_t *next;               /* in the session's list */
};

/* A call for a request (m->kind == RPC_REQUEST; takes a reference to m->msg), linked into the
 * session's list and held once, by the caller. */
call_t *call_new(struct fe *fe, mcp_session_t *s, const rpc_msg_t *m, call_stats_t *stats,
                 call_emit_fn *emit, void *emit_ctx);
call_t *call_find(mcp_session_t *s, const json_t *id); /* the call in flight with this id */

/* The final answers. For a modern call the result gains resultType ("complete" unless the
 * handler set one), _meta serverInfo and, for cacheable methods, ttlMs and cacheScope; an error
 * code of ours is given its modern number (jsonrpc.h). */
void call_reply(call_t *c, json_t *result); /* steals result */
void call_error(call_t *c, int code, const char *message, json_t *data);
/* -32021: the request needs a capability its client did not declare (named, as
 * data.requiredCapabilities wants: {"sampling": {}}, or {"extensions": {id: {}}}). */
void call_missing_capability(call_t *c, const char *what, json_t *required);
void call_send(call_t *c, json_t *msg); /* a notification on the request's stream */
void call_progress(call_t *c, const char *message);
void call_log(call_t *c, int level, const char *logger, json_t *data);
void call_detach(call_t *c); /* the transport is gone; the work goes on */
/* The rest of the call's messages go to emit instead (a legacy stream's log, stream_log.h). */
void call_redirect(call_t *c, call_emit_fn *emit, void *emit_ctx);
/* Stops the work (its cancel callback) and ends the call without a response. */
void call_cancel(call_t *c, const char *why);
void call_on_cancel(call_t *c, call_cancel_fn *fn, void *arg); /* fn NULL: nothing to stop */
void call_hold(call_t *c);
void call_release(call_t *c);
int call_alive(const call_t *c); /* still worth answering */
/* Every call in flight on s is cancelled (the session's end_calls hook). */
void calls_cancel_all(mcp_session_t *s, const char *why);

/* The level below which no notifications/message goes out on this call. */
int call_log_level(const call_t *c);
/* Does this request's client declare the capability (modern: its envelope; legacy: never
 * asked — a legacy client is never sent anything a capability gates)? */
int call_has_cap(const call_t *c, const char *name);

/* The params member name as a string, or NULL. */
const char *call_str(const call_t *c, const char *name);

#endif
