/* proto/result.c — Result encoding and hostile-input decoding (PROTOCOL.md §5). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpack.h"
#include "result.h"

_Static_assert(RESULT_EGRESS_MAX_EVENTS == RESULT_MAX_EVENTS,
               "the node adds egress refusals within the events a Result may list");

void result_init(result_t *res)
{
    memset(res, 0, sizeof *res);
    res->status = ST_INTERNAL_ERROR;
}

void result_clear(result_t *res)
{
    free(res->out);
    free(res->err);
    free(res->result);
    free(res->variables);
    free(res->validation);
    free(res->error.type);
    free(res->error.message);
    free(res->error.traceback);
    free(res->exit.reason);
    free(res->exit.syscall);
    for (size_t i = 0; i < res->n_images; i++) {
        free(res->images[i].mime);
        free(res->images[i].data);
    }
    free(res->images);
    for (size_t i = 0; i < res->n_files; i++) {
        free(res->files[i].path);
        free(res->files[i].data);
    }
    free(res->files);
    for (size_t i = 0; i < res->n_outputs; i++) {
        free(res->outputs[i].kind);
        free(res->outputs[i].mime);
        free(res->outputs[i].data);
    }
    free(res->outputs);
    for (size_t i = 0; i < res->n_events; i++) {
        free(res->events[i].operation);
        free(res->events[i].target);
        free(res->events[i].layer);
    }
    free(res->events);
    free(res->executor);
    free(res->session.end_reason);
    free(res->session.summary);
    free(res->session.clones);
    free(res->session.resumed);
    free(res->session.resumed_note);
    free(res->snapshot);
    result_egress_clear(&res->egress);
    result_init(res);
}

static void s_write_session(mpw_t *w, const result_t *res)
{
    mpw_str(w, "session");
    mpw_map(w, 9 + (res->session.atomic ? 2 : 0) + (res->session.n_clones ? 1 : 0));
    mpw_str(w, "id");
    mpw_bin(w, res->session.id, ID_BYTES);
    mpw_kv_uint(w, "cell", res->session.cell);
    mpw_kv_bool(w, "alive", res->session.alive);
    mpw_kv_str(w, "end_reason", res->session.end_reason);
    mpw_kv_uint(w, "memory_kb", res->session.memory_kb);
    mpw_kv_int(w, "memory_mb", res->session.memory_mb);
    mpw_kv_int(w, "idle_timeout_s", res->session.idle_timeout_s);
    mpw_kv_int(w, "forks_left", res->session.forks_left);
    mpw_kv_str(w, "summary", res->session.summary);
    if (res->session.atomic) {
        mpw_kv_bool(w, "atomic", 1);
        mpw_kv_bool(w, "rolled_back", res->session.rolled_back);
    }
    if (res->session.n_clones) {
        mpw_str(w, "clones");
        mpw_array(w, (uint32_t)res->session.n_clones);
        for (size_t i = 0; i < res->session.n_clones; i++) mpw_bin(w, res->session.clones[i], ID_BYTES);
    }
}

/* session.clones: 16-byte ids, at most JOB_MAX_FORKS. */
static void s_read_clones(mpr_t *r, result_t *res)
{
    uint32_t n;
    if (mpr_array(r, &n) < 0) return;
    if (n > RESULT_MAX_CLONES) {
        mpr_fail(r, "too many clones");
        return;
    }
    free(res->session.clones);
    res->session.clones = xcalloc(n ? n : 1, ID_BYTES);
    res->session.n_clones = 0;
    for (uint32_t i = 0; i < n && !r->err; i++) {
        const uint8_t *b;
        uint32_t len;
        if (mpr_bytes(r, &b, &len) < 0) return;
        if (len != ID_BYTES) {
            mpr_fail(r, "bad clone id");
            return;
        }
        memcpy(res->session.clones[res->session.n_clones++], b, ID_BYTES);
    }
}

