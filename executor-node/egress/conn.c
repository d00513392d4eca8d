/* executor-node/egress/conn.c — see conn.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/log.h"
#include "conn.h"
#include "head.h"

#define RELAY_BUF  (32u << 10)
#define REPLY_MS   5000 /* an error answer the job does not read is dropped after this */

typedef enum { C_HEAD, C_RESOLVE, C_CONNECT, C_RELAY, C_REPLY } conn_state_t;

struct conn {
    egress_t *eg;
    conn_state_t state;
    int cfd, ufd;         /* the job's side, the destination's (-1 until connecting) */
    uint32_t listener;
    grant_t *grant;       /* once the secret is found */
    grant_dest_t *dest;   /* its destination's account, once judged */
    head_t head;          /* parsed (its spans point into in) */
    char in[HEAD_MAX];    /* the request head, and what came after it */
    size_t in_len;
    uint8_t *c2u, *u2c;   /* relay buffers: job → destination, destination → job */
    size_t c2u_off, c2u_len, u2c_off, u2c_len;
    int c_eof, u_eof;     /* each side's reading is over */
    int c_shut, u_shut;   /* the other side was told (shutdown SHUT_WR) */
    egress_addr_t addrs[2 * DNS_MAX_ADDRS];
    size_t n_addrs, next_addr;
    resolver_lookup_t *lookup;
    uint64_t deadline_ms; /* HEAD, RESOLVE, CONNECT, REPLY */
    uint64_t last_io_ms;
    int open;             /* counted in the grant's and the tenant's open connections */
    char failed[GRANT_MAX_REASON]; /* the last connect error */
    conn_t *next;
};

static void s_io(loop_t *loop, short revents, void *arg);

/* ---- life ---------------------------------------------------------------------------------- */

static void s_unwatch(conn_t *c, int fd)
{
    if (fd >= 0) {
        loop_remove_fd(c->eg->loop, fd);
        close(fd);
    }
}

static void s_free(conn_t *c, const char *why)
{
    egress_t *eg = c->eg;
    for (conn_t **pp = &eg->conns; *pp; pp = &(*pp)->next)
        if (*pp == c) {
            *pp = c->next;
            break;
        }
    eg->n_conns--;
    if (c->lookup) resolver_cancel(eg->resolver, c->lookup);
    s_unwatch(c, c->cfd);
    s_unwatch(c, c->ufd);
    if (c->open && c->grant) {
        c->grant->open--;
        grants_tenant_open(eg->grants, c->grant->tenant, -1);
        char id[ID_STR_LEN + 1];
        id_format(c->grant->job, id);
        log_info("event=egress_closed job=%s tenant=%s dest=%s:%d bytes_out=%llu bytes_in=%llu "
                 "why=%s",
                 id, c->grant->tenant, c->head.host, c->head.port,
                 (unsigned long long)(c->dest ? c->dest->bytes_out : 0),
                 (unsigned long long)(c->dest ? c->dest->bytes_in : 0), why);
    }
    free(c->c2u);
    free(c->u2c);
    explicit_bzero(c->in, sizeof c->in); /* the job's request, its secret */
    free(c);
}

/* The events each side waits for, from the state and the buffers. */
static void s_watch(conn_t *c)
{
    short ce = 0, ue = 0;
    int stalled = c->grant && c->grant->over_cap;
    switch (c->state) {
    case C_HEAD:
        ce = LOOP_IN;
        break;
    case C_RESOLVE:
        break;
    case C_CONNECT:
        ue = LOOP_OUT;
        break;
    case C_REPLY:
        ce = LOOP_OUT;
        break;
    case C_RELAY:
        if (stalled) break;
        if (!c->c_eof && c->c2u_len < RELAY_BUF) ce |= LOOP_IN;
        if (c->u2c_len > c->u2c_off) ce |= LOOP_OUT;
        if (!c->u_eof && c->u2c_len < RELAY_BUF) ue |= LOOP_IN;
        if (c->c2u_len > c->c2u_off) ue |= LOOP_OUT;
        break;
    }
    loop_set_fd_events(c->eg->loop, c->cfd, ce);
    if (c->ufd >= 0) loop_set_fd_events(c->eg->loop, c->ufd, ue);
}

