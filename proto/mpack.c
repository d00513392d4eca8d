/* proto/mpack.c — see mpack.h. Format reference: https://github.com/msgpack/msgpack/blob/master/spec.md */
#include <string.h>

#include "mpack.h"

void mpr_init(mpr_t *r, const void *data, size_t len)
{
    r->p = data;
    r->end = r->p + len;
    r->err = NULL;
}

int mpr_fail(mpr_t *r, const char *why)
{
    if (!r->err) r->err = why;
    r->p = r->end;
    return -1;
}

int mpr_done(const mpr_t *r)
{
    return r->err ? -1 : r->p == r->end ? 0 : -1;
}

static size_t s_left(const mpr_t *r)
{
    return (size_t)(r->end - r->p);
}

static uint64_t s_be(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++) v = v << 8 | p[i];
    return v;
}

/* Takes n bytes, or fails when fewer are left. */
static const uint8_t *s_take(mpr_t *r, size_t n)
{
    if (r->err) return NULL;
    if (s_left(r) < n) {
        mpr_fail(r, "truncated msgpack");
        return NULL;
    }
    const uint8_t *p = r->p;
    r->p += n;
    return p;
}

mp_type_t mpr_peek(const mpr_t *r)
{
    if (r->err || r->p >= r->end) return MP_BAD;
    uint8_t b = *r->p;
    if (b <= 0x7f || b == 0xcc || b == 0xcd || b == 0xce || b == 0xcf) return MP_UINT;
    if (b >= 0xe0 || (b >= 0xd0 && b <= 0xd3)) return MP_INT;
    if ((b >= 0x80 && b <= 0x8f) || b == 0xde || b == 0xdf) return MP_MAP;
    if ((b >= 0x90 && b <= 0x9f) || b == 0xdc || b == 0xdd) return MP_ARRAY;
    if ((b >= 0xa0 && b <= 0xbf) || (b >= 0xd9 && b <= 0xdb)) return MP_STR;
    if (b >= 0xc4 && b <= 0xc6) return MP_BIN;
    if (b == 0xc0) return MP_NIL;
    if (b == 0xc2 || b == 0xc3) return MP_BOOL;
    if (b == 0xca || b == 0xcb) return MP_FLOAT;
    if ((b >= 0xc7 && b <= 0xc9) || (b >= 0xd4 && b <= 0xd8)) return MP_EXT;
    return MP_BAD; /* 0xc1 is never used */
}

int mpr_nil(mpr_t *r)
{
    if (mpr_peek(r) != MP_NIL) return 0;
    r->p++;
    return 1;
}

int mpr_bool(mpr_t *r, int *out)
{
    if (mpr_peek(r) != MP_BOOL) return mpr_fail(r, "expected bool");
    *out = *r->p++ == 0xc3;
    return 0;
}

static int s_integer(mpr_t *r, int64_t *s, uint64_t *u, int *is_neg)
{
    const uint8_t *p = s_take(r, 1);
    if (!p) return -1;
    uint8_t b = *p;
    *is_neg = 0;
    if (b <= 0x7f) return *u = b, 0;
    if (b >= 0xe0) return *is_neg = 1, *s = (int8_t)b, 0;
    int n;
    switch (b) {
    case 0xcc: case 0xd0: n = 1; break;
    case 0xcd: case 0xd1: n = 2; break;
    case 0xce: case 0xd2: n = 4; break;
    case 0xcf: case 0xd3: n = 8; break;
    default: return mpr_fail(r, "expected integer");
    }
    const uint8_t *q = s_take(r, (size_t)n);
    if (!q) return -1;
    uint64_t v = s_be(q, n);
    if (b >= 0xcc && b <= 0xcf) return *u = v, 0;
    /* signed: sign-extend from n bytes */
    int64_t sv = n == 1 ? (int8_t)v : n == 2 ? (int16_t)v : n == 4 ? (int32_t)v : (int64_t)v;
    if (sv >= 0) return *u = (uint64_t)sv, 0;
    *is_neg = 1;
    *s = sv;
    return 0;
}

int mpr_uint(mpr_t *r, uint64_t *out)
{
    int64_t  s;
    uint64_t u;
    int      neg;
    if (s_integer(r, &s, &u, &neg) < 0) return -1;
    if (neg) return mpr_fail(r, "expected non-negative integer");
    *out = u;
    return 0;
}

int mpr_int(mpr_t *r, int64_t *out)
{
    int64_t  s;
    uint64_t u;
    int      neg;
    if (s_integer(r, &s, &u, &neg) < 0) return -1;
    if (!neg && u > (uint64_t)INT64_MAX) return mpr_fail(r, "integer out of range");
    *out = neg ? s : (int64_t)u;
    return 0;
}