static void s_write_events(mpw_t *w, const result_t *res)
{
    mpw_str(w, "security_events");
    mpw_array(w, (uint32_t)res->n_events);
    for (size_t i = 0; i < res->n_events; i++) {
        const result_event_t *e = &res->events[i];
        mpw_map(w, 4);
        mpw_kv_str(w, "operation", e->operation ? e->operation : "");
        mpw_kv_str(w, "target", e->target);
        mpw_kv_str(w, "layer", e->layer ? e->layer : "");
        mpw_kv_uint(w, "count", e->count);
    }
}

void result_encode(const result_t *res, buf_t *out)
{
    mpw_t w;
    mpw_init(&w, out);
    mpw_map(&w, 18 + (uint32_t)(res->session.present + (res->snapshot != NULL)) +
                    (res->n_outputs > 0) + (res->n_events > 0) + (res->egress.n > 0));
    mpw_kv_uint(&w, "v", 1);
    mpw_kv_str(&w, "status", status_name(res->status));
    mpw_str(&w, "stdout");
    mpw_bin(&w, res->out ? res->out : "", res->out_len);
    mpw_kv_bool(&w, "stdout_truncated", res->out_truncated);
    mpw_str(&w, "stderr");
    mpw_bin(&w, res->err ? res->err : "", res->err_len);
    mpw_kv_bool(&w, "stderr_truncated", res->err_truncated);
    mpw_kv_str(&w, "result", res->result);
    mpw_kv_str(&w, "variables", res->variables);
    mpw_kv_str(&w, "validation", res->validation);
    mpw_str(&w, "error");
    if (res->error.present) {
        mpw_map(&w, 4);
        mpw_kv_str(&w, "type", res->error.type ? res->error.type : "Error");
        mpw_kv_str(&w, "message", res->error.message ? res->error.message : "");
        mpw_kv_str(&w, "traceback", res->error.traceback);
        mpw_kv_int(&w, "line", res->error.line);
    } else {
        mpw_nil(&w);
    }
    mpw_str(&w, "timings");
    mpw_map(&w, 3);
    mpw_kv_double(&w, "queue_ms", res->queue_ms);
    mpw_kv_double(&w, "wall_ms", res->wall_ms);
    mpw_kv_double(&w, "cpu_ms", res->cpu_ms);
    mpw_kv_int(&w, "max_rss_kb", res->max_rss_kb);
    mpw_str(&w, "exit");
    mpw_map(&w, 4);
    mpw_kv_str(&w, "reason", res->exit.reason);
    mpw_kv_int(&w, "signal", res->exit.signal);
    mpw_kv_str(&w, "syscall", res->exit.syscall);
    mpw_kv_int(&w, "code", res->exit.code);
    mpw_str(&w, "images");
    mpw_array(&w, (uint32_t)res->n_images);
    for (size_t i = 0; i < res->n_images; i++) {
        const result_image_t *im = &res->images[i];
        mpw_map(&w, 4);
        mpw_kv_str(&w, "mime", im->mime);
        mpw_kv_uint(&w, "width", im->width);
        mpw_kv_uint(&w, "height", im->height);
        mpw_str(&w, "data");
        mpw_bin(&w, im->data, im->len);
    }
    mpw_str(&w, "files");
    mpw_array(&w, (uint32_t)res->n_files);
    for (size_t i = 0; i < res->n_files; i++) {
        mpw_map(&w, 2);
        mpw_kv_str(&w, "path", res->files[i].path);
        mpw_str(&w, "data");
        mpw_bin(&w, res->files[i].data, res->files[i].len);
    }
    mpw_kv_uint(&w, "truncated_media", (uint64_t)(res->images_truncated | res->files_truncated << 1 |
                                                  res->outputs_truncated << 2 |
                                                  res->events_truncated << 3));
    if (res->n_outputs) {
        mpw_str(&w, "outputs");
        mpw_array(&w, (uint32_t)res->n_outputs);
        for (size_t i = 0; i < res->n_outputs; i++) {
            const result_output_t *o = &res->outputs[i];
            mpw_map(&w, 4);
            mpw_kv_str(&w, "kind", o->kind ? o->kind : "display");
            mpw_kv_uint(&w, "index", o->index);
            mpw_kv_str(&w, "mime", o->mime ? o->mime : "text/plain");
            mpw_str(&w, "data");
            mpw_bin(&w, o->data ? o->data : "", o->len);
        }
    }
    if (res->n_events) s_write_events(&w, res);
    mpw_kv_str(&w, "executor", res->executor);
    mpw_kv_uint(&w, "attempt", res->attempt);
    if (res->session.present) s_write_session(&w, res);
    if (res->egress.n) {
        mpw_str(&w, "egress");
        result_egress_write(&w, &res->egress);
    }
    if (res->snapshot) { /* a msgpack map already: written as it is */
        mpw_str(&w, "snapshot");
        buf_append(out, res->snapshot, res->snapshot_len);
    }
}

