/* common/idmap.c — see idmap.h. */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "idmap.h"

typedef struct {
    uint8_t id[ID_BYTES];
    void   *value; /* NULL: empty; TOMBSTONE: deleted */
} slot_t;

static char s_tomb;
#define TOMBSTONE ((void *)&s_tomb)

struct idmap {
    slot_t *slots;
    size_t  cap;  /* power of two */
    size_t  size; /* live entries */
    size_t  used; /* live + tombstones */
};

static uint64_t s_hash(const uint8_t *id)
{
    uint64_t h;
    memcpy(&h, id + 8, sizeof h);
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    return h;
}

idmap_t *idmap_new(void)
{
    idmap_t *self = xcalloc(1, sizeof *self);
    self->cap = 64;
    self->slots = xcalloc(self->cap, sizeof *self->slots);
    return self;
}

void idmap_destroy(idmap_t **self_p)
{
    assert(self_p);
    if (!*self_p) return;
    free((*self_p)->slots);
    free(*self_p);
    *self_p = NULL;
}

static slot_t *s_find(const idmap_t *self, const uint8_t *id)
{
    size_t mask = self->cap - 1;
    for (size_t i = s_hash(id) & mask, n = 0; n < self->cap; i = (i + 1) & mask, n++) {
        slot_t *s = &self->slots[i];
        if (!s->value) return NULL;
        if (s->value != TOMBSTONE && memcmp(s->id, id, ID_BYTES) == 0) return s;
    }
    return NULL;
}

static void s_grow(idmap_t *self)
{
    slot_t *old = self->slots;
    size_t  old_cap = self->cap;
    if (self->size * 2 >= self->cap) self->cap *= 2; /* else: just clear tombstones */
    self->slots = xcalloc(self->cap, sizeof *self->slots);
    self->used = self->size = 0;
    for (size_t i = 0; i < old_cap; i++)
        if (old[i].value && old[i].value != TOMBSTONE) idmap_put(self, old[i].id, old[i].value);
    free(old);
}

int idmap_put(idmap_t *self, const uint8_t id[ID_BYTES], void *value)
{
    assert(value && value != TOMBSTONE);
    if (s_find(self, id)) return -1;
    if ((self->used + 1) * 4 > self->cap * 3) s_grow(self);
    size_t mask = self->cap - 1;
    for (size_t i = s_hash(id) & mask;; i = (i + 1) & mask) {
        slot_t *s = &self->slots[i];
        if (!s->value || s->value == TOMBSTONE) {
            if (!s->value) self->used++;
            memcpy(s->id, id, ID_BYTES);
            s->value = value;
            self->size++;
            return 0;
        }
    }
}

void *idmap_get(const idmap_t *self, const uint8_t id[ID_BYTES])
{
    slot_t *s = s_find(self, id);
    return s ? s->value : NULL;
}

void *idmap_del(idmap_t *self, const uint8_t id[ID_BYTES])
{
    slot_t *s = s_find(self, id);
    if (!s) return NULL;
    void *v = s->value;
    s->value = TOMBSTONE;
    self->size--;
    return v;
}

size_t idmap_size(const idmap_t *self)
{
    return self->size;
}

void idmap_each(const idmap_t *self, void (*fn)(void *arg, const uint8_t *id, void *value), void *arg)
{
    for (size_t i = 0; i < self->cap; i++)
        if (self->slots[i].value && self->slots[i].value != TOMBSTONE)
            fn(arg, self->slots[i].id, self->slots[i].value);
}
