/* mcp-frontend/transport/stdio.h — the stdio transport (MCP 2025-11-25 "Transports" §stdio): one
 * JSON-RPC message per line on stdin, one per line on stdout, nothing else on stdout (logs go
 * to stderr). One session, running as the --tenant identity. EOF on stdin ends the process
 * once the calls in flight have been answered (or a short grace has passed). */
#ifndef SP_FE_STDIO_H
#define SP_FE_STDIO_H
#include "mcp-frontend/rpc/endpoint.h"
#include "mcp-frontend/rpc/fe.h"

typedef struct stdio_tx stdio_tx_t;

/* Serves MCP on stdin/stdout as tenant, as endpoint ep (endpoint.h; NULL: snakepit's own);
 * lines longer than max_line are refused. */
int stdio_start(fe_t *fe, const char *tenant, long max_line, const endpoint_t *ep);
void stdio_stop(fe_t *fe);

#endif
