/* common/metrics_http.c — see metrics_http.h. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <microhttpd.h>
#include <zmq.h>

#include "log.h"
#include "metrics_http.h"

struct metrics_http {
    struct MHD_Daemon *daemon;
    loop_t *loop;
    int epoll_fd;
    int port;
    metrics_render_fn *render;
    void *arg;
    char post_path[64]; /* metrics_http_post's route; "" when none */
    metrics_post_fn *post;
    void *post_arg;
};

/* 1 when the peer is on this machine: 127.0.0.0/8, ::1 or ::ffff:127.0.0.0/104. */
static int s_loopback(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    const struct sockaddr *sa = ci ? ci->client_addr : NULL;
    if (!sa) return 0;
    if (sa->sa_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
    if (sa->sa_family == AF_INET6) {
        const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
        return IN6_IS_ADDR_LOOPBACK(a) || (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
    }
    return 0;
}

int metrics_http_split(const char *listen, char *host, size_t host_cap, int *port)
{
    const char *colon, *h = listen;
    size_t hlen;
    if (listen[0] == '[') {
        const char *close = strchr(listen, ']');
        if (!close || close[1] != ':') return -1;
        h = listen + 1;
        hlen = (size_t)(close - h);
        colon = close + 1;
    } else {
        colon = strrchr(listen, ':');
        if (!colon) return -1;
        hlen = (size_t)(colon - listen);
    }
    if (hlen >= host_cap) return -1;
    memcpy(host, h, hlen);
    host[hlen] = '\0';
    char *end;
    long p = strtol(colon + 1, &end, 10);
    if (!colon[1] || *end || p < 0 || p > 65535) return -1;
    *port = (int)p;
    return 0;
}

static void s_mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    char msg[256];
    vsnprintf(msg, sizeof msg, fmt, ap);
    msg[strcspn(msg, "\n")] = '\0';
    char q[300];
    log_warn("event=metrics_http_error error=%s", log_quote(q, sizeof q, msg));
}

static enum MHD_Result s_respond(struct MHD_Connection *conn, unsigned code, const char *type,
                                 char *body, size_t len)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", type);
    MHD_add_response_header(r, "Cache-Control", "no-store");
    enum MHD_Result rc = MHD_queue_response(conn, code, r);
    MHD_destroy_response(r);
    return rc;
}

static enum MHD_Result s_on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                    const char *method, const char *version,
                                    const char *upload_data, size_t *upload_data_size, void **ctx)
{
    (void)version, (void)upload_data;
    metrics_http_t *self = cls;
    if (!*ctx) { /* first call: headers only; answer on the next */
        *ctx = self;
        return MHD_YES;
    }
    if (*upload_data_size) return MHD_NO; /* no request carries a body here */
    if (self->post && strcmp(method, "POST") == 0 && strcmp(url, self->post_path) == 0) {
        if (!s_loopback(conn))
            return s_respond(conn, 403, "text/plain", xstrdup("only from this machine\n"), 23);
        buf_t b;
        buf_init(&b);
        unsigned code = self->post(self->post_arg, &b);
        size_t len;
        char *body = buf_steal(&b, &len);
        return s_respond(conn, code, "application/json", body, len);
    }
    if ((strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) ||
        (self->post && strcmp(url, self->post_path) == 0))
        return s_respond(conn, 405, "text/plain", xstrdup("method not allowed\n"), 19);
    if (strcmp(url, "/metrics") == 0) {
        buf_t b;
        buf_init(&b);
        self->render(self->arg, &b);
        size_t len;
        char *body = buf_steal(&b, &len);
        return s_respond(conn, 200, "text/plain; version=0.0.4; charset=utf-8", body, len);
    }
    if (strcmp(url, "/healthz") == 0) return s_respond(conn, 200, "text/plain", xstrdup("ok\n"), 3);
    return s_respond(conn, 404, "text/plain", xstrdup("not found: try /metrics\n"), 24);
}

static void s_on_ready(loop_t *loop, short revents, void *arg)
{
    (void)loop, (void)revents;
    metrics_http_t *self = arg;
    MHD_run(self->daemon);
}

static long s_prepare(loop_t *loop, void *arg)
{
    (void)loop;
    metrics_http_t *self = arg;
    MHD_UNSIGNED_LONG_LONG t;
    if (MHD_get_timeout(self->daemon, &t) != MHD_YES) return -1;
    return t > 60000 ? 60000 : (long)t;
}

static int s_resolve(const char *host, int port, struct sockaddr_storage *ss, char *err,
                     size_t errlen)
{
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    char service[8];
    snprintf(service, sizeof service, "%d", port);
    int rc = getaddrinfo(host[0] ? host : NULL, service, &hints, &res);
    if (rc != 0 || !res) {
        snprintf(err, errlen, "metrics address %s: %s", host, gai_strerror(rc));
        return -1;
    }
    memcpy(ss, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);
    return 0;
}

metrics_http_t *metrics_http_new(loop_t *loop, const char *listen, metrics_render_fn *fn, void *arg,
                                 char *err, size_t errlen)
{
    char host[256];
    int port;
    if (metrics_http_split(listen, host, sizeof host, &port) < 0) {
        snprintf(err, errlen, "metrics address '%s': want HOST:PORT", listen);
        return NULL;
    }
    struct sockaddr_storage ss = {0};
    if (s_resolve(host, port, &ss, err, errlen) < 0) return NULL;
    metrics_http_t *self = xcalloc(1, sizeof *self);
    self->loop = loop;
    self->render = fn;
    self->arg = arg;
    unsigned flags = MHD_USE_EPOLL | (ss.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0);
    self->daemon = MHD_start_daemon(
        flags, (uint16_t)port, NULL, NULL, s_on_request, self, MHD_OPTION_SOCK_ADDR,
        (struct sockaddr *)&ss, MHD_OPTION_CONNECTION_LIMIT, (unsigned)32,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
        (size_t)32768, MHD_OPTION_EXTERNAL_LOGGER, s_mhd_log, NULL, MHD_OPTION_END);
    if (!self->daemon) {
        snprintf(err, errlen, "metrics: cannot listen on %s (in use? bad address?)", listen);
        free(self);
        return NULL;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(self->daemon, MHD_DAEMON_INFO_EPOLL_FD);
    const union MHD_DaemonInfo *pinfo =
        MHD_get_daemon_info(self->daemon, MHD_DAEMON_INFO_BIND_PORT);
    if (!info) {
        snprintf(err, errlen, "metrics: libmicrohttpd has no epoll support here");
        MHD_stop_daemon(self->daemon);
        free(self);
        return NULL;
    }
    self->epoll_fd = info->epoll_fd;
    self->port = pinfo ? pinfo->port : port;
    loop_add_fd(loop, self->epoll_fd, ZMQ_POLLIN, s_on_ready, self);
    loop_on_prepare(loop, s_prepare, self);
    return self;
}

void metrics_http_destroy(metrics_http_t **self_p)
{
    assert(self_p);
    metrics_http_t *self = *self_p;
    if (!self) return;
    loop_remove_fd(self->loop, self->epoll_fd);
    MHD_stop_daemon(self->daemon);
    free(self);
    *self_p = NULL;
}

void metrics_http_post(metrics_http_t *self, const char *path, metrics_post_fn *fn, void *arg)
{
    snprintf(self->post_path, sizeof self->post_path, "%s", path);
    self->post = fn;
    self->post_arg = arg;
}

int metrics_http_port(const metrics_http_t *self)
{
    return self->port;
}
