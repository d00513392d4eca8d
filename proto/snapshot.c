/* proto/snapshot.c — see snapshot.h. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job.h"
#include "mpack.h"
#include "snapshot.h"

/* A map's bytes: its start, then skipped by the caller's reads. */
typedef struct {
    const uint8_t *start;
    size_t len;
} span_t;

/* {str: bin} or {str: str}: names bounded, values counted into *bytes. */
static void s_read_named(mpr_t *r, span_t *span, uint32_t *count, size_t *bytes, int bins)
{
    uint32_t n;
    span->start = r->p;
    if (mpr_map(r, &n) < 0) return;
    if (n > SNAPSHOT_MAX_VARIABLES) {
        mpr_fail(r, "too many variables");
        return;
    }
    for (uint32_t i = 0; i < n && !r->err; i++) {
        const char *k;
        const uint8_t *v;
        uint32_t kl, vl;
        if (mpr_str(r, &k, &kl) < 0) return;
        if (!kl || kl > SNAPSHOT_MAX_NAME) {
            mpr_fail(r, "a variable name is empty or too long");
            return;
        }
        if (bins ? mpr_bytes(r, &v, &vl) < 0 : mpr_str(r, (const char **)&v, &vl) < 0) return;
        if (!bins && (!vl || vl > SNAPSHOT_MAX_NAME)) mpr_fail(r, "a module name is bad");
        if (bytes) *bytes += vl;
    }
    *count = n;
    span->len = (size_t)(r->p - span->start);
}

static void s_read_skipped(mpr_t *r, span_t *span, uint32_t *count)
{
    uint32_t n;
    span->start = r->p;
    if (mpr_array(r, &n) < 0) return;
    if (n > SNAPSHOT_MAX_VARIABLES + SNAPSHOT_MAX_FILES) {
        mpr_fail(r, "too many skipped entries");
        return;
    }
    for (uint32_t i = 0; i < n && !r->err; i++) {
        uint32_t m, have = 0;
        if (mpr_map(r, &m) < 0) return;
        for (uint32_t j = 0; j < m && !r->err; j++) {
            const char *k, *v;
            uint32_t kl, vl;
            if (mpr_str(r, &k, &kl) < 0 || mpr_str(r, &v, &vl) < 0) return;
            if (vl > 1024) mpr_fail(r, "a skipped entry is too long");
            have |= mpr_key_is(k, kl, "name") ? 1u : mpr_key_is(k, kl, "reason") ? 2u : 0u;
        }
        if (have != 3) mpr_fail(r, "a skipped entry needs name and reason");
    }
    *count = n;
    span->len = (size_t)(r->p - span->start);
}

static void s_read_file(mpr_t *r, snapshot_file_t *f)
{
    uint32_t m;
    int have_path = 0, have_data = 0;
    if (mpr_map(r, &m) < 0) return;
    for (uint32_t j = 0; j < m && !r->err; j++) {
        const char *k, *v;
        uint32_t kl, vl;
        uint64_t u;
        if (mpr_str(r, &k, &kl) < 0) return;
        if (mpr_key_is(k, kl, "path")) {
            if (mpr_str(r, &v, &vl) < 0) return;
            if (vl >= sizeof f->path || memchr(v, 0, vl)) {
                mpr_fail(r, "a file path is too long");
                return;
            }
            memcpy(f->path, v, vl);
            f->path[vl] = '\0';
            have_path = 1;
        } else if (mpr_key_is(k, kl, "data")) {
            if (mpr_bytes(r, &f->data, &vl) < 0) return;
            f->len = vl;
            have_data = 1;
        } else if (mpr_key_is(k, kl, "mtime_ns")) {
            mpr_int(r, &f->mtime_ns);
        } else if (mpr_key_is(k, kl, "mode")) {
            if (mpr_uint(r, &u) == 0) f->mode = (uint32_t)(u & 0777);
        } else {
            mpr_skip(r);
        }
    }
    if (!r->err && (!have_path || !have_data)) mpr_fail(r, "a file needs path and data");
}

/* files: each path by the workspace rule, no two alike, within the caps. */
static void s_read_files(mpr_t *r, snapshot_view_t *v, char *why, size_t whylen)
{
    uint32_t n;
    if (mpr_array(r, &n) < 0) return;
    if (n > SNAPSHOT_MAX_FILES) {
        mpr_fail(r, "too many files");
        return;
    }
    v->files = calloc(n ? n : 1, sizeof *v->files);
    if (!v->files) {
        mpr_fail(r, "out of memory");
        return;
    }
    for (uint32_t i = 0; i < n && !r->err; i++) {
        snapshot_file_t *f = &v->files[v->n_files++];
        s_read_file(r, f);
        if (r->err) return;
        if (jobspec_check_path(f->path, why, whylen) < 0) {
            mpr_fail(r, "a file path breaks the workspace rule");
            return;
        }
        for (size_t k = 0; k + 1 < v->n_files; k++)
            if (!strcmp(v->files[k].path, f->path)) mpr_fail(r, "a file path comes twice");
        v->files_bytes += f->len;
        if (v->files_bytes > SNAPSHOT_MAX_FILES_BYTES) mpr_fail(r, "the files are too large");
    }
}

