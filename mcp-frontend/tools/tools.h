/* mcp-frontend/tools/tools.h — tools/list and tools/call over a table of tools (tooldefs.c holds
 * snakepit's, fixtures.c the conformance suite's). One row says everything about a tool: its
 * name, title, description, arguments, output schema, handler and whether it takes tasks. The
 * published inputSchema and the checks a call's arguments pass before the handler runs come
 * from the same argument list, so the two cannot disagree: a handler sees only known
 * arguments, of the declared JSON types, the required ones present. What the types cannot say
 * (ranges, formats, the profile's modules) the handler checks, with tool_bad.
 *
 * Arguments a call got wrong are tool results with isError, in both eras, whose text names the
 * argument, what it takes and what was sent: MCP 2025-11-25 tools §"Error Handling" counts
 * input validation errors as tool execution errors, which a client SHOULD show the model so that
 * it corrects the call (SEP-1303), where a JSON-RPC error may never reach it. Such a result has
 * no structuredContent (it would not match the tool's outputSchema) but a machine-readable
 * _meta["snakepit/error"] {kind, argument} for programs (the CLI's exit status). JSON-RPC
 * errors (-32602) stay for what is wrong with the request itself: an unknown tool, no name,
 * arguments that are not an object, a malformed task. A call that ran and failed is a result
 * with isError too, with its structuredContent. */
#ifndef SP_FE_TOOLS_H
#define SP_FE_TOOLS_H
#include <jansson.h>
#include <stdint.h>

#include "mcp-frontend/rpc/call.h"

typedef enum {
    ARG_STRING,
    ARG_NUMBER,
    ARG_INTEGER,
    ARG_BOOLEAN,
    ARG_ARRAY,
    ARG_OBJECT,
    ARG_SIZE, /* an integer (MB) or a string with a unit ("256m"): units.h */
} arg_type_t;

enum {
    ARG_REQUIRED = 1,
    ARG_NULLABLE = 2, /* null is taken as absent (what the older sandbox servers' clients send) */
    ARG_PROFILE = 4,  /* a profile's name: its schema's enum lists the profiles served now */
};

typedef struct {
    const char *name; /* NULL ends a list */
    arg_type_t type;
    int flags;
    const char *description; /* may name profiles through proftext.h's placeholders */
    const char *schema;      /* further JSON Schema keywords, as object members, or NULL */
} tool_arg_t;

/* params.task of a task-augmented call (MCP 2025-11-25 "Tasks"), checked already. */
typedef struct {
    int wanted;
    long ttl_ms;       /* -1 when not given */
    struct hold *hold; /* one of the tenant's max_tasks (state/holds.h), once taken */
} tool_task_t;

/* Answers c exactly once, at once or later. args is an object (possibly empty). */
typedef void(tool_fn)(call_t *c, json_t *args, const tool_task_t *task);

typedef struct {
    const char *name; /* NULL ends a table */
    const char *title;
    const char *description;   /* may name profiles through proftext.h's placeholders */
    const tool_arg_t *args;    /* the arguments, ended by {NULL}; NULL: none */
    const char *input_schema;  /* instead of args: published as is, arguments unchecked */
    const char *output_schema; /* JSON text, or NULL */
    const char *annotations;   /* JSON text, or NULL */
    tool_fn *run;
    int tasks; /* execution.taskSupport "optional" */
} tool_t;

typedef struct tools tools_t;

typedef struct {
    uint64_t invalid_args;  /* calls refused for their arguments (or -32602) */
    uint64_t unknown_tools; /* calls of a name no row has */
} tools_stats_t;

tools_t *tools_new(long page_size);
void tools_destroy(tools_t **self_p);
/* Publishes the rows of table, after those added before. A malformed schema in a row is a
 * programming error and aborts. */
void tools_add(tools_t *self, const tool_t *table);
const tools_stats_t *tools_stats(const tools_t *self);

/* The table of the endpoint a request came to (endpoint.h; NULL: /mcp, fe->tools). */
tools_t *tools_of(const struct fe *fe, const endpoint_t *ep);
/* The Mcp-Param-* declarations (paramheaders.h) of the tool named name, or NULL: most declare
 * none. The HTTP transport holds a tools/call's headers against them before admitting it. */
const struct paramheaders *tools_mirrors(const tools_t *self, const char *name);

/* The methods (mcp.c's table). */
void tools_list(call_t *c);
void tools_call(call_t *c);

/* The _meta member of a refusal, and its kinds. */
#define TOOL_ERROR_META       "snakepit/error"
#define TOOL_INVALID_ARGUMENT "invalid_argument" /* fix the argument and call again */
#define TOOL_NOT_FOUND        "not_found"        /* no such id (or another tenant's) */
#define TOOL_UNAVAILABLE      "unavailable"      /* cannot be served now; try later */

/* A CallToolResult with isError, the text, and _meta[TOOL_ERROR_META] = {kind, argument}
 * (argument may be NULL). */
json_t *tool_error(const char *kind, const char *argument, const char *text);
/* For handlers: the call answered with an argument error (counted) whose message names the
 * argument; returns -1. tool_bad is for messages that name it themselves. */
int tool_bad_arg(call_t *c, const char *argument, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int tool_bad(call_t *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The call answered with a refusal of another kind (TOOL_NOT_FOUND, TOOL_UNAVAILABLE); -1. */
int tool_refuse(call_t *c, const char *kind, const char *argument, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
