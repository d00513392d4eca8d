/* broker/tables/deadlines.c — see deadlines.h. */
#include <assert.h>
#include <stdlib.h>

#include "common/buf.h"
#include "deadlines.h"

struct deadlines {
    job_t **heap;
    size_t n, cap;
};

deadlines_t *deadlines_new(void)
{
    return xcalloc(1, sizeof(deadlines_t));
}

void deadlines_destroy(deadlines_t **self_p)
{
    assert(self_p);
    deadlines_t *self = *self_p;
    if (!self) return;
    for (size_t i = 0; i < self->n; i++) self->heap[i]->heap_index = JOB_NOT_IN_HEAP;
    free(self->heap);
    free(self);
    *self_p = NULL;
}

static void s_set(deadlines_t *self, size_t i, job_t *job)
{
    self->heap[i] = job;
    job->heap_index = i;
}

static void s_up(deadlines_t *self, size_t i)
{
    job_t *job = self->heap[i];
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (self->heap[parent]->due_ms <= job->due_ms) break;
        s_set(self, i, self->heap[parent]);
        i = parent;
    }
    s_set(self, i, job);
}

static void s_down(deadlines_t *self, size_t i)
{
    job_t *job = self->heap[i];
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, min = i;
        uint64_t key = job->due_ms;
        if (l < self->n && self->heap[l]->due_ms < key) min = l, key = self->heap[l]->due_ms;
        if (r < self->n && self->heap[r]->due_ms < key) min = r;
        if (min == i) break;
        s_set(self, i, self->heap[min]);
        i = min;
    }
    s_set(self, i, job);
}

void deadlines_add(deadlines_t *self, job_t *job)
{
    assert(job->heap_index == JOB_NOT_IN_HEAP);
    if (self->n == self->cap) {
        self->cap = self->cap ? self->cap * 2 : 64;
        self->heap = xrealloc(self->heap, self->cap * sizeof *self->heap);
    }
    s_set(self, self->n++, job);
    s_up(self, self->n - 1);
}

void deadlines_remove(deadlines_t *self, job_t *job)
{
    size_t i = job->heap_index;
    if (i == JOB_NOT_IN_HEAP) return;
    assert(i < self->n && self->heap[i] == job);
    job->heap_index = JOB_NOT_IN_HEAP;
    job_t *last = self->heap[--self->n];
    if (i == self->n) return;
    s_set(self, i, last);
    s_up(self, i);
    s_down(self, last->heap_index);
}

void deadlines_update(deadlines_t *self, job_t *job)
{
    assert(job->heap_index != JOB_NOT_IN_HEAP);
    s_up(self, job->heap_index);
    s_down(self, job->heap_index);
}

job_t *deadlines_first(const deadlines_t *self)
{
    return self->n ? self->heap[0] : NULL;
}

size_t deadlines_size(const deadlines_t *self)
{
    return self->n;
}
