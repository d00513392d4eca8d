/* executor-node/link/emsg.c — see emsg.h. One row per type: its name, encoder and decoder. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proto/egress_rule.h"
#include "proto/job.h"
#include "proto/mpack.h"
#include "emsg.h"

/* ---- payloads ------------------------------------------------------------------------------ */

static void s_listener_encode(const emsg_t *m, mpw_t *w)
{
    mpw_map(w, 1);
    mpw_kv_uint(w, "listener", m->listener);
}

static void s_grant_encode(const emsg_t *m, mpw_t *w)
{
    const emsg_grant_t *g = &m->grant;
    mpw_map(w, 7);
    mpw_kv_str(w, "secret", g->secret);
    mpw_kv_str(w, "tenant", g->tenant);
    mpw_kv_uint(w, "listener", g->listener);
    mpw_str(w, "rules");
    mpw_array(w, (uint32_t)g->n_rules);
    for (size_t i = 0; i < g->n_rules; i++) mpw_str(w, g->rules[i]);
    mpw_kv_uint(w, "max_bytes", g->max_bytes);
    mpw_kv_uint(w, "max_conns", g->max_conns);
    mpw_kv_uint(w, "wall_ms", g->wall_ms);
}

static void s_summary_encode(const emsg_t *m, mpw_t *w)
{
    mpw_map(w, 2);
    mpw_kv_bool(w, "over_cap", m->summary.over_cap);
    mpw_str(w, "egress");
    result_egress_write(w, &m->summary.dests);
}

/* the counters, one row each, for both directions of the codec */
static const struct {
    const char *key;
    size_t offset;
} s_counters[] = {
    {"allowed", offsetof(emsg_stats_t, allowed)},
    {"refused", offsetof(emsg_stats_t, refused)},
    {"failed", offsetof(emsg_stats_t, failed)},
    {"unauthenticated", offsetof(emsg_stats_t, unauthenticated)},
    {"malformed", offsetof(emsg_stats_t, malformed)},
    {"capped", offsetof(emsg_stats_t, capped)},
    {"bytes_out", offsetof(emsg_stats_t, bytes_out)},
    {"bytes_in", offsetof(emsg_stats_t, bytes_in)},
    {"over_cap", offsetof(emsg_stats_t, over_cap)},
};
#define N_COUNTERS (sizeof s_counters / sizeof s_counters[0])

static uint64_t *s_counter(emsg_stats_t *s, size_t i)
{
    return (uint64_t *)(void *)((char *)s + s_counters[i].offset);
}

static void s_stats_encode(const emsg_t *m, mpw_t *w)
{
    emsg_stats_t s = m->stats;
    mpw_map(w, (uint32_t)N_COUNTERS);
    for (size_t i = 0; i < N_COUNTERS; i++) mpw_kv_uint(w, s_counters[i].key, *s_counter(&s, i));
}

static void s_none_encode(const emsg_t *m, mpw_t *w)
{
    (void)m;
    mpw_map(w, 0);
}

/* A str of at most cap - 1 bytes into a fixed field; longer ones make the message malformed
 * (secrets and tenant names have exact rules, unlike a zygote's free text). */
static void s_str_into(mpr_t *r, char *dst, size_t cap)
{
    const char *s;
    uint32_t n;
    if (mpr_str(r, &s, &n) < 0) return;
    if (n >= cap) {
        mpr_fail(r, "a string over its cap");
        return;
    }
    memcpy(dst, s, n);
    dst[n] = '\0';
}

static void s_listener_field(mpr_t *r, const char *k, uint32_t kl, emsg_t *m)
{
    uint64_t u;
    if (mpr_key_is(k, kl, "listener")) {
        if (mpr_uint(r, &u) == 0) m->listener = (uint32_t)u;
    } else {
        mpr_skip(r);
    }
}

