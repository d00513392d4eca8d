/* broker/tables/services.c — see services.h. */
#define _GNU_SOURCE
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "keymap.h"
#include "services.h"

struct services {
    service_t *all[SERVICES_MAX];
    size_t n;
    keymap_t *by_name;
    unsigned quantum;
};

services_t *services_new(unsigned quantum)
{
    services_t *self = xcalloc(1, sizeof *self);
    self->by_name = keymap_new();
    self->quantum = quantum;
    return self;
}

void services_destroy(services_t **self_p)
{
    assert(self_p);
    services_t *self = *self_p;
    if (!self) return;
    for (size_t i = 0; i < self->n; i++) {
        queue_destroy(&self->all[i]->queue);
        free(self->all[i]);
    }
    keymap_destroy(&self->by_name);
    free(self);
    *self_p = NULL;
}

service_t *services_get(const services_t *self, const char *name)
{
    return keymap_get_str(self->by_name, name);
}

service_t *services_add(services_t *self, const char *name, uint64_t orphaned_ms)
{
    if (self->n >= SERVICES_MAX) return NULL;
    service_t *sv = xcalloc(1, sizeof *sv);
    snprintf(sv->name, sizeof sv->name, "%s", name);
    sv->index = (unsigned)self->n;
    sv->queue = queue_new(self->quantum);
    sv->orphaned_ms = orphaned_ms;
    self->all[self->n++] = sv;
    keymap_put_str(self->by_name, sv->name, sv);
    return sv;
}

size_t services_count(const services_t *self)
{
    return self->n;
}

service_t *services_at(const services_t *self, size_t i)
{
    return i < self->n ? self->all[i] : NULL;
}

void services_mark_dirty(services_t *self, uint64_t mask)
{
    for (size_t i = 0; i < self->n; i++)
        if (mask & (1ULL << i)) self->all[i]->dirty = 1;
}

void services_unpark(services_t *self, tenant_t *t)
{
    t->parked = 0;
    for (size_t i = 0; i < self->n; i++) {
        queue_unpark(self->all[i]->queue, t->name);
        self->all[i]->dirty = 1;
    }
}
