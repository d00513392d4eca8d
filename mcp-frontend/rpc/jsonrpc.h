/* mcp-frontend/rpc/jsonrpc.h — JSON-RPC 2.0 messages as MCP uses them (MCP 2025-11-25 "Base
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
#define RPC_RESOURCE_NOT_FOUND -32002 /* MCP ≤ 2025-11-25: resources/read of an unknown URI */
/* The answer of a request its client cancelled, where the HTTP transport needs one: a POST that
 * takes only JSON must get a JSON object (LSP's number, outside JSON-RPC's reserved range). */
#define RPC_REQUEST_CANCELLED -32800
/* MCP 2026-07-28 (basic/index §"Error Codes"; -32020..-32099 is the specification's alone) */
#define RPC_HEADER_MISMATCH     -32020 /* HTTP headers and body disagree: 400 */
#define RPC_MISSING_CAPABILITY  -32021 /* data: {requiredCapabilities}: 400 */
#define RPC_UNSUPPORTED_VERSION -32022 /* data: {supported, requested}: 400 */
/* snakepit's own errors, as legacy sessions have always seen them: implementation-defined codes
 * in -32000..-32099, which is what that range meant up to 2025-11-25 */
#define RPC_RATE_LIMITED -32029 /* data: {retry_after_ms} */
#define RPC_UNAVAILABLE  -32030 /* a dependency (Redis, broker) cannot serve now */
#define RPC_QUOTA        -32031 /* a tenant limit refuses the call */
/* ... and as 2026-07-28 requests see them: that revision forbids emitting undefined codes in
 * -32020..-32099 and asks for new ones outside -32768..-32000 altogether. Same last digits. */
#define RPC_MODERN_RATE_LIMITED -31029
#define RPC_MODERN_UNAVAILABLE  -31030
#define RPC_MODERN_QUOTA        -31031

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

/* The code a 2026-07-28 request gets for one of ours: the three above move out of the
 * reserved range, and "resource not found" is -32602 there (-32002 must not be emitted). */
int rpc_code_modern(int code);
/* 1 for a rate-limit error in either era. */
int rpc_code_is_rate_limit(int code);

/* Compact serialization; the caller frees. */
char *rpc_dump(const json_t *msg, size_t *len);

/* json_dumps(v, flags) with every real in the shortest of 15, 16 or 17 significant digits that
 * reads back as the same double (for normal doubles what Python's repr prints): 0.1 stays 0.1, 0.1 + 0.2 is
 * 0.30000000000000004, 1763924000.123456 keeps its microseconds. jansson offers a fixed
 * precision only (17 digits print 0.1 as 0.10000000000000001; 12 lost data). NULL when
 * json_dumps fails; the caller frees. */
char *json_text(const json_t *v, size_t flags);

#endif
