/* executor-node/egress/verdict.c — see verdict.h. The reasons are written for the job's own
 * error message: they name the destination and what refused it, never the farm's addresses
 * beyond the one the job asked for. */
#define _GNU_SOURCE
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "common/buf.h"
#include "verdict.h"

struct verdict_deny {
    egress_rule_t *rules; /* NET entries (by address) and HOST entries (by name) */
    size_t n, cap;
};

/* ---- address classes -------------------------------------------------------------------- */

typedef struct {
    const char *net;
    int prefix;
    const char *what;
} block_t;

/* Denied to every tenant, whatever a rule says. */
static const block_t s_forbidden[] = {
    {"169.254.0.0", 16, "a link-local address (cloud metadata services answer there)"},
    {"100.100.100.200", 32, "a cloud metadata address"},
    {"fd00:ec2::254", 128, "a cloud metadata address"},
    {"fe80::", 10, "a link-local address"},
    {"0.0.0.0", 8, "an unspecified address"},
    {"::", 128, "an unspecified address"},
    {"224.0.0.0", 4, "a multicast address"},
    {"ff00::", 8, "a multicast address"},
    {"240.0.0.0", 4, "a reserved address"},
};

/* Reached only when a rule names the exact address. */
static const block_t s_private[] = {
    {"127.0.0.0", 8, "a loopback address"},
    {"::1", 128, "a loopback address"},
    {"10.0.0.0", 8, "a private address"},
    {"172.16.0.0", 12, "a private address"},
    {"192.168.0.0", 16, "a private address"},
    {"100.64.0.0", 10, "a shared (carrier-grade NAT) address"},
    {"198.18.0.0", 15, "a private (benchmarking) address"},
    {"192.0.0.0", 24, "a private address"},
    {"fc00::", 7, "a private (unique local) address"},
};

static const char *s_in(const block_t *blocks, size_t n, const egress_addr_t *a)
{
    for (size_t i = 0; i < n; i++) {
        egress_addr_t net;
        if (egress_addr_parse(blocks[i].net, strlen(blocks[i].net), &net) == 0 &&
            egress_addr_in(a, &net, blocks[i].prefix))
            return blocks[i].what;
    }
    /* NAT64 (64:ff9b::/96) reaches the IPv4 address inside it */
    static const uint8_t nat64[12] = {0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0};
    if (a->family == 6 && !memcmp(a->b, nat64, sizeof nat64)) {
        egress_addr_t v4 = {.family = 4};
        memcpy(v4.b, a->b + 12, 4);
        return s_in(blocks, n, &v4);
    }
    return NULL;
}

/* ---- the deny list ------------------------------------------------------------------------ */

static void s_push(verdict_deny_t *d, const egress_rule_t *r)
{
    if (d->n == d->cap) {
        d->cap = d->cap ? d->cap * 2 : 16;
        d->rules = xrealloc(d->rules, d->cap * sizeof *d->rules);
    }
    d->rules[d->n++] = *r;
}

static void s_push_addr(verdict_deny_t *d, const egress_addr_t *a, int port)
{
    egress_rule_t r = {.kind = EGRESS_RULE_NET, .net = *a, .prefix = a->family == 4 ? 32 : 128,
                       .port = port};
    s_push(d, &r);
}

/* Every address of this machine on port: what a listener on 0.0.0.0 or [::] answers on. */
static void s_push_local(verdict_deny_t *d, int port)
{
    egress_rule_t lo = {.kind = EGRESS_RULE_NET, .prefix = 8, .port = port};
    egress_addr_parse("127.0.0.0", 9, &lo.net);
    s_push(d, &lo);
    egress_addr_parse("::1", 3, &lo.net);
    lo.prefix = 128;
    s_push(d, &lo);
    struct ifaddrs *ifs = NULL;
    if (getifaddrs(&ifs) < 0) return;
    for (struct ifaddrs *i = ifs; i; i = i->ifa_next) {
        if (!i->ifa_addr) continue;
        egress_addr_t a = {0};
        if (i->ifa_addr->sa_family == AF_INET) {
            a.family = 4;
            memcpy(a.b, &((struct sockaddr_in *)(void *)i->ifa_addr)->sin_addr, 4);
        } else if (i->ifa_addr->sa_family == AF_INET6) {
            a.family = 6;
            memcpy(a.b, &((struct sockaddr_in6 *)(void *)i->ifa_addr)->sin6_addr, 16);
        } else {
            continue;
        }
        s_push_addr(d, &a, port);
    }
    freeifaddrs(ifs);
}

