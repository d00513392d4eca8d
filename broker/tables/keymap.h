/* broker/tables/keymap.h — a hash map from short byte strings (ZeroMQ routing ids, tenant and
 * service names; at most 255 bytes) to pointers. Keys come from the network, so the hash is
 * SipHash-1-3 with a per-process random key: a peer cannot pick names that all collide and
 * turn every lookup into a scan. The map copies keys and owns nothing it points to. */
#ifndef SP_KEYMAP_H
#define SP_KEYMAP_H
#include <stddef.h>
#include <stdint.h>

#define KEYMAP_MAX_KEY 255

typedef struct keymap keymap_t;

keymap_t *keymap_new(void);
void keymap_destroy(keymap_t **self_p);
/* 0, -1 when the key is present already (or longer than KEYMAP_MAX_KEY). */
int keymap_put(keymap_t *self, const void *key, size_t len, void *value);
void *keymap_get(const keymap_t *self, const void *key, size_t len);
void *keymap_del(keymap_t *self, const void *key, size_t len); /* the value, or NULL */
size_t keymap_size(const keymap_t *self);
/* Calls fn for every entry; fn must not modify the map. */
void keymap_each(const keymap_t *self,
                 void (*fn)(void *arg, const void *key, size_t len, void *value), void *arg);

/* String convenience: the key is the C string without its terminator. */
#define keymap_put_str(m, s, v) keymap_put((m), (s), strlen(s), (v))
#define keymap_get_str(m, s)    keymap_get((m), (s), strlen(s))
#define keymap_del_str(m, s)    keymap_del((m), (s), strlen(s))

#endif
