/* mcp-frontend/mcp/mcp.h — the MCP protocol core, independent of the transport: the method table
 * of both eras (legacy 2025-11-25 and older in sessions; 2026-07-28 per request), notifications
 * (initialized, cancelled), the capability gates and the rate limit in front of the methods.
 *
 * A transport (stdio.c, exchange_mcp.c) parses a message, asks admit.h which era it speaks,
 * finds the session (legacy) or makes a request scope (modern, mcp_session.h's ephemeral
 * sessions), and hands it to mcp_handle with an emitter (call.h says how answers leave).
 * Messages not tied to a request (resource updates, task status) go to the legacy session's
 * notify sink, or to subscriptions/listen streams (listen.h). */
#ifndef SP_FE_MCP_H
#define SP_FE_MCP_H
#include "mcp-frontend/rpc/admit.h"
#include "mcp-frontend/rpc/call.h"
#include "mcp-frontend/rpc/fe.h"
#include "mcp-frontend/rpc/jsonrpc.h"
#include "mcp-frontend/rpc/mcp_session.h"

typedef struct mcp mcp_t;

typedef struct {
    long max_inflight_session; /* requests in flight per session */
} mcp_conf_t;

typedef struct {
    const call_stats_t *labels; /* each method's requests, then other, notifications, ... */
    size_t n_labels;
    uint64_t parse_errors;     /* messages that were not JSON */
    uint64_t invalid_requests; /* JSON, but not a JSON-RPC message we take */
    admit_stats_t admit;       /* eras, and modern messages refused before dispatch */
} mcp_stats_t;

/* fe: the parts the method handlers reach through their calls. */
mcp_t *mcp_new(fe_t *fe, const mcp_conf_t *conf);
void mcp_destroy(mcp_t **self_p);
const mcp_stats_t *mcp_stats(const mcp_t *self);

/* Where transports count admissions (admit_message). */
admit_stats_t *mcp_admit_stats(mcp_t *self);

/* The entry point for transports: takes a reference to m->msg. env: the request's envelope
 * when it was admitted as modern, else NULL (legacy: s is its session). ep: the endpoint the
 * message came to (endpoint.h; NULL: /mcp), which is a legacy session's own (the transport
 * checked). Returns the call when it is still in flight (valid until its final emit or
 * call_detach), else NULL. */
call_t *mcp_handle(mcp_t *self, mcp_session_t *s, rpc_msg_t *m, const envelope_t *env,
                   const endpoint_t *ep, call_emit_fn *emit, void *emit_ctx);
/* The answer to a message that did not parse, on the same emitter. */
void mcp_reject(mcp_t *self, const rpc_msg_t *m, const char *transport, call_emit_fn *emit,
                void *emit_ctx);
/* A modern message admit_message refused (its transport sends the error): counted as invalid. */
void mcp_refused(mcp_t *self);

#endif