int mpr_double(mpr_t *r, double *out)
{
    mp_type_t t = mpr_peek(r);
    if (t == MP_UINT || t == MP_INT) {
        int64_t v;
        if (mpr_int(r, &v) < 0) return -1;
        *out = (double)v;
        return 0;
    }
    if (t != MP_FLOAT) return mpr_fail(r, "expected number");
    uint8_t        b = *r->p++;
    const uint8_t *q = s_take(r, b == 0xca ? 4 : 8);
    if (!q) return -1;
    if (b == 0xca) {
        uint32_t bits = (uint32_t)s_be(q, 4);
        float    f;
        memcpy(&f, &bits, 4);
        *out = f;
    } else {
        uint64_t bits = s_be(q, 8);
        memcpy(out, &bits, 8);
    }
    return 0;
}

/* Reads a length-prefixed header: str, bin (and ext, for skipping) share this shape. */
static int s_len(mpr_t *r, uint32_t *len)
{
    const uint8_t *p = s_take(r, 1);
    if (!p) return -1;
    uint8_t b = *p;
    int     n;
    if (b >= 0xa0 && b <= 0xbf) return *len = b & 0x1f, 0;
    switch (b) {
    case 0xd9: case 0xc4: n = 1; break;
    case 0xda: case 0xc5: n = 2; break;
    case 0xdb: case 0xc6: n = 4; break;
    default: return mpr_fail(r, "expected str or bin");
    }
    const uint8_t *q = s_take(r, (size_t)n);
    if (!q) return -1;
    *len = (uint32_t)s_be(q, n);
    return 0;
}

int mpr_str(mpr_t *r, const char **s, uint32_t *len)
{
    if (mpr_peek(r) != MP_STR) return mpr_fail(r, "expected str");
    if (s_len(r, len) < 0) return -1;
    const uint8_t *p = s_take(r, *len);
    if (!p) return -1;
    *s = (const char *)p;
    return 0;
}

int mpr_bytes(mpr_t *r, const uint8_t **b, uint32_t *len)
{
    mp_type_t t = mpr_peek(r);
    if (t != MP_STR && t != MP_BIN) return mpr_fail(r, "expected str or bin");
    if (s_len(r, len) < 0) return -1;
    const uint8_t *p = s_take(r, *len);
    if (!p) return -1;
    *b = p;
    return 0;
}

static int s_count(mpr_t *r, uint32_t *n, int is_map)
{
    const uint8_t *p = s_take(r, 1);
    if (!p) return -1;
    uint8_t b = *p;
    uint8_t fix_lo = is_map ? 0x80 : 0x90, c16 = is_map ? 0xde : 0xdc, c32 = is_map ? 0xdf : 0xdd;
    if (b >= fix_lo && b <= fix_lo + 15) {
        *n = b & 0x0f;
    } else if (b == c16 || b == c32) {
        const uint8_t *q = s_take(r, b == c16 ? 2 : 4);
        if (!q) return -1;
        *n = (uint32_t)s_be(q, b == c16 ? 2 : 4);
    } else {
        return mpr_fail(r, is_map ? "expected map" : "expected array");
    }
    /* every element takes at least one byte: a count the rest cannot hold is a lie */
    if ((uint64_t)*n * (is_map ? 2u : 1u) > s_left(r)) return mpr_fail(r, "count exceeds message");
    return 0;
}

int mpr_array(mpr_t *r, uint32_t *n)
{
    return s_count(r, n, 0);
}

int mpr_map(mpr_t *r, uint32_t *n)
{
    return s_count(r, n, 1);
}