static void s_grant_rules(mpr_t *r, emsg_grant_t *g)
{
    uint32_t n;
    if (g->rules) {
        mpr_fail(r, "rules twice");
        return;
    }
    if (mpr_array(r, &n) < 0) return;
    if (n > EGRESS_MAX_RULES) {
        mpr_fail(r, "too many rules");
        return;
    }
    g->rules = xcalloc(n ? n : 1, sizeof *g->rules);
    for (uint32_t i = 0; i < n && !r->err; i++) {
        char *s = NULL;
        egress_rule_t rule;
        char why[160];
        if (mpr_strdup(r, EGRESS_MAX_RULE, &s) < 0) break;
        if (!s || egress_rule_parse(s, strlen(s), &rule, why, sizeof why) < 0) {
            free(s);
            mpr_fail(r, "a rule that does not parse");
            break;
        }
        g->rules[g->n_rules++] = s;
    }
}

static void s_grant_field(mpr_t *r, const char *k, uint32_t kl, emsg_t *m)
{
    emsg_grant_t *g = &m->grant;
    uint64_t u;
    if (mpr_key_is(k, kl, "secret"))
        s_str_into(r, g->secret, sizeof g->secret);
    else if (mpr_key_is(k, kl, "tenant"))
        s_str_into(r, g->tenant, sizeof g->tenant);
    else if (mpr_key_is(k, kl, "listener")) {
        if (mpr_uint(r, &u) == 0) g->listener = (uint32_t)u;
    } else if (mpr_key_is(k, kl, "rules"))
        s_grant_rules(r, g);
    else if (mpr_key_is(k, kl, "max_bytes"))
        mpr_uint(r, &g->max_bytes);
    else if (mpr_key_is(k, kl, "max_conns"))
        mpr_uint(r, &g->max_conns);
    else if (mpr_key_is(k, kl, "wall_ms"))
        mpr_uint(r, &g->wall_ms);
    else
        mpr_skip(r);
}

static void s_summary_field(mpr_t *r, const char *k, uint32_t kl, emsg_t *m)
{
    if (mpr_key_is(k, kl, "over_cap"))
        mpr_bool(r, &m->summary.over_cap);
    else if (mpr_key_is(k, kl, "egress") && !m->summary.dests.list)
        result_egress_read(r, &m->summary.dests);
    else
        mpr_skip(r);
}

static void s_stats_field(mpr_t *r, const char *k, uint32_t kl, emsg_t *m)
{
    for (size_t i = 0; i < N_COUNTERS; i++)
        if (mpr_key_is(k, kl, s_counters[i].key)) {
            mpr_uint(r, s_counter(&m->stats, i));
            return;
        }
    mpr_skip(r);
}

static void s_none_field(mpr_t *r, const char *k, uint32_t kl, emsg_t *m)
{
    (void)k, (void)kl, (void)m;
    mpr_skip(r);
}

/* ---- the table ----------------------------------------------------------------------------- */

static const struct {
    emsg_type_t type;
    const char *name;
    int has_id; /* the message names a job */
    void (*encode)(const emsg_t *, mpw_t *);
    void (*field)(mpr_t *, const char *, uint32_t, emsg_t *);
} s_rows[] = {
    {EM_LISTEN, "LISTEN", 0, s_listener_encode, s_listener_field},
    {EM_UNLISTEN, "UNLISTEN", 0, s_listener_encode, s_listener_field},
    {EM_GRANT, "GRANT", 1, s_grant_encode, s_grant_field},
    {EM_REVOKE, "REVOKE", 1, s_none_encode, s_none_field},
    {EM_SUMMARY, "SUMMARY", 1, s_summary_encode, s_summary_field},
    {EM_OVER_CAP, "OVER_CAP", 1, s_none_encode, s_none_field},
    {EM_STATS, "STATS", 0, s_stats_encode, s_stats_field},
};
#define N_ROWS (sizeof s_rows / sizeof s_rows[0])

static int s_row(uint8_t type)
{
    for (size_t i = 0; i < N_ROWS; i++)
        if ((uint8_t)s_rows[i].type == type) return (int)i;
    return -1;
}