/* A host name on the list: by name, and by each address it has now. */
static void s_push_host(verdict_deny_t *d, const egress_rule_t *r)
{
    s_push(d, r);
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
    if (getaddrinfo(r->host, NULL, &hints, &res) != 0) return;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        egress_addr_t a = {0};
        if (ai->ai_family == AF_INET) {
            a.family = 4;
            memcpy(a.b, &((struct sockaddr_in *)(void *)ai->ai_addr)->sin_addr, 4);
        } else if (ai->ai_family == AF_INET6) {
            a.family = 6;
            memcpy(a.b, &((struct sockaddr_in6 *)(void *)ai->ai_addr)->sin6_addr, 16);
        } else {
            continue;
        }
        s_push_addr(d, &a, r->port);
    }
    freeaddrinfo(res);
}

verdict_deny_t *verdict_deny_new(const char *list, char *err, size_t errlen)
{
    verdict_deny_t *d = xcalloc(1, sizeof *d);
    for (const char *p = list ? list : ""; *p;) {
        size_t len = strcspn(p, ",");
        egress_rule_t r;
        if (len && egress_rule_parse(p, len, &r, err, errlen) < 0) {
            verdict_deny_destroy(&d);
            return NULL;
        }
        static const uint8_t zero[16] = {0};
        if (!len) {
        } else if (r.kind == EGRESS_RULE_NET && r.prefix == (r.net.family == 4 ? 32 : 128) &&
                   !memcmp(r.net.b, zero, 16)) {
            s_push_local(d, r.port);
        } else if (r.kind == EGRESS_RULE_HOST) {
            s_push_host(d, &r);
        } else {
            s_push(d, &r);
        }
        p += len;
        if (*p == ',') p++;
    }
    return d;
}

void verdict_deny_destroy(verdict_deny_t **self_p)
{
    verdict_deny_t *d = *self_p;
    if (!d) return;
    free(d->rules);
    free(d);
    *self_p = NULL;
}

size_t verdict_deny_count(const verdict_deny_t *self)
{
    return self ? self->n : 0;
}

/* ---- verdicts ----------------------------------------------------------------------------- */

int verdict_name(const egress_rule_t *rules, size_t n, const verdict_deny_t *deny,
                 const char *name, int port, char *why, size_t whylen)
{
    for (size_t i = 0; deny && i < deny->n; i++)
        if (deny->rules[i].kind == EGRESS_RULE_HOST &&
            egress_rule_allows_name(&deny->rules[i], name, port)) {
            snprintf(why, whylen, "%s:%d is one of the farm's own endpoints, denied to every "
                     "tenant", name, port);
            return -1;
        }
    for (size_t i = 0; i < n; i++)
        if (egress_rule_allows_name(&rules[i], name, port)) return 0;
    snprintf(why, whylen, "no egress rule of the tenant allows %s:%d", name, port);
    return -1;
}

int verdict_addr(const egress_rule_t *rules, size_t n, const verdict_deny_t *deny,
                 const egress_addr_t *a, int port, const char *name, char *why, size_t whylen)
{
    char text[64], as[320] = "";
    egress_addr_format(a, text, sizeof text);
    if (name) snprintf(as, sizeof as, "%s resolves to %s, ", name, text);
    for (size_t i = 0; deny && i < deny->n; i++)
        if (egress_rule_allows_addr(&deny->rules[i], a, port)) {
            snprintf(why, whylen, "%s%s:%d is one of the farm's own endpoints, denied to every "
                     "tenant", as, text, port);
            return -1;
        }
    const char *what = s_in(s_forbidden, sizeof s_forbidden / sizeof s_forbidden[0], a);
    if (what) {
        snprintf(why, whylen, "%s%s is %s, denied to every tenant", as, text, what);
        return -1;
    }
    what = s_in(s_private, sizeof s_private / sizeof s_private[0], a);
    if (what) {
        for (size_t i = 0; i < n; i++)
            if (egress_rule_names_addr(&rules[i], a, port)) return 0;
        snprintf(why, whylen, "%s%s is %s: only an egress rule naming %s:%d exactly allows it", as,
                 text, what, text, port);
        return -1;
    }
    if (name) return 0; /* the name's rule allowed it, and the address is an ordinary one */
    for (size_t i = 0; i < n; i++)
        if (egress_rule_allows_addr(&rules[i], a, port)) return 0;
    snprintf(why, whylen, "no egress rule of the tenant allows %s:%d", text, port);
    return -1;
}