void conn_accept(egress_t *eg, uint32_t listener, int fd)
{
    if (eg->n_conns >= eg->conf->max_open) {
        eg->stats.capped++;
        log_warn("event=egress_refused reason=\"the node's connections are at their cap\" "
                 "open=%ld", eg->n_conns);
        close(fd);
        return;
    }
    conn_t *c = xcalloc(1, sizeof *c);
    c->eg = eg;
    c->cfd = fd;
    c->ufd = -1;
    c->listener = listener;
    c->state = C_HEAD;
    c->deadline_ms = clock_mono_ms() + (uint64_t)eg->conf->connect_s * 1000u;
    c->next = eg->conns;
    eg->conns = c;
    eg->n_conns++;
    loop_add_fd(eg->loop, fd, LOOP_IN, s_io, c);
}

/* ---- answers ------------------------------------------------------------------------------- */

/* msg as an HTTP reason phrase: printable ASCII only, so a name the job chose cannot split the
 * answer. */
static void s_phrase(const char *msg, char *out, size_t cap)
{
    size_t o = 0;
    for (const char *p = msg; *p && o + 1 < cap; p++)
        out[o++] = (*p >= 0x20 && *p < 0x7f) ? *p : '?';
    out[o] = '\0';
}

/* An error answer, then close: the reason phrase and the body carry msg. */
static void s_reply(conn_t *c, int code, const char *msg)
{
    char phrase[1024];
    s_phrase(msg, phrase, sizeof phrase);
    buf_t b;
    buf_init(&b);
    buf_printf(&b,
               "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
               "X-Snakepit-Egress: %s\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n%s\n",
               code, phrase, code == 403 || code == 407 ? "refused" : "failed", strlen(phrase) + 1,
               phrase);
    free(c->u2c);
    c->u2c = (uint8_t *)buf_steal(&b, &c->u2c_len);
    c->u2c_off = 0;
    if (c->lookup) resolver_cancel(c->eg->resolver, c->lookup);
    c->lookup = NULL;
    if (c->ufd >= 0) s_unwatch(c, c->ufd);
    c->ufd = -1;
    c->state = C_REPLY;
    c->deadline_ms = clock_mono_ms() + REPLY_MS;
    s_watch(c);
}

/* The refusal every job sees: the destination, why, and where the policy is set. */
static void s_refuse(conn_t *c, int code, const char *why)
{
    egress_t *eg = c->eg;
    grant_t *g = c->grant;
    char msg[900], id[ID_STR_LEN + 1] = "-";
    if (g) id_format(g->job, id);
    snprintf(msg, sizeof msg,
             "egress to %s:%d refused: %s. The egress policy of tenant %s does not allow it; an "
             "operator sets it with `snakepit tenant set %s --egress RULE`",
             c->head.host, c->head.port, why, g ? g->tenant : "?", g ? g->tenant : "TENANT");
    if (code == 429)
        eg->stats.capped++;
    else
        eg->stats.refused++;
    if (g) {
        grant_dest_t *d = grant_dest(g, c->head.host, c->head.port, DEST_REFUSED, why);
        d->conns++;
    }
    log_warn("event=egress_refused audit=1 job=%s tenant=%s dest=%s:%d reason=\"%s\"", id,
             g ? g->tenant : "-", c->head.host, c->head.port, why);
    s_reply(c, code, msg);
}

