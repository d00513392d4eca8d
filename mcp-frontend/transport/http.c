/* mcp-frontend/transport/http.c — see http.h. The daemon, its place in the loop, and routing. One
 * exchange_t per HTTP request carries it through the asynchronous steps (authentication,
 * the MCP call, an SSE stream); exchange_mcp.c is the /mcp endpoint, exchange.c holds the
 * responses and streams themselves.
 *
 * libmicrohttpd's rule shapes everything here: a response can be queued only from inside the
 * access handler. So an answer that arrives later (from a job or Redis) is parked in the
 * exchange and the connection resumed; MHD then calls the handler again, which queues it. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zmq.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/profiles.h"
#include "mcp-frontend/farm/execution.h"
#include "mcp-frontend/farm/jobs.h"
#include "mcp-frontend/farm/served.h"
#include "mcp-frontend/rpc/mcp_session.h"
#include "mcp-frontend/state/bus.h"
#include "mcp-frontend/state/store.h"
#include "mcp-frontend/state/tenants.h"
#include "exchange.h"
#include "exchange_mcp.h"
#include "http.h"

/* ---- routes: the MCP endpoint, and the small ones a probe or a scraper asks for */

static enum MHD_Result s_healthz(exchange_t *ex)
{
    fe_t *fe = ex->http->fe;
    char *text, served[512] = "";
    /* the profiles the farm serves, as far as this front-end knows (empty: not known yet):
     * `snakepit up` waits for them before it says the farm is ready */
    for (size_t i = 0, n = 0; served_mask(fe->served) && i < n_profiles && n < sizeof served; i++)
        if (served_has(fe->served, &profiles[i]))
            n += (size_t)snprintf(served + n, n < sizeof served ? sizeof served - n : 0, "%s\"%s\"",
                                  n ? "," : "", profiles[i].name);
    int n = asprintf(
        &text,
        "{\"ok\":true,\"component\":\"mcp\",\"version\":\"%s\",\"broker_connected\":%s,"
        "\"redis_connected\":%s,\"bus_connected\":%s,\"sessions\":%zu,"
        "\"jobs_in_flight\":%zu,\"profiles_served\":[%s]}",
        FE_VERSION, jobs_broker_connected(fe->jobs) ? "true" : "false",
        store_connected(fe->store) ? "true" : "false", bus_connected(fe->bus) ? "true" : "false",
        mcp_sessions_count(fe->mcp_sessions), jobs_count(fe->jobs), served);
    if (n < 0) return MHD_NO;
    return exchange_queue_text(ex, MHD_HTTP_OK, "application/json", text, (size_t)n);
}

/* Ready to serve jobs: the broker and Redis both connected (a Kubernetes readiness probe;
 * /healthz stays 200 while the process lives). */
static enum MHD_Result s_readyz(exchange_t *ex)
{
    fe_t *fe = ex->http->fe;
    int broker = jobs_broker_connected(fe->jobs), redis = store_connected(fe->store);
    char *text;
    int n = asprintf(&text, "{\"ready\":%s,\"broker_connected\":%s,\"redis_connected\":%s}",
                     broker && redis ? "true" : "false", broker ? "true" : "false",
                     redis ? "true" : "false");
    if (n < 0) return MHD_NO;
    return exchange_queue_text(ex, broker && redis ? MHD_HTTP_OK : MHD_HTTP_SERVICE_UNAVAILABLE,
                               "application/json", text, (size_t)n);
}

static enum MHD_Result s_metrics(exchange_t *ex)
{
    buf_t b;
    buf_init(&b);
    ex->http->render(ex->http->render_arg, &b);
    size_t len;
    char *text = buf_steal(&b, &len);
    return exchange_queue_text(ex, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", text,
                               len);
}

static int s_is_get(const char *method)
{
    return !strcmp(method, "GET") || !strcmp(method, "HEAD");
}

/* The route beside /mcp whose prefix the path is, or that with a '/' after it; else NULL. */
static const http_route_t *s_route(const http_t *h, const char *url)
{
    for (int i = 0; i < h->n_routes; i++) {
        size_t n = strlen(h->routes[i].prefix);
        if (!strncmp(url, h->routes[i].prefix, n) && (url[n] == '\0' || url[n] == '/'))
            return &h->routes[i];
    }
    return NULL;
}

/* The request's own endpoint, with its body in (or when it resumes). */
static enum MHD_Result s_serve(exchange_t *ex, const char *url)
{
    return ex->route ? ex->route->serve(ex->route->arg, ex, url) : exchange_mcp(ex, url);
}

void http_route_add(http_t *self, const http_route_t *route)
{
    assert(self->n_routes < HTTP_MAX_ROUTES && route->prefix[0] == '/' && route->serve);
    self->routes[self->n_routes++] = *route;
}

/* MHD's access handler: called when the request begins, for each chunk of its body, once it
 * is all in, and again whenever a suspended connection is resumed (an answer is parked). */
