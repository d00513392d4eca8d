/* cli/mcp_http.h — a small blocking MCP client over Streamable HTTP, for `snakepit run`: one
 * request per connection (Connection: close), JSON answers only (no progressToken is sent, so
 * the server never switches to SSE). Enough to initialize a session and call a tool the way
 * any MCP client would, so the CLI's runs are authenticated, rate-limited and recorded like
 * everyone else's. */
#ifndef SP_MCP_HTTP_H
#define SP_MCP_HTTP_H
#include <jansson.h>
#include <stddef.h>

typedef struct {
    char host[256];
    int  port;
    char path[256];
    char key[128];
    char session[128];
    int  next_id;
    long timeout_ms;
} mcp_http_t;

/* url: http://HOST:PORT/PATH. 0, or -1 with the reason in err. */
int mcp_http_open(mcp_http_t *c, const char *url, const char *key, long timeout_ms, char *err,
                  size_t errlen);
/* initialize + notifications/initialized. 0 or -1. */
int mcp_http_initialize(mcp_http_t *c, char *err, size_t errlen);
/* tools/call; returns the CallToolResult object (caller decrefs), or NULL with the reason (a
 * JSON-RPC error's message included). */
json_t *mcp_http_call(mcp_http_t *c, const char *tool, json_t *arguments, char *err, size_t errlen);

#endif
