/* mcp-frontend/transport/exchange_mcp.h — the /mcp endpoint (MCP 2025-11-25 "Transports",
 * Streamable HTTP) for an exchange: called by http.c's access handler whenever the request makes
 * progress (headers in, body in, resumed after Redis or the call answered). */
#ifndef SP_FE_EXCHANGE_MCP_H
#define SP_FE_EXCHANGE_MCP_H
#include "exchange.h"

enum MHD_Result exchange_mcp(exchange_t *ex, const char *url);

#endif