int mpr_skip(mpr_t *r)
{
    /* iterative with an explicit count of values still to skip per level */
    uint64_t pending[MPR_MAX_DEPTH + 1];
    int      depth = 0;
    pending[0] = 1;
    while (depth >= 0) {
        if (pending[depth] == 0) {
            depth--;
            continue;
        }
        pending[depth]--;
        uint32_t n;
        switch (mpr_peek(r)) {
        case MP_NIL: case MP_BOOL: r->p++; break;
        case MP_UINT: case MP_INT: {
            int64_t s; uint64_t u; int neg;
            if (s_integer(r, &s, &u, &neg) < 0) return -1;
            break;
        }
        case MP_FLOAT: {
            double d;
            if (mpr_double(r, &d) < 0) return -1;
            break;
        }
        case MP_STR: case MP_BIN: {
            const uint8_t *b;
            if (mpr_bytes(r, &b, &n) < 0) return -1;
            break;
        }
        case MP_ARRAY: case MP_MAP: {
            int is_map = mpr_peek(r) == MP_MAP;
            if (s_count(r, &n, is_map) < 0) return -1;
            if (depth == MPR_MAX_DEPTH) return mpr_fail(r, "msgpack nested too deeply");
            pending[++depth] = (uint64_t)n * (is_map ? 2u : 1u);
            break;
        }
        case MP_EXT: {
            uint8_t b = *r->p++;
            size_t  len;
            if (b >= 0xd4 && b <= 0xd8) {
                len = (size_t)1 << (b - 0xd4);
            } else {
                int            w = b == 0xc7 ? 1 : b == 0xc8 ? 2 : 4;
                const uint8_t *q = s_take(r, (size_t)w);
                if (!q) return -1;
                len = (size_t)s_be(q, w);
            }
            if (!s_take(r, len + 1)) return -1; /* type byte + data */
            break;
        }
        case MP_BAD: return mpr_fail(r, r->err ? r->err : "invalid msgpack byte");
        }
        if (r->err) return -1;
    }
    return 0;
}

int mpr_strdup(mpr_t *r, size_t max, char **out)
{
    *out = NULL;
    if (mpr_nil(r)) return 0;
    const char *s;
    uint32_t    len;
    if (mpr_str(r, &s, &len) < 0) return -1;
    if (len > max) return mpr_fail(r, "string too long");
    if (memchr(s, '\0', len)) return mpr_fail(r, "string holds a NUL byte");
    *out = xstrndup(s, len);
    return 0;
}

int mpr_bytesdup(mpr_t *r, size_t max, char **out, size_t *len)
{
    *out = NULL;
    *len = 0;
    if (mpr_nil(r)) return 0;
    const uint8_t *b;
    uint32_t       n;
    if (mpr_bytes(r, &b, &n) < 0) return -1;
    if (n > max) return mpr_fail(r, "value too long");
    *out = xstrndup((const char *)b, n);
    *len = n;
    return 0;
}

int mpr_key_is(const char *k, uint32_t klen, const char *lit)
{
    size_t n = strlen(lit);
    return klen == n && memcmp(k, lit, n) == 0;
}

static int s_write(void *data, const char *bytes, size_t len)
{
    buf_append((buf_t *)data, bytes, len);
    return 0;
}

void mpw_init(mpw_t *w, buf_t *out)
{
    w->out = out;
    msgpack_packer_init(&w->pk, out, s_write);
}

void mpw_map(mpw_t *w, uint32_t n) { msgpack_pack_map(&w->pk, n); }
void mpw_array(mpw_t *w, uint32_t n) { msgpack_pack_array(&w->pk, n); }
void mpw_uint(mpw_t *w, uint64_t v) { msgpack_pack_uint64(&w->pk, v); }
void mpw_int(mpw_t *w, int64_t v) { msgpack_pack_int64(&w->pk, v); }
void mpw_double(mpw_t *w, double v) { msgpack_pack_double(&w->pk, v); }
void mpw_nil(mpw_t *w) { msgpack_pack_nil(&w->pk); }

void mpw_bool(mpw_t *w, int v)
{
    if (v)
        msgpack_pack_true(&w->pk);
    else
        msgpack_pack_false(&w->pk);
}

void mpw_strn(mpw_t *w, const char *s, size_t len)
{
    msgpack_pack_str(&w->pk, len);
    msgpack_pack_str_body(&w->pk, s, len);
}

void mpw_str(mpw_t *w, const char *s)
{
    if (!s)
        mpw_nil(w);
    else
        mpw_strn(w, s, strlen(s));
}

void mpw_bin(mpw_t *w, const void *b, size_t len)
{
    msgpack_pack_bin(&w->pk, len);
    msgpack_pack_bin_body(&w->pk, b, len);
}

void mpw_kv_str(mpw_t *w, const char *k, const char *v) { mpw_str(w, k); mpw_str(w, v); }
void mpw_kv_uint(mpw_t *w, const char *k, uint64_t v) { mpw_str(w, k); mpw_uint(w, v); }
void mpw_kv_int(mpw_t *w, const char *k, int64_t v) { mpw_str(w, k); mpw_int(w, v); }
void mpw_kv_double(mpw_t *w, const char *k, double v) { mpw_str(w, k); mpw_double(w, v); }
void mpw_kv_bool(mpw_t *w, const char *k, int v) { mpw_str(w, k); mpw_bool(w, v); }
