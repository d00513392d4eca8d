/* common/redis_url.c — see redis_url.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redis_url.h"

static int s_fail(char *err, size_t errlen, const char *url, const char *why)
{
    snprintf(err, errlen, "redis URL '%s': %s (want redis://[user:pass@]host:port[/db] or "
                          "unix:///path[?db=N])", url, why);
    return -1;
}

static int s_copy(char *dst, size_t cap, const char *src, size_t len)
{
    if (len >= cap) return -1;
    memcpy(dst, src, len);
    dst[len] = '\0';
    return 0;
}

int redis_url_parse(const char *url, redis_url_t *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    out->port = 6379;
    if (!url || !*url) return s_fail(err, errlen, "", "empty");
    if (strncmp(url, "unix:", 5) == 0) {
        const char *p = url + 5;
        while (p[0] == '/' && p[1] == '/') p++; /* unix:///x and unix:/x alike */
        const char *q = strchr(p, '?');
        size_t      len = q ? (size_t)(q - p) : strlen(p);
        if (len == 0 || p[0] != '/') return s_fail(err, errlen, url, "socket path must be absolute");
        if (s_copy(out->path, sizeof out->path, p, len) < 0) return s_fail(err, errlen, url, "path too long");
        if (q) {
            if (strncmp(q, "?db=", 4) != 0) return s_fail(err, errlen, url, "unknown query");
            char *end;
            long  db = strtol(q + 4, &end, 10);
            if (*end || db < 0 || db > 1000) return s_fail(err, errlen, url, "bad db");
            out->db = (int)db;
        }
        return 0;
    }
    if (strncmp(url, "redis://", 8) != 0) return s_fail(err, errlen, url, "unknown scheme");
    const char *p = url + 8;
    const char *at = strchr(p, '@');
    if (at) {
        const char *colon = memchr(p, ':', (size_t)(at - p));
        if (colon) {
            if (s_copy(out->user, sizeof out->user, p, (size_t)(colon - p)) < 0 ||
                s_copy(out->password, sizeof out->password, colon + 1, (size_t)(at - colon - 1)) < 0)
                return s_fail(err, errlen, url, "credentials too long");
        } else if (s_copy(out->password, sizeof out->password, p, (size_t)(at - p)) < 0) {
            return s_fail(err, errlen, url, "password too long");
        }
        p = at + 1;
    }
    const char *slash = strchr(p, '/');
    size_t      hostport = slash ? (size_t)(slash - p) : strlen(p);
    const char *colon = memchr(p, ':', hostport);
    size_t      hostlen = colon ? (size_t)(colon - p) : hostport;
    if (hostlen == 0) return s_fail(err, errlen, url, "no host");
    if (s_copy(out->host, sizeof out->host, p, hostlen) < 0) return s_fail(err, errlen, url, "host too long");
    if (colon) {
        char *end;
        long  port = strtol(colon + 1, &end, 10);
        if (end != p + hostport || port < 1 || port > 65535) return s_fail(err, errlen, url, "bad port");
        out->port = (int)port;
    }
    if (slash && slash[1]) {
        char *end;
        long  db = strtol(slash + 1, &end, 10);
        if (*end || db < 0 || db > 1000) return s_fail(err, errlen, url, "bad db");
        out->db = (int)db;
    }
    return 0;
}

void redis_url_describe(const redis_url_t *u, char *out, size_t cap)
{
    if (u->path[0])
        snprintf(out, cap, "unix://%s?db=%d", u->path, u->db);
    else
        snprintf(out, cap, "redis://%s%s%s:%d/%d", u->user[0] ? u->user : "",
                 u->password[0] ? ":***@" : (u->user[0] ? "@" : ""), u->host, u->port, u->db);
}
