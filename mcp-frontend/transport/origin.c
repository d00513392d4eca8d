/* mcp-frontend/transport/origin.c — Origin and Host checks against DNS rebinding (MCP 2025-11-25
 * transports, "Security Warning": servers must validate Origin, and local servers should bind
 * to localhost only). A page on evil.example whose name resolves to 127.0.0.1 sends
 * Host: evil.example and Origin: http://evil.example; both are refused unless allowed. */
#define _GNU_SOURCE
#include <string.h>
#include <strings.h>

#include "origin.h"

static int s_list_has(const char *list, const char *item, size_t len)
{
    const char *p = list;
    while (p && *p) {
        while (*p == ' ' || *p == ',') p++;
        const char *e = p;
        while (*e && *e != ',') e++;
        const char *end = e;
        while (end > p && end[-1] == ' ') end--;
        if ((size_t)(end - p) == len && strncasecmp(p, item, len) == 0) return 1;
        if (end - p == 1 && *p == '*') return 1;
        p = e;
    }
    return 0;
}

/* host without the port: "localhost:8765" → "localhost", "[::1]:80" → "[::1]" */
static size_t s_host_len(const char *h)
{
    if (*h == '[') {
        const char *e = strchr(h, ']');
        return e ? (size_t)(e - h + 1) : strlen(h);
    }
    const char *c = strchr(h, ':');
    return c ? (size_t)(c - h) : strlen(h);
}

static int s_is_loopback_name(const char *h, size_t len)
{
    return (len == 9 && strncasecmp(h, "localhost", 9) == 0) ||
           (len == 9 && strncmp(h, "127.0.0.1", 9) == 0) ||
           (len == 5 && strncmp(h, "[::1]", 5) == 0);
}

int http_origin_allowed(const char *origin, const char *allow_list)
{
    if (!origin) return 1; /* not a browser: Origin is how browsers say where a page came from */
    if (allow_list && *allow_list) return s_list_has(allow_list, origin, strlen(origin));
    const char *h = strstr(origin, "://");
    if (!h || (strncmp(origin, "http://", 7) != 0 && strncmp(origin, "https://", 8) != 0)) return 0;
    h += 3;
    return s_is_loopback_name(h, s_host_len(h));
}

int http_host_allowed(const char *host, const char *allow_list, int loopback_bound)
{
    if (!host || !*host) return !loopback_bound; /* HTTP/1.0 without Host */
    size_t len = s_host_len(host);
    if (allow_list && *allow_list &&
        (s_list_has(allow_list, host, strlen(host)) || s_list_has(allow_list, host, len)))
        return 1;
    if (!loopback_bound) return !(allow_list && *allow_list);
    return s_is_loopback_name(host, len);
}