void result_encode_simple(buf_t *out, status_t status, const char *type, const char *message)
{
    result_t res;
    result_init(&res);
    res.status = status;
    res.error.present = 1;
    res.error.type = (char *)type;
    res.error.message = (char *)message;
    res.exit.reason = (char *)status_name(status);
    result_encode(&res, out);
}

static int s_text(mpr_t *r, char **out)
{
    free(*out);
    return mpr_strdup(r, RESULT_MAX_TEXT, out);
}

static void s_read_error(mpr_t *r, result_t *res)
{
    if (mpr_nil(r)) return;
    uint32_t n;
    if (mpr_map(r, &n) < 0) return;
    res->error.present = 1;
    for (uint32_t i = 0; i < n && !r->err; i++) {
        const char *k;
        uint32_t    kl;
        if (mpr_str(r, &k, &kl) < 0) return;
        if (mpr_key_is(k, kl, "type")) s_text(r, &res->error.type);
        else if (mpr_key_is(k, kl, "message")) s_text(r, &res->error.message);
        else if (mpr_key_is(k, kl, "traceback")) s_text(r, &res->error.traceback);
        else if (mpr_key_is(k, kl, "line")) {
            int64_t v;
            if (mpr_int(r, &v) == 0) res->error.line = (long)v;
        } else mpr_skip(r);
    }
}

static void s_read_timings(mpr_t *r, result_t *res)
{
    uint32_t n;
    if (mpr_map(r, &n) < 0) return;
    for (uint32_t i = 0; i < n && !r->err; i++) {
        const char *k;
        uint32_t    kl;
        if (mpr_str(r, &k, &kl) < 0) return;
        if (mpr_key_is(k, kl, "queue_ms")) mpr_double(r, &res->queue_ms);
        else if (mpr_key_is(k, kl, "wall_ms")) mpr_double(r, &res->wall_ms);
        else if (mpr_key_is(k, kl, "cpu_ms")) mpr_double(r, &res->cpu_ms);
        else mpr_skip(r);
    }
}

static void s_read_exit(mpr_t *r, result_t *res)
{
    uint32_t n;
    if (mpr_map(r, &n) < 0) return;
    for (uint32_t i = 0; i < n && !r->err; i++) {
        const char *k;
        uint32_t    kl;
        int64_t     v;
        if (mpr_str(r, &k, &kl) < 0) return;
        if (mpr_key_is(k, kl, "reason")) s_text(r, &res->exit.reason);
        else if (mpr_key_is(k, kl, "syscall")) s_text(r, &res->exit.syscall);
        else if (mpr_key_is(k, kl, "signal")) {
            if (mpr_int(r, &v) == 0) res->exit.signal = (int)v;
        } else if (mpr_key_is(k, kl, "code")) {
            if (mpr_int(r, &v) == 0) res->exit.code = (int)v;
        } else mpr_skip(r);
    }
}

