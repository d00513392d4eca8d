/* mcp-frontend/transport/http.h — the Streamable HTTP transport (MCP 2025-11-25 "Transports") on
 * libmicrohttpd, driven by the front-end's loop: MHD runs in epoll mode without threads of
 * its own; its epoll fd is one of the loop's fds and its timeout bounds the loop's wait.
 * Requests whose answer is not ready (a job, a Redis lookup) are suspended connections.
 *
 *   POST   /mcp      one JSON-RPC message; JSON answer, or SSE when notifications precede it
 *   GET    /mcp      the session's SSE stream for messages not tied to a request
 *   DELETE /mcp      ends the session
 *   GET    /healthz  {"ok":true,...} once listening
 *   GET    /metrics  Prometheus text format 0.0.4
 *   ...              a route a module above registered (http_route_add: the console) */
#ifndef SP_FE_HTTP_H
#define SP_FE_HTTP_H
#include <stddef.h>
#include <stdint.h>

#include "common/metrics_http.h"
#include "mcp-frontend/rpc/fe.h"
#include "exchange.h" /* the transport's settings and counters */

/* Listens, serves on fe's parts, and subscribes to the end of executions (its answers are
 * written at once). 0, or -1 with the reason in err (bad address, port in use, TLS files). */
int http_start(fe_t *fe, const http_conf_t *conf, metrics_render_fn *render, void *render_arg,
               char *err, size_t errlen);
void http_stop(fe_t *fe);
/* Serves the paths under route->prefix by route's functions (exchange.h), from now on. A
 * handful at most; the prefix must not be /mcp's. */
void http_route_add(http_t *self, const http_route_t *route);
const http_stats_t *http_stats(const http_t *self); /* NULL when self is (no --http) */

#endif
