/* mcp-frontend/rpc/admit.h — which revision a message speaks, and whether a 2026-07-28 one may
 * be served (basic/versioning §"Backward Compatibility with Initialization-Based Versions",
 * basic/transports/streamable-http §"Server Validation"). Both eras share every endpoint:
 *
 *   - a message whose params._meta claims a protocol version is modern: its envelope must be
 *     well formed (-32602), its HTTP headers must agree with its body (-32020: the standard
 *     ones, and last the Mcp-Param-* headers of a tool that mirrors arguments, paramheaders.h),
 *     and its version must be one served (-32022) — each answered HTTP 400 with the request's id;
 *   - a message without a claim is legacy (initialize, sessions) — unless an HTTP request names
 *     a modern revision in its MCP-Protocol-Version header, which means its envelope is missing
 *     (-32602, 400);
 *   - responses are legacy (2026-07-28 clients send none).
 *
 * The checks run in the order the official SDK server runs them, which is also what the
 * conformance suite probes (a body claiming v999.0.0 under a 2026-07-28 header is a header
 * mismatch, not an unsupported version). Each refusal is counted by reason and logged. */
#ifndef SP_FE_ADMIT_H
#define SP_FE_ADMIT_H
#include <jansson.h>
#include <stdint.h>

#include "envelope.h"
#include "jsonrpc.h"
#include "reqheaders.h"

typedef enum { ADMIT_LEGACY, ADMIT_MODERN, ADMIT_REFUSED } admit_t;

typedef enum {
    REFUSED_INVALID_META,        /* malformed or missing envelope: -32602 */
    REFUSED_HEADER_MISMATCH,     /* -32020 */
    REFUSED_UNSUPPORTED_VERSION, /* -32022 */
    REFUSED__COUNT
} admit_refusal_t;

typedef struct {
    uint64_t modern, legacy; /* messages admitted per era */
    uint64_t refused[REFUSED__COUNT];
} admit_stats_t;

typedef struct {
    envelope_t env;  /* ADMIT_MODERN: the request's envelope */
    json_t *error;   /* ADMIT_REFUSED: the error response to send (owned by the caller) */
    unsigned status; /* ADMIT_REFUSED: its HTTP status */
} admission_t;

/* m: a parsed message (not RPC_INVALID). headers: the HTTP request's, or NULL on stdio, where
 * everything is in the body. transport: for the log line. */
admit_t admit_message(admit_stats_t *stats, const rpc_msg_t *m, const reqheaders_t *headers,
                      const char *transport, admission_t *out);
const char *admit_refusal_name(admit_refusal_t r);

#endif
