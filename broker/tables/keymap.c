/* broker/tables/keymap.c — see keymap.h. Separate chaining with the key stored inline in each
 * entry; the table doubles when it holds more entries than buckets and never shrinks (the broker's
 * maps are bounded by its caps, so the high-water mark is bounded too). */
#define _GNU_SOURCE
#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "common/buf.h"
#include "keymap.h"

typedef struct entry {
    struct entry *next;
    void *value;
    uint64_t hash;
    uint8_t len;
    uint8_t key[]; /* len bytes */
} entry_t;

struct keymap {
    entry_t **buckets;
    size_t n_buckets; /* power of two */
    size_t size;
};

static uint64_t s_sipkey[2];
static int s_sipkey_set;

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND                                                                                   \
    do {                                                                                           \
        v0 += v1, v1 = ROTL(v1, 13), v1 ^= v0, v0 = ROTL(v0, 32);                                  \
        v2 += v3, v3 = ROTL(v3, 16), v3 ^= v2;                                                     \
        v0 += v3, v3 = ROTL(v3, 21), v3 ^= v0;                                                     \
        v2 += v1, v1 = ROTL(v1, 17), v1 ^= v2, v2 = ROTL(v2, 32);                                  \
    } while (0)

/* SipHash-1-3 (one compression round, three finalisation rounds), as Rust and Python use
 * for their hash tables. */
static uint64_t s_siphash(const uint8_t *in, size_t len)
{
    uint64_t k0 = s_sipkey[0], k1 = s_sipkey[1];
    uint64_t v0 = 0x736f6d6570736575ULL ^ k0, v1 = 0x646f72616e646f6dULL ^ k1;
    uint64_t v2 = 0x6c7967656e657261ULL ^ k0, v3 = 0x7465646279746573ULL ^ k1;
    uint64_t b = (uint64_t)len << 56;
    size_t full = len & ~(size_t)7;
    for (size_t i = 0; i < full; i += 8) {
        uint64_t m;
        memcpy(&m, in + i, 8);
        v3 ^= m;
        SIPROUND;
        v0 ^= m;
    }
    for (size_t i = full; i < len; i++) b |= (uint64_t)in[i] << (8 * (i - full));
    v3 ^= b;
    SIPROUND;
    v0 ^= b;
    v2 ^= 0xff;
    SIPROUND;
    SIPROUND;
    SIPROUND;
    return v0 ^ v1 ^ v2 ^ v3;
}

keymap_t *keymap_new(void)
{
    if (!s_sipkey_set) {
        /* getrandom never fails for 16 bytes once the pool is initialised; if it somehow
         * does, a fixed key only weakens collision resistance, never correctness. */
        if (getrandom(s_sipkey, sizeof s_sipkey, 0) != (ssize_t)sizeof s_sipkey)
            s_sipkey[0] = 0x0123456789abcdefULL, s_sipkey[1] = (uint64_t)(uintptr_t)&s_sipkey;
        s_sipkey_set = 1;
    }
    keymap_t *self = xcalloc(1, sizeof *self);
    self->n_buckets = 16;
    self->buckets = xcalloc(self->n_buckets, sizeof *self->buckets);
    return self;
}

void keymap_destroy(keymap_t **self_p)
{
    assert(self_p);
    keymap_t *self = *self_p;
    if (!self) return;
    for (size_t i = 0; i < self->n_buckets; i++) {
        entry_t *e = self->buckets[i];
        while (e) {
            entry_t *next = e->next;
            free(e);
            e = next;
        }
    }
    free(self->buckets);
    free(self);
    *self_p = NULL;
}

static entry_t **s_slot(const keymap_t *self, const void *key, size_t len, uint64_t h)
{
    entry_t **p = &self->buckets[h & (self->n_buckets - 1)];
    while (*p && !((*p)->hash == h && (*p)->len == len && memcmp((*p)->key, key, len) == 0))
        p = &(*p)->next;
    return p;
}

static void s_grow(keymap_t *self)
{
    size_t n = self->n_buckets * 2;
    entry_t **b = xcalloc(n, sizeof *b);
    for (size_t i = 0; i < self->n_buckets; i++) {
        entry_t *e = self->buckets[i];
        while (e) {
            entry_t *next = e->next;
            e->next = b[e->hash & (n - 1)];
            b[e->hash & (n - 1)] = e;
            e = next;
        }
    }
    free(self->buckets);
    self->buckets = b;
    self->n_buckets = n;
}

int keymap_put(keymap_t *self, const void *key, size_t len, void *value)
{
    assert(value);
    if (len > KEYMAP_MAX_KEY) return -1;
    uint64_t h = s_siphash(key, len);
    entry_t **p = s_slot(self, key, len, h);
    if (*p) return -1;
    entry_t *e = xmalloc(sizeof *e + len);
    e->next = NULL;
    e->value = value;
    e->hash = h;
    e->len = (uint8_t)len;
    memcpy(e->key, key, len);
    *p = e;
    if (++self->size > self->n_buckets) s_grow(self);
    return 0;
}

void *keymap_get(const keymap_t *self, const void *key, size_t len)
{
    if (len > KEYMAP_MAX_KEY) return NULL;
    entry_t *e = *s_slot(self, key, len, s_siphash(key, len));
    return e ? e->value : NULL;
}

void *keymap_del(keymap_t *self, const void *key, size_t len)
{
    if (len > KEYMAP_MAX_KEY) return NULL;
    entry_t **p = s_slot(self, key, len, s_siphash(key, len));
    entry_t *e = *p;
    if (!e) return NULL;
    void *value = e->value;
    *p = e->next;
    free(e);
    self->size--;
    return value;
}

size_t keymap_size(const keymap_t *self)
{
    return self->size;
}

void keymap_each(const keymap_t *self,
                 void (*fn)(void *arg, const void *key, size_t len, void *value), void *arg)
{
    for (size_t i = 0; i < self->n_buckets; i++)
        for (entry_t *e = self->buckets[i]; e; e = e->next) fn(arg, e->key, e->len, e->value);
}
