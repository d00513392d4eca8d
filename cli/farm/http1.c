/* cli/farm/http1.c — see http1.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/clock.h"
#include "http1.h"
#include "tls.h"

#define ANSWER_MAX (64u << 20) /* the largest answer read: a result with its images and files */
#define CONNECT_MS 10000       /* a host that does not accept in this long is not reachable */

int http1_parse_url(const char *url, http1_url_t *u, char *err, size_t errlen)
{
    memset(u, 0, sizeof *u);
    size_t scheme = strncmp(url, "https://", 8) == 0 ? 8 : strncmp(url, "http://", 7) == 0 ? 7 : 0;
    if (!scheme) {
        snprintf(err, errlen, "%s: not an http:// or https:// URL", url);
        return -1;
    }
    u->tls = scheme == 8;
    const char *h = url + scheme, *end = h + strcspn(h, "/"), *port = NULL;
    if (*h == '[') { /* [v6]:port */
        const char *close = memchr(h, ']', (size_t)(end - h));
        if (!close) {
            snprintf(err, errlen, "bad URL %s", url);
            return -1;
        }
        snprintf(u->host, sizeof u->host, "%.*s", (int)(close - h - 1), h + 1);
        if (close[1] == ':') port = close + 2;
    } else {
        const char *colon = memchr(h, ':', (size_t)(end - h));
        snprintf(u->host, sizeof u->host, "%.*s", (int)((colon ? colon : end) - h), h);
        if (colon) port = colon + 1;
    }
    char *stop = NULL;
    u->port = port ? (int)strtol(port, &stop, 10) : u->tls ? 443 : 80;
    if (!u->host[0] || u->port <= 0 || u->port > 65535 || (port && stop != end)) {
        snprintf(err, errlen, "bad URL %s", url);
        return -1;
    }
    snprintf(u->path, sizeof u->path, "%s", *end ? end : "/");
    return 0;
}

/* A connected socket within CONNECT_MS (a host that drops packets would otherwise hold a
 * blocking connect for minutes), or -1 with the reason. */