static enum MHD_Result s_access(void *cls, struct MHD_Connection *conn, const char *url,
                                const char *method, const char *version, const char *upload_data,
                                size_t *upload_data_size, void **con_cls)
{
    (void)version;
    exchange_t *ex = *con_cls;
    if (!ex) {
        *con_cls = ex = exchange_new(cls, conn, method);
        if (!strcmp(url, "/healthz") && s_is_get(method)) return s_healthz(ex);
        if (!strcmp(url, "/readyz") && s_is_get(method)) return s_readyz(ex);
        if (!strcmp(url, "/metrics") && s_is_get(method)) return s_metrics(ex);
        /* a route beside /mcp only when the path leaves /mcp's: nothing added in its way */
        if (ex->http->n_routes && strncmp(url, "/mcp", 4) != 0)
            ex->route = s_route(ex->http, url);
        return s_serve(ex, url);
    }
    switch (ex->state) {
    case EX_BODY:
        if (*upload_data_size) {
            exchange_take_body(ex, upload_data, *upload_data_size);
            *upload_data_size = 0;
            return MHD_YES;
        }
        return s_serve(ex, url);
    case EX_READY:
        if (ex->sse) {
            ex->state = EX_STREAMING;
            return exchange_start_sse(ex);
        }
        return exchange_queue_parked(ex);
    case EX_AUTH:
    case EX_SESSION:
    case EX_CALL:
        return s_serve(ex, url);
    case EX_STREAMING:
    case EX_DONE:
        *upload_data_size = 0;
        return MHD_YES;
    }
    return MHD_NO;
}

/* ---- the daemon in the loop */

static void s_on_execution_end(void *arg, const execution_end_t *end);

/* MHD_run, unless MHD is running already: an execution can end inside one of its
 * callbacks (a cancelled job that never reached the broker), and MHD is not reentrant. */
static void s_run(http_t *self)
{
    if (self->running) return;
    self->running = 1;
    MHD_run(self->daemon);
    self->running = 0;
}

static void s_on_epoll(loop_t *loop, short revents, void *arg)
{
    (void)loop, (void)revents;
    s_run(arg);
}

/* Before each wait: run MHD while it has work it knows of without an fd event (a resumed
 * connection, data already read past the request before, an expired timeout). In epoll mode
 * MHD uses edge-triggered events for connections, so a timeout of 0 means "call me now",
 * and nothing else would. */
static long s_prepare(loop_t *loop, void *arg)
{
    (void)loop;
    http_t *self = arg;
    if (!self->daemon) return -1;
    for (int round = 0; round < 16; round++) {
        if (self->kick) {
            self->kick = 0;
            s_run(self);
        }
        MHD_UNSIGNED_LONG_LONG t;
        if (MHD_get_timeout(self->daemon, &t) != MHD_YES) return self->kick ? 0 : -1;
        if (t > 0 && !self->kick) return t > 60000 ? 60000 : (long)t;
        s_run(self);
    }
    return 0;
}

/* Small answers go out as headers and body in separate writes; with Nagle on, the second
 * waits for the client's delayed ACK (up to 200 ms on Linux). An RPC server wants NODELAY. */
static void s_on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                            enum MHD_ConnectionNotificationCode toe)
{
    (void)cls, (void)socket_context;
    if (toe != MHD_CONNECTION_NOTIFY_STARTED) return;
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    int one = 1;
    if (ci && setsockopt(ci->connect_fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) < 0)
        log_debug("event=nodelay_failed error=\"%s\"", strerror(errno));
}

static void s_mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    size_t n = strlen(msg);
    while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r')) msg[--n] = '\0';
    char q[600];
    log_warn("event=http_library_message msg=%s", log_quote(q, sizeof q, msg));
}

static char *s_read_file(const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return NULL;
    }
    buf_t b;
    buf_init(&b);
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0 && b.len < (1u << 20))
        buf_append(&b, chunk, n);
    fclose(f);
    return buf_steal(&b, NULL);
}

static int s_parse_addr(const char *hostport, struct sockaddr_storage *ss, int *v6, int *loopback,
                        char *err, size_t errlen)
{
    char host[128];
    const char *colon = strrchr(hostport, ':');
    if (!colon) {
        snprintf(err, errlen, "--http %s: expected HOST:PORT", hostport);
        return -1;
    }
    size_t hl = (size_t)(colon - hostport);
    if (hl >= sizeof host) hl = sizeof host - 1;
    memcpy(host, hostport, hl);
    host[hl] = '\0';
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (*end || port < 0 || port > 65535) {
        snprintf(err, errlen, "--http %s: bad port", hostport);
        return -1;
    }
    memset(ss, 0, sizeof *ss);
    if (host[0] == '[') {
        memmove(host, host + 1, strlen(host));
        char *rb = strchr(host, ']');
        if (rb) *rb = '\0';
    }
    if (!strcmp(host, "localhost") || !host[0]) snprintf(host, sizeof host, "127.0.0.1");
    struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
    if (inet_pton(AF_INET, host, &a4->sin_addr) == 1) {
        a4->sin_family = AF_INET;
        a4->sin_port = htons((uint16_t)port);
        *v6 = 0;
        *loopback = (ntohl(a4->sin_addr.s_addr) >> 24) == 127;
        return 0;
    }
    if (inet_pton(AF_INET6, host, &a6->sin6_addr) == 1) {
        a6->sin6_family = AF_INET6;
        a6->sin6_port = htons((uint16_t)port);
        *v6 = 1;
        *loopback = IN6_IS_ADDR_LOOPBACK(&a6->sin6_addr);
        return 0;
    }
    snprintf(err, errlen, "--http %s: HOST must be an IP address or localhost", hostport);
    return -1;
}

