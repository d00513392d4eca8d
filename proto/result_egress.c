/* proto/result_egress.c — see result_egress.h. */
#include <stdlib.h>
#include <string.h>

#include "result_egress.h"

void result_egress_clear(result_egress_list_t *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->list[i].host);
        free(l->list[i].verdict);
        free(l->list[i].reason);
    }
    free(l->list);
    l->list = NULL;
    l->n = 0;
}

void result_egress_write(mpw_t *w, const result_egress_list_t *l)
{
    mpw_array(w, (uint32_t)l->n);
    for (size_t i = 0; i < l->n; i++) {
        const result_egress_t *e = &l->list[i];
        mpw_map(w, 7);
        mpw_kv_str(w, "host", e->host ? e->host : "");
        mpw_kv_uint(w, "port", e->port);
        mpw_kv_str(w, "verdict", e->verdict ? e->verdict : "refused");
        mpw_kv_str(w, "reason", e->reason);
        mpw_kv_uint(w, "connections", e->connections);
        mpw_kv_uint(w, "bytes_out", e->bytes_out);
        mpw_kv_uint(w, "bytes_in", e->bytes_in);
    }
}

static void s_read_one(mpr_t *r, result_egress_t *e)
{
    uint32_t n;
    if (mpr_map(r, &n) < 0) return;
    for (uint32_t i = 0; i < n && !r->err; i++) {
        const char *k;
        uint32_t kl;
        uint64_t u;
        if (mpr_str(r, &k, &kl) < 0) return;
        if (mpr_key_is(k, kl, "host") && !e->host) {
            mpr_strdup(r, RESULT_MAX_EGRESS_HOST, &e->host);
        } else if (mpr_key_is(k, kl, "port")) {
            if (mpr_uint(r, &u) == 0) {
                if (u > 65535) mpr_fail(r, "egress port out of range");
                e->port = (uint32_t)u;
            }
        } else if (mpr_key_is(k, kl, "verdict") && !e->verdict) {
            mpr_strdup(r, 16, &e->verdict);
        } else if (mpr_key_is(k, kl, "reason") && !e->reason) {
            if (!mpr_nil(r)) mpr_strdup(r, RESULT_MAX_EGRESS_WHY, &e->reason);
        } else if (mpr_key_is(k, kl, "connections")) {
            mpr_uint(r, &e->connections);
        } else if (mpr_key_is(k, kl, "bytes_out")) {
            mpr_uint(r, &e->bytes_out);
        } else if (mpr_key_is(k, kl, "bytes_in")) {
            mpr_uint(r, &e->bytes_in);
        } else {
            mpr_skip(r);
        }
    }
    if (!r->err && (!e->host || !e->verdict)) mpr_fail(r, "egress entry without host or verdict");
}

int result_egress_read(mpr_t *r, result_egress_list_t *l)
{
    uint32_t n;
    if (mpr_array(r, &n) < 0) return -1;
    if (n > RESULT_MAX_EGRESS) return mpr_fail(r, "too many egress destinations");
    l->list = calloc(n ? n : 1, sizeof *l->list);
    if (!l->list) return mpr_fail(r, "out of memory");
    for (uint32_t i = 0; i < n && !r->err; i++) s_read_one(r, &l->list[l->n++]);
    return r->err ? -1 : 0;
}

int result_egress_add(const uint8_t *body, size_t len, const result_egress_list_t *l, buf_t *out)
{
    mpr_t r;
    uint32_t n;
    mpr_init(&r, body, len);
    if (mpr_map(&r, &n) < 0 || n == UINT32_MAX) return -1;
    mpw_t w;
    mpw_init(&w, out);
    mpw_map(&w, n + 1);
    mpw_str(&w, "egress");
    result_egress_write(&w, l);
    buf_append(out, r.p, (size_t)(r.end - r.p));
    return 0;
}