int snapshot_decode(const void *data, size_t len, snapshot_view_t *v, char *err, size_t errlen)
{
    mpr_t r;
    uint32_t n;
    uint64_t version = 1;
    char why[200] = "";
    memset(v, 0, sizeof *v);
    mpr_init(&r, data, len);
    span_t vars = {0}, imports = {0}, skipped = {0};
    if (mpr_map(&r, &n) == 0) {
        for (uint32_t i = 0; i < n && !r.err; i++) {
            const char *k;
            uint32_t kl;
            if (mpr_str(&r, &k, &kl) < 0) break;
            if (mpr_key_is(k, kl, "v"))
                mpr_uint(&r, &version);
            else if (mpr_key_is(k, kl, "variables") && !vars.start)
                s_read_named(&r, &vars, &v->n_variables, &v->vars_bytes, 1);
            else if (mpr_key_is(k, kl, "imports") && !imports.start)
                s_read_named(&r, &imports, &v->n_imports, NULL, 0);
            else if (mpr_key_is(k, kl, "skipped") && !skipped.start)
                s_read_skipped(&r, &skipped, &v->n_skipped);
            else if (mpr_key_is(k, kl, "files") && !v->files)
                s_read_files(&r, v, why, sizeof why);
            else
                mpr_skip(&r);
        }
    }
    const char *fail = r.err;
    if (!fail && mpr_done(&r) < 0) fail = "trailing bytes after the snapshot";
    if (!fail && version != 1) fail = "unsupported snapshot version";
    if (!fail && v->vars_bytes > SNAPSHOT_MAX_VARS_BYTES) fail = "the variables are too large";
    if (fail) {
        snprintf(err, errlen, "snapshot: %s%s%s", fail, why[0] ? ": " : "", why);
        snapshot_view_free(v);
        return -1;
    }
    v->variables = vars.start, v->variables_len = vars.len;
    v->imports = imports.start, v->imports_len = imports.len;
    v->skipped = skipped.start, v->skipped_len = skipped.len;
    return 0;
}

void snapshot_view_free(snapshot_view_t *v)
{
    free(v->files);
    memset(v, 0, sizeof *v);
}

static void s_each_named(const uint8_t *p, size_t len, int is_import, snapshot_name_fn *fn,
                         void *arg)
{
    mpr_t r;
    uint32_t n;
    mpr_init(&r, p, len);
    if (!p || mpr_map(&r, &n) < 0) return;
    for (uint32_t i = 0; i < n && !r.err; i++) {
        const char *k;
        uint32_t kl;
        if (mpr_str(&r, &k, &kl) < 0 || mpr_skip(&r) < 0) return;
        fn(arg, k, kl, NULL, 0, is_import);
    }
}

void snapshot_each_name(const snapshot_view_t *v, snapshot_name_fn *fn, void *arg)
{
    s_each_named(v->variables, v->variables_len, 0, fn, arg);
    s_each_named(v->imports, v->imports_len, 1, fn, arg);
    mpr_t r;
    uint32_t n;
    mpr_init(&r, v->skipped, v->skipped_len);
    if (!v->skipped || mpr_array(&r, &n) < 0) return;
    for (uint32_t i = 0; i < n && !r.err; i++) {
        uint32_t m;
        const char *name = "", *reason = "";
        uint32_t nl = 0, rl = 0;
        if (mpr_map(&r, &m) < 0) return;
        for (uint32_t j = 0; j < m && !r.err; j++) {
            const char *k, *val;
            uint32_t kl, vl;
            if (mpr_str(&r, &k, &kl) < 0 || mpr_str(&r, &val, &vl) < 0) return;
            if (mpr_key_is(k, kl, "name"))
                name = val, nl = vl;
            else if (mpr_key_is(k, kl, "reason"))
                reason = val, rl = vl;
        }
        fn(arg, name, nl, reason, rl, 0);
    }
}

static void s_raw(mpw_t *w, buf_t *out, const char *key, const uint8_t *raw, size_t len, int array)
{
    mpw_str(w, key);
    if (raw)
        buf_append(out, raw, len);
    else if (array)
        mpw_array(w, 0);
    else
        mpw_map(w, 0);
}

void snapshot_encode_variables(const snapshot_view_t *v, buf_t *out)
{
    mpw_t w;
    mpw_init(&w, out);
    mpw_map(&w, 2);
    s_raw(&w, out, "variables", v->variables, v->variables_len, 0);
    s_raw(&w, out, "imports", v->imports, v->imports_len, 0);
}

void snapshot_encode(const snapshot_view_t *parts, const snapshot_file_t *files, size_t n_files,
                     const char *const *more_names, const char *const *more_reasons, size_t n_more,
                     buf_t *out)
{
    mpw_t w;
    mpw_init(&w, out);
    mpw_map(&w, 5);
    mpw_kv_uint(&w, "v", 1);
    s_raw(&w, out, "variables", parts->variables, parts->variables_len, 0);
    s_raw(&w, out, "imports", parts->imports, parts->imports_len, 0);
    /* the skipped entries: the session's own, then ours */
    mpw_str(&w, "skipped");
    mpw_array(&w, parts->n_skipped + (uint32_t)n_more);
    if (parts->skipped) {
        mpr_t r;
        uint32_t n;
        mpr_init(&r, parts->skipped, parts->skipped_len);
        if (mpr_array(&r, &n) == 0) buf_append(out, r.p, (size_t)(r.end - r.p));
    }
    for (size_t i = 0; i < n_more; i++) {
        mpw_map(&w, 2);
        mpw_kv_str(&w, "name", more_names[i]);
        mpw_kv_str(&w, "reason", more_reasons[i]);
    }
    mpw_str(&w, "files");
    mpw_array(&w, (uint32_t)n_files);
    for (size_t i = 0; i < n_files; i++) {
        mpw_map(&w, 4);
        mpw_kv_str(&w, "path", files[i].path);
        mpw_str(&w, "data");
        mpw_bin(&w, files[i].data, files[i].len);
        mpw_kv_int(&w, "mtime_ns", files[i].mtime_ns);
        mpw_kv_uint(&w, "mode", files[i].mode);
    }
}
