/* mcp-frontend/endpoint.h — what one MCP endpoint presents: the server it says it is
 * (initialize's serverInfo and instructions) and the tool table behind tools/list and
 * tools/call. snakepit's own endpoint, /mcp, is the NULL endpoint (mcp.c's texts, fe->tools);
 * compat.h adds one for each older sandbox server snakepit replaces. The transport picks the
 * endpoint of each request — from the URL (HTTP) or --compat (stdio) — and the call carries it
 * (call.h), so nothing below the transport looks at URLs. */
#ifndef SP_FE_ENDPOINT_H
#define SP_FE_ENDPOINT_H

struct tools; /* tools.h */

typedef struct endpoint {
    const char *name;         /* as in /mcp/compat/<name> and --compat <name> */
    const char *title;        /* serverInfo.title */
    const char *instructions; /* initialize's instructions; proftext.h placeholders allowed */
    struct tools *tools;      /* this endpoint's tools, and only these */
} endpoint_t;

#endif