/* Allowed, but not reached (no address, no answer, no connection). */
static void s_fail(conn_t *c, int code, const char *why)
{
    char msg[900], id[ID_STR_LEN + 1];
    id_format(c->grant->job, id);
    snprintf(msg, sizeof msg, "egress to %s:%d failed: %s", c->head.host, c->head.port, why);
    c->eg->stats.failed++;
    grant_dest_t *d = grant_dest(c->grant, c->head.host, c->head.port, DEST_FAILED, why);
    d->conns++;
    log_info("event=egress_failed job=%s tenant=%s dest=%s:%d reason=\"%s\"", id, c->grant->tenant,
             c->head.host, c->head.port, why);
    s_reply(c, code, msg);
}

/* ---- connecting ---------------------------------------------------------------------------- */

static void s_relay_start(conn_t *c);

/* The next allowed address; a 502 when none is left. */
static void s_connect_next(conn_t *c)
{
    while (c->next_addr < c->n_addrs) {
        const egress_addr_t *a = &c->addrs[c->next_addr++];
        struct sockaddr_storage ss = {0};
        socklen_t len;
        if (a->family == 4) {
            struct sockaddr_in *s = (struct sockaddr_in *)&ss;
            s->sin_family = AF_INET;
            s->sin_port = htons((uint16_t)c->head.port);
            memcpy(&s->sin_addr, a->b, 4);
            len = sizeof *s;
        } else {
            struct sockaddr_in6 *s = (struct sockaddr_in6 *)&ss;
            s->sin6_family = AF_INET6;
            s->sin6_port = htons((uint16_t)c->head.port);
            memcpy(&s->sin6_addr, a->b, 16);
            len = sizeof *s;
        }
        int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            snprintf(c->failed, sizeof c->failed, "socket: %s", strerror(errno));
            continue;
        }
        if (connect(fd, (struct sockaddr *)&ss, len) < 0 && errno != EINPROGRESS) {
            snprintf(c->failed, sizeof c->failed, "connect: %s", strerror(errno));
            close(fd);
            continue;
        }
        c->ufd = fd;
        c->state = C_CONNECT;
        loop_add_fd(c->eg->loop, fd, LOOP_OUT, s_io, c);
        s_watch(c);
        return;
    }
    s_fail(c, 502, c->failed[0] ? c->failed : "no address to connect to");
}

