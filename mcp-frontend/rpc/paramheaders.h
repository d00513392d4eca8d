/* mcp-frontend/rpc/paramheaders.h — tool parameters mirrored into HTTP headers (MCP 2026-07-28
 * server/tools §"x-mcp-header", basic/transports/streamable-http §"Custom Headers from Tool
 * Parameters"). A tool may mark an argument with "x-mcp-header": "Region" so that a gateway can
 * route or rate-limit on it without reading the body; clients then send its value as
 * Mcp-Param-Region, and a server that reads the body MUST refuse a call whose header is missing
 * or says something else (400, -32020), so that what a proxy acted on is what runs.
 *
 * snakepit's own tools declare none: no argument of theirs is something an intermediary should
 * route on, and most (code, files) must not travel in headers. The conformance fixture that
 * exercises the machinery declares one (fixtures_modern.c).
 *
 * Two pure halves: paramheaders_scan reads the declarations of an inputSchema and checks the
 * spec's constraints on them (a token, unique case-insensitively, on a string, integer or
 * boolean property reached from the root through "properties" alone); paramheaders_check holds
 * a call's headers against its arguments: a value in the body needs its header, decoded (the
 * Base64 sentinel, reqheaders.h) and equal — integers numerically; a null or absent value
 * expects none (a header sent anyway is ignored, as intermediaries must forward unknown
 * headers). Fuzzed by tests/fuzz/fuzz_envelope.c. */
#ifndef SP_FE_PARAMHEADERS_H
#define SP_FE_PARAMHEADERS_H
#include <jansson.h>
#include <stddef.h>

typedef struct paramheaders paramheaders_t;

/* A request header's value by name (case-insensitive, as HTTP names are), or NULL. */
typedef const char *(paramheaders_lookup_fn)(void *ctx, const char *name);

/* The declarations of a tool's inputSchema: NULL with err empty when it declares none; NULL with
 * the broken constraint in err when a declaration is invalid (clients drop such a tool). */
paramheaders_t *paramheaders_scan(const json_t *input_schema, char *err, size_t errlen);
void paramheaders_destroy(paramheaders_t **self_p);
size_t paramheaders_count(const paramheaders_t *self);
/* The i-th declaration's header name ("Mcp-Param-Region"). */
const char *paramheaders_name(const paramheaders_t *self, size_t i);

/* The headers lookup finds against the call's arguments (an object, or NULL): 0, or -1 with the
 * reason in why (the request is refused 400, -32020 HeaderMismatch). */
int paramheaders_check(const paramheaders_t *self, const json_t *arguments,
                       paramheaders_lookup_fn *lookup, void *ctx, char *why, size_t whylen);

#endif
