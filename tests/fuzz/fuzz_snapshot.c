/* tests/fuzz/fuzz_snapshot.c — libFuzzer target for a session's snapshot (proto/snapshot.c):
 * what a zygote reads back from a session's process and what a restore hands an
 * executor, bytes that crossed Redis and the tenant's hands. Beyond "no crash, no sanitizer
 * report", a decoded snapshot must keep the promises the zygote writes files on: every path
 * passes the workspace rule, none twice, the caps hold, every file's bytes lie inside the
 * input; and re-encoding what was read decodes to the same snapshot. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "proto/job.h"
#include "proto/snapshot.h"

static void s_check(int ok)
{
    if (!ok) abort();
}

static void s_name(void *arg, const char *name, size_t len, const char *reason, size_t reason_len,
                   int is_import)
{
    (void)reason, (void)is_import;
    size_t *n = arg;
    s_check(name != NULL && len <= SNAPSHOT_MAX_NAME && (reason || !reason_len));
    (*n)++;
}

static void s_same(const snapshot_view_t *a, const snapshot_view_t *b)
{
    s_check(a->n_files == b->n_files && a->n_variables == b->n_variables &&
            a->n_imports == b->n_imports && a->n_skipped == b->n_skipped &&
            a->files_bytes == b->files_bytes && a->vars_bytes == b->vars_bytes);
    for (size_t i = 0; i < a->n_files; i++) {
        const snapshot_file_t *x = &a->files[i], *y = &b->files[i];
        s_check(strcmp(x->path, y->path) == 0 && x->len == y->len && x->mtime_ns == y->mtime_ns &&
                x->mode == y->mode);
        s_check(x->len == 0 || memcmp(x->data, y->data, x->len) == 0);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    snapshot_view_t v;
    char err[256];
    if (snapshot_decode(data, size, &v, err, sizeof err) < 0) {
        s_check(err[0] != '\0' && v.n_files == 0 && v.files == NULL);
        return 0;
    }
    s_check(v.n_files <= SNAPSHOT_MAX_FILES && v.files_bytes <= SNAPSHOT_MAX_FILES_BYTES);
    s_check(v.n_variables <= SNAPSHOT_MAX_VARIABLES && v.vars_bytes <= SNAPSHOT_MAX_VARS_BYTES);
    size_t total = 0;
    for (size_t i = 0; i < v.n_files; i++) {
        const snapshot_file_t *f = &v.files[i];
        s_check(jobspec_check_path(f->path, err, sizeof err) == 0);
        s_check(f->len == 0 || (f->data >= data && f->data + f->len <= data + size));
        s_check((f->mode & ~07777u) == 0);
        for (size_t j = 0; j < i; j++) s_check(strcmp(v.files[j].path, f->path) != 0);
        total += f->len;
    }
    s_check(total == v.files_bytes);
    size_t names = 0;
    snapshot_each_name(&v, s_name, &names);
    s_check(names == (size_t)v.n_variables + v.n_imports + v.n_skipped);

    buf_t b; /* again, from what was read: the same snapshot */
    buf_init(&b);
    snapshot_encode(&v, v.files, v.n_files, NULL, NULL, 0, &b);
    snapshot_view_t back;
    s_check(snapshot_decode(b.data, b.len, &back, err, sizeof err) == 0);
    s_same(&v, &back);
    snapshot_view_free(&back);
    buf_t vars; /* and the part a session's process restores from */
    buf_init(&vars);
    snapshot_encode_variables(&v, &vars);
    s_check(snapshot_decode(vars.data, vars.len, &back, err, sizeof err) == 0);
    s_check(back.n_variables == v.n_variables && back.n_imports == v.n_imports &&
            back.n_files == 0);
    snapshot_view_free(&back);
    buf_free(&vars);
    buf_free(&b);
    snapshot_view_free(&v);
    return 0;
}