static int s_connect(const http1_url_t *u, char *err, size_t errlen)
{
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
    char port[16];
    snprintf(port, sizeof port, "%d", u->port);
    int rc = getaddrinfo(u->host, port, &hints, &res);
    if (rc != 0) {
        snprintf(err, errlen, "%s: %s", u->host, gai_strerror(rc));
        return -1;
    }
    int fd = -1, why = ECONNREFUSED;
    for (struct addrinfo *a = res; a && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
        if (fd < 0) continue;
        if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) break;
        why = errno;
        if (why == EINPROGRESS) {
            struct pollfd p = {fd, POLLOUT, 0};
            socklen_t len = sizeof why;
            why = ETIMEDOUT;
            if (poll(&p, 1, CONNECT_MS) == 1 &&
                getsockopt(fd, SOL_SOCKET, SO_ERROR, &why, &len) < 0)
                why = errno;
            if (why == 0) break;
        }
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0) {
        snprintf(err, errlen, "cannot connect to %s:%d: %s", u->host, u->port, strerror(why));
        return -1;
    }
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0) {
        snprintf(err, errlen, "socket: %s", strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

/* A connection: the socket, and the TLS session over it for https. */
typedef struct {
    int fd;
    tls_conn_t *tls;
} conn_t;

static int s_send_all(conn_t *c, const buf_t *req, char *err, size_t errlen)
{
    for (size_t off = 0; off < req->len;) {
        ssize_t n = c->tls ? tls_write(c->tls, req->data + off, req->len - off)
                           : send(c->fd, req->data + off, req->len - off, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR && !c->tls) continue;
        if (n <= 0) {
            snprintf(err, errlen, "sending the request: %s",
                     c->tls ? "TLS error" : strerror(errno));
            return -1;
        }
        off += (size_t)n;
    }
    return 0;
}

/* Everything the server sends until it closes, by the deadline. */
static int s_read_all(conn_t *c, uint64_t give_up, buf_t *raw, char *err, size_t errlen)
{
    for (;;) {
        struct pollfd p = {c->fd, POLLIN, 0};
        long left = (long)(give_up - clock_mono_ms());
        if (left <= 0 || (!(c->tls && tls_pending(c->tls)) && poll(&p, 1, (int)left) == 0)) {
            snprintf(err, errlen, "no answer in time");
            return -1;
        }
        char chunk[65536];
        ssize_t n =
            c->tls ? tls_read(c->tls, chunk, sizeof chunk) : read(c->fd, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR && !c->tls) continue;
        if (n < 0) {
            snprintf(err, errlen, "reading the answer: %s", c->tls ? "TLS error" : strerror(errno));
            return -1;
        }
        if (n == 0) return 0;
        buf_append(raw, chunk, (size_t)n);
        if (raw->len > ANSWER_MAX) {
            snprintf(err, errlen, "an answer larger than %u bytes", ANSWER_MAX);
            return -1;
        }
    }
}

/* Decodes a chunked body (RFC 9112 §7.1) in place of the raw one. -1 when it is malformed. */
static int s_dechunk(buf_t *body)
{
    buf_t out;
    buf_init(&out);
    const char *p = (const char *)body->data, *end = p + body->len;
    for (;;) {
        char *stop;
        unsigned long n = p < end ? strtoul(p, &stop, 16) : 0;
        const char *line_end = p < end ? memmem(p, (size_t)(end - p), "\r\n", 2) : NULL;
        if (!line_end || stop == p || n > (size_t)(end - line_end - 2)) {
            buf_free(&out);
            return -1;
        }
        if (n == 0) break;
        buf_append(&out, line_end + 2, n);
        p = line_end + 2 + n + 2;
    }
    buf_free(body);
    *body = out;
    return 0;
}

static int s_parse(buf_t *raw, http1_answer_t *ans, char *err, size_t errlen)
{
    const char *text = (const char *)raw->data;
    const char *end = text ? memmem(text, raw->len, "\r\n\r\n", 4) : NULL;
    if (!end || sscanf(text, "HTTP/1.%*d %d", &ans->status) != 1) {
        snprintf(err, errlen, "not an HTTP answer");
        return -1;
    }
    buf_append(&ans->head, text, (size_t)(end - text) + 2);
    buf_append(&ans->body, end + 4, raw->len - (size_t)(end + 4 - text));
    char te[32], cl[32];
    if (http1_header(ans, "Transfer-Encoding", te, sizeof te) && strcasecmp(te, "chunked") == 0) {
        if (s_dechunk(&ans->body) < 0) {
            snprintf(err, errlen, "a malformed chunked answer");
            return -1;
        }
    } else if (http1_header(ans, "Content-Length", cl, sizeof cl) &&
               strtoull(cl, NULL, 10) > ans->body.len) {
        snprintf(err, errlen, "an answer cut short (%zu of %s bytes)", ans->body.len, cl);
        return -1;
    }
    return 0;
}

int http1_exchange(const http1_url_t *u, const char *method, const char *headers, const char *body,
                   size_t body_len, long timeout_ms, http1_answer_t *ans, char *err, size_t errlen)
{
    memset(ans, 0, sizeof *ans);
    buf_init(&ans->head);
    buf_init(&ans->body);
    buf_t req, raw;
    buf_init(&req);
    buf_init(&raw);
    int is_v6 = strchr(u->host, ':') != NULL;
    buf_printf(&req, "%s %s HTTP/1.1\r\nHost: %s%s%s:%d\r\nConnection: close\r\n", method, u->path,
               is_v6 ? "[" : "", u->host, is_v6 ? "]" : "", u->port);
    if (body) buf_printf(&req, "Content-Length: %zu\r\n", body_len);
    if (headers) buf_puts(&req, headers);
    buf_puts(&req, "\r\n");
    if (body) buf_append(&req, body, body_len);
    uint64_t give_up = clock_mono_ms() + (uint64_t)timeout_ms;
    conn_t c = {.fd = s_connect(u, err, errlen)};
    int rc = -1;
    if (c.fd >= 0 && u->tls)
        c.tls = tls_connect(c.fd, u->host, u->ca_file, timeout_ms, err, errlen);
    if (c.fd >= 0 && (c.tls || !u->tls) && s_send_all(&c, &req, err, errlen) == 0 &&
        s_read_all(&c, give_up, &raw, err, errlen) == 0)
        rc = s_parse(&raw, ans, err, errlen);
    tls_close(&c.tls);
    if (c.fd >= 0) close(c.fd);
    buf_free(&req);
    buf_free(&raw);
    if (rc < 0) http1_answer_free(ans);
    return rc;
}

const char *http1_header(const http1_answer_t *ans, const char *name, char *out, size_t cap)
{
    size_t n = strlen(name);
    const char *text = (const char *)ans->head.data;
    for (const char *line = text ? strstr(text, "\r\n") : NULL; line;
         line = strstr(line + 2, "\r\n")) {
        if (strncasecmp(line + 2, name, n) != 0 || line[2 + n] != ':') continue;
        const char *v = line + 3 + n;
        while (*v == ' ' || *v == '\t') v++;
        size_t len = strcspn(v, "\r\n");
        while (len && (v[len - 1] == ' ' || v[len - 1] == '\t')) len--;
        snprintf(out, cap, "%.*s", (int)len, v);
        return out;
    }
    return NULL;
}

void http1_answer_free(http1_answer_t *ans)
{
    buf_free(&ans->head);
    buf_free(&ans->body);
}
