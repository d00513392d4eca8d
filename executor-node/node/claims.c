/* executor-node/node/claims.c — see claims.h. Entries live in an idmap; expiry is a sweep (once a
 * second from the node: a few hundred thousand entries at most). */
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/idmap.h"
#include "claims.h"

typedef enum { ST_RUNNING, ST_DONE, ST_DISCLAIMED } state_t;

typedef struct {
    state_t state;
    int owner;           /* RUNNING: the origin; DISCLAIMED: the broker it belongs to */
    unsigned attached;   /* RUNNING: links that also want the answer */
    uint64_t expires_ms; /* DONE, DISCLAIMED: forgotten then (monotonic) */
} claim_t;

struct claims {
    idmap_t *map;
    size_t max;
    uint64_t done_keep_ms;
    claims_stats_t stats;
};

claims_t *claims_new(size_t max, uint64_t done_keep_ms)
{
    claims_t *self = xcalloc(1, sizeof *self);
    self->map = idmap_new();
    self->max = max;
    self->done_keep_ms = done_keep_ms;
    return self;
}

static void s_free(void *arg, const uint8_t *id, void *value)
{
    (void)arg, (void)id;
    free(value);
}

void claims_destroy(claims_t **self_p)
{
    claims_t *self = *self_p;
    if (!self) return;
    idmap_each(self->map, s_free, NULL);
    idmap_destroy(&self->map);
    free(self);
    *self_p = NULL;
}

/* A new entry, or NULL when the table is full (RUNNING entries are always made: a job that
 * runs must be known while it runs). */
static claim_t *s_add(claims_t *self, const uint8_t id[ID_BYTES], state_t st)
{
    if (st != ST_RUNNING && idmap_size(self->map) >= self->max) {
        self->stats.dropped++;
        return NULL;
    }
    claim_t *c = xcalloc(1, sizeof *c);
    c->state = st;
    idmap_put(self->map, id, c);
    return c;
}

claim_verdict_t claims_on_job(claims_t *self, const uint8_t id[ID_BYTES], int link,
                              uint64_t expires_ms, uint64_t now_ms)
{
    (void)expires_ms, (void)now_ms;
    claim_t *c = idmap_get(self->map, id);
    if (!c) {
        c = s_add(self, id, ST_RUNNING);
        c->owner = link;
        return CLAIM_RUN;
    }
    switch (c->state) {
    case ST_RUNNING:
        if (c->owner != link) c->attached |= 1u << link;
        return CLAIM_ATTACH;
    case ST_DONE:
        return CLAIM_REFUSE_DONE;
    case ST_DISCLAIMED:
        if (c->owner != link) return CLAIM_REFUSE_OWNED;
        c->state = ST_RUNNING;
        c->attached = 0;
        return CLAIM_RUN;
    }
    return CLAIM_REFUSE_DONE;
}

held_t claims_on_probe(claims_t *self, const uint8_t id[ID_BYTES], int link, uint64_t expires_ms,
                       uint64_t now_ms)
{
    claim_t *c = idmap_get(self->map, id);
    if (!c) {
        c = s_add(self, id, ST_DISCLAIMED);
        if (c) {
            c->owner = link;
            c->expires_ms = expires_ms ? expires_ms : now_ms + self->done_keep_ms;
        }
        return HELD_NONE;
    }
    switch (c->state) {
    case ST_RUNNING:
        if (c->owner != link) c->attached |= 1u << link;
        return HELD_RUNNING;
    case ST_DONE:
        return HELD_DONE;
    case ST_DISCLAIMED:
        c->owner = link; /* the newest resubmission owns it */
        if (expires_ms > c->expires_ms) c->expires_ms = expires_ms;
        return HELD_NONE;
    }
    return HELD_NONE;
}

unsigned claims_on_done(claims_t *self, const uint8_t id[ID_BYTES], uint64_t now_ms)
{
    claim_t *c = idmap_get(self->map, id);
    if (!c || c->state != ST_RUNNING) return 0;
    unsigned attached = c->attached;
    if (idmap_size(self->map) > self->max) { /* full: forget rather than remember it done */
        idmap_del(self->map, id);
        free(c);
        self->stats.dropped++;
        return attached;
    }
    c->state = ST_DONE;
    c->attached = 0;
    c->expires_ms = now_ms + self->done_keep_ms;
    return attached;
}

void claims_forget(claims_t *self, const uint8_t id[ID_BYTES])
{
    free(idmap_del(self->map, id));
}

typedef struct {
    uint64_t now;
    uint8_t (*ids)[ID_BYTES];
    size_t n, cap;
} sweep_t;

static void s_collect(void *arg, const uint8_t *id, void *value)
{
    sweep_t *sw = arg;
    const claim_t *c = value;
    if (c->state == ST_RUNNING || c->expires_ms > sw->now) return;
    if (sw->n == sw->cap) {
        sw->cap = sw->cap ? sw->cap * 2 : 256;
        sw->ids = xrealloc(sw->ids, sw->cap * sizeof *sw->ids);
    }
    memcpy(sw->ids[sw->n++], id, ID_BYTES);
}

void claims_expire(claims_t *self, uint64_t now_ms)
{
    sweep_t sw = {.now = now_ms};
    idmap_each(self->map, s_collect, &sw);
    for (size_t i = 0; i < sw.n; i++) free(idmap_del(self->map, sw.ids[i]));
    free(sw.ids);
}

size_t claims_count(const claims_t *self)
{
    return idmap_size(self->map);
}

const claims_stats_t *claims_stats(const claims_t *self)
{
    return &self->stats;
}