static void s_read_images(mpr_t *r, result_t *res)
{
    uint32_t n;
    if (mpr_array(r, &n) < 0) return;
    if (n > RESULT_MAX_IMAGES) {
        mpr_fail(r, "too many images");
        return;
    }
    res->images = xcalloc(n ? n : 1, sizeof *res->images);
    for (uint32_t i = 0; i < n && !r->err; i++) {
        result_image_t *im = &res->images[res->n_images++];
        uint32_t        m;
        if (mpr_map(r, &m) < 0) return;
        for (uint32_t j = 0; j < m && !r->err; j++) {
            const char *k;
            uint32_t    kl;
            uint64_t    v;
            if (mpr_str(r, &k, &kl) < 0) return;
            if (mpr_key_is(k, kl, "mime")) s_text(r, &im->mime);
            else if (mpr_key_is(k, kl, "width")) {
                if (mpr_uint(r, &v) == 0) im->width = v > 100000 ? 0 : (uint32_t)v;
            } else if (mpr_key_is(k, kl, "height")) {
                if (mpr_uint(r, &v) == 0) im->height = v > 100000 ? 0 : (uint32_t)v;
            } else if (mpr_key_is(k, kl, "data")) {
                free(im->data);
                mpr_bytesdup(r, RESULT_MAX_IMAGE, &im->data, &im->len);
            } else mpr_skip(r);
        }
    }
}

static void s_read_outputs(mpr_t *r, result_t *res)
{
    uint32_t n;
    if (mpr_array(r, &n) < 0) return;
    if (n > RESULT_MAX_OUTPUTS) {
        mpr_fail(r, "too many outputs");
        return;
    }
    res->outputs = xcalloc(n ? n : 1, sizeof *res->outputs);
    for (uint32_t i = 0; i < n && !r->err; i++) {
        result_output_t *o = &res->outputs[res->n_outputs++];
        uint32_t         m;
        if (mpr_map(r, &m) < 0) return;
        for (uint32_t j = 0; j < m && !r->err; j++) {
            const char *k;
            uint32_t    kl;
            uint64_t    v;
            if (mpr_str(r, &k, &kl) < 0) return;
            if (mpr_key_is(k, kl, "kind")) {
                free(o->kind);
                mpr_strdup(r, 16, &o->kind);
            } else if (mpr_key_is(k, kl, "mime")) {
                free(o->mime);
                mpr_strdup(r, 128, &o->mime);
            } else if (mpr_key_is(k, kl, "index")) {
                if (mpr_uint(r, &v) == 0) o->index = v > RESULT_MAX_OUTPUTS ? 0 : (uint32_t)v;
            } else if (mpr_key_is(k, kl, "data")) {
                free(o->data);
                mpr_bytesdup(r, RESULT_MAX_IMAGE, &o->data, &o->len);
            } else mpr_skip(r);
        }
        if (!r->err && (!o->mime || !o->data)) mpr_fail(r, "output without mime or data");
    }
}

static void s_read_events(mpr_t *r, result_t *res)
{
    uint32_t n;
    if (mpr_array(r, &n) < 0) return;
    if (n > RESULT_MAX_EVENTS) {
        mpr_fail(r, "too many security events");
        return;
    }
    res->events = xcalloc(n ? n : 1, sizeof *res->events);
    for (uint32_t i = 0; i < n && !r->err; i++) {
        result_event_t *e = &res->events[res->n_events++];
        uint32_t        m;
        if (mpr_map(r, &m) < 0) return;
        for (uint32_t j = 0; j < m && !r->err; j++) {
            const char *k;
            uint32_t    kl;
            uint64_t    v;
            char      **dst = NULL;
            if (mpr_str(r, &k, &kl) < 0) return;
            if (mpr_key_is(k, kl, "operation")) dst = &e->operation;
            else if (mpr_key_is(k, kl, "target")) dst = &e->target;
            else if (mpr_key_is(k, kl, "layer")) dst = &e->layer;
            if (dst) {
                free(*dst);
                *dst = NULL;
                if (!mpr_nil(r)) mpr_strdup(r, 1024, dst);
            } else if (mpr_key_is(k, kl, "count")) {
                if (mpr_uint(r, &v) == 0) e->count = v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
            } else {
                mpr_skip(r);
            }
        }
        if (!r->err && (!e->operation || !e->layer))
            mpr_fail(r, "security event without operation or layer");
    }
}

