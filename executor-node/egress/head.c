/* executor-node/egress/head.c — see head.h. */
#define _GNU_SOURCE
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "common/base64.h"
#include "proto/egress_rule.h"
#include "head.h"

static head_rc_t s_bad(char *err, size_t errlen, const char *why)
{
    snprintf(err, errlen, "%s", why);
    return HEAD_BAD;
}

/* RFC 9110 §5.6.2 token characters (methods and header names). */
static int s_tchar(unsigned char c)
{
    return isalnum(c) || (c && strchr("!#$%&'*+-.^_`|~", c));
}

static int s_span_is(head_span_t s, const char *lit)
{
    return s.len == strlen(lit) && strncasecmp(s.p, lit, s.len) == 0;
}

/* "host:port" (authority-form, RFC 9112 §3.2.3) or, with need_port 0, "host[:port]" as in an
 * http URI. The host is a DNS name or an address literal ([v6] in brackets); no userinfo. */
static int s_authority(const char *p, size_t n, int need_port, head_t *h, const char **why)
{
    const char *host = p;
    size_t hlen = n, rest = 0;
    const char *port = NULL;
    if (n && p[0] == '[') {
        const char *close = memchr(p, ']', n);
        if (!close) return *why = "an IPv6 host without ']'", -1;
        hlen = (size_t)(close - p) + 1;
        rest = n - hlen;
        if (rest && close[1] != ':') return *why = "junk after the IPv6 host", -1;
        if (rest) port = close + 2, rest--;
    } else {
        const char *colon = memchr(p, ':', n);
        if (colon) {
            hlen = (size_t)(colon - p);
            port = colon + 1;
            rest = n - hlen - 1;
        }
    }
    if (memchr(host, '@', hlen)) return *why = "a URI with user information", -1;
    if (!hlen) return *why = "no host", -1;
    if (port) {
        if (!rest || rest > 5) return *why = "the port is not 1-65535", -1;
        int v = 0;
        for (size_t i = 0; i < rest; i++) {
            if (!isdigit((unsigned char)port[i])) return *why = "the port is not a number", -1;
            v = v * 10 + (port[i] - '0');
        }
        if (v < 1 || v > 65535) return *why = "the port is not 1-65535", -1;
        h->port = v;
    } else if (need_port) {
        return *why = "CONNECT needs host:port", -1;
    } else {
        h->port = 80;
    }
    egress_addr_t a;
    if (egress_addr_parse(host, hlen, &a) == 0) {
        egress_addr_format(&a, h->host, sizeof h->host);
        h->host_is_addr = 1;
        return 0;
    }
    if (host[0] == '[') return *why = "not an IPv6 address in brackets", -1;
    if (egress_name_normal(host, hlen, h->host, sizeof h->host) < 0)
        return *why = "the host is not a DNS name or an address", -1;
    /* digits and dots only: an address a resolver might read its own way (127.1, 0177.1) */
    if (strspn(h->host, "0123456789.") == strlen(h->host))
        return *why = "the host is not a dotted-quad address", -1;
    h->host_is_addr = 0;
    return 0;
}

/* The request line: METHOD SP target SP HTTP/1.x (RFC 9112 §3). */
static int s_request_line(const char *p, size_t n, head_t *h, const char **why)
{
    const char *sp1 = memchr(p, ' ', n);
    if (!sp1 || sp1 == p) return *why = "no method", -1;
    for (const char *c = p; c < sp1; c++)
        if (!s_tchar((unsigned char)*c)) return *why = "a method that is not a token", -1;
    h->method = (head_span_t){p, (size_t)(sp1 - p)};
    const char *t = sp1 + 1, *end = p + n;
    const char *sp2 = memchr(t, ' ', (size_t)(end - t));
    if (!sp2 || sp2 == t) return *why = "no request target", -1;
    const char *ver = sp2 + 1;
    size_t vlen = (size_t)(end - ver);
    if (vlen != 8 || memcmp(ver, "HTTP/1.", 7) != 0 || (ver[7] != '0' && ver[7] != '1'))
        return *why = "not HTTP/1.0 or HTTP/1.1", -1;
    h->minor = ver[7] - '0';
    size_t tlen = (size_t)(sp2 - t);
    for (size_t i = 0; i < tlen; i++)
        if ((unsigned char)t[i] <= 0x20 || (unsigned char)t[i] >= 0x7f)
            return *why = "a request target with a control character, space or non-ASCII byte", -1;
    if (s_span_is(h->method, "CONNECT")) {
        h->kind = HEAD_CONNECT;
        return s_authority(t, tlen, 1, h, why);
    }
    static const char scheme[] = "http://";
    if (tlen < sizeof scheme - 1 || strncasecmp(t, scheme, sizeof scheme - 1) != 0) {
        if (tlen >= 8 && strncasecmp(t, "https://", 8) == 0)
            return *why = "an https:// URI: HTTPS goes through CONNECT", -1;
        return *why = "not an absolute http:// URI (this is a proxy)", -1;
    }
    h->kind = HEAD_FORWARD;
    const char *auth = t + sizeof scheme - 1, *tend = t + tlen;
    const char *slash = auth;
    while (slash < tend && *slash != '/' && *slash != '?' && *slash != '#') slash++;
    if (memchr(t, '#', tlen)) return *why = "a fragment in the request target", -1;
    if (s_authority(auth, (size_t)(slash - auth), 0, h, why) < 0) return -1;
    /* the path as the origin server wants it: "/" when the URI has none, "/?q" for a query */
    h->path = slash < tend ? (head_span_t){slash, (size_t)(tend - slash)} : (head_span_t){"/", 1};
    return 0;
}

