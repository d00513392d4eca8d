/* mcp-frontend/rpc/endpoint.h — what one MCP endpoint presents: the server it says it is
 * (initialize's and server/discover's serverInfo, instructions and capabilities) and the tool
 * table behind tools/list and tools/call. snakepit's own endpoint, /mcp, is the NULL endpoint
 * (lifecycle.c's texts, fe->tools); compat.h adds one for each older sandbox server snakepit
 * replaces. Every endpoint speaks both protocol eras. The transport picks the endpoint of each
 * request — from the URL (HTTP) or --compat (stdio) — and the call carries it (call.h), so
 * nothing below the transport looks at URLs; a legacy session remembers the endpoint it was
 * opened on (mcp_session.h) and is served there only. */
#ifndef SP_FE_ENDPOINT_H
#define SP_FE_ENDPOINT_H

struct tools; /* tools.h */

typedef struct endpoint {
    const char *name;         /* as in /mcp/compat/<name> and --compat <name> */
    const char *title;        /* serverInfo.title */
    const char *instructions; /* initialize's instructions; proftext.h placeholders allowed */
    struct tools *tools;      /* this endpoint's tools, and only these */
} endpoint_t;

/* serverInfo.title, in either era (initialize's result; 2026-07-28's _meta on every result). */
static inline const char *endpoint_title(const endpoint_t *ep)
{
    return ep ? ep->title : "snakepit Python sandbox";
}

#endif
