/* executor-node/node/node_sessions.c — see node_sessions.h. */
#define _GNU_SOURCE
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/idmap.h"
#include "node_sessions.h"

typedef struct {
    uint8_t id[ID_BYTES];
    char tenant[65];
    char reason[WIRE_MAX_REASON + 1];
    int used;
} ended_t;

typedef struct {
    uint8_t (*ids)[ID_BYTES];
    char **reasons; /* owned, for downs */
    size_t n, cap;
} list_t;

struct node_sessions {
    node_sessions_conf_t conf;
    idmap_t *live;  /* id → node_session_t */
    ended_t *ended; /* a ring of the last conf.ended_kept ends */
    size_t ended_next;
    idmap_t *ended_by_id;    /* id → ended_t in the ring */
    list_t up, down;         /* changes not yet taken */
    list_t out_up, out_down; /* what node_sessions_changes handed out last */
};

node_sessions_t *node_sessions_new(const node_sessions_conf_t *conf)
{
    node_sessions_t *self = xcalloc(1, sizeof *self);
    self->conf = *conf;
    if (!self->conf.ended_kept) self->conf.ended_kept = 4096;
    self->live = idmap_new();
    self->ended = xcalloc(self->conf.ended_kept, sizeof *self->ended);
    self->ended_by_id = idmap_new();
    return self;
}

static void s_list_clear(list_t *l)
{
    for (size_t i = 0; l->reasons && i < l->n; i++) free(l->reasons[i]);
    l->n = 0;
}

static void s_list_free(list_t *l)
{
    s_list_clear(l);
    free(l->ids);
    free(l->reasons);
    memset(l, 0, sizeof *l);
}

static void s_free_live(void *arg, const uint8_t *id, void *value)
{
    (void)arg, (void)id;
    free(value);
}

void node_sessions_destroy(node_sessions_t **self_p)
{
    node_sessions_t *self = *self_p;
    if (!self) return;
    idmap_each(self->live, s_free_live, NULL);
    idmap_destroy(&self->live);
    idmap_destroy(&self->ended_by_id);
    free(self->ended);
    s_list_free(&self->up);
    s_list_free(&self->down);
    s_list_free(&self->out_up);
    s_list_free(&self->out_down);
    free(self);
    *self_p = NULL;
}

static void s_push(list_t *l, const uint8_t id[ID_BYTES], const char *reason)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 16;
        l->ids = xrealloc(l->ids, l->cap * sizeof *l->ids);
        l->reasons = xrealloc(l->reasons, l->cap * sizeof *l->reasons);
    }
    memcpy(l->ids[l->n], id, ID_BYTES);
    l->reasons[l->n] = reason ? xstrdup(reason) : NULL;
    l->n++;
}

node_session_t *node_sessions_get(node_sessions_t *self, const uint8_t id[ID_BYTES])
{
    return idmap_get(self->live, id);
}

size_t node_sessions_count(const node_sessions_t *self)
{
    return idmap_size(self->live);
}

int node_sessions_full(const node_sessions_t *self)
{
    return (long)idmap_size(self->live) >= self->conf.max_sessions;
}

static void s_sum(void *arg, const uint8_t *id, void *value)
{
    (void)id;
    const node_session_t *s = value;
    if (!s->ending) *(uint64_t *)arg += s->memory_kb;
}

uint64_t node_sessions_memory_kb(const node_sessions_t *self)
{
    uint64_t kb = 0;
    idmap_each(self->live, s_sum, &kb);
    return kb;
}

void node_sessions_up(node_sessions_t *self, const uint8_t id[ID_BYTES], int zi, const char *tenant,
                      long idle_timeout_s, long memory_mb, long retention_s, uint64_t now_ms)
{
    node_session_t *s = idmap_get(self->live, id);
    if (!s) {
        s = xcalloc(1, sizeof *s);
        memcpy(s->id, id, ID_BYTES);
        idmap_put(self->live, s->id, s);
    }
    s->zygote = zi;
    snprintf(s->tenant, sizeof s->tenant, "%s", tenant);
    s->idle_timeout_s = idle_timeout_s;
    s->memory_mb = memory_mb;
    s->retention_s = retention_s;
    s->dirty = 1; /* no checkpoint of it yet */
    s->last_used_ms = now_ms;
    s_push(&self->up, id, NULL);
}

