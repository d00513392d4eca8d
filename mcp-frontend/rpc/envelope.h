/* mcp-frontend/rpc/envelope.h — which protocol revision a message speaks, and the per-request
 * envelope of MCP 2026-07-28 (basic/index §"_meta", "Per-request protocol fields"): every
 * modern request carries in params._meta its protocol version (required), the client's
 * capabilities for this request (required), and optionally the client's identity and a log
 * level. There is no handshake: a server must not carry any of this from one request to the
 * next (basic/index §Statelessness).
 *
 * A message whose _meta holds io.modelcontextprotocol/protocolVersion "claims" the modern
 * era and is served statelessly; one without is legacy (initialize and sessions, 2025-11-25
 * and older) — basic/versioning §"Backward Compatibility with Initialization-Based Versions".
 * Pure: decoding only, fuzzed by tests/fuzz/fuzz_envelope.c. */
#ifndef SP_FE_ENVELOPE_H
#define SP_FE_ENVELOPE_H
#include <jansson.h>
#include <stddef.h>

#define MCP_MODERN "2026-07-28" /* the stateless revision */
#define MCP_LEGACY "2025-11-25" /* the newest revision with initialize */

#define META_PROTOCOL_VERSION "io.modelcontextprotocol/protocolVersion"
#define META_CLIENT_CAPS      "io.modelcontextprotocol/clientCapabilities"
#define META_CLIENT_INFO      "io.modelcontextprotocol/clientInfo"
#define META_LOG_LEVEL        "io.modelcontextprotocol/logLevel"
#define META_SERVER_INFO      "io.modelcontextprotocol/serverInfo"
#define META_SUBSCRIPTION_ID  "io.modelcontextprotocol/subscriptionId"
#define EXT_TASKS             "io.modelcontextprotocol/tasks"

typedef struct {
    const char *version; /* borrowed from the message */
    json_t *caps;        /* borrowed: an object ({} = no optional capability) */
    json_t *client_info; /* borrowed, or NULL */
    int log_level;       /* loglevel.h; LOGLEVEL_NONE when absent: no notifications/message */
} envelope_t;

typedef enum {
    ENVELOPE_NONE,    /* no claim: a legacy message */
    ENVELOPE_OK,      /* a well-formed modern envelope (its version may still be unsupported) */
    ENVELOPE_INVALID, /* a claim with a malformed envelope: -32602, HTTP 400 */
} envelope_status_t;

/* params: the message's params (may be NULL). why: the reason for ENVELOPE_INVALID. */
envelope_status_t envelope_parse(const json_t *params, envelope_t *out, char *why, size_t whylen);

/* Versions served: modern ones statelessly, legacy ones through initialize. */
int envelope_modern_supported(const char *version);
int envelope_legacy_supported(const char *version);
/* Does a version name a modern revision? Those at or after 2026-07-28, and any name that is not
 * a date (the official SDKs compare the strings, so a bogus "v999.0.0" is modern and is then
 * refused -32022, not sent down the legacy path). */
int envelope_names_modern(const char *version);
/* The supported versions as a JSON array (for -32022 and server/discover); new reference. */
json_t *envelope_supported_json(void);
/* The legacy versions, for messages about them ("2025-11-25, 2025-06-18, ..."). */
const char *envelope_legacy_list(void);

/* Capability checks on a request's declared capabilities (NULL: none declared). */
int envelope_has_cap(const json_t *caps, const char *name);
int envelope_has_extension(const json_t *caps, const char *id);

#endif
