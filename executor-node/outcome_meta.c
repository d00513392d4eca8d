/* executor-node/outcome_meta.c — see outcome.h: the runner's meta, read as the hostile input it
 * is (the job's code ran in the process that wrote it). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/log.h"
#include "../proto/mpack.h"
#include "outcome.h"

/* A PNG's size from its IHDR chunk (PNG spec §11.2.2): the child's own numbers are not
 * taken. 0 when the bytes are not a PNG. */
static int s_png_size(const uint8_t *p, size_t len, uint32_t *w, uint32_t *h)
{
    static const uint8_t sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    if (len < 24 || memcmp(p, sig, 8) != 0 || memcmp(p + 12, "IHDR", 4) != 0) return 0;
    *w = (uint32_t)p[16] << 24 | (uint32_t)p[17] << 16 | (uint32_t)p[18] << 8 | p[19];
    *h = (uint32_t)p[20] << 24 | (uint32_t)p[21] << 16 | (uint32_t)p[22] << 8 | p[23];
    return *w > 0 && *h > 0 && *w < (1u << 20) && *h < (1u << 20);
}

/* images: [{mime, width, height, data}]: PNGs only, within OUTCOME_MAX_IMAGES and the byte
 * caps; the rest is dropped and flagged as truncated. */
static void s_read_images(mpr_t *r, result_t *res)
{
    uint32_t n;
    if (mpr_array(r, &n) < 0) return;
    size_t total = 0;
    for (uint32_t i = 0; i < n && !r->err; i++) {
        uint32_t       m;
        const uint8_t *data = NULL;
        uint32_t       dlen = 0;
        if (mpr_map(r, &m) < 0) return;
        for (uint32_t j = 0; j < m && !r->err; j++) {
            const char *k;
            uint32_t    kl;
            if (mpr_str(r, &k, &kl) < 0) return;
            if (mpr_key_is(k, kl, "data")) mpr_bytes(r, &data, &dlen);
            else mpr_skip(r); /* mime, width, height: recomputed below */
        }
        uint32_t w, h;
        if (r->err || !data) continue;
        if (!s_png_size(data, dlen, &w, &h) || res->n_images >= OUTCOME_MAX_IMAGES ||
            dlen > OUTCOME_MAX_IMAGE || total + dlen > OUTCOME_MAX_IMAGES_BYTES) {
            res->images_truncated = 1;
            continue;
        }
        if (!res->images) res->images = xcalloc(OUTCOME_MAX_IMAGES, sizeof *res->images);
        result_image_t *im = &res->images[res->n_images++];
        im->mime = xstrdup("image/png");
        im->width = w;
        im->height = h;
        im->data = xmalloc(dlen ? dlen : 1);
        memcpy(im->data, data, dlen);
        im->len = dlen;
        total += dlen;
    }
}

int outcome_read_meta(const uint8_t *meta, size_t len, result_t *res, meta_flags_t *flags)
{
    if (!len || len > JOBAREA_META_CAP) return -1;
    mpr_t    r;
    uint32_t n;
    mpr_init(&r, meta, len);
    if (mpr_map(&r, &n) < 0) return -1;
    status_t st = ST_ERROR;
    for (uint32_t i = 0; i < n && !r.err; i++) {
        const char *k;
        uint32_t    kl;
        if (mpr_str(&r, &k, &kl) < 0) break;
        if (mpr_key_is(k, kl, "status")) {
            const char *v;
            uint32_t    vl;
            if (mpr_str(&r, &v, &vl) == 0 && status_parse_n(v, vl, &st) < 0) st = ST_ERROR;
        } else if (mpr_key_is(k, kl, "result")) {
            free(res->result);
            mpr_strdup(&r, RESULT_MAX_TEXT, &res->result);
        } else if (mpr_key_is(k, kl, "variables")) {
            free(res->variables);
            mpr_strdup(&r, RESULT_MAX_TEXT, &res->variables);
        } else if (mpr_key_is(k, kl, "validation")) {
            free(res->validation);
            mpr_strdup(&r, RESULT_MAX_TEXT, &res->validation);
        } else if (mpr_key_is(k, kl, "images") && !res->images) {
            s_read_images(&r, res);
        } else if (mpr_key_is(k, kl, "denied")) {
            int d = 0;
            if (mpr_bool(&r, &d) == 0 && d && flags) flags->denied = 1;
        } else if (mpr_key_is(k, kl, "images_truncated")) {
            int t = 0;
            if (mpr_bool(&r, &t) == 0 && t) res->images_truncated = 1;
        } else if (mpr_key_is(k, kl, "error") && !res->error.present) {
            uint32_t m;
            if (mpr_nil(&r)) continue;
            if (mpr_map(&r, &m) < 0) break;
            res->error.present = 1;
            for (uint32_t j = 0; j < m && !r.err; j++) {
                if (mpr_str(&r, &k, &kl) < 0) break;
                /* a key may come twice: free what the first one gave (found by fuzz_meta) */
                char **dst = mpr_key_is(k, kl, "type")        ? &res->error.type
                             : mpr_key_is(k, kl, "message")   ? &res->error.message
                             : mpr_key_is(k, kl, "traceback") ? &res->error.traceback
                                                              : NULL;
                if (dst) {
                    free(*dst);
                    mpr_strdup(&r, mpr_key_is(k, kl, "type") ? 256 : RESULT_MAX_TEXT, dst);
                } else if (mpr_key_is(k, kl, "line")) {
                    int64_t v;
                    if (mpr_int(&r, &v) == 0) res->error.line = v > 0 && v < 1 << 30 ? (long)v : 0;
                } else {
                    mpr_skip(&r);
                }
            }
        } else {
            mpr_skip(&r);
        }
    }
    if (r.err) { /* a child that scribbled over its meta gets a plain error, nothing else */
        log_warn("event=bad_meta error=\"%s\"", r.err);
        st = ST_ERROR;
    }
    /* The child may only report outcomes of its own code; the rest are the zygote's call. */
    if (st != ST_OK && st != ST_ERROR && st != ST_SYNTAX_ERROR && st != ST_MEMORY_LIMIT &&
        st != ST_OUTPUT_LIMIT && st != ST_INTERNAL_ERROR)
        st = ST_ERROR;
    res->status = st;
    return r.err ? -1 : 0;
}