int http_start(fe_t *fe, const http_conf_t *conf, metrics_render_fn *render, void *render_arg,
               char *err, size_t errlen)
{
    http_t *self = xcalloc(1, sizeof *self);
    self->fe = fe;
    self->conf = *conf;
    self->render = render;
    self->render_arg = render_arg;
    struct sockaddr_storage ss;
    int v6 = 0;
    if (s_parse_addr(self->conf.listen, &ss, &v6, &self->loopback, err, errlen) < 0) {
        free(self);
        return -1;
    }
    int tls = self->conf.tls_cert[0] && self->conf.tls_key[0];
    if (!self->loopback && !tls && !self->conf.allow_remote) {
        snprintf(err, errlen,
                 "refusing plain HTTP on non-loopback address %s: give --tls-cert/--tls-key, "
                 "or --allow-remote when a TLS-terminating reverse proxy is in front",
                 self->conf.listen);
        free(self);
        return -1;
    }
    if (self->conf.anonymous_tenant[0] && !self->loopback) {
        snprintf(err, errlen, "--anonymous-tenant is allowed only on a loopback address");
        free(self);
        return -1;
    }
    unsigned flags = MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG | MHD_USE_TURBO;
    if (v6) flags |= MHD_USE_IPv6;
    char *cert = NULL, *key = NULL;
    if (tls) {
        flags |= MHD_USE_TLS;
        if (!(cert = s_read_file(self->conf.tls_cert, err, errlen)) ||
            !(key = s_read_file(self->conf.tls_key, err, errlen))) {
            free(cert);
            free(self);
            return -1;
        }
    }
    uint16_t port =
        ntohs(v6 ? ((struct sockaddr_in6 *)&ss)->sin6_port : ((struct sockaddr_in *)&ss)->sin_port);
    fe->http = self;
    if (tls)
        self->daemon = MHD_start_daemon(
            flags, port, NULL, NULL, s_access, self, MHD_OPTION_EXTERNAL_LOGGER, s_mhd_log, self,
            MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss, MHD_OPTION_NOTIFY_COMPLETED,
            exchange_completed, self, MHD_OPTION_NOTIFY_CONNECTION, s_on_connection, self,
            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)120, MHD_OPTION_CONNECTION_LIMIT,
            (unsigned)4096, MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned)1024,
            MHD_OPTION_HTTPS_MEM_CERT, cert, MHD_OPTION_HTTPS_MEM_KEY, key, MHD_OPTION_END);
    else
        self->daemon = MHD_start_daemon(
            flags, port, NULL, NULL, s_access, self, MHD_OPTION_EXTERNAL_LOGGER, s_mhd_log, self,
            MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss, MHD_OPTION_NOTIFY_COMPLETED,
            exchange_completed, self, MHD_OPTION_NOTIFY_CONNECTION, s_on_connection, self,
            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)120, MHD_OPTION_CONNECTION_LIMIT,
            (unsigned)4096, MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned)1024, MHD_OPTION_END);
    free(cert);
    free(key);
    if (!self->daemon) {
        snprintf(err, errlen, "cannot listen on %s (address in use, or not available)",
                 self->conf.listen);
        fe->http = NULL;
        free(self);
        return -1;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(self->daemon, MHD_DAEMON_INFO_EPOLL_FD);
    self->epoll_fd = info->epoll_fd;
    loop_add_fd(fe->loop, self->epoll_fd, ZMQ_POLLIN, s_on_epoll, self);
    loop_on_prepare(fe->loop, s_prepare, self);
    self->keepalive_timer = loop_timer_add(fe->loop, 1000, 1000, exchange_keepalive, self);
    executions_on_end(fe->executions, s_on_execution_end, fe);
    log_info("event=http_listening address=%s tls=%d", self->conf.listen, tls);
    return 0;
}

/* An execution ended (execution.h's hook): its answer, and the notifications that followed
 * it, are written now instead of on the loop's next turn. */
static void s_on_execution_end(void *arg, const execution_end_t *end)
{
    (void)end;
    http_t *self = ((fe_t *)arg)->http;                                 /* NULL once stopped */
    if (!self || !self->daemon || !self->kick || self->running) return; /* prepare will */
    self->kick = 0;
    s_run(self);
}

void http_stop(fe_t *fe)
{
    http_t *self = fe->http;
    if (!self) return;
    loop_timer_cancel(fe->loop, self->keepalive_timer);
    loop_remove_fd(fe->loop, self->epoll_fd);
    exchange_close_streams(self);
    MHD_stop_daemon(self->daemon);
    self->daemon = NULL;
    fe->http = NULL;
    free(self);
}

const http_stats_t *http_stats(const http_t *self)
{
    return self ? &self->stats : NULL;
}
