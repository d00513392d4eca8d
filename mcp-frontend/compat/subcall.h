/* mcp-frontend/compat/subcall.h — one tool of /mcp's run on behalf of another call, its answer
 * handed back instead of sent: the drop-in endpoints (compat.h) build their stateful tools from
 * snakepit's own (the secure-sandbox endpoint's workspace is a sandbox session, its snapshots
 * are state snapshots), so that quotas, records and the session bookkeeping stay in one place.
 *
 * The inner call is a legacy-era call on the outer call's session and tenant: its answer is
 * the plain CallToolResult, without the 2026-07-28 decorations, which the outer call adds to
 * its own answer. The outer call is held until fn has run. */
#ifndef SP_FE_SUBCALL_H
#define SP_FE_SUBCALL_H
#include <jansson.h>

#include "mcp-frontend/rpc/call.h"
#include "mcp-frontend/tools/tools.h"

/* result: the inner tool's CallToolResult (borrowed, valid during fn), or NULL when the tool
 * answered with a JSON-RPC error (message says which) or no answer at all. */
typedef void(subcall_fn)(void *arg, call_t *outer, const json_t *result, const char *message);

/* Runs tool(args) (args borrowed) for outer; fn is called exactly once, at once or later. */
void subcall_run(call_t *outer, const char *name, tool_fn *tool, json_t *args, subcall_fn *fn,
                 void *arg);

/* The structuredContent of a tool's answer that is not an error, else NULL; why points at the
 * answer's text (or message) otherwise. */
json_t *subcall_ok(const json_t *result, const char *message, const char **why);

#endif
