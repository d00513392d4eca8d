/* mcp-frontend/mcp/lifecycle.h — how the server introduces itself, in each era: initialize (with
 * ping and logging/setLevel, the session-scoped methods of 2025-11-25 and older) and
 * server/discover (2026-07-28: no handshake, the same facts on demand, cacheable). Both name
 * the same server, instructions and features; the capability objects differ where the
 * revisions do (tasks: a core capability then, an extension now; subscriptions: per resource
 * then, subscriptions/listen now). Each drop-in endpoint (compat.h) introduces itself as the
 * server it stands in for, in both eras. */
#ifndef SP_FE_LIFECYCLE_H
#define SP_FE_LIFECYCLE_H
#include "mcp-frontend/rpc/call.h"

/* The methods (mcp.c's table). */
void lifecycle_initialize(call_t *c);
void lifecycle_ping(call_t *c);
void lifecycle_set_level(call_t *c);
void lifecycle_discover(call_t *c);

#endif
