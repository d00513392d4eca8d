/* broker/affinity.c — see affinity.h. */
#define _GNU_SOURCE
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/buf.h"
#include "../common/idmap.h"
#include "../proto/wire.h"
#include "affinity.h"

typedef struct {
    uint8_t id[ID_BYTES];
    char reason[WIRE_MAX_REASON + 1];
    int used;
} lost_t;

struct affinity {
    idmap_t *sessions; /* id → bsession_t */
    lost_t *lost;      /* a ring of the last lost_kept lost sessions */
    size_t lost_kept, lost_next;
    idmap_t *lost_by_id;
};

affinity_t *affinity_new(size_t lost_kept)
{
    affinity_t *self = xcalloc(1, sizeof *self);
    self->sessions = idmap_new();
    self->lost_kept = lost_kept ? lost_kept : 1;
    self->lost = xcalloc(self->lost_kept, sizeof *self->lost);
    self->lost_by_id = idmap_new();
    return self;
}

static void s_free(void *arg, const uint8_t *id, void *value)
{
    (void)arg, (void)id;
    bsession_t *s = value;
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
    idmap_destroy(&self->lost_by_id);
    free(self->lost);
    free(self);
    *self_p = NULL;
}

bsession_t *affinity_get(const affinity_t *self, const uint8_t id[ID_BYTES])
{
    return idmap_get(self->sessions, id);
}

bsession_t *affinity_add(affinity_t *self, const uint8_t id[ID_BYTES], uint64_t now_ms)
{
    bsession_t *s = xcalloc(1, sizeof *s);
    memcpy(s->id, id, ID_BYTES);
    s->homeless_ms = now_ms;
    idmap_put(self->sessions, s->id, s);
    return s;
}

void affinity_remove(affinity_t *self, bsession_t **s_p)
{
    bsession_t *s = *s_p;
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
    bsession_t **out;
    size_t n, max;
} list_t;

static void s_list(void *arg, const uint8_t *id, void *value)
{
    (void)id;
    list_t *l = arg;
    if (l->n < l->max) l->out[l->n++] = value;
}

size_t affinity_list(const affinity_t *self, bsession_t **out, size_t max)
{
    list_t l = {out, 0, max};
    idmap_each(self->sessions, s_list, &l);
    return l.n;
}

void affinity_push(bsession_t *s, job_t *job)
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

void affinity_push_head(bsession_t *s, job_t *job)
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

void affinity_unlink(bsession_t *s, job_t *job)
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

void affinity_lost(affinity_t *self, const uint8_t id[ID_BYTES], const char *reason)
{
    lost_t *e = &self->lost[self->lost_next];
    self->lost_next = (self->lost_next + 1) % self->lost_kept;
    if (e->used && idmap_get(self->lost_by_id, e->id) == e) idmap_del(self->lost_by_id, e->id);
    memcpy(e->id, id, ID_BYTES);
    snprintf(e->reason, sizeof e->reason, "%s", reason);
    e->used = 1;
    idmap_del(self->lost_by_id, id);
    idmap_put(self->lost_by_id, e->id, e);
}

const char *affinity_lost_reason(const affinity_t *self, const uint8_t id[ID_BYTES])
{
    const lost_t *e = idmap_get(self->lost_by_id, id);
    return e ? e->reason : NULL;
}
