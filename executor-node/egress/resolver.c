/* executor-node/egress/resolver.c — see resolver.h. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/log.h"
#include "resolver.h"

#define RETRY_MS 1000

struct resolver_lookup {
    resolver_t *owner;
    int fd;
    char name[EGRESS_MAX_HOST + 1];
    uint16_t id[2];   /* the A and the AAAA question's ids */
    int done[2];      /* answered (or failed) */
    dns_rc_t rc[2];
    egress_addr_t addrs[2][DNS_MAX_ADDRS];
    size_t n[2];
    uint64_t started_ms, sent_ms;
    int retried;
    resolver_fn *fn;
    void *arg;
    resolver_lookup_t *next;
};

struct resolver {
    loop_t *loop;
    struct sockaddr_storage server;
    socklen_t server_len;
    char server_text[160];
    resolver_lookup_t *lookups;
    size_t n_lookups;
};

static const int s_qtype[2] = {DNS_TYPE_A, DNS_TYPE_AAAA};

/* The first nameserver of /etc/resolv.conf, into out; "127.0.0.1" when there is none (what the
 * C library would ask then). */
static void s_resolv_conf(char *out, size_t cap)
{
    snprintf(out, cap, "127.0.0.1");
    FILE *f = fopen("/etc/resolv.conf", "r");
    char line[256];
    while (f && fgets(line, sizeof line, f)) {
        char addr[128];
        if (sscanf(line, " nameserver %127s", addr) == 1) {
            snprintf(out, cap, "%s", addr);
            break;
        }
    }
    if (f) fclose(f);
}

static int s_parse_server(resolver_t *self, const char *text, char *err, size_t errlen)
{
    char host[64];
    int port = 53;
    egress_rule_t r;
    if (egress_rule_parse(text, strlen(text), &r, err, errlen) < 0 || r.kind != EGRESS_RULE_NET ||
        r.prefix != (r.net.family == 4 ? 32 : 128)) {
        snprintf(err, errlen, "--resolver %.80s: expected ADDR[:PORT] (an address, not a name)",
                 text);
        return -1;
    }
    if (r.port) port = r.port;
    egress_addr_format(&r.net, host, sizeof host);
    memset(&self->server, 0, sizeof self->server);
    if (r.net.family == 4) {
        struct sockaddr_in *s = (struct sockaddr_in *)&self->server;
        s->sin_family = AF_INET;
        s->sin_port = htons((uint16_t)port);
        memcpy(&s->sin_addr, r.net.b, 4);
        self->server_len = sizeof *s;
        snprintf(self->server_text, sizeof self->server_text, "%s:%d", host, port);
    } else {
        struct sockaddr_in6 *s = (struct sockaddr_in6 *)&self->server;
        s->sin6_family = AF_INET6;
        s->sin6_port = htons((uint16_t)port);
        memcpy(&s->sin6_addr, r.net.b, 16);
        self->server_len = sizeof *s;
        snprintf(self->server_text, sizeof self->server_text, "[%s]:%d", host, port);
    }
    return 0;
}

resolver_t *resolver_new(loop_t *loop, const char *server, char *err, size_t errlen)
{
    resolver_t *self = xcalloc(1, sizeof *self);
    self->loop = loop;
    char conf[128];
    if (!server || !server[0]) {
        s_resolv_conf(conf, sizeof conf);
        server = conf;
    }
    if (s_parse_server(self, server, err, errlen) < 0) {
        free(self);
        return NULL;
    }
    return self;
}

static void s_free(resolver_t *self, resolver_lookup_t *l)
{
    resolver_lookup_t **pp = &self->lookups;
    while (*pp && *pp != l) pp = &(*pp)->next;
    if (*pp) *pp = l->next;
    self->n_lookups--;
    if (l->fd >= 0) {
        loop_remove_fd(self->loop, l->fd);
        close(l->fd);
    }
    free(l);
}

void resolver_destroy(resolver_t **self_p)
{
    resolver_t *self = *self_p;
    if (!self) return;
    while (self->lookups) s_free(self, self->lookups);
    free(self);
    *self_p = NULL;
}

const char *resolver_server(const resolver_t *self)
{
    return self->server_text;
}

