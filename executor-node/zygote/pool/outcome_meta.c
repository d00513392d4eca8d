/* executor-node/zygote/pool/outcome_meta.c — see outcome_meta.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "proto/mpack.h"
#include "executor-node/area/jobarea.h"
#include "outcome_meta.h"

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

/* What a rich output may be (rich.py renders these): anything else is dropped. */
static int s_output_mime_ok(const char *m, uint32_t n)
{
    static const char *const mimes[] = {"text/plain", "text/html", "text/markdown", "text/latex",
                                        "application/json", "image/png", "image/svg+xml", NULL};
    for (const char *const *k = mimes; *k; k++)
        if (strlen(*k) == n && !memcmp(*k, m, n)) return 1;
    return 0;
}

/* outputs: [{kind, index, mime, data}]: known kinds and types, PNGs that are PNGs, within
 * OUTCOME_MAX_OUTPUTS and the byte caps; the rest is dropped and flagged as truncated. */
static void s_read_outputs(mpr_t *r, result_t *res)
{
    uint32_t n;
    if (mpr_array(r, &n) < 0) return;
    size_t total = 0;
    for (uint32_t i = 0; i < n && !r->err; i++) {
        uint32_t m;
        const char *kind = NULL, *mime = NULL;
        uint32_t kind_len = 0, mime_len = 0, dlen = 0;
        const uint8_t *data = NULL;
        uint64_t index = 0;
        if (mpr_map(r, &m) < 0) return;
        for (uint32_t j = 0; j < m && !r->err; j++) {
            const char *k;
            uint32_t    kl;
            if (mpr_str(r, &k, &kl) < 0) return;
            if (mpr_key_is(k, kl, "kind")) mpr_str(r, &kind, &kind_len);
            else if (mpr_key_is(k, kl, "mime")) mpr_str(r, &mime, &mime_len);
            else if (mpr_key_is(k, kl, "index")) mpr_uint(r, &index);
            else if (mpr_key_is(k, kl, "data")) mpr_bytes(r, &data, &dlen);
            else mpr_skip(r);
        }
        uint32_t w, h;
        int is_png = mime && mpr_key_is(mime, mime_len, "image/png");
        if (r->err) return;
        if (!kind || !mime || !data || index >= OUTCOME_MAX_OUTPUTS ||
            !(mpr_key_is(kind, kind_len, "display") || mpr_key_is(kind, kind_len, "result")) ||
            !s_output_mime_ok(mime, mime_len) || (is_png && !s_png_size(data, dlen, &w, &h)) ||
            res->n_outputs >= OUTCOME_MAX_OUTPUTS || dlen > OUTCOME_MAX_OUTPUT ||
            total + dlen > OUTCOME_MAX_OUTPUTS_BYTES) {
            res->outputs_truncated = 1;
            continue;
        }
        if (!res->outputs) res->outputs = xcalloc(OUTCOME_MAX_OUTPUTS, sizeof *res->outputs);
        result_output_t *o = &res->outputs[res->n_outputs++];
        o->kind = xstrndup(kind, kind_len);
        o->mime = xstrndup(mime, mime_len);
        o->index = (uint32_t)index;
        o->data = xmalloc(dlen ? dlen : 1);
        memcpy(o->data, data, dlen);
        o->len = dlen;
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
        } else if (mpr_key_is(k, kl, "outputs") && !res->outputs) {
            s_read_outputs(&r, res);
        } else if (mpr_key_is(k, kl, "outputs_truncated")) {
            int t = 0;
            if (mpr_bool(&r, &t) == 0 && t) res->outputs_truncated = 1;
        } else if (mpr_key_is(k, kl, "summary")) {
            free(res->session.summary);
            mpr_strdup(&r, RESULT_MAX_TEXT, &res->session.summary);
        } else if (mpr_key_is(k, kl, "snapshot") && !res->snapshot) {
            const uint8_t *start = r.p; /* as it came: zygote_sessions.c decodes and checks it */
            if (mpr_skip(&r) == 0) {
                res->snapshot_len = (size_t)(r.p - start);
                res->snapshot = xmalloc(res->snapshot_len);
                memcpy(res->snapshot, start, res->snapshot_len);
            }
        } else if (mpr_key_is(k, kl, "denied")) {
            int d = 0;
            if (mpr_bool(&r, &d) == 0 && d && flags) flags->denied = 1;
        } else if (mpr_key_is(k, kl, "exit_code")) {
            int64_t v;
            if (mpr_int(&r, &v) == 0 && flags) flags->exit_code = v > 0 && v < 256 ? (int)v : 0;
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