static void s_remember(node_sessions_t *self, const uint8_t id[ID_BYTES], const char *tenant,
                       const char *reason)
{
    ended_t *e = &self->ended[self->ended_next];
    self->ended_next = (self->ended_next + 1) % self->conf.ended_kept;
    if (e->used && idmap_get(self->ended_by_id, e->id) == e) idmap_del(self->ended_by_id, e->id);
    memcpy(e->id, id, ID_BYTES);
    snprintf(e->tenant, sizeof e->tenant, "%s", tenant);
    snprintf(e->reason, sizeof e->reason, "%s", reason);
    e->used = 1;
    idmap_del(self->ended_by_id, id);
    idmap_put(self->ended_by_id, e->id, e);
}

void node_sessions_down(node_sessions_t *self, const uint8_t id[ID_BYTES], const char *reason)
{
    node_session_t *s = idmap_del(self->live, id);
    if (!s) return;
    s_remember(self, id, s->tenant, reason);
    free(s);
    s_push(&self->down, id, reason);
}

void node_sessions_memory(node_sessions_t *self, const uint8_t id[ID_BYTES], uint64_t kb)
{
    node_session_t *s = idmap_get(self->live, id);
    if (s) s->memory_kb = kb;
}

typedef struct {
    int zi;
    uint8_t (*ids)[ID_BYTES];
    size_t n;
} of_zygote_t;

static void s_of_zygote(void *arg, const uint8_t *id, void *value)
{
    of_zygote_t *o = arg;
    if (((const node_session_t *)value)->zygote == o->zi) memcpy(o->ids[o->n++], id, ID_BYTES);
}

void node_sessions_zygote_down(node_sessions_t *self, int zi, const char *reason)
{
    of_zygote_t o = {zi, xcalloc(idmap_size(self->live) + 1, ID_BYTES), 0};
    idmap_each(self->live, s_of_zygote, &o);
    for (size_t i = 0; i < o.n; i++) node_sessions_down(self, o.ids[i], reason);
    free(o.ids);
}

void node_sessions_busy(node_sessions_t *self, const uint8_t id[ID_BYTES], int busy,
                        uint64_t now_ms)
{
    node_session_t *s = idmap_get(self->live, id);
    if (!s) return;
    s->busy = busy;
    s->dirty = 1;
    s->last_used_ms = now_ms;
}

const char *node_sessions_ended(const node_sessions_t *self, const uint8_t id[ID_BYTES],
                                const char *tenant)
{
    const ended_t *e = idmap_get(self->ended_by_id, id);
    return e && !strcmp(e->tenant, tenant) ? e->reason : NULL;
}

node_session_t *node_sessions_of(node_sessions_t *self, const uint8_t id[ID_BYTES],
                                 const char *tenant)
{
    node_session_t *s = idmap_get(self->live, id);
    return s && !strcmp(s->tenant, tenant) ? s : NULL;
}

/* ---- what ends now ------------------------------------------------------------------------ */

typedef struct {
    node_session_t **all;
    size_t n;
} gather_t;

static void s_gather(void *arg, const uint8_t *id, void *value)
{
    (void)id;
    gather_t *g = arg;
    node_session_t *s = value;
    if (!s->busy && !s->ending && !s->checkpointing) g->all[g->n++] = s;
}

static int s_by_last_use(const void *a, const void *b)
{
    uint64_t x = (*(node_session_t *const *)a)->last_used_ms,
             y = (*(node_session_t *const *)b)->last_used_ms;
    return x < y ? -1 : x > y;
}

/* s is freed: hibernated when it may be (its checkpoint first), else ended. */
static size_t s_end(const node_sessions_t *self, node_session_t *s, node_sessions_end_t *out,
                    size_t n, const char *fmt, long a, long b)
{
    int keep = self->conf.hibernate && s->retention_s > 0;
    if (keep)
        s->checkpointing = 1;
    else
        s->ending = 1;
    memcpy(out[n].id, s->id, ID_BYTES);
    out[n].zygote = s->zygote;
    out[n].what = keep ? SESSION_DUE_FREE : SESSION_DUE_END;
    snprintf(out[n].reason, sizeof out[n].reason, fmt, a, b);
    return n + 1;
}

static size_t s_checkpoint(node_session_t *s, node_sessions_end_t *out, size_t n)
{
    s->checkpointing = 1;
    memcpy(out[n].id, s->id, ID_BYTES);
    out[n].zygote = s->zygote;
    out[n].what = SESSION_DUE_CHECKPOINT;
    snprintf(out[n].reason, sizeof out[n].reason, "checkpoint");
    return n + 1;
}

