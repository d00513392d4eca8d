/* broker/tables/affinity.c — see affinity.h. */
#define _GNU_SOURCE
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/idmap.h"
#include "proto/wire.h"
#include "affinity.h"

typedef struct {
    uint8_t id[ID_BYTES];
    char tenant[65];
    char reason[WIRE_MAX_REASON + 1];
    int lost;
    int used;
} gone_t;

struct affinity {
    idmap_t *sessions; /* id → broker_session_t */
    gone_t *gone;      /* a ring of the last gone_kept sessions that ended */
    size_t gone_kept, gone_next;
    idmap_t *gone_by_id;
};

affinity_t *affinity_new(size_t gone_kept)
{
    affinity_t *self = xcalloc(1, sizeof *self);
    self->sessions = idmap_new();
    self->gone_kept = gone_kept ? gone_kept : 1;
    self->gone = xcalloc(self->gone_kept, sizeof *self->gone);
    self->gone_by_id = idmap_new();
    return self;
}

static void s_free(void *arg, const uint8_t *id, void *value)
{
    (void)arg, (void)id;
    broker_session_t *s = value;
    assert(!s->head && !s->running);
    free(s);
}

void affinity_destroy(affinity_t **self_p)
{
    assert(self_p);
    affinity_t *self = *self_p;
    if (!self) return;
    idmap_each(self->sessions, s_free, NULL);
    idmap_destroy(&self->sessions);
    idmap_destroy(&self->gone_by_id);
    free(self->gone);
    free(self);
    *self_p = NULL;
}

broker_session_t *affinity_get(const affinity_t *self, const uint8_t id[ID_BYTES])
{
    return idmap_get(self->sessions, id);
}

broker_session_t *affinity_add(affinity_t *self, const uint8_t id[ID_BYTES], uint64_t now_ms)
{
    broker_session_t *s = xcalloc(1, sizeof *s);
    memcpy(s->id, id, ID_BYTES);
    s->homeless_ms = now_ms;
    idmap_put(self->sessions, s->id, s);
    return s;
}

void affinity_remove(affinity_t *self, broker_session_t **s_p)
{
    broker_session_t *s = *s_p;
    if (!s) return;
    assert(!s->head && !s->running);
    idmap_del(self->sessions, s->id);
    free(s);
    *s_p = NULL;
}

size_t affinity_count(const affinity_t *self)
{
    return idmap_size(self->sessions);
}

typedef struct {
    broker_session_t **out;
    size_t n, max;
} list_t;

static void s_list(void *arg, const uint8_t *id, void *value)
{
    (void)id;
    list_t *l = arg;
    if (l->n < l->max) l->out[l->n++] = value;
}

size_t affinity_list(const affinity_t *self, broker_session_t **out, size_t max)
{
    list_t l = {out, 0, max};
    idmap_each(self->sessions, s_list, &l);
    return l.n;
}

void affinity_push(broker_session_t *s, job_t *job)
{
    job->session = s;
    job->s_next = NULL;
    job->s_prev = s->tail;
    if (s->tail)
        s->tail->s_next = job;
    else
        s->head = job;
    s->tail = job;
    s->waiting++;
}

void affinity_push_head(broker_session_t *s, job_t *job)
{
    job->session = s;
    job->s_prev = NULL;
    job->s_next = s->head;
    if (s->head)
        s->head->s_prev = job;
    else
        s->tail = job;
    s->head = job;
    s->waiting++;
}

void affinity_unlink(broker_session_t *s, job_t *job)
{
    assert(job->session == s && s->waiting > 0);
    if (job->s_prev)
        job->s_prev->s_next = job->s_next;
    else
        s->head = job->s_next;
    if (job->s_next)
        job->s_next->s_prev = job->s_prev;
    else
        s->tail = job->s_prev;
    job->s_prev = job->s_next = NULL;
    s->waiting--;
}

void affinity_gone(affinity_t *self, const broker_session_t *s, int lost, const char *reason)
{
    gone_t *e = &self->gone[self->gone_next];
    self->gone_next = (self->gone_next + 1) % self->gone_kept;
    if (e->used && idmap_get(self->gone_by_id, e->id) == e) idmap_del(self->gone_by_id, e->id);
    memcpy(e->id, s->id, ID_BYTES);
    snprintf(e->tenant, sizeof e->tenant, "%s", s->tenant);
    snprintf(e->reason, sizeof e->reason, "%s", reason);
    e->lost = lost;
    e->used = 1;
    idmap_del(self->gone_by_id, s->id);
    idmap_put(self->gone_by_id, e->id, e);
}

const char *affinity_gone_reason(const affinity_t *self, const uint8_t id[ID_BYTES],
                                 const char *tenant, int *lost)
{
    const gone_t *e = idmap_get(self->gone_by_id, id);
    if (!e || (e->tenant[0] && strcmp(e->tenant, tenant) != 0)) return NULL;
    *lost = e->lost;
    return e->reason;
}
