/* common/redis_url.c — see redis_url.h. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redis_url.h"

static int s_fail(char *err, size_t errlen, const char *url, const char *why)
{
    snprintf(err, errlen,
             "redis URL '%s': %s (want redis://[user:pass@]host:port[/db], unix:///path[?db=N] or "
             "redis-sentinel://[user:pass@]host:port[,host:port...]/master[/db])",
             url, why);
    return -1;
}

static int s_copy(char *dst, size_t cap, const char *src, size_t len)
{
    if (len >= cap) return -1;
    memcpy(dst, src, len);
    dst[len] = '\0';
    return 0;
}

/* "[user:]password@" at p (up to the first '/'), if any; *p moves past it. */
static int s_credentials(const char **p, redis_url_t *out)
{
    const char *at = strchr(*p, '@');
    const char *slash = strchr(*p, '/');
    if (!at || (slash && slash < at)) return 0;
    const char *colon = memchr(*p, ':', (size_t)(at - *p));
    if (colon) {
        if (s_copy(out->user, sizeof out->user, *p, (size_t)(colon - *p)) < 0 ||
            s_copy(out->password, sizeof out->password, colon + 1, (size_t)(at - colon - 1)) < 0)
            return -1;
    } else if (s_copy(out->password, sizeof out->password, *p, (size_t)(at - *p)) < 0) {
        return -1;
    }
    *p = at + 1;
    return 0;
}

/* "host[:port]" of len bytes. */
static int s_host_port(const char *p, size_t len, char *host, size_t host_cap, int *port)
{
    const char *colon = memchr(p, ':', len);
    size_t hostlen = colon ? (size_t)(colon - p) : len;
    if (hostlen == 0 || s_copy(host, host_cap, p, hostlen) < 0) return -1;
    if (colon) {
        char digits[8];
        size_t n = len - hostlen - 1;
        if (n == 0 || n >= sizeof digits) return -1;
        memcpy(digits, colon + 1, n);
        digits[n] = '\0';
        char *end;
        long v = strtol(digits, &end, 10);
        if (*end || v < 1 || v > 65535) return -1;
        *port = (int)v;
    }
    return 0;
}

static int s_db(const char *s, int *db)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || *end || v < 0 || v > 1000) return -1;
    *db = (int)v;
    return 0;
}

static int s_unix(const char *url, redis_url_t *out, char *err, size_t errlen)
{
    const char *p = url + 5;
    while (p[0] == '/' && p[1] == '/') p++; /* unix:///x and unix:/x alike */
    const char *q = strchr(p, '?');
    size_t len = q ? (size_t)(q - p) : strlen(p);
    if (len == 0 || p[0] != '/') return s_fail(err, errlen, url, "socket path must be absolute");
    if (s_copy(out->path, sizeof out->path, p, len) < 0)
        return s_fail(err, errlen, url, "path too long");
    if (q && (strncmp(q, "?db=", 4) != 0 || s_db(q + 4, &out->db) < 0))
        return s_fail(err, errlen, url, "bad query (only ?db=N)");
    return 0;
}

static int s_tcp(const char *url, redis_url_t *out, char *err, size_t errlen)
{
    const char *p = url + 8;
    if (s_credentials(&p, out) < 0) return s_fail(err, errlen, url, "credentials too long");
    const char *slash = strchr(p, '/');
    size_t hostport = slash ? (size_t)(slash - p) : strlen(p);
    if (s_host_port(p, hostport, out->host, sizeof out->host, &out->port) < 0)
        return s_fail(err, errlen, url, "bad host or port");
    if (slash && slash[1] && s_db(slash + 1, &out->db) < 0)
        return s_fail(err, errlen, url, "bad db");
    return 0;
}