size_t node_sessions_due(node_sessions_t *self, uint64_t now_ms, long mem_free_mb,
                         node_sessions_end_t *out, size_t max)
{
    gather_t g = {xcalloc(idmap_size(self->live) + 1, sizeof *g.all), 0};
    size_t n = 0;
    idmap_each(self->live, s_gather, &g);
    qsort(g.all, g.n, sizeof *g.all, s_by_last_use);
    for (size_t i = 0; i < g.n && n < max; i++) {
        node_session_t *s = g.all[i];
        if (now_ms - s->last_used_ms >= (uint64_t)s->idle_timeout_s * 1000u)
            n = s_end(self, s, out, n, "session expired after %ld s idle", s->idle_timeout_s, 0);
    }
    /* Memory: least recently used first. Short of free memory, one at a time (what killing
     * it frees shows in the next reading); over the budget, as many as bring it under. */
    long budget = self->conf.memory_budget_mb;
    for (size_t i = 0; i < g.n && n < max; i++) {
        node_session_t *s = g.all[i];
        if (s->ending || s->checkpointing) continue;
        long held_mb = (long)(node_sessions_memory_kb(self) >> 10);
        if (self->conf.evict_free_mb > 0 && mem_free_mb >= 0 &&
            mem_free_mb < self->conf.evict_free_mb)
            n = s_end(self, s, out, n,
                      "evicted: node memory pressure (%ld MB free, threshold %ld MB)",
                      mem_free_mb, self->conf.evict_free_mb),
            mem_free_mb = -1; /* one per reading */
        else if (budget > 0 && held_mb > budget)
            n = s_end(self, s, out, n,
                      "evicted: node memory pressure (sessions hold %ld MB, budget %ld MB)",
                      held_mb, budget);
        else
            break;
    }
    /* Checkpoints of the sessions left, idle a while since a job: what a session resumes from
     * when its executor dies */
    for (size_t i = 0; i < g.n && n < max && self->conf.hibernate && self->conf.checkpoint_idle_ms;
         i++) {
        node_session_t *s = g.all[i];
        if (!s->ending && !s->checkpointing && s->dirty && s->retention_s > 0 &&
            now_ms - s->last_used_ms >= (uint64_t)self->conf.checkpoint_idle_ms)
            n = s_checkpoint(s, out, n);
    }
    free(g.all);
    return n;
}

size_t node_sessions_leave(node_sessions_t *self, int hibernate, node_sessions_end_t *out,
                           size_t max)
{
    gather_t g = {xcalloc(idmap_size(self->live) + 1, sizeof *g.all), 0};
    size_t n = 0;
    idmap_each(self->live, s_gather, &g); /* idle ones, neither ending nor checkpointing */
    for (size_t i = 0; i < g.n && n < max; i++) {
        node_session_t *s = g.all[i];
        int keep = hibernate && s->retention_s > 0;
        if (keep)
            s->checkpointing = 1;
        else
            s->ending = 1;
        memcpy(out[n].id, s->id, ID_BYTES);
        out[n].zygote = s->zygote;
        out[n].what = keep ? SESSION_DUE_DRAIN : SESSION_DUE_END;
        snprintf(out[n].reason, sizeof out[n].reason, "%s",
                 keep ? "its executor was drained" : "ended: its executor was drained");
        n++;
    }
    free(g.all);
    return n;
}

/* ---- for the broker ------------------------------------------------------------------------ */

int node_sessions_changes(node_sessions_t *self, node_sessions_changes_t *out)
{
    s_list_clear(&self->out_up);
    s_list_clear(&self->out_down);
    list_t t = self->out_up;
    self->out_up = self->up, self->up = t;
    t = self->out_down;
    self->out_down = self->down, self->down = t;
    out->up = self->out_up.ids;
    out->n_up = self->out_up.n;
    out->down = self->out_down.ids;
    out->reasons = (const char **)self->out_down.reasons;
    out->n_down = self->out_down.n;
    return out->n_up || out->n_down;
}

typedef struct {
    uint8_t (*ids)[ID_BYTES];
    size_t n, max;
} ids_t;

static void s_id(void *arg, const uint8_t *id, void *value)
{
    (void)value;
    ids_t *o = arg;
    if (o->n < o->max) memcpy(o->ids[o->n++], id, ID_BYTES);
}

size_t node_sessions_ids(const node_sessions_t *self, uint8_t (*ids)[ID_BYTES], size_t max)
{
    ids_t o = {ids, 0, max};
    idmap_each(self->live, s_id, &o);
    return o.n;
}
