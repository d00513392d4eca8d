/* mcp-frontend/call.h — one JSON-RPC request in flight, whatever its transport.
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

#include "../common/prom.h"
#include "endpoint.h"
#include "jsonrpc.h"
#include "session.h"

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

struct call {
    struct fe *fe;
    session_t *session;  /* held */
    tenant_t *tenant;    /* the session's */
    json_t *msg;         /* the request (owned reference) */
    json_t *id;          /* borrowed from msg */
    const char *method;  /* borrowed from msg */
    call_stats_t *stats; /* its method's, where it is counted when it ends */
    json_t *params;      /* borrowed from msg, never NULL (an empty object at worst) */
    json_t *progress_token;
    double progress; /* last value sent: each notification must increase it */
    uint64_t start_us;
    call_emit_fn *emit; /* NULL once the transport is gone */
    void *emit_ctx;
    int answered;
    int cancelled; /* notifications/cancelled: answer nothing */
    int refs;
    call_cancel_fn *on_cancel; /* stops the work behind the call; NULL when there is none */
    void *cancel_arg;
    uint64_t farm_us; /* time the call's job spent beyond this process (submit → result) */
    call_t *next;     /* in the session's list */
    const endpoint_t *endpoint; /* where the request came in (endpoint.h); NULL: /mcp */
};

/* A call for a request (m->kind == RPC_REQUEST; takes a reference to m->msg), linked into the
 * session's list and held once, by the caller. */
call_t *call_new(struct fe *fe, session_t *s, const rpc_msg_t *m, call_stats_t *stats,
                 call_emit_fn *emit, void *emit_ctx);
call_t *call_find(session_t *s, const json_t *id); /* the call in flight with this id */

void call_reply(call_t *c, json_t *result); /* steals result */
void call_error(call_t *c, int code, const char *message, json_t *data);
void call_send(call_t *c, json_t *msg); /* a notification on the request's stream */
void call_progress(call_t *c, const char *message);
void call_log(call_t *c, int level, const char *logger, json_t *data);
void call_detach(call_t *c); /* the transport is gone; the work goes on */
/* Stops the work (its cancel callback) and ends the call without a response. */
void call_cancel(call_t *c, const char *why);
void call_on_cancel(call_t *c, call_cancel_fn *fn, void *arg); /* fn NULL: nothing to stop */
void call_hold(call_t *c);
void call_release(call_t *c);
int call_alive(const call_t *c); /* still worth answering */
/* Every call in flight on s is cancelled (the session's end_calls hook). */
void calls_cancel_all(session_t *s, const char *why);

/* The params member name as a string, or NULL. */
const char *call_str(const call_t *c, const char *name);
/* The name of an MCP logging level (RFC 5424), or NULL past LOGLEVEL_EMERGENCY. */
const char *loglevel_name(int level);

#endif
