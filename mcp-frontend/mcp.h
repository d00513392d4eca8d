/* mcp-frontend/mcp.h — the MCP protocol core, independent of the transport: the method table
 * and the lifecycle methods (initialize, ping, logging/setLevel), notifications
 * (initialized, cancelled), and the rate limit in front of the methods that count.
 *
 * A transport (stdio.c, http.c) parses a message, finds or makes the session (session.h), and
 * hands the message to mcp_handle with an emitter (call.h says how answers leave). Messages not
 * tied to a request (resource updates, task status) go to the session's notify sink. */
#ifndef SP_FE_MCP_H
#define SP_FE_MCP_H
#include "call.h"
#include "fe.h"
#include "jsonrpc.h"
#include "session.h"

#define MCP_LATEST "2025-11-25"

typedef struct mcp mcp_t;

typedef struct {
    long max_inflight_session; /* requests in flight per session */
} mcp_conf_t;

typedef struct {
    const call_stats_t *labels; /* each method's requests, then other, notifications, ... */
    size_t n_labels;
    uint64_t parse_errors;     /* messages that were not JSON */
    uint64_t invalid_requests; /* JSON, but not a JSON-RPC message we take */
} mcp_stats_t;

/* fe: the parts the method handlers reach through their calls. */
mcp_t *mcp_new(fe_t *fe, const mcp_conf_t *conf);
void mcp_destroy(mcp_t **self_p);
const mcp_stats_t *mcp_stats(const mcp_t *self);

int mcp_version_supported(const char *v);

/* The entry point for transports: takes a reference to m->msg; ep is the endpoint the message
 * came to (endpoint.h; NULL: /mcp). Returns the call when it is still in flight (valid until
 * its final emit or call_detach), else NULL. */
call_t *mcp_handle(mcp_t *self, session_t *s, rpc_msg_t *m, const endpoint_t *ep,
                   call_emit_fn *emit, void *emit_ctx);
/* The answer to a message that did not parse, on the same emitter. */
void mcp_reject(mcp_t *self, const rpc_msg_t *m, const char *transport, call_emit_fn *emit,
                void *emit_ctx);

#endif
