/* mcp-frontend/http.h — the Streamable HTTP transport (MCP 2025-11-25 "Transports") on
 * libmicrohttpd, driven by the front-end's loop: MHD runs in epoll mode without threads of
 * its own; its epoll fd is one of the loop's fds and its timeout bounds the loop's wait.
 * Requests whose answer is not ready (a job, a Redis lookup) are suspended connections.
 *
 *   POST   /mcp      one JSON-RPC message; JSON answer, or SSE when notifications precede it
 *   GET    /mcp      the session's SSE stream for messages not tied to a request
 *   DELETE /mcp      ends the session
 *   GET    /healthz  {"ok":true,...} once listening
 *   GET    /metrics  Prometheus text format 0.0.4 */
#ifndef SP_FE_HTTP_H
#define SP_FE_HTTP_H
#include <stddef.h>

#include "fe.h"

typedef struct http http_t;

typedef struct {
    char listen[128];        /* HOST:PORT */
    long max_body;           /* bytes of one request body */
    char allow_origin[1024]; /* comma list; empty = loopback origins only; * = any */
    char allow_host[1024];   /* comma list of Host values accepted besides loopback names */
    char tls_cert[512];      /* PEM files: HTTPS when both are given */
    char tls_key[512];
    int allow_remote;          /* plain HTTP on a non-loopback address (behind a TLS proxy) */
    char anonymous_tenant[65]; /* requests without a key run as this tenant (loopback only) */
    long sse_keepalive_s;      /* comment lines on idle SSE streams */
} http_conf_t;

/* Listens, serves on fe's parts, and subscribes to the end of executions (its answers are
 * written at once). 0, or -1 with the reason in err (bad address, port in use, TLS files). */
int http_start(fe_t *fe, const http_conf_t *conf, char *err, size_t errlen);
void http_stop(fe_t *fe);

#endif