static void s_read_files(mpr_t *r, result_t *res)
{
    uint32_t n;
    if (mpr_array(r, &n) < 0) return;
    if (n > RESULT_MAX_FILES) {
        mpr_fail(r, "too many files");
        return;
    }
    res->files = xcalloc(n ? n : 1, sizeof *res->files);
    for (uint32_t i = 0; i < n && !r->err; i++) {
        result_file_t *f = &res->files[res->n_files++];
        uint32_t       m;
        if (mpr_map(r, &m) < 0) return;
        for (uint32_t j = 0; j < m && !r->err; j++) {
            const char *k;
            uint32_t    kl;
            if (mpr_str(r, &k, &kl) < 0) return;
            if (mpr_key_is(k, kl, "path")) s_text(r, &f->path);
            else if (mpr_key_is(k, kl, "data")) {
                free(f->data);
                mpr_bytesdup(r, RESULT_MAX_IMAGE, &f->data, &f->len);
            } else mpr_skip(r);
        }
        if (!r->err && !f->path) mpr_fail(r, "file without path");
    }
}

static void s_read_session(mpr_t *r, result_t *res)
{
    uint32_t n;
    if (mpr_map(r, &n) < 0) return;
    res->session.present = 1;
    for (uint32_t i = 0; i < n && !r->err; i++) {
        const char *k;
        uint32_t kl;
        uint64_t u;
        int64_t v;
        if (mpr_str(r, &k, &kl) < 0) return;
        if (mpr_key_is(k, kl, "id")) {
            const uint8_t *b;
            uint32_t len;
            if (mpr_bytes(r, &b, &len) == 0 && len != ID_BYTES) mpr_fail(r, "bad session id");
            if (!r->err) memcpy(res->session.id, b, ID_BYTES);
        } else if (mpr_key_is(k, kl, "cell")) {
            if (mpr_uint(r, &u) == 0) res->session.cell = u > UINT32_MAX ? UINT32_MAX : (uint32_t)u;
        } else if (mpr_key_is(k, kl, "alive")) {
            mpr_bool(r, &res->session.alive);
        } else if (mpr_key_is(k, kl, "end_reason")) {
            free(res->session.end_reason);
            mpr_strdup(r, 1024, &res->session.end_reason);
        } else if (mpr_key_is(k, kl, "memory_kb")) {
            if (mpr_uint(r, &u) == 0) res->session.memory_kb = u;
        } else if (mpr_key_is(k, kl, "summary")) {
            s_text(r, &res->session.summary);
        } else if (mpr_key_is(k, kl, "atomic")) {
            mpr_bool(r, &res->session.atomic);
        } else if (mpr_key_is(k, kl, "rolled_back")) {
            mpr_bool(r, &res->session.rolled_back);
        } else if (mpr_key_is(k, kl, "clones") && !res->session.clones) {
            s_read_clones(r, res);
        } else if (mpr_key_is(k, kl, "memory_mb") || mpr_key_is(k, kl, "idle_timeout_s") ||
                   mpr_key_is(k, kl, "forks_left")) {
            long *dst = mpr_key_is(k, kl, "memory_mb")        ? &res->session.memory_mb
                        : mpr_key_is(k, kl, "idle_timeout_s") ? &res->session.idle_timeout_s
                                                              : &res->session.forks_left;
            if (mpr_int(r, &v) == 0) *dst = v < 0 || v > (1L << 40) ? 0 : (long)v;
        } else mpr_skip(r);
    }
}

/* The snapshot map, kept as its bytes (the front-end stores them as they are). */
static void s_read_snapshot(mpr_t *r, result_t *res)
{
    const uint8_t *start = r->p;
    if (mpr_peek(r) != MP_MAP) {
        mpr_fail(r, "snapshot is not a map");
        return;
    }
    if (mpr_skip(r) < 0) return;
    size_t len = (size_t)(r->p - start);
    if (len > RESULT_MAX_SNAPSHOT) {
        mpr_fail(r, "snapshot too large");
        return;
    }
    free(res->snapshot);
    res->snapshot = xmalloc(len);
    memcpy(res->snapshot, start, len);
    res->snapshot_len = len;
}

