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
#include <stdint.h>

#include "../common/metrics_http.h"
#include "fe.h"

typedef struct http http_t;

/* Requests refused before they reached MCP, by reason (snakepit_mcp_rejections_total). */
typedef enum {
    HTTP_REFUSED_NOT_FOUND,
    HTTP_REFUSED_BAD_HOST,
    HTTP_REFUSED_BAD_ORIGIN,
    HTTP_REFUSED_HTTP_METHOD,
    HTTP_REFUSED_NOT_ACCEPTABLE,
    HTTP_REFUSED_CONTENT_TYPE,
    HTTP_REFUSED_BODY_TOO_LARGE,
    HTTP_REFUSED_BAD_PROTOCOL_VERSION,
    HTTP_REFUSED_UNAUTHORIZED,
    HTTP_REFUSED_AUTH_UNAVAILABLE,
    HTTP_REFUSED_TOO_MANY_SESSIONS,
    HTTP_REFUSED_SESSION_FAILED,
    HTTP_REFUSED_MISSING_SESSION,
    HTTP_REFUSED_UNKNOWN_SESSION,
    HTTP_REFUSED_STREAM_EXISTS,
    HTTP_REFUSED_SSE_BACKLOG, /* a client stopped reading its stream: it was ended */
    HTTP_REFUSED__COUNT
} http_refusal_t;

typedef enum {
    AUTH_FAILED_MISSING,
    AUTH_FAILED_MALFORMED,
    AUTH_FAILED_INVALID,
    AUTH_FAILED_UNAVAILABLE, /* Redis could not say: fail closed */
    AUTH_FAILED__COUNT
} auth_failure_t;

#define HTTP_STATUS_MAX 600

typedef struct {
    uint64_t responses[HTTP_STATUS_MAX]; /* by status code */
    uint64_t refused[HTTP_REFUSED__COUNT];
    uint64_t auth_failures[AUTH_FAILED__COUNT];
} http_stats_t;

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
int http_start(fe_t *fe, const http_conf_t *conf, metrics_render_fn *render, void *render_arg,
               char *err, size_t errlen);
void http_stop(fe_t *fe);
const http_stats_t *http_stats(const http_t *self); /* NULL when self is (no --http) */
const char *http_refusal_name(http_refusal_t reason);
const char *auth_failure_name(auth_failure_t reason);

#endif
