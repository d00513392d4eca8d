/* proto/egress_rule.c — see egress_rule.h. Rules are operator input (the CLI checks them
 * before they are stored) and JobSpec input (the executor decodes them again): every length is
 * checked before it is copied. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "egress_rule.h"

/* ---- names and addresses ------------------------------------------------------------------ */

int egress_name_normal(const char *name, size_t len, char *out, size_t cap)
{
    if (len && name[len - 1] == '.') len--; /* the root: "example.com." is "example.com" */
    if (!len || len > EGRESS_MAX_HOST || len >= cap) return -1;
    size_t label = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)name[i];
        if (c == '.') {
            /* no empty label, none starting or ending with '-' (RFC 1123 §2.1) */
            if (!label || name[i - 1] == '-') return -1;
            label = 0;
        } else if (isalnum(c) || c == '_' || (c == '-' && label)) {
            if (++label > 63) return -1;
        } else {
            return -1;
        }
        out[i] = (char)tolower(c);
    }
    if (!label || name[len - 1] == '-') return -1; /* an empty last label: "a.." */
    out[len] = '\0';
    return 0;
}

int egress_addr_parse(const char *text, size_t len, egress_addr_t *a)
{
    char buf[64];
    if (len >= 2 && text[0] == '[' && text[len - 1] == ']') text++, len -= 2;
    if (!len || len >= sizeof buf) return -1;
    memcpy(buf, text, len);
    buf[len] = '\0';
    memset(a, 0, sizeof *a);
    if (inet_pton(AF_INET, buf, a->b) == 1) {
        a->family = 4;
        return 0;
    }
    if (!strchr(buf, ':') || inet_pton(AF_INET6, buf, a->b) != 1) return -1;
    a->family = 6;
    static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (memcmp(a->b, mapped, sizeof mapped) == 0) { /* ::ffff:a.b.c.d is a.b.c.d */
        memmove(a->b, a->b + 12, 4);
        memset(a->b + 4, 0, 12);
        a->family = 4;
    }
    return 0;
}

void egress_addr_format(const egress_addr_t *a, char *out, size_t cap)
{
    char buf[INET6_ADDRSTRLEN];
    if (!inet_ntop(a->family == 4 ? AF_INET : AF_INET6, a->b, buf, sizeof buf))
        snprintf(buf, sizeof buf, "?");
    snprintf(out, cap, "%s", buf);
}

int egress_addr_in(const egress_addr_t *a, const egress_addr_t *net, int prefix)
{
    if (a->family != net->family || prefix < 0) return 0;
    int bits = a->family == 4 ? 32 : 128;
    if (prefix > bits) return 0;
    int whole = prefix / 8, rest = prefix % 8;
    if (memcmp(a->b, net->b, (size_t)whole) != 0) return 0;
    if (!rest) return 1;
    uint8_t mask = (uint8_t)(0xff << (8 - rest));
    return (a->b[whole] & mask) == (net->b[whole] & mask);
}

/* ---- one rule ----------------------------------------------------------------------------- */

static int s_fail(char *err, size_t errlen, const char *text, size_t len, const char *why)
{
    snprintf(err, errlen, "egress rule '%.*s': %s", (int)(len > 80 ? 80 : len), text, why);
    return -1;
}

/* ":PORT" at the end of text[0..len): the port (and len cut before the colon), 0 when there is
 * none; -1 when it is there and not a port. */
static int s_port(const char *text, size_t *len)
{
    size_t n = *len, i = n;
    while (i > 0 && isdigit((unsigned char)text[i - 1])) i--;
    if (i == n || i == 0 || text[i - 1] != ':') return 0;
    if (n - i > 5) return -1;
    int port = 0;
    for (size_t k = i; k < n; k++) port = port * 10 + (text[k] - '0');
    if (port < 1 || port > 65535) return -1;
    *len = i - 1;
    return port;
}

/* "ADDR" or "ADDR/BITS" into a NET rule. */
static int s_net(const char *text, size_t len, egress_rule_t *r)
{
    const char *slash = memchr(text, '/', len);
    size_t alen = slash ? (size_t)(slash - text) : len;
    if (egress_addr_parse(text, alen, &r->net) < 0) return -1;
    int bits = r->net.family == 4 ? 32 : 128;
    r->prefix = bits;
    if (slash) {
        size_t plen = len - alen - 1;
        if (!plen || plen > 3) return -1;
        int p = 0;
        for (size_t i = 0; i < plen; i++) {
            if (!isdigit((unsigned char)slash[1 + i])) return -1;
            p = p * 10 + (slash[1 + i] - '0');
        }
        /* an IPv4-mapped block counts in the IPv6 address's bits */
        if (bits == 32 && memchr(text, ':', alen)) p -= 96;
        if (p < 0 || p > bits) return -1;
        r->prefix = p;
    }
    /* the block starts at its first address: 10.1.2.3/8 is 10.0.0.0/8 */
    for (int i = 0; i < bits / 8; i++) {
        int keep = r->prefix - i * 8;
        r->net.b[i] &= keep >= 8 ? 0xff : keep <= 0 ? 0 : (uint8_t)(0xff << (8 - keep));
    }
    r->kind = EGRESS_RULE_NET;
    return 0;
}

