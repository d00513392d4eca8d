/* executor-node/area/jobcopy.c — see jobcopy.h. One walk over the JobSpec serves both to measure
 * and to copy (a dry arena only counts), so the two cannot disagree. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "common/log.h"
#include "jobcopy.h"

typedef struct {
    uint8_t *base; /* NULL: dry run, count only */
    size_t used;
    size_t cap;
    int full;       /* something did not fit */
    intptr_t delta; /* where the reader sees base, less base: added to every pointer stored */
} arena_t;

/* A pointer as the copy's reader will see it. */
static void *s_rel(const arena_t *a, void *p)
{
    return p ? (void *)((uintptr_t)p + (uintptr_t)a->delta) : NULL;
}

static void *s_take(arena_t *a, size_t n)
{
    size_t at = (a->used + 7) & ~(size_t)7; /* every piece 8-byte aligned */
    if (a->base && (at > a->cap || n > a->cap - at)) {
        a->full = 1;
        return NULL;
    }
    a->used = at + n;
    return a->base ? a->base + at : NULL;
}

static char *s_bytes(arena_t *a, const char *s, size_t len)
{
    if (!s) return NULL;
    char *p = s_take(a, len + 1);
    if (p) {
        memcpy(p, s, len);
        p[len] = '\0';
    }
    return p;
}

static char *s_str(arena_t *a, const char *s)
{
    return s_bytes(a, s, s ? strlen(s) : 0);
}

static char **s_names(arena_t *a, char **names, size_t n)
{
    if (!n) return NULL;
    char **out = s_take(a, n * sizeof *out);
    for (size_t i = 0; i < n; i++) {
        char *s = s_str(a, names[i]);
        if (out) out[i] = s_rel(a, s);
    }
    return s_rel(a, out);
}

static job_file_t *s_files(arena_t *a, const job_file_t *files, size_t n)
{
    if (!n) return NULL;
    job_file_t *out = s_take(a, n * sizeof *out);
    for (size_t i = 0; i < n; i++) {
        char *path = s_str(a, files[i].path), *data = s_bytes(a, files[i].data, files[i].len);
        if (out) out[i] = (job_file_t){s_rel(a, path), s_rel(a, data), files[i].len};
    }
    return s_rel(a, out);
}

/* The walk: in a dry arena it only measures. */
static jobspec_t *s_copy(arena_t *a, const jobspec_t *job, unsigned parts)
{
    jobspec_t *out = s_take(a, sizeof *out), copy = *job;
    copy.tenant = s_rel(a, s_str(a, job->tenant));
    copy.service = s_rel(a, s_str(a, job->service));
    int run = (parts & JOBCOPY_RUN) != 0, files = (parts & JOBCOPY_FILES) != 0;
    copy.code = run ? s_rel(a, s_bytes(a, job->code, job->code_len)) : NULL;
    copy.code_len = run ? job->code_len : 0;
    copy.stdin_data = run ? s_rel(a, s_bytes(a, job->stdin_data, job->stdin_len)) : NULL;
    copy.stdin_len = run && job->stdin_data ? job->stdin_len : 0;
    copy.inspect = run ? s_names(a, job->inspect, job->n_inspect) : NULL;
    copy.n_inspect = run ? job->n_inspect : 0;
    copy.allowed_imports = run ? s_names(a, job->allowed_imports, job->n_allowed_imports) : NULL;
    copy.n_allowed_imports = run ? job->n_allowed_imports : 0;
    copy.snapshot = run ? s_rel(a, s_bytes(a, job->snapshot, job->snapshot_len)) : NULL;
    copy.snapshot_len = run && job->snapshot ? job->snapshot_len : 0;
    copy.dependencies = run ? s_names(a, job->dependencies, job->n_dependencies) : NULL;
    copy.n_dependencies = run ? job->n_dependencies : 0;
    copy.egress = (job_egress_t){0}; /* the node's to grant, never the child's to read */
    copy.files = files ? s_files(a, job->files, job->n_files) : NULL;
    copy.n_files = files ? job->n_files : 0;
    copy.more_sessions = NULL; /* the zygote's business (a fork's other clones), never a reader's */
    copy.n_more_sessions = 0;
    if (out) *out = copy;
    return out;
}

size_t jobcopy_size(const jobspec_t *job, unsigned parts)
{
    arena_t a = {0};
    s_copy(&a, job, parts);
    return a.used;
}

jobspec_t *jobcopy_put(const jobspec_t *job, unsigned parts, void *mem, size_t cap)
{
    return jobcopy_put_at(job, parts, mem, cap, (uintptr_t)mem);
}

jobspec_t *jobcopy_put_at(const jobspec_t *job, unsigned parts, void *mem, size_t cap, uintptr_t at)
{
    arena_t a = {mem, 0, cap, 0, (intptr_t)(at - (uintptr_t)mem)};
    jobspec_t *out = s_copy(&a, job, parts);
    return a.full ? NULL : out;
}

/* A private copy's mapping: its size, then the copy. */
typedef struct {
    size_t size;
    size_t pad; /* keeps the copy 16-byte aligned */
} private_hdr_t;

jobspec_t *jobcopy_private(const jobspec_t *job, unsigned parts)
{
    size_t size = sizeof(private_hdr_t) + jobcopy_size(job, parts);
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        log_error("event=jobcopy_failed error=\"%s\"", strerror(errno));
        return NULL;
    }
    if (madvise(p, size, MADV_DONTFORK) < 0) { /* a later child must not see it: give up */
        log_error("event=jobcopy_failed error=\"madvise: %s\"", strerror(errno));
        munmap(p, size);
        return NULL;
    }
    ((private_hdr_t *)p)->size = size;
    return jobcopy_put(job, parts, (private_hdr_t *)p + 1, size - sizeof(private_hdr_t));
}

void jobcopy_private_free(jobspec_t **copy_p)
{
    if (!*copy_p) return;
    private_hdr_t *h = (private_hdr_t *)(void *)*copy_p - 1;
    size_t size = h->size;
    explicit_bzero(h, size);
    munmap(h, size);
    *copy_p = NULL;
}