static void s_send(resolver_lookup_t *l)
{
    for (int q = 0; q < 2; q++) {
        if (l->done[q]) continue;
        uint8_t msg[512];
        size_t n = dns_query(l->id[q], l->name, s_qtype[q], msg, sizeof msg);
        if (!n || send(l->fd, msg, n, MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
            l->done[q] = 1;
            l->rc[q] = DNS_FAILED;
        }
    }
    l->sent_ms = clock_mono_ms();
}

/* Both questions are answered (or given up on): one call to fn, and the lookup goes. */
static void s_finish(resolver_t *self, resolver_lookup_t *l, const char *why)
{
    egress_addr_t all[2 * DNS_MAX_ADDRS];
    size_t n = 0;
    for (int q = 0; q < 2; q++)
        for (size_t i = 0; i < l->n[q]; i++) all[n++] = l->addrs[q][i];
    dns_rc_t rc = n ? DNS_OK
                  : (l->rc[0] == DNS_NONE && l->rc[1] == DNS_NONE) ? DNS_NONE
                                                                    : DNS_FAILED;
    if (!why)
        why = rc == DNS_NONE ? "the name does not exist, or has no address"
                             : "the resolver failed to answer";
    resolver_fn *fn = l->fn;
    void *arg = l->arg;
    s_free(self, l);
    fn(arg, rc, all, n, why);
}

static void s_on_read(loop_t *loop, short revents, void *arg)
{
    (void)loop, (void)revents;
    resolver_lookup_t *l = arg;
    resolver_t *self = l->owner;
    uint8_t msg[DNS_MAX_MSG];
    for (;;) {
        ssize_t n = recv(l->fd, msg, sizeof msg, MSG_DONTWAIT | MSG_TRUNC);
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) break;
            l->done[0] = l->done[1] = 1; /* ECONNREFUSED: nothing listens there */
            l->rc[0] = l->rc[1] = DNS_FAILED;
            s_finish(self, l, "the resolver refused the question (nothing answers there)");
            return;
        }
        if ((size_t)n > sizeof msg) continue; /* truncated by us: not an answer we can read */
        for (int q = 0; q < 2; q++) {
            if (l->done[q] || (size_t)n < 2 || (uint16_t)(msg[0] << 8 | msg[1]) != l->id[q])
                continue;
            dns_rc_t rc = dns_answer(msg, (size_t)n, l->id[q], l->name, s_qtype[q], l->addrs[q],
                                     DNS_MAX_ADDRS, &l->n[q]);
            if (rc == DNS_MALFORMED) { /* not an answer to this question: wait for one */
                l->n[q] = 0;
                continue;
            }
            l->rc[q] = rc;
            l->done[q] = 1;
        }
    }
    if (l->done[0] && l->done[1]) s_finish(self, l, NULL);
}

resolver_lookup_t *resolver_lookup(resolver_t *self, const char *name, resolver_fn *fn, void *arg)
{
    if (self->n_lookups >= RESOLVER_MAX) return NULL;
    int fd = socket(self->server.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return NULL;
    if (connect(fd, (struct sockaddr *)&self->server, self->server_len) < 0) {
        close(fd);
        return NULL;
    }
    resolver_lookup_t *l = xcalloc(1, sizeof *l);
    l->owner = self;
    l->fd = fd;
    snprintf(l->name, sizeof l->name, "%s", name);
    if (getrandom(l->id, sizeof l->id, 0) != (ssize_t)sizeof l->id)
        l->id[0] = (uint16_t)clock_mono_us(), l->id[1] = (uint16_t)(l->id[0] + 1);
    if (l->id[1] == l->id[0]) l->id[1]++;
    l->fn = fn;
    l->arg = arg;
    l->started_ms = clock_mono_ms();
    l->next = self->lookups;
    self->lookups = l;
    self->n_lookups++;
    loop_add_fd(self->loop, fd, LOOP_IN, s_on_read, l);
    s_send(l);
    return l;
}

void resolver_cancel(resolver_t *self, resolver_lookup_t *l)
{
    if (l) s_free(self, l);
}

void resolver_tick(resolver_t *self)
{
    uint64_t now = clock_mono_ms();
    for (resolver_lookup_t *l = self->lookups, *next; l; l = next) {
        next = l->next;
        if (now - l->started_ms >= RESOLVER_TIMEOUT_MS) {
            for (int q = 0; q < 2; q++)
                if (!l->done[q]) l->rc[q] = DNS_FAILED, l->done[q] = 1;
            s_finish(self, l, "the resolver did not answer in time");
        } else if (!l->retried && now - l->sent_ms >= RETRY_MS) {
            l->retried = 1;
            s_send(l);
        }
    }
}
