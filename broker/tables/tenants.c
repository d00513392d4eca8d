/* broker/tables/tenants.c — see tenants.h. */
#define _GNU_SOURCE
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "keymap.h"
#include "tenants.h"

struct tenants {
    keymap_t *by_name;
};

tenants_t *tenants_new(void)
{
    tenants_t *self = xcalloc(1, sizeof *self);
    self->by_name = keymap_new();
    return self;
}

static void s_free(void *arg, const void *key, size_t len, void *value)
{
    (void)arg, (void)key, (void)len;
    free(value);
}

void tenants_destroy(tenants_t **self_p)
{
    assert(self_p);
    tenants_t *self = *self_p;
    if (!self) return;
    keymap_each(self->by_name, s_free, NULL);
    keymap_destroy(&self->by_name);
    free(self);
    *self_p = NULL;
}

tenant_t *tenants_get(tenants_t *self, const char *name)
{
    tenant_t *t = keymap_get_str(self->by_name, name);
    if (t) return t;
    t = xcalloc(1, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", name);
    keymap_put_str(self->by_name, t->name, t);
    return t;
}

tenant_t *tenants_find(const tenants_t *self, const char *name)
{
    return keymap_get_str(self->by_name, name);
}

void tenants_release(tenants_t *self, tenant_t *t)
{
    if (t->queued || t->inflight) return;
    keymap_del_str(self->by_name, t->name);
    free(t);
}

size_t tenants_count(const tenants_t *self)
{
    return keymap_size(self->by_name);
}

int tenant_may_run(const tenant_t *t)
{
    return t->max_inflight == 0 || t->inflight < t->max_inflight;
}
