/* mcp-frontend/jsonrpc.h — JSON-RPC 2.0 messages as MCP uses them (MCP 2025-11-25 "Base
 * Protocol"): one object per message, "jsonrpc": "2.0", ids that are strings or integers,
 * params that are objects. Parsing is the first thing hostile bytes meet, so it is strict,
 * allocation-capped by the transport's body cap, and reports why it refused in a form that
 * becomes the JSON-RPC error sent back. The fuzz target drives rpc_parse directly. */
#ifndef SP_FE_JSONRPC_H
#define SP_FE_JSONRPC_H
#include <jansson.h>
#include <stddef.h>

/* JSON-RPC 2.0 §5.1 and MCP's own codes */
#define RPC_PARSE_ERROR        -32700
#define RPC_INVALID_REQUEST    -32600
#define RPC_METHOD_NOT_FOUND   -32601
#define RPC_INVALID_PARAMS     -32602
#define RPC_INTERNAL_ERROR     -32603
#define RPC_RESOURCE_NOT_FOUND -32002 /* MCP: resources/read of an unknown URI */
/* implementation-defined server errors (-32000..-32099) */
#define RPC_RATE_LIMITED -32029 /* data: {retry_after_ms} */
#define RPC_UNAVAILABLE  -32030 /* a dependency (Redis, broker) cannot serve now */
#define RPC_QUOTA        -32031 /* a tenant limit refuses the call */

typedef enum {
    RPC_REQUEST,      /* method + id */
    RPC_NOTIFICATION, /* method, no id */
    RPC_RESPONSE,     /* result or error, with id: an answer to a server-initiated request */
    RPC_INVALID,      /* see code and why */
} rpc_kind_t;

typedef struct {
    rpc_kind_t kind;
    json_t *msg;        /* the whole message (owned; NULL when it did not parse) */
    json_t *id;         /* borrowed from msg; NULL when absent or unusable */
    const char *method; /* borrowed from msg */
    json_t *params;     /* borrowed; NULL when absent */
    int code;           /* for RPC_INVALID: RPC_PARSE_ERROR or RPC_INVALID_REQUEST */
    char why[256];
} rpc_msg_t;

/* Parses one message. Returns 0 for a request, notification or response, -1 otherwise (then
 * kind is RPC_INVALID, code and why say what to answer, and id is set when the message had a
 * usable id so that the error can carry it). */
int rpc_parse(const char *data, size_t len, rpc_msg_t *out);
void rpc_msg_clear(rpc_msg_t *m);

/* Builders; each steals the json_t references it is given (id is copied, not stolen). */
json_t *rpc_result(const json_t *id, json_t *result);
json_t *rpc_error(const json_t *id, int code, const char *message, json_t *data);
json_t *rpc_notification(const char *method, json_t *params);

/* JSON strings from bytes that may not be UTF-8 (what user code printed, a cut message, a
 * parser's error): invalid sequences become U+FFFD (utf8.h). json_bytes(NULL, 0) is "",
 * json_str_safe(NULL) is null. */
json_t *json_bytes(const char *data, size_t len);
json_t *json_str_safe(const char *s);

/* Compact serialization; the caller frees. */
char *rpc_dump(const json_t *msg, size_t *len);

#endif
