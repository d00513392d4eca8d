/* mcp-frontend/rpc/reqheaders.h — the request metadata headers of Streamable HTTP in MCP
 * 2026-07-28 (basic/transports/streamable-http §"Request Metadata"): MCP-Protocol-Version,
 * Mcp-Method and Mcp-Name mirror the body so that load balancers and gateways can route
 * without parsing it, and a server that reads the body MUST refuse a request whose headers
 * say something else (400, -32020 HeaderMismatch) — otherwise a proxy routing on the header
 * and the server acting on the body would disagree about what the request is.
 *
 * Values are compared after trimming optional whitespace (RFC 9110 §5.5) and, for Mcp-Name,
 * after decoding the Base64 sentinel "=?base64?...?=" (§"Value Encoding"). Names are
 * case-insensitive (the caller's lookup), values case-sensitive. Pure; fuzzed by
 * tests/fuzz/fuzz_envelope.c. */
#ifndef SP_FE_REQHEADERS_H
#define SP_FE_REQHEADERS_H
#include <jansson.h>
#include <stddef.h>

#include "common/buf.h"

struct paramheaders; /* paramheaders.h */

typedef struct {
    const char *protocol_version; /* MCP-Protocol-Version, or NULL when absent */
    const char *method;           /* Mcp-Method */
    const char *name;             /* Mcp-Name */
    /* Mcp-Param-* (paramheaders.h, checked by admit.h): the declarations of the tool a tools/call
     * names, NULL when it declares none; and any header's value by name */
    const struct paramheaders *mirrors;
    const char *(*lookup)(void *ctx, const char *name);
    void *lookup_ctx;
} reqheaders_t;

/* The headers present against the body: MCP-Protocol-Version against the envelope's version
 * (claimed), Mcp-Method against method. 0, or -1 with the reason in why (-32020). Checked
 * before anything else, so that a request a proxy saw as one thing is never judged as another. */
int reqheaders_mismatch(const reqheaders_t *h, const char *method, const char *claimed, char *why,
                        size_t whylen);
/* The headers a modern request must carry: MCP-Protocol-Version, Mcp-Method, and Mcp-Name for
 * the methods that name something (tools/call, prompts/get: params.name; resources/read:
 * params.uri; tasks/get, tasks/update, tasks/cancel: params.taskId). 0, or -1 (-32020). */
int reqheaders_required(const reqheaders_t *h, const char *method, const json_t *params, char *why,
                        size_t whylen);
/* A header value as compared: optional whitespace trimmed, the Base64 sentinel decoded (when
 * sentinel is set). Appends to out; -1 when the value holds characters a header may not, or a
 * sentinel whose Base64 is malformed (bad padding, outside the alphabet). */
int reqheaders_value(const char *raw, int sentinel, buf_t *out);

#endif
