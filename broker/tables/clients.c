/* broker/tables/clients.c — see clients.h. */
#define _GNU_SOURCE
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "clients.h"
#include "keymap.h"

struct clients {
    keymap_t *by_identity;
    size_t max;
};

clients_t *clients_new(size_t max)
{
    clients_t *self = xcalloc(1, sizeof *self);
    self->by_identity = keymap_new();
    self->max = max;
    return self;
}

static void s_free(void *arg, const void *key, size_t len, void *value)
{
    (void)arg, (void)key, (void)len;
    free(value);
}

void clients_destroy(clients_t **self_p)
{
    assert(self_p);
    clients_t *self = *self_p;
    if (!self) return;
    keymap_each(self->by_identity, s_free, NULL);
    keymap_destroy(&self->by_identity);
    free(self);
    *self_p = NULL;
}

client_t *clients_touch(clients_t *self, const void *identity, size_t len, uint64_t now_ms)
{
    client_t *c = keymap_get(self->by_identity, identity, len);
    if (!c) {
        if (len == 0 || len > CLIENT_MAX_IDENTITY || keymap_size(self->by_identity) >= self->max)
            return NULL;
        c = xcalloc(1, sizeof *c);
        memcpy(c->identity, identity, len);
        c->identity_len = len;
        keymap_put(self->by_identity, c->identity, len, c);
    }
    c->last_seen_ms = now_ms;
    return c;
}

void clients_remove(clients_t *self, client_t **c_p)
{
    client_t *c = *c_p;
    if (!c) return;
    keymap_del(self->by_identity, c->identity, c->identity_len);
    free(c);
    *c_p = NULL;
}

size_t clients_count(const clients_t *self)
{
    return keymap_size(self->by_identity);
}

typedef struct {
    int (*pick)(void *arg, const client_t *c);
    void *arg;
    client_t **out;
    size_t n, max;
} select_t;

static void s_select(void *arg, const void *key, size_t len, void *value)
{
    (void)key, (void)len;
    select_t *s = arg;
    if (s->n < s->max && s->pick(s->arg, value)) s->out[s->n++] = value;
}

size_t clients_select(const clients_t *self, int (*pick)(void *arg, const client_t *c), void *arg,
                      client_t **out, size_t max)
{
    select_t s = {pick, arg, out, 0, max};
    keymap_each(self->by_identity, s_select, &s);
    return s.n;
}
