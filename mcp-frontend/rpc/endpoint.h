/* mcp-frontend/rpc/endpoint.h — what one MCP endpoint presents: the server it says it is
 * (initialize's and server/discover's serverInfo, instructions and capabilities), the tool
 * table behind tools/list and tools/call, and — when it has them — its own resources and
 * prompts. snakepit's own endpoint, /mcp, is the NULL endpoint (lifecycle.c's texts,
 * fe->tools, mcp/resources.c, mcp/prompts.c); compat.h adds one for each older sandbox server
 * snakepit replaces. Every endpoint speaks both protocol eras. The transport picks the
 * endpoint of each request — from the URL (HTTP) or --compat (stdio) — and the call carries it
 * (call.h), so nothing below the transport looks at URLs; a legacy session remembers the
 * endpoint it was opened on (mcp_session.h) and is served there only.
 *
 * An endpoint declares exactly the capabilities of the server it stands for (MCP 2025-11-25
 * "Lifecycle", capability negotiation): tools and logging always, resources when it lists
 * resources, prompts when it lists prompts. The methods behind a capability it does not
 * declare do not exist there (mcp.c: -32601), so a client never reads /mcp's items through a
 * drop-in endpoint. */
#ifndef SP_FE_ENDPOINT_H
#define SP_FE_ENDPOINT_H
#include <jansson.h>

struct tools; /* tools.h */
struct call;  /* call.h */

/* A resource of the endpoint's own: read answers c (resources/read's result, or an error) now
 * or later. */
typedef struct endpoint_resource {
    const char *uri, *name, *title, *description, *mime_type;
    void (*read)(struct call *c);
} endpoint_resource_t;

typedef struct endpoint_prompt_arg {
    const char *name, *description;
    int required;
} endpoint_prompt_arg_t;

/* A prompt of the endpoint's own: get answers c with a GetPromptResult built from args (an
 * object of strings, or NULL). */
typedef struct endpoint_prompt {
    const char *name, *title, *description;
    const endpoint_prompt_arg_t *args; /* ends with {NULL} */
    void (*get)(struct call *c, json_t *args);
} endpoint_prompt_t;

typedef struct endpoint {
    const char *name;         /* as in /mcp/compat/<name> and --compat <name> */
    const char *title;        /* serverInfo.title */
    const char *instructions; /* initialize's instructions; proftext.h placeholders allowed */
    struct tools *tools;      /* this endpoint's tools, and only these */
    const endpoint_resource_t *resources; /* ends with {NULL}; NULL: no resources capability */
    const endpoint_prompt_t *prompts;     /* ends with {NULL}; NULL: no prompts capability */
} endpoint_t;

/* serverInfo.title, in either era (initialize's result; 2026-07-28's _meta on every result). */
static inline const char *endpoint_title(const endpoint_t *ep)
{
    return ep ? ep->title : "snakepit Python sandbox";
}

#endif
