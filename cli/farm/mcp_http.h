/* cli/farm/mcp_http.h — a small blocking MCP client over Streamable HTTP, for `snakepit run`: one
 * request per connection (Connection: close), JSON answers only (no progressToken is sent, so
 * the server never switches to SSE). It initializes a session and calls a tool the way any
 * MCP client would, so the CLI's runs are authenticated, rate-limited and recorded like
 * everyone else's, and it ends that session when it is destroyed (a loop of runs must not
 * leave a session per run behind).
 *
 * A request the farm turns away for now (HTTP 429, or 503 with Retry-After) is sent again
 * after the wait the answer asks for — the JSON-RPC error's retry_after_ms when there is one
 * (Retry-After counts whole seconds) — for as long as the retry budget allows. */
#ifndef SP_MCP_HTTP_H
#define SP_MCP_HTTP_H
#include <jansson.h>
#include <stddef.h>

typedef struct mcp_http mcp_http_t;

/* Why the last request failed, so that the caller can choose its exit status. */
typedef enum {
    MCP_HTTP_OK,
    MCP_HTTP_UNREACHABLE, /* no connection, no answer in time, or the farm cannot serve (503) */
    MCP_HTTP_REFUSED,     /* the API key was refused (401, 403) */
    MCP_HTTP_INVALID,     /* the farm refused the arguments (JSON-RPC -32602) */
    MCP_HTTP_LIMITED,     /* rate limit or quota, still so when the retry budget ran out */
    MCP_HTTP_FAILED,      /* anything else: an answer that is not MCP, an internal error */
} mcp_http_failure_t;

/* url: http[s]://HOST[:PORT]/PATH; ca_file (may be NULL): the CAs an https server's
 * certificate must lead to, instead of the system's. timeout_ms bounds the wait for each
 * answer, retry_ms the time one request may spend waiting to be let through (0: no retry).
 * NULL with the reason in err when the URL is not one. */
mcp_http_t *mcp_http_new(const char *url, const char *key, const char *ca_file, long timeout_ms,
                         long retry_ms, char *err, size_t errlen);
/* Ends the session (HTTP DELETE with its Mcp-Session-Id, MCP 2025-11-25 transports §"Session
 * Management") if one was opened, and frees the client. */
void mcp_http_destroy(mcp_http_t **self_p);
/* initialize + notifications/initialized. 0, or -1 with the reason in err. */
int mcp_http_initialize(mcp_http_t *self, char *err, size_t errlen);
/* tools/call (arguments taken over); returns the CallToolResult object (caller decrefs), or
 * NULL with the reason in err (a JSON-RPC error's message included). */
json_t *mcp_http_call(mcp_http_t *self, const char *tool, json_t *arguments, char *err,
                      size_t errlen);
/* Why the last initialize or call failed. */
mcp_http_failure_t mcp_http_failure(const mcp_http_t *self);
/* A CallToolResult that refused the call rather than ran it (isError, and the front-end's
 * _meta["snakepit/error"] kind: an argument it got wrong or an id it does not know are
 * MCP_HTTP_INVALID, "cannot serve now" MCP_HTTP_UNREACHABLE); MCP_HTTP_OK for any other
 * result. *text: its text, when it has one. */
mcp_http_failure_t mcp_http_refusal(const json_t *result, const char **text);

#endif
