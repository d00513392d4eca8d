/* broker/tables/queue.c — see queue.h.
 *
 * Active FIFOs form a circular list (the round); `current` is the FIFO whose turn it is and
 * `credit` what it may still take this turn. A FIFO that empties leaves the round and is
 * freed, so the memory held is bounded by the jobs queued. New FIFOs join just behind
 * `current`, i.e. at the end of the round, as in the paper. */
#define _GNU_SOURCE
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "keymap.h"
#include "queue.h"

typedef struct fifo fifo_t;
struct fifo {
    char tenant[65];
    job_t *head, *tail;
    size_t n;
    long deficit;        /* jobs it may still take in the current turn */
    int parked;          /* out of the round: its tenant is at its in-flight quota */
    fifo_t *prev, *next; /* the round, while not parked */
};

struct queue {
    keymap_t *fifos; /* tenant name → fifo_t */
    fifo_t *current; /* whose turn it is; NULL when the round is empty */
    size_t depth;
    size_t n_parked;
    unsigned quantum; /* jobs per turn */
};

queue_t *queue_new(unsigned quantum)
{
    queue_t *self = xcalloc(1, sizeof *self);
    self->fifos = keymap_new();
    self->quantum = quantum ? quantum : 1;
    return self;
}

void queue_destroy(queue_t **self_p)
{
    assert(self_p);
    queue_t *self = *self_p;
    if (!self) return;
    assert(self->depth == 0);
    keymap_destroy(&self->fifos);
    free(self);
    *self_p = NULL;
}

static void s_round_insert(queue_t *self, fifo_t *f)
{
    f->deficit = 0;
    if (!self->current) {
        f->prev = f->next = f;
        self->current = f;
        return;
    }
    fifo_t *c = self->current; /* join at the end of the round: just before current */
    f->next = c;
    f->prev = c->prev;
    c->prev->next = f;
    c->prev = f;
}

static void s_round_remove(queue_t *self, fifo_t *f)
{
    if (f->next == f) {
        self->current = NULL;
    } else {
        f->prev->next = f->next;
        f->next->prev = f->prev;
        if (self->current == f) self->current = f->next;
    }
    f->prev = f->next = NULL;
}

static fifo_t *s_fifo(queue_t *self, const char *tenant)
{
    fifo_t *f = keymap_get_str(self->fifos, tenant);
    if (f) return f;
    f = xcalloc(1, sizeof *f);
    snprintf(f->tenant, sizeof f->tenant, "%s", tenant);
    keymap_put_str(self->fifos, f->tenant, f);
    s_round_insert(self, f);
    return f;
}

/* An empty FIFO leaves the round (or the parked set) and is freed. */
static void s_fifo_drop_if_empty(queue_t *self, fifo_t *f)
{
    if (f->n) return;
    if (f->parked)
        self->n_parked--;
    else
        s_round_remove(self, f);
    keymap_del_str(self->fifos, f->tenant);
    free(f);
}

void queue_push(queue_t *self, job_t *job)
{
    assert(job->state == JOB_DETACHED);
    fifo_t *f = s_fifo(self, job->route.tenant);
    job->next = NULL;
    job->prev = f->tail;
    if (f->tail)
        f->tail->next = job;
    else
        f->head = job;
    f->tail = job;
    f->n++;
    self->depth++;
    job->state = JOB_QUEUED;
}

void queue_push_head(queue_t *self, job_t *job)
{
    assert(job->state == JOB_DETACHED);
    fifo_t *f = s_fifo(self, job->route.tenant);
    job->prev = NULL;
    job->next = f->head;
    if (f->head)
        f->head->prev = job;
    else
        f->tail = job;
    f->head = job;
    f->n++;
    self->depth++;
    job->state = JOB_QUEUED;
}

static void s_unlink(queue_t *self, fifo_t *f, job_t *job)
{
    if (job->prev)
        job->prev->next = job->next;
    else
        f->head = job->next;
    if (job->next)
        job->next->prev = job->prev;
    else
        f->tail = job->prev;
    job->prev = job->next = NULL;
    job->state = JOB_DETACHED;
    f->n--;
    self->depth--;
}

void queue_remove(queue_t *self, job_t *job)
{
    assert(job->state == JOB_QUEUED);
    fifo_t *f = keymap_get_str(self->fifos, job->route.tenant);
    assert(f);
    s_unlink(self, f, job);
    s_fifo_drop_if_empty(self, f);
}

static void s_park(queue_t *self, fifo_t *f)
{
    s_round_remove(self, f);
    f->parked = 1;
    f->deficit = 0;
    self->n_parked++;
}

job_t *queue_pop(queue_t *self, queue_eligible_fn *eligible, void *arg)
{
    /* Each pass either serves a job or parks a FIFO, so this ends within (round size + 1)
     * passes. */
    while (self->current) {
        fifo_t *f = self->current;
        if (eligible && !eligible(arg, f->head)) {
            s_park(self, f);
            continue;
        }
        if (f->deficit <= 0) f->deficit += self->quantum; /* its turn begins */
        job_t *job = f->head;
        s_unlink(self, f, job);
        f->deficit--;
        if (f->n == 0) {
            s_fifo_drop_if_empty(self, f);
        } else if (f->deficit <= 0) {
            self->current = f->next; /* turn over */
        }
        return job;
    }
    return NULL;
}

job_t *queue_pop_first(queue_t *self, queue_eligible_fn *take, void *arg)
{
    fifo_t *f = self->current;
    if (!f) return NULL;
    do {
        if (take(arg, f->head)) {
            job_t *job = f->head;
            s_unlink(self, f, job);
            s_fifo_drop_if_empty(self, f);
            return job;
        }
        f = f->next;
    } while (f != self->current);
    return NULL;
}

void queue_unpark(queue_t *self, const char *tenant)
{
    fifo_t *f = keymap_get_str(self->fifos, tenant);
    if (!f || !f->parked) return;
    f->parked = 0;
    self->n_parked--;
    s_round_insert(self, f);
}

size_t queue_depth(const queue_t *self)
{
    return self->depth;
}

size_t queue_tenants(const queue_t *self)
{
    return keymap_size(self->fifos);
}

size_t queue_parked(const queue_t *self)
{
    return self->n_parked;
}

job_t *queue_peek_tenant(const queue_t *self, const char *tenant)
{
    fifo_t *f = keymap_get_str(self->fifos, tenant);
    return f ? f->head : NULL;
}