int egress_rule_parse(const char *text, size_t len, egress_rule_t *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    while (len && isspace((unsigned char)*text)) text++, len--;
    while (len && isspace((unsigned char)text[len - 1])) len--;
    if (!len) return s_fail(err, errlen, text, len, "empty");
    if (len > EGRESS_MAX_RULE) return s_fail(err, errlen, text, len, "too long");
    const char *orig = text;
    size_t orig_len = len, body = len;
    /* "[v6]:port", "[v6/bits]:port", "[v6]"; a bare v6 address or block has no port */
    if (text[0] == '[') {
        const char *close = memchr(text, ']', len);
        if (!close) return s_fail(err, errlen, orig, orig_len, "'[' without ']'");
        size_t rest = len - (size_t)(close + 1 - text);
        if (rest) {
            size_t tail = len;
            out->port = s_port(text, &tail);
            if (out->port <= 0 || tail != (size_t)(close + 1 - text))
                return s_fail(err, errlen, orig, orig_len, "expected ]:PORT after the address");
        }
        if (s_net(text + 1, (size_t)(close - text - 1), out) < 0 || out->net.family != 6)
            return s_fail(err, errlen, orig, orig_len, "not an IPv6 address or block");
        return 0;
    }
    int colons = 0;
    for (size_t i = 0; i < len; i++) colons += text[i] == ':';
    if (colons > 1) { /* bare IPv6, no port */
        if (s_net(text, len, out) < 0)
            return s_fail(err, errlen, orig, orig_len, "not an IPv6 address or block");
        return 0;
    }
    if (colons == 1) {
        out->port = s_port(text, &body);
        if (out->port <= 0) return s_fail(err, errlen, orig, orig_len, "the port is not 1-65535");
    }
    if (s_net(text, body, out) == 0) {
        if (out->net.family != 4)
            return s_fail(err, errlen, orig, orig_len, "write an IPv6 address with a port in "
                                                       "brackets: [ADDR]:PORT");
        return 0;
    }
    memset(&out->net, 0, sizeof out->net);
    out->prefix = 0;
    if (body >= 2 && text[0] == '*' && text[1] == '.') {
        out->kind = EGRESS_RULE_DOMAIN;
        text += 2, body -= 2;
    } else {
        out->kind = EGRESS_RULE_HOST;
    }
    if (memchr(text, '/', body) || memchr(text, '*', body))
        return s_fail(err, errlen, orig, orig_len,
                      "not a host name, *.domain, address or CIDR block");
    if (egress_name_normal(text, body, out->host, sizeof out->host) < 0)
        return s_fail(err, errlen, orig, orig_len, "not a DNS name");
    /* a name of digits and dots only would be an address that failed to parse */
    if (strspn(out->host, "0123456789.") == strlen(out->host))
        return s_fail(err, errlen, orig, orig_len, "not an IPv4 address");
    return 0;
}

int egress_rules_parse(const char *list, egress_rule_t **out, size_t *n, char *err, size_t errlen)
{
    *out = NULL;
    *n = 0;
    if (!list) return 0;
    size_t count = 0;
    for (const char *p = list; *p; p++) count += *p == ',';
    count++;
    if (count > EGRESS_MAX_RULES + 1) {
        snprintf(err, errlen, "more than %d egress rules", EGRESS_MAX_RULES);
        return -1;
    }
    egress_rule_t *rules = xcalloc(count, sizeof *rules);
    size_t k = 0;
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, ",");
        size_t skip = strspn(p, " \t");
        if (skip < len) {
            if (k == EGRESS_MAX_RULES) {
                snprintf(err, errlen, "more than %d egress rules", EGRESS_MAX_RULES);
                free(rules);
                return -1;
            }
            if (egress_rule_parse(p, len, &rules[k], err, errlen) < 0) {
                free(rules);
                return -1;
            }
            k++;
        }
        p += len;
        if (*p == ',') p++;
    }
    if (!k) {
        free(rules);
        rules = NULL;
    }
    *out = rules;
    *n = k;
    return 0;
}

void egress_rule_format(const egress_rule_t *r, char *out, size_t cap)
{
    char what[64], port[8] = "";
    if (r->port) snprintf(port, sizeof port, ":%d", r->port);
    if (r->kind == EGRESS_RULE_HOST) {
        snprintf(out, cap, "%s%s", r->host, port);
        return;
    }
    if (r->kind == EGRESS_RULE_DOMAIN) {
        snprintf(out, cap, "*.%s%s", r->host, port);
        return;
    }
    egress_addr_format(&r->net, what, sizeof what);
    int whole = r->prefix == (r->net.family == 4 ? 32 : 128);
    char net[EGRESS_MAX_HOST + 16];
    if (whole)
        snprintf(net, sizeof net, "%s", what);
    else
        snprintf(net, sizeof net, "%s/%d", what, r->prefix);
    if (r->net.family == 6 && r->port)
        snprintf(out, cap, "[%s]%s", net, port);
    else
        snprintf(out, cap, "%s%s", net, port);
}

/* ---- matching ----------------------------------------------------------------------------- */

static int s_port_ok(const egress_rule_t *r, int port)
{
    return !r->port || r->port == port;
}

int egress_rule_allows_name(const egress_rule_t *r, const char *name, int port)
{
    if (!s_port_ok(r, port)) return 0;
    if (r->kind == EGRESS_RULE_HOST) return strcmp(r->host, name) == 0;
    if (r->kind != EGRESS_RULE_DOMAIN) return 0;
    /* strictly below the domain: "a.example.com" and "a.b.example.com", not "example.com",
     * and not "badexample.com" */
    size_t n = strlen(name), d = strlen(r->host);
    return n > d + 1 && name[n - d - 1] == '.' && strcmp(name + n - d, r->host) == 0;
}

int egress_rule_allows_addr(const egress_rule_t *r, const egress_addr_t *a, int port)
{
    return r->kind == EGRESS_RULE_NET && s_port_ok(r, port) && egress_addr_in(a, &r->net, r->prefix);
}

int egress_rule_names_addr(const egress_rule_t *r, const egress_addr_t *a, int port)
{
    return egress_rule_allows_addr(r, a, port) && r->prefix == (a->family == 4 ? 32 : 128);
}