int result_decode(const void *data, size_t len, result_t *res, char *err, size_t errlen)
{
    mpr_t    r;
    uint32_t n;
    uint64_t version = 0, u;
    int      have_status = 0;
    result_init(res);
    mpr_init(&r, data, len);
    if (mpr_map(&r, &n) == 0) {
        for (uint32_t i = 0; i < n && !r.err; i++) {
            const char *k;
            uint32_t    kl;
            if (mpr_str(&r, &k, &kl) < 0) break;
            if (mpr_key_is(k, kl, "v")) {
                mpr_uint(&r, &version);
            } else if (mpr_key_is(k, kl, "status")) {
                const char *v;
                uint32_t    vl;
                if (mpr_str(&r, &v, &vl) == 0) {
                    if (status_parse_n(v, vl, &res->status) < 0) mpr_fail(&r, "unknown status");
                    have_status = 1;
                }
            } else if (mpr_key_is(k, kl, "stdout")) {
                free(res->out);
                mpr_bytesdup(&r, RESULT_MAX_STREAM, &res->out, &res->out_len);
            } else if (mpr_key_is(k, kl, "stderr")) {
                free(res->err);
                mpr_bytesdup(&r, RESULT_MAX_STREAM, &res->err, &res->err_len);
            } else if (mpr_key_is(k, kl, "stdout_truncated")) {
                mpr_bool(&r, &res->out_truncated);
            } else if (mpr_key_is(k, kl, "stderr_truncated")) {
                mpr_bool(&r, &res->err_truncated);
            } else if (mpr_key_is(k, kl, "result")) {
                s_text(&r, &res->result);
            } else if (mpr_key_is(k, kl, "variables")) {
                s_text(&r, &res->variables);
            } else if (mpr_key_is(k, kl, "validation")) {
                s_text(&r, &res->validation);
            } else if (mpr_key_is(k, kl, "error") && !res->error.present) {
                s_read_error(&r, res);
            } else if (mpr_key_is(k, kl, "timings")) {
                s_read_timings(&r, res);
            } else if (mpr_key_is(k, kl, "max_rss_kb")) {
                int64_t v;
                if (mpr_int(&r, &v) == 0) res->max_rss_kb = (long)v;
            } else if (mpr_key_is(k, kl, "exit")) {
                s_read_exit(&r, res);
            } else if (mpr_key_is(k, kl, "images") && !res->images) {
                s_read_images(&r, res);
            } else if (mpr_key_is(k, kl, "files") && !res->files) {
                s_read_files(&r, res);
            } else if (mpr_key_is(k, kl, "outputs") && !res->outputs) {
                s_read_outputs(&r, res);
            } else if (mpr_key_is(k, kl, "security_events") && !res->events) {
                s_read_events(&r, res);
            } else if (mpr_key_is(k, kl, "truncated_media")) {
                if (mpr_uint(&r, &u) == 0) {
                    res->images_truncated = (int)(u & 1);
                    res->files_truncated = (int)((u >> 1) & 1);
                    res->outputs_truncated = (int)((u >> 2) & 1);
                    res->events_truncated = (int)((u >> 3) & 1);
                }
            } else if (mpr_key_is(k, kl, "executor")) {
                s_text(&r, &res->executor);
            } else if (mpr_key_is(k, kl, "attempt")) {
                if (mpr_uint(&r, &u) == 0) res->attempt = (uint32_t)(u > 100 ? 100 : u);
            } else if (mpr_key_is(k, kl, "session") && !res->session.present) {
                s_read_session(&r, res);
            } else if (mpr_key_is(k, kl, "snapshot") && !res->snapshot) {
                s_read_snapshot(&r, res);
            } else if (mpr_key_is(k, kl, "egress") && !res->egress.list) {
                result_egress_read(&r, &res->egress);
            } else {
                mpr_skip(&r);
            }
        }
    }
    const char *why = r.err;
    if (!why && mpr_done(&r) < 0) why = "trailing bytes after Result";
    if (!why && version != 1) why = "unsupported Result version";
    if (!why && !have_status) why = "Result without status";
    if (why) {
        snprintf(err, errlen, "%s", why);
        result_clear(res);
        return -1;
    }
    return 0;
}
