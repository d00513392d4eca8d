/* cli/mcp_http.c — see mcp_http.h. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../common/buf.h"
#include "../common/clock.h"
#include "mcp_http.h"

#define PROTOCOL_VERSION "2025-11-25"
#define MAX_ANSWER       (64u << 20)

int mcp_http_open(mcp_http_t *c, const char *url, const char *key, long timeout_ms, char *err,
                  size_t errlen)
{
    memset(c, 0, sizeof *c);
    c->next_id = 1;
    c->timeout_ms = timeout_ms;
    snprintf(c->key, sizeof c->key, "%s", key ? key : "");
    if (strncmp(url, "http://", 7) != 0) {
        snprintf(err, errlen, "only http:// URLs are supported here (%s)", url);
        return -1;
    }
    const char *h = url + 7, *slash = strchr(h, '/'), *colon = strchr(h, ':');
    if (!slash) slash = h + strlen(h);
    if (!colon || colon > slash) {
        snprintf(err, errlen, "URL without a port: %s", url);
        return -1;
    }
    snprintf(c->host, sizeof c->host, "%.*s", (int)(colon - h), h);
    c->port = atoi(colon + 1);
    snprintf(c->path, sizeof c->path, "%s", *slash ? slash : "/");
    if (c->port <= 0 || c->port > 65535 || !c->host[0]) {
        snprintf(err, errlen, "bad URL %s", url);
        return -1;
    }
    return 0;
}

static int s_connect(const mcp_http_t *c, char *err, size_t errlen)
{
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
    char            port[16];
    snprintf(port, sizeof port, "%d", c->port);
    int rc = getaddrinfo(c->host, port, &hints, &res);
    if (rc != 0) {
        snprintf(err, errlen, "%s: %s", c->host, gai_strerror(rc));
        return -1;
    }
    int fd = -1;
    for (struct addrinfo *a = res; a && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd >= 0 && connect(fd, a->ai_addr, a->ai_addrlen) < 0) {
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(res);
    if (fd < 0) snprintf(err, errlen, "cannot connect to %s:%d: %s", c->host, c->port, strerror(errno));
    return fd;
}

/* One POST; the status, the answer body, and the Mcp-Session-Id header if any. */
static int s_post(mcp_http_t *c, json_t *msg, int *status, buf_t *body, char *err, size_t errlen)
{
    char *payload = json_dumps(msg, JSON_COMPACT);
    if (!payload) {
        snprintf(err, errlen, "cannot encode the request");
        return -1;
    }
    buf_t req;
    buf_init(&req);
    buf_printf(&req,
               "POST %s HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: application/json\r\n"
               "Accept: application/json, text/event-stream\r\nConnection: close\r\n"
               "Content-Length: %zu\r\n",
               c->path, c->host, c->port, strlen(payload));
    if (c->key[0]) buf_printf(&req, "Authorization: Bearer %s\r\n", c->key);
    if (c->session[0])
        buf_printf(&req, "Mcp-Session-Id: %s\r\nMCP-Protocol-Version: %s\r\n", c->session, PROTOCOL_VERSION);
    buf_printf(&req, "\r\n%s", payload);
    free(payload);
    int fd = s_connect(c, err, errlen);
    if (fd < 0) {
        buf_free(&req);
        return -1;
    }
    size_t off = 0;
    while (off < req.len) {
        ssize_t n = write(fd, req.data + off, req.len - off);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            snprintf(err, errlen, "sending the request: %s", strerror(errno));
            close(fd);
            buf_free(&req);
            return -1;
        }
        off += (size_t)n;
    }
    buf_free(&req);
    buf_t    raw;
    buf_init(&raw);
    uint64_t give_up = clock_mono_ms() + (uint64_t)c->timeout_ms;
    for (;;) {
        struct pollfd p = {fd, POLLIN, 0};
        long          left = (long)(give_up - clock_mono_ms());
        if (left <= 0 || poll(&p, 1, (int)left) <= 0) {
            snprintf(err, errlen, "no answer from %s:%d in time", c->host, c->port);
            close(fd);
            buf_free(&raw);
            return -1;
        }
        char    chunk[65536];
        ssize_t n = read(fd, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        buf_append(&raw, chunk, (size_t)n);
        if (raw.len > MAX_ANSWER) break;
    }
    close(fd);
    char *text = (char *)raw.data, *end = text ? strstr(text, "\r\n\r\n") : NULL;
    if (!end || sscanf(text, "HTTP/1.%*d %d", status) != 1) {
        snprintf(err, errlen, "not an HTTP answer from %s:%d", c->host, c->port);
        buf_free(&raw);
        return -1;
    }
    *end = '\0';
    for (char *line = strstr(text, "\r\n"); line; line = strstr(line + 2, "\r\n"))
        if (strncasecmp(line + 2, "Mcp-Session-Id:", 15) == 0) {
            const char *v = line + 17;
            while (*v == ' ') v++;
            snprintf(c->session, sizeof c->session, "%.*s", (int)strcspn(v, "\r\n"), v);
        }
    buf_init(body);
    buf_append(body, end + 4, raw.len - (size_t)(end + 4 - text));
    buf_free(&raw);
    return 0;
}

static json_t *s_request(mcp_http_t *c, const char *method, json_t *params, char *err, size_t errlen)
{
    json_t *msg = json_pack("{s:s, s:i, s:s, s:o}", "jsonrpc", "2.0", "id", c->next_id++, "method",
                            method, "params", params ? params : json_object());
    int     status = 0;
    buf_t   body;
    int     rc = s_post(c, msg, &status, &body, err, errlen);
    json_decref(msg);
    if (rc < 0) return NULL;
    json_t *answer = json_loads((const char *)body.data, 0, NULL);
    if (status != 200 || !answer) {
        json_t     *e = json_object_get(answer, "error");
        const char *m = json_string_value(json_object_get(e, "message"));
        snprintf(err, errlen, "%s: HTTP %d%s%s", method, status, m ? ": " : "",
                 m ? m : (status == 401 ? " (API key refused)" : ""));
        json_decref(answer);
        buf_free(&body);
        return NULL;
    }
    buf_free(&body);
    json_t *error = json_object_get(answer, "error");
    if (error) {
        snprintf(err, errlen, "%s: %s", method,
                 json_string_value(json_object_get(error, "message")) ?: "error");
        json_decref(answer);
        return NULL;
    }
    json_t *result = json_incref(json_object_get(answer, "result"));
    json_decref(answer);
    if (!result) snprintf(err, errlen, "%s: an answer without a result", method);
    return result;
}

int mcp_http_initialize(mcp_http_t *c, char *err, size_t errlen)
{
    json_t *params = json_pack("{s:s, s:{}, s:{s:s, s:s}}", "protocolVersion", PROTOCOL_VERSION,
                               "capabilities", "clientInfo", "name", "snakepit-cli", "version",
                               SNAKEPIT_VERSION);
    json_t *r = s_request(c, "initialize", params, err, errlen);
    if (!r) return -1;
    json_decref(r);
    json_t *note = json_pack("{s:s, s:s}", "jsonrpc", "2.0", "method", "notifications/initialized");
    int     status = 0;
    buf_t   body;
    int     rc = s_post(c, note, &status, &body, err, errlen);
    json_decref(note);
    if (rc == 0) buf_free(&body);
    return rc;
}

json_t *mcp_http_call(mcp_http_t *c, const char *tool, json_t *arguments, char *err, size_t errlen)
{
    return s_request(c, "tools/call", json_pack("{s:s, s:o}", "name", tool, "arguments", arguments),
                     err, errlen);
}
