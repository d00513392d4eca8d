/* common/metrics_http.h — a tiny HTTP server for GET /metrics (and /healthz, and one POST route
 * from this machine only: metrics_http_post) for components
 * that have no HTTP server of their own (broker, executor node). libmicrohttpd runs in
 * external-epoll mode inside the component's loop: one fd in the zmq_poll set, its timeout
 * fed through a prepare hook, no threads, so the render callback may read the component's
 * state without locks. Requests have a body cap of zero, a connection limit and an idle
 * timeout, so a slow or hostile scraper costs a few kilobytes at most.
 *
 * The loop's prepare hook cannot be removed: destroy the server only after the loop has
 * stopped for good. */
#ifndef SP_METRICS_HTTP_H
#define SP_METRICS_HTTP_H
#include <stddef.h>

#include "buf.h"
#include "loop.h"

/* Appends the exposition text (common/prom.h) for one scrape. */
typedef void(metrics_render_fn)(void *arg, buf_t *out);

typedef struct metrics_http metrics_http_t;

/* listen is HOST:PORT ("127.0.0.1:9101", "[::1]:9101", "0.0.0.0:9101"; port 0 picks one).
 * NULL with the reason in err. */
metrics_http_t *metrics_http_new(loop_t *loop, const char *listen, metrics_render_fn *fn, void *arg,
                                 char *err, size_t errlen);
void metrics_http_destroy(metrics_http_t **self_p);
int metrics_http_port(const metrics_http_t *self); /* the bound port */

/* One POST route beside them (the executor's "/drain"): fn writes the answer's body into out and
 * returns its HTTP status. It changes the component's state, so it is answered only to peers on
 * this machine (a loopback address); others get 403, whatever address the listener is on. A
 * request with a body is refused like any other. */
typedef unsigned(metrics_post_fn)(void *arg, buf_t *out);
void metrics_http_post(metrics_http_t *self, const char *path, metrics_post_fn *fn, void *arg);

/* Splits HOST:PORT ([v6]:port too) for callers that bind other things. 0 or -1. */
int metrics_http_split(const char *listen, char *host, size_t host_cap, int *port);

#endif
