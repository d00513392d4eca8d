/* executor-node/egress/grants.c — see grants.h. A node runs at most a few hundred jobs at once:
 * lists, scanned. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/clock.h"
#include "grants.h"

typedef struct tenant_use {
    char name[65];
    long open;
    struct tenant_use *next;
} tenant_use_t;

struct grants {
    grant_t *list;
    tenant_use_t *tenants;
};

grants_t *grants_new(void)
{
    return xcalloc(1, sizeof(grants_t));
}

static void s_free(grant_t *g)
{
    free(g->rules);
    explicit_bzero(g->secret, sizeof g->secret);
    free(g);
}

void grants_destroy(grants_t **self_p)
{
    grants_t *self = *self_p;
    if (!self) return;
    while (self->list) {
        grant_t *g = self->list;
        self->list = g->next;
        s_free(g);
    }
    while (self->tenants) {
        tenant_use_t *t = self->tenants;
        self->tenants = t->next;
        free(t);
    }
    free(self);
    *self_p = NULL;
}

static void s_unlink(grants_t *self, grant_t *g)
{
    for (grant_t **pp = &self->list; *pp; pp = &(*pp)->next)
        if (*pp == g) {
            *pp = g->next;
            return;
        }
}

grant_t *grants_add(grants_t *self, const uint8_t job[ID_BYTES], const emsg_grant_t *m,
                    uint64_t default_bytes, uint64_t default_conns, char *err, size_t errlen)
{
    grant_t *g = xcalloc(1, sizeof *g);
    g->rules = xcalloc(m->n_rules ? m->n_rules : 1, sizeof *g->rules);
    for (size_t i = 0; i < m->n_rules; i++)
        if (egress_rule_parse(m->rules[i], strlen(m->rules[i]), &g->rules[g->n_rules++], err,
                              errlen) < 0) {
            s_free(g);
            return NULL;
        }
    memcpy(g->job, job, ID_BYTES);
    snprintf(g->secret, sizeof g->secret, "%s", m->secret);
    snprintf(g->tenant, sizeof g->tenant, "%s", m->tenant);
    g->listener = m->listener;
    /* the job's own caps, within the node's: a JobSpec may ask for less, never more */
    g->max_bytes = m->max_bytes && m->max_bytes < default_bytes ? m->max_bytes : default_bytes;
    g->max_conns = m->max_conns && m->max_conns < default_conns ? m->max_conns : default_conns;
    g->expires_ms = clock_mono_ms() + (m->wall_ms ? m->wall_ms : 3600000u) + GRANT_GRACE_MS;
    grant_t *old = grants_by_job(self, job);
    if (old) {
        s_unlink(self, old);
        s_free(old);
    }
    g->next = self->list;
    self->list = g;
    return g;
}

/* Equal, in time that depends only on the length. */
static int s_same(const char *a, const char *b, size_t n)
{
    unsigned char d = 0;
    for (size_t i = 0; i < n; i++) d |= (unsigned char)(a[i] ^ b[i]);
    return d == 0;
}

grant_t *grants_by_secret(grants_t *self, const char *secret, uint32_t listener)
{
    if (strlen(secret) != EMSG_SECRET_LEN) return NULL;
    grant_t *found = NULL;
    for (grant_t *g = self->list; g; g = g->next)
        if (s_same(g->secret, secret, EMSG_SECRET_LEN) && g->listener == listener) found = g;
    return found;
}

grant_t *grants_by_job(grants_t *self, const uint8_t job[ID_BYTES])
{
    for (grant_t *g = self->list; g; g = g->next)
        if (!memcmp(g->job, job, ID_BYTES)) return g;
    return NULL;
}

grant_t *grants_expired(grants_t *self, uint64_t now_ms)
{
    for (grant_t *g = self->list; g; g = g->next)
        if (g->expires_ms <= now_ms) return g;
    return NULL;
}

static const char *const s_verdicts[] = {"allowed", "refused", "failed"};

void grants_remove(grants_t *self, grant_t *g, result_egress_list_t *account)
{
    if (account) {
        account->n = g->n_dests;
        account->list = xcalloc(g->n_dests ? g->n_dests : 1, sizeof *account->list);
        for (size_t i = 0; i < g->n_dests; i++) {
            const grant_dest_t *d = &g->dests[i];
            result_egress_t *e = &account->list[i];
            e->host = xstrdup(d->host);
            e->port = (uint32_t)d->port;
            e->verdict = xstrdup(s_verdicts[d->verdict]);
            e->reason = d->reason[0] ? xstrdup(d->reason) : NULL;
            e->connections = d->conns;
            e->bytes_out = d->bytes_out;
            e->bytes_in = d->bytes_in;
        }
    }
    s_unlink(self, g);
    s_free(g);
}

grant_dest_t *grant_dest(grant_t *g, const char *host, int port, dest_verdict_t verdict,
                         const char *reason)
{
    for (size_t i = 0; i < g->n_dests; i++) {
        grant_dest_t *d = &g->dests[i];
        if (d->port == port && d->verdict == verdict && !strcmp(d->host, host)) return d;
    }
    grant_dest_t *d;
    if (g->n_dests < GRANT_MAX_DESTS) {
        d = &g->dests[g->n_dests++];
        snprintf(d->host, sizeof d->host, "%s", host);
        d->port = port;
        d->verdict = verdict;
        if (g->n_dests == GRANT_MAX_DESTS) { /* the last: everything beyond, summed */
            snprintf(d->host, sizeof d->host, "*");
            d->port = 0;
            snprintf(d->reason, sizeof d->reason, "more destinations than a record lists");
            return d;
        }
    } else {
        return &g->dests[GRANT_MAX_DESTS - 1];
    }
    if (reason) snprintf(d->reason, sizeof d->reason, "%s", reason);
    return d;
}

long grants_tenant_open(grants_t *self, const char *tenant, long delta)
{
    tenant_use_t *t = self->tenants;
    while (t && strcmp(t->name, tenant)) t = t->next;
    if (!t) {
        t = xcalloc(1, sizeof *t);
        snprintf(t->name, sizeof t->name, "%s", tenant);
        t->next = self->tenants;
        self->tenants = t;
    }
    t->open += delta;
    if (t->open < 0) t->open = 0;
    return t->open;
}
