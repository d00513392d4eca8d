/* common/idmap.h — a hash map from 16-byte ids (UUIDv7 job ids) to pointers. Open
 * addressing with linear probing and tombstones; the hash comes from the id's random tail,
 * since the head is a timestamp shared by every id of the same millisecond. The map owns
 * nothing it points to. */
#ifndef SP_IDMAP_H
#define SP_IDMAP_H
#include <stddef.h>
#include <stdint.h>

#include "ids.h"

typedef struct idmap idmap_t;

idmap_t *idmap_new(void);
void     idmap_destroy(idmap_t **self_p);
int      idmap_put(idmap_t *self, const uint8_t id[ID_BYTES], void *value); /* 0, -1 if present */
void    *idmap_get(const idmap_t *self, const uint8_t id[ID_BYTES]);
void    *idmap_del(idmap_t *self, const uint8_t id[ID_BYTES]); /* the value, or NULL */
size_t   idmap_size(const idmap_t *self);
/* Calls fn for every entry; fn must not modify the map. */
void     idmap_each(const idmap_t *self, void (*fn)(void *arg, const uint8_t *id, void *value),
                    void *arg);

#endif
