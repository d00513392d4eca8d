/* mcp-frontend/transport/exchange_legacy.h — the legacy side of the /mcp endpoint (sessions), for
 * exchange_mcp.c once a request is known to be legacy and its caller known. */
#ifndef SP_FE_EXCHANGE_LEGACY_H
#define SP_FE_EXCHANGE_LEGACY_H
#include "exchange.h"

/* A legacy request (its POST body parsed into ex->rpc, or a GET/DELETE): its version, its
 * session (looked up, possibly in Redis: the exchange is suspended meanwhile), the method. */
enum MHD_Result exchange_legacy(exchange_t *ex);
/* The handler was called again while the session lookup was (or had been) in flight. */
enum MHD_Result exchange_legacy_resume(exchange_t *ex);
/* 1 when MCP-Protocol-Version names no legacy version we serve (a 400 is queued). */
int exchange_legacy_version_refused(exchange_t *ex, const json_t *id);

#endif