/* Proxy-Authorization: Basic base64(user ":" password); the password is the job's secret. */
static int s_secret(head_span_t v, head_t *h)
{
    if (v.len < 6 || strncasecmp(v.p, "Basic ", 6) != 0) return -1;
    const char *b = v.p + 6;
    size_t n = v.len - 6;
    while (n && *b == ' ') b++, n--;
    if (!n || n > 4 * (HEAD_SECRET_MAX + 64) / 3 + 4) return -1;
    buf_t out;
    buf_init(&out);
    int rc = base64_decode(&out, b, n);
    const char *colon = rc == 0 && out.len ? memchr(out.data, ':', out.len) : NULL;
    size_t slen = colon ? out.len - (size_t)(colon + 1 - (const char *)out.data) : 0;
    rc = colon && slen && slen <= HEAD_SECRET_MAX ? 0 : -1;
    if (rc == 0) {
        memcpy(h->secret, colon + 1, slen);
        h->secret[slen] = '\0';
        if (strlen(h->secret) != slen) rc = -1, h->secret[0] = '\0'; /* a NUL inside */
    }
    if (out.data) explicit_bzero(out.data, out.len);
    buf_free(&out);
    return rc;
}

/* One "name: value" line (RFC 9112 §5): a token, a colon right after it, the value with its
 * surrounding spaces and tabs trimmed; control characters but HTAB refused. */
static int s_header(const char *p, size_t n, head_t *h, const char **why)
{
    if (h->n_headers == HEAD_MAX_HEADERS) return *why = "too many header lines", -1;
    const char *colon = memchr(p, ':', n);
    if (!colon || colon == p) return *why = "a header line without a name", -1;
    for (const char *c = p; c < colon; c++)
        if (!s_tchar((unsigned char)*c)) return *why = "a header name that is not a token", -1;
    const char *v = colon + 1, *end = p + n;
    for (const char *c = v; c < end; c++)
        if (((unsigned char)*c < 0x20 && *c != '\t') || *c == 0x7f)
            return *why = "a control character in a header value", -1;
    while (v < end && (*v == ' ' || *v == '\t')) v++;
    while (end > v && (end[-1] == ' ' || end[-1] == '\t')) end--;
    head_span_t name = {p, (size_t)(colon - p)}, value = {v, (size_t)(end - v)};
    h->headers[h->n_headers].name = name;
    h->headers[h->n_headers].value = value;
    h->n_headers++;
    if (s_span_is(name, "Proxy-Authorization") && !h->secret[0] && s_secret(value, h) < 0)
        return *why = "a Proxy-Authorization that is not Basic user:password", -1;
    return 0;
}

head_rc_t head_parse(const char *buf, size_t len, head_t *h, char *err, size_t errlen)
{
    memset(h, 0, sizeof *h);
    size_t cap = len < HEAD_MAX ? len : HEAD_MAX;
    const char *why = NULL;
    size_t at = 0;
    int line_no = 0;
    while (at < cap) {
        /* a line: bytes up to CRLF; a lone CR or LF, or a NUL, is refused (smuggling by line
         * ends the server would split differently) */
        size_t i = at;
        while (i < cap && buf[i] != '\r' && buf[i] != '\n' && buf[i] != '\0') i++;
        if (i == cap) break; /* the line is not complete yet */
        if (buf[i] != '\r') return s_bad(err, errlen, "a line ending that is not CRLF, or a NUL");
        if (i + 1 == cap) break;
        if (buf[i + 1] != '\n') return s_bad(err, errlen, "a CR without LF");
        size_t n = i - at;
        if (n == 0) {
            if (line_no == 0) return s_bad(err, errlen, "an empty request line");
            h->head_len = i + 2;
            return HEAD_OK;
        }
        if (line_no == 0) {
            if (s_request_line(buf + at, n, h, &why) < 0) return s_bad(err, errlen, why);
        } else {
            if (buf[at] == ' ' || buf[at] == '\t')
                return s_bad(err, errlen, "obsolete line folding");
            if (s_header(buf + at, n, h, &why) < 0) return s_bad(err, errlen, why);
        }
        line_no++;
        at = i + 2;
    }
    if (len >= HEAD_MAX) return s_bad(err, errlen, "a request head over 16 KiB");
    return HEAD_PARTIAL;
}

/* Headers the origin server never sees: the proxy's own, and those that describe this one
 * connection (RFC 9110 §7.6.1). */
static int s_hop_by_hop(head_span_t name)
{
    static const char *const drop[] = {"Proxy-Authorization", "Proxy-Connection", "Connection",
                                       "Keep-Alive", "Host", "TE", "Upgrade", NULL};
    for (const char *const *d = drop; *d; d++)
        if (s_span_is(name, *d)) return 1;
    return 0;
}

void head_forward(const head_t *h, buf_t *out)
{
    buf_append(out, h->method.p, h->method.len);
    buf_puts(out, " ");
    buf_append(out, h->path.p, h->path.len);
    buf_printf(out, " HTTP/1.%d\r\n", h->minor);
    int v6 = strchr(h->host, ':') != NULL;
    if (h->port == 80)
        buf_printf(out, "Host: %s%s%s\r\n", v6 ? "[" : "", h->host, v6 ? "]" : "");
    else
        buf_printf(out, "Host: %s%s%s:%d\r\n", v6 ? "[" : "", h->host, v6 ? "]" : "", h->port);
    for (size_t i = 0; i < h->n_headers; i++) {
        if (s_hop_by_hop(h->headers[i].name)) continue;
        buf_append(out, h->headers[i].name.p, h->headers[i].name.len);
        buf_puts(out, ": ");
        buf_append(out, h->headers[i].value.p, h->headers[i].value.len);
        buf_puts(out, "\r\n");
    }
    buf_puts(out, "Connection: close\r\n\r\n");
}