static int s_sentinel(const char *url, redis_url_t *out, char *err, size_t errlen)
{
    const char *p = url + strlen("redis-sentinel://");
    if (s_credentials(&p, out) < 0) return s_fail(err, errlen, url, "credentials too long");
    const char *slash = strchr(p, '/');
    if (!slash || !slash[1]) return s_fail(err, errlen, url, "no master name after the sentinels");
    for (const char *s = p; s < slash;) {
        const char *comma = memchr(s, ',', (size_t)(slash - s));
        const char *end = comma ? comma : slash;
        if (out->n_sentinels == REDIS_URL_MAX_SENTINELS)
            return s_fail(err, errlen, url, "more than 8 sentinels");
        redis_addr_t *a = &out->sentinel[out->n_sentinels];
        a->port = REDIS_SENTINEL_PORT;
        if (s_host_port(s, (size_t)(end - s), a->host, sizeof a->host, &a->port) < 0)
            return s_fail(err, errlen, url, "bad sentinel host or port");
        out->n_sentinels++;
        s = comma ? comma + 1 : slash;
    }
    if (out->n_sentinels == 0) return s_fail(err, errlen, url, "no sentinel");
    const char *name = slash + 1, *db = strchr(name, '/');
    size_t len = db ? (size_t)(db - name) : strlen(name);
    if (len == 0 || s_copy(out->master, sizeof out->master, name, len) < 0)
        return s_fail(err, errlen, url, "bad master name");
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)name[i] <= ' ') return s_fail(err, errlen, url, "bad master name");
    if (db && db[1] && s_db(db + 1, &out->db) < 0) return s_fail(err, errlen, url, "bad db");
    out->port = 0;
    return 0;
}

int redis_url_parse(const char *url, redis_url_t *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    out->port = 6379;
    if (!url || !*url) return s_fail(err, errlen, "", "empty");
    if (strncmp(url, "unix:", 5) == 0) return s_unix(url, out, err, errlen);
    if (strncmp(url, "redis://", 8) == 0) return s_tcp(url, out, err, errlen);
    if (strncmp(url, "redis-sentinel://", 17) == 0) return s_sentinel(url, out, err, errlen);
    return s_fail(err, errlen, url, "unknown scheme");
}

int redis_url_is_sentinel(const redis_url_t *u)
{
    return u->master[0] != '\0';
}

void redis_url_describe(const redis_url_t *u, char *out, size_t cap)
{
    const char *user = u->user[0] ? u->user : "";
    const char *auth = u->password[0] ? ":***@" : (u->user[0] ? "@" : "");
    if (u->path[0]) {
        snprintf(out, cap, "unix://%s?db=%d", u->path, u->db);
    } else if (redis_url_is_sentinel(u)) {
        int n = snprintf(out, cap, "redis-sentinel://%s%s", user, auth);
        for (int i = 0; i < u->n_sentinels && n > 0 && (size_t)n < cap; i++)
            n += snprintf(out + n, cap - (size_t)n, "%s%s:%d", i ? "," : "", u->sentinel[i].host,
                          u->sentinel[i].port);
        if (n > 0 && (size_t)n < cap)
            snprintf(out + n, cap - (size_t)n, "/%s/%d", u->master, u->db);
    } else {
        snprintf(out, cap, "redis://%s%s%s:%d/%d", user, auth, u->host, u->port, u->db);
    }
}

int redis_url_resolve(redis_url_t *u, char *err, size_t errlen)
{
    if (u->path[0] || redis_url_is_sentinel(u)) return 0;
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_socktype = SOCK_STREAM;
    int rc = getaddrinfo(u->host, NULL, &hints, &res);
    if (rc != 0 || !res) {
        snprintf(err, errlen, "redis host %s: %s", u->host, gai_strerror(rc));
        return -1;
    }
    void *addr = res->ai_family == AF_INET6
                     ? (void *)&((struct sockaddr_in6 *)(void *)res->ai_addr)->sin6_addr
                     : (void *)&((struct sockaddr_in *)(void *)res->ai_addr)->sin_addr;
    char ip[64];
    if (inet_ntop(res->ai_family, addr, ip, sizeof ip)) snprintf(u->host, sizeof u->host, "%s", ip);
    freeaddrinfo(res);
    return 0;
}
