/* proto/mpack.h — msgpack in and out for every snakepit message.
 *
 * Reading is a bounds-checked pull parser over a byte range, written here rather than taken
 * from msgpack-c because msgpack-c's unpacker allocates arrays and maps from the count a
 * message claims (5 hostile bytes ask for 64 GiB) and builds a whole object tree we would
 * then walk again. This reader allocates nothing, refuses any count larger than the bytes
 * left could hold, caps nesting, and makes every error sticky: after the first failure all
 * calls fail, so decoders check once at the end of a section.
 *
 * Writing uses msgpack-c's packer (libmsgpack-dev) into a buf_t. */
#ifndef SP_MPACK_H
#define SP_MPACK_H
#include <msgpack.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

#define MPR_MAX_DEPTH 16

typedef enum {
    MP_NIL, MP_BOOL, MP_UINT, MP_INT, MP_FLOAT, MP_STR, MP_BIN, MP_ARRAY, MP_MAP, MP_EXT, MP_BAD
} mp_type_t;

typedef struct {
    const uint8_t *p;
    const uint8_t *end;
    const char    *err; /* first error, static text; NULL while all is well */
} mpr_t;

void      mpr_init(mpr_t *r, const void *data, size_t len);
mp_type_t mpr_peek(const mpr_t *r);
int       mpr_fail(mpr_t *r, const char *why); /* records why (first error wins), returns -1 */
int       mpr_done(const mpr_t *r);           /* 0 when no error and every byte consumed */

int mpr_nil(mpr_t *r);                /* 1 and consumed when the next value is nil, else 0 */
int mpr_bool(mpr_t *r, int *out);
int mpr_uint(mpr_t *r, uint64_t *out); /* any non-negative integer */
int mpr_int(mpr_t *r, int64_t *out);
int mpr_double(mpr_t *r, double *out); /* floats, and integers as doubles */
int mpr_str(mpr_t *r, const char **s, uint32_t *len);         /* str only; not NUL-terminated */
int mpr_bytes(mpr_t *r, const uint8_t **b, uint32_t *len);    /* str or bin */
int mpr_array(mpr_t *r, uint32_t *n);
int mpr_map(mpr_t *r, uint32_t *n);
int mpr_skip(mpr_t *r); /* one whole value, nested ones included, depth-capped */

/* Convenience for decoders: a str of at most max bytes copied into a new NUL-terminated
 * string (nil gives NULL). Rejects embedded NUL bytes: they would truncate silently in C. */
int mpr_strdup(mpr_t *r, size_t max, char **out);
/* str or bin of at most max bytes copied (with a NUL after it, not counted). */
int mpr_bytesdup(mpr_t *r, size_t max, char **out, size_t *len);
/* Compares a key just read with mpr_str against a literal. */
int mpr_key_is(const char *k, uint32_t klen, const char *lit);

/* Writer */
typedef struct {
    msgpack_packer pk;
    buf_t         *out;
} mpw_t;

void mpw_init(mpw_t *w, buf_t *out);
void mpw_map(mpw_t *w, uint32_t n);
void mpw_array(mpw_t *w, uint32_t n);
void mpw_str(mpw_t *w, const char *s);              /* NULL writes nil */
void mpw_strn(mpw_t *w, const char *s, size_t len);
void mpw_bin(mpw_t *w, const void *b, size_t len);
void mpw_uint(mpw_t *w, uint64_t v);
void mpw_int(mpw_t *w, int64_t v);
void mpw_double(mpw_t *w, double v);
void mpw_bool(mpw_t *w, int v);
void mpw_nil(mpw_t *w);
/* key + value in one call, for map bodies */
void mpw_kv_str(mpw_t *w, const char *k, const char *v);
void mpw_kv_uint(mpw_t *w, const char *k, uint64_t v);
void mpw_kv_int(mpw_t *w, const char *k, int64_t v);
void mpw_kv_double(mpw_t *w, const char *k, double v);
void mpw_kv_bool(mpw_t *w, const char *k, int v);

#endif