const char *emsg_name(uint8_t type)
{
    int i = s_row(type);
    return i < 0 ? "?" : s_rows[i].name;
}

int emsg_send(zchan_t *chan, const emsg_t *m)
{
    int i = s_row((uint8_t)m->type);
    if (i < 0) return -1;
    buf_t out;
    buf_init(&out);
    mpw_t w;
    mpw_init(&w, &out);
    s_rows[i].encode(m, &w);
    int rc = zchan_send(chan, (uint8_t)m->type, s_rows[i].has_id ? m->id : NULL, out.data, out.len);
    explicit_bzero(out.data, out.len); /* a secret, or a job's destinations */
    buf_free(&out);
    return rc;
}

int emsg_decode(uint8_t type, const uint8_t id[ID_BYTES], const uint8_t *payload, size_t len,
                emsg_t *m, char *err, size_t errlen)
{
    memset(m, 0, sizeof *m);
    int row = s_row(type);
    if (row < 0) {
        snprintf(err, errlen, "unknown message type %u", type);
        return -1;
    }
    m->type = (emsg_type_t)type;
    if (id) memcpy(m->id, id, ID_BYTES);
    mpr_t r;
    uint32_t n;
    mpr_init(&r, payload, len);
    if (mpr_map(&r, &n) == 0)
        for (uint32_t i = 0; i < n && !r.err; i++) {
            const char *k;
            uint32_t kl;
            if (mpr_str(&r, &k, &kl) < 0) break;
            s_rows[row].field(&r, k, kl, m);
        }
    const char *why = r.err;
    if (!why && mpr_done(&r) < 0) why = "trailing bytes";
    if (!why && m->type == EM_GRANT &&
        (strlen(m->grant.secret) != EMSG_SECRET_LEN || !m->grant.tenant[0] || !m->grant.n_rules))
        why = "a grant without its secret, tenant or rules";
    if (why) {
        snprintf(err, errlen, "%s %s", s_rows[row].name, why);
        emsg_clear(m);
        return -1;
    }
    return 0;
}

void emsg_clear(emsg_t *m)
{
    if (m->type == EM_GRANT) {
        jobspec_free_names(m->grant.rules, m->grant.n_rules);
        explicit_bzero(m->grant.secret, sizeof m->grant.secret);
    }
    if (m->type == EM_SUMMARY) result_egress_clear(&m->summary.dests);
    memset(m, 0, sizeof *m);
}

/* ---- the descriptor channel ---------------------------------------------------------------- */

int emsg_send_fd(int sock, uint32_t listener, int fd)
{
    char ctl[CMSG_SPACE(sizeof(int))];
    memset(ctl, 0, sizeof ctl);
    struct iovec iov = {&listener, sizeof listener};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl,
                        .msg_controllen = sizeof ctl};
    struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof fd);
    ssize_t n;
    do n = sendmsg(sock, &mh, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    return n == (ssize_t)sizeof listener ? 0 : -1;
}

int emsg_recv_fd(int sock, uint32_t *listener, int *fd)
{
    for (;;) {
        char ctl[CMSG_SPACE(4 * sizeof(int))];
        uint32_t id = 0;
        struct iovec iov = {&id, sizeof id};
        struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl,
                            .msg_controllen = sizeof ctl};
        ssize_t n = recvmsg(sock, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
        if (n == 0) return -1;
        int got = -1, count = 0;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
            if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
            size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            for (size_t i = 0; i < k; i++) {
                int f;
                memcpy(&f, CMSG_DATA(c) + i * sizeof(int), sizeof f);
                if (count++ == 0)
                    got = f;
                else
                    close(f);
            }
        }
        if (count != 1 || n != (ssize_t)sizeof id || (mh.msg_flags & MSG_CTRUNC)) {
            if (got >= 0) close(got);
            continue; /* not what the node sends: dropped */
        }
        *listener = id;
        *fd = got;
        return 1;
    }
}