static void s_connected(conn_t *c)
{
    int err = 0;
    socklen_t len = sizeof err;
    if (getsockopt(c->ufd, SOL_SOCKET, SO_ERROR, &err, &len) < 0) err = errno;
    if (err) {
        snprintf(c->failed, sizeof c->failed, "connect: %s", strerror(err));
        s_unwatch(c, c->ufd);
        c->ufd = -1;
        s_connect_next(c);
        return;
    }
    int one = 1;
    setsockopt(c->ufd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    s_relay_start(c);
}

/* The addresses a name gave (or the literal): those the policy allows, in order. */
static void s_judge_addrs(conn_t *c, const egress_addr_t *addrs, size_t n, const char *name)
{
    char why[GRANT_MAX_REASON] = "";
    c->n_addrs = 0;
    for (size_t i = 0; i < n && c->n_addrs < sizeof c->addrs / sizeof c->addrs[0]; i++) {
        char one[GRANT_MAX_REASON];
        if (verdict_addr(c->grant->rules, c->grant->n_rules, c->eg->deny, &addrs[i],
                         c->head.port, name, one, sizeof one) == 0)
            c->addrs[c->n_addrs++] = addrs[i];
        else if (!why[0])
            snprintf(why, sizeof why, "%s", one);
    }
    if (!c->n_addrs) {
        s_refuse(c, 403, why[0] ? why : "no address");
        return;
    }
    c->next_addr = 0;
    s_connect_next(c);
}

static void s_resolved(void *arg, dns_rc_t rc, const egress_addr_t *addrs, size_t n,
                       const char *why)
{
    conn_t *c = arg;
    c->lookup = NULL;
    if (rc != DNS_OK) {
        char msg[GRANT_MAX_REASON];
        snprintf(msg, sizeof msg, "%s does not resolve: %s", c->head.host, why);
        s_fail(c, rc == DNS_FAILED ? 504 : 502, msg);
        return;
    }
    s_judge_addrs(c, addrs, n, c->head.host);
}

/* The head is in: the job, its caps, then the destination. */
static void s_judge(conn_t *c)
{
    egress_t *eg = c->eg;
    head_t *h = &c->head;
    c->grant = h->secret[0] ? grants_by_secret(eg->grants, h->secret, c->listener) : NULL;
    if (!c->grant) {
        eg->stats.unauthenticated++;
        log_warn("event=egress_refused audit=1 job=- dest=%s:%d reason=\"no valid job "
                 "credentials\"", h->host, h->port);
        char msg[600];
        snprintf(msg, sizeof msg,
                 "egress to %s:%d refused: this job has no network (its tenant has no egress "
                 "rules, or the call asked for network: false); an operator grants it with "
                 "`snakepit tenant set TENANT --egress RULE`",
                 h->host, h->port);
        s_reply(c, 407, msg);
        return;
    }
    grant_t *g = c->grant;
    char why[GRANT_MAX_REASON];
    if (g->over_cap) {
        snprintf(why, sizeof why, "the job has moved its %llu bytes", (unsigned long long)g->max_bytes);
        s_refuse(c, 403, why);
        return;
    }
    if (g->conns >= g->max_conns) {
        snprintf(why, sizeof why, "the job has made its %llu connections",
                 (unsigned long long)g->max_conns);
        s_refuse(c, 429, why);
        return;
    }
    if (grants_tenant_open(eg->grants, g->tenant, 0) >= eg->conf->tenant_open) {
        snprintf(why, sizeof why, "the tenant has %ld connections open on this node",
                 eg->conf->tenant_open);
        s_refuse(c, 429, why);
        return;
    }
    g->conns++;
    if (h->host_is_addr) {
        egress_addr_t a;
        egress_addr_parse(h->host, strlen(h->host), &a);
        s_judge_addrs(c, &a, 1, NULL);
        return;
    }
    if (verdict_name(g->rules, g->n_rules, eg->deny, h->host, h->port, why, sizeof why) < 0) {
        s_refuse(c, 403, why);
        return;
    }
    if (!strcmp(h->host, "localhost")) { /* RFC 6761 §6.3: never asked of a resolver */
        egress_addr_t lo[2];
        egress_addr_parse("127.0.0.1", 9, &lo[0]);
        egress_addr_parse("::1", 3, &lo[1]);
        s_judge_addrs(c, lo, 2, h->host);
        return;
    }
    c->state = C_RESOLVE;
    s_watch(c);
    c->lookup = resolver_lookup(eg->resolver, h->host, s_resolved, c);
    if (!c->lookup) s_fail(c, 502, "the resolver is busy");
}

/* ---- relaying ------------------------------------------------------------------------------ */

static void s_relay_start(conn_t *c)
{
    egress_t *eg = c->eg;
    grant_t *g = c->grant;
    char id[ID_STR_LEN + 1], addr[64];
    id_format(g->job, id);
    egress_addr_format(&c->addrs[c->next_addr - 1], addr, sizeof addr);
    c->dest = grant_dest(g, c->head.host, c->head.port, DEST_ALLOWED, NULL);
    c->dest->conns++;
    c->open = 1;
    g->open++;
    grants_tenant_open(eg->grants, g->tenant, 1);
    eg->stats.allowed++;
    log_info("event=egress_allowed job=%s tenant=%s dest=%s:%d addr=%s", id, g->tenant,
             c->head.host, c->head.port, addr);
    c->c2u = xmalloc(RELAY_BUF);
    c->u2c = xmalloc(RELAY_BUF);
    buf_t b;
    buf_init(&b);
    if (c->head.kind == HEAD_CONNECT)
        buf_puts(&b, "HTTP/1.1 200 Connection established\r\n\r\n");
    else
        head_forward(&c->head, &b); /* counted as the job's bytes below */
    size_t rest = c->in_len - c->head.head_len;
    if (c->head.kind == HEAD_CONNECT) {
        memcpy(c->u2c, b.data, b.len);
        c->u2c_len = b.len;
    } else {
        size_t n = b.len < RELAY_BUF ? b.len : RELAY_BUF;
        memcpy(c->c2u, b.data, n);
        c->c2u_len = n;
        c->dest->bytes_out += n;
        g->bytes += n;
        eg->stats.bytes_out += n;
    }
    buf_free(&b);
    /* what the job sent after its head (a request body, or a TLS hello sent early) */
    if (rest && c->c2u_len + rest <= RELAY_BUF) {
        memcpy(c->c2u + c->c2u_len, c->in + c->head.head_len, rest);
        c->c2u_len += rest;
        c->dest->bytes_out += rest;
        g->bytes += rest;
        eg->stats.bytes_out += rest;
    }
    c->state = C_RELAY;
    c->deadline_ms = 0;
    c->last_io_ms = clock_mono_ms();
    if (g->max_bytes && g->bytes > g->max_bytes) eg->over_cap(eg, g);
    s_watch(c);
}

/* Reads from fd into buf (room bytes free); the grant's cap allows at most what it has left:
 * a read that would pass it stops the job instead (nothing past the cap reaches either side). */
static ssize_t s_read_capped(conn_t *c, int fd, uint8_t *buf, size_t room)
{
    grant_t *g = c->grant;
    size_t left = g->max_bytes > g->bytes ? (size_t)(g->max_bytes - g->bytes) : 0;
    size_t want = room < left + 1 ? room : left + 1;
    if (!want) want = 1;
    ssize_t n = recv(fd, buf, want, MSG_DONTWAIT);
    if (n > 0 && (size_t)n > left) {
        c->eg->over_cap(c->eg, g); /* stalls every connection of the job, this one too */
        return -2;
    }
    if (n > 0) g->bytes += (uint64_t)n;
    return n;
}

static int s_flush(int fd, uint8_t *buf, size_t *off, size_t *len)
{
    while (*off < *len) {
        ssize_t n = send(fd, buf + *off, *len - *off, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -1;
        *off += (size_t)n;
    }
    *off = *len = 0;
    return 0;
}

/* One pass of the relay; 0, or -1 when the connection is over. */
static int s_relay(conn_t *c, short cre, short ure)
{
    egress_t *eg = c->eg;
    if (c->grant->over_cap) return 0;
    if ((cre & LOOP_IN) && !c->c_eof && c->c2u_len < RELAY_BUF) {
        ssize_t n = s_read_capped(c, c->cfd, c->c2u + c->c2u_len, RELAY_BUF - c->c2u_len);
        if (n == -2) return 0;
        if (n > 0) {
            c->c2u_len += (size_t)n;
            c->dest->bytes_out += (uint64_t)n;
            eg->stats.bytes_out += (uint64_t)n;
            c->last_io_ms = clock_mono_ms();
        } else if (n == 0) {
            c->c_eof = 1;
        } else if (errno != EAGAIN && errno != EINTR) {
            return -1;
        }
    }
    if ((ure & LOOP_IN) && !c->u_eof && c->u2c_len < RELAY_BUF) {
        ssize_t n = s_read_capped(c, c->ufd, c->u2c + c->u2c_len, RELAY_BUF - c->u2c_len);
        if (n == -2) return 0;
        if (n > 0) {
            c->u2c_len += (size_t)n;
            c->dest->bytes_in += (uint64_t)n;
            eg->stats.bytes_in += (uint64_t)n;
            c->last_io_ms = clock_mono_ms();
        } else if (n == 0) {
            c->u_eof = 1;
        } else if (errno != EAGAIN && errno != EINTR) {
            return -1;
        }
    }
    if (s_flush(c->ufd, c->c2u, &c->c2u_off, &c->c2u_len) < 0) return -1;
    if (s_flush(c->cfd, c->u2c, &c->u2c_off, &c->u2c_len) < 0) return -1;
    /* a side that finished sends its end on once what it sent is through */
    if (c->c_eof && !c->c2u_len && !c->u_shut) shutdown(c->ufd, SHUT_WR), c->u_shut = 1;
    if (c->u_eof && !c->u2c_len && !c->c_shut) shutdown(c->cfd, SHUT_WR), c->c_shut = 1;
    return c->c_shut && c->u_shut ? -1 : 0;
}

/* ---- events -------------------------------------------------------------------------------- */

static void s_on_head(conn_t *c)
{
    if (c->in_len < sizeof c->in) { /* full: head_parse says it is too long */
        ssize_t n = recv(c->cfd, c->in + c->in_len, sizeof c->in - c->in_len, MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
            s_free(c, "closed before its request");
            return;
        }
        if (n < 0) return;
        c->in_len += (size_t)n;
    }
    char err[160];
    switch (head_parse(c->in, c->in_len, &c->head, err, sizeof err)) {
    case HEAD_PARTIAL:
        return;
    case HEAD_BAD: {
        c->eg->stats.malformed++;
        log_warn("event=egress_malformed audit=1 reason=\"%s\"", err);
        char msg[300];
        snprintf(msg, sizeof msg, "egress refused: a malformed proxy request (%s)", err);
        memset(&c->head, 0, sizeof c->head);
        s_reply(c, 400, msg);
        return;
    }
    case HEAD_OK:
        s_judge(c);
        return;
    }
}

static void s_io(loop_t *loop, short revents, void *arg)
{
    (void)loop;
    conn_t *c = arg;
    /* which side woke us: the loop passes the same arg for both; ask each without blocking */
    switch (c->state) {
    case C_HEAD:
        s_on_head(c);
        return;
    case C_RESOLVE:
        return;
    case C_CONNECT:
        if (revents & (LOOP_OUT | LOOP_ERR)) s_connected(c);
        return;
    case C_REPLY:
        if (s_flush(c->cfd, c->u2c, &c->u2c_off, &c->u2c_len) < 0 || !c->u2c_len) {
            shutdown(c->cfd, SHUT_WR);
            s_free(c, "answered");
        }
        return;
    case C_RELAY:
        if (s_relay(c, LOOP_IN | LOOP_OUT, LOOP_IN | LOOP_OUT) < 0) {
            s_free(c, c->c_eof || c->u_eof ? "ended" : "reset");
            return;
        }
        s_watch(c);
        return;
    }
}

void conn_tick(egress_t *eg)
{
    uint64_t now = clock_mono_ms();
    for (conn_t *c = eg->conns, *next; c; c = next) {
        next = c->next;
        if (c->state == C_RELAY) {
            if (!c->grant->over_cap && now - c->last_io_ms > (uint64_t)eg->conf->idle_s * 1000u)
                s_free(c, "idle");
        } else if (c->deadline_ms && now > c->deadline_ms) {
            if (c->state == C_REPLY || c->state == C_HEAD)
                s_free(c, c->state == C_HEAD ? "no request in time" : "answer not read");
            else
                s_fail(c, 504, c->state == C_RESOLVE ? "the name was not resolved in time"
                                                     : "the connection was not made in time");
        }
    }
}

void conn_close_all(egress_t *eg, const grant_t *g, uint32_t listener)
{
    for (conn_t *c = eg->conns, *next; c; c = next) {
        next = c->next;
        if (g ? c->grant == g : c->listener == listener) s_free(c, g ? "job ended" : "zygote gone");
    }
}

void conn_stall(egress_t *eg, const grant_t *g)
{
    for (conn_t *c = eg->conns; c; c = c->next)
        if (c->grant == g && c->state == C_RELAY) s_watch(c);
}
