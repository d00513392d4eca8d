/* executor-node/area/jobarea.c — see jobarea.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "proto/mpack.h"
#include "jobarea.h"

static size_t s_size(uint32_t job_cap, uint32_t stream_cap)
{
    return JOBAREA_HEADER + (size_t)job_cap + 2 * (size_t)stream_cap + JOBAREA_META_CAP;
}

static void s_init(area_t *a, void *p, size_t size, uint32_t job_cap, uint32_t stream_cap)
{
    a->base = p;
    a->size = size;
    a->job_cap = job_cap;
    a->stream_cap = stream_cap;
    area_hdr_t *h = area_hdr(a);
    memset(h, 0, sizeof *h);
    h->job_cap = job_cap;
    h->stream_cap = stream_cap;
    h->trap_syscall = -1;
}

int area_map(area_t *a, uint32_t job_cap, uint32_t stream_cap)
{
    size_t size = s_size(job_cap, stream_cap);
    /* Untouched pages cost nothing: a child that prints 10 bytes dirties two pages. */
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return -errno;
    s_init(a, p, size, job_cap, stream_cap);
    return 0;
}

int area_map_memfd(area_t *a, uint32_t job_cap, uint32_t stream_cap, int *fd)
{
    size_t size = s_size(job_cap, stream_cap);
    *fd = memfd_create("snakepit-area", MFD_CLOEXEC);
    if (*fd < 0) return -errno;
    void *p = MAP_FAILED;
    if (ftruncate(*fd, (off_t)size) == 0)
        p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
    if (p != MAP_FAILED && madvise(p, size, MADV_DONTFORK) < 0) {
        munmap(p, size);
        p = MAP_FAILED;
    }
    if (p == MAP_FAILED) {
        int e = errno;
        close(*fd);
        *fd = -1;
        return -e;
    }
    s_init(a, p, size, job_cap, stream_cap);
    return 0;
}

int area_attach(area_t *a, int fd, uint32_t job_cap, uint32_t stream_cap)
{
    size_t size = s_size(job_cap, stream_cap);
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) return -errno;
    a->base = p;
    a->size = size;
    a->job_cap = job_cap;
    a->stream_cap = stream_cap;
    return 0;
}

void area_reset(area_t *a, uint32_t job_len, uint32_t out_limit)
{
    area_hdr_t *h = area_hdr(a);
    memset(h, 0, sizeof *h);
    h->job_cap = a->job_cap;
    h->stream_cap = a->stream_cap;
    h->trap_syscall = -1;
    h->job_len = job_len;
    h->out_limit = out_limit;
}

void area_unmap(area_t *a)
{
    if (a->base) munmap(a->base, a->size);
    a->base = NULL;
    a->size = 0;
}

int area_put_meta(area_t *a, const void *meta, size_t len)
{
    if (len > JOBAREA_META_CAP) return -1;
    memcpy(area_meta(a), meta, len);
    area_hdr(a)->meta_len = (uint32_t)len;
    return 0;
}

void area_report(area_t *a, const char *status, const char *type, const char *message)
{
    buf_t out;
    buf_init(&out);
    mpw_t w;
    mpw_init(&w, &out);
    mpw_map(&w, type ? 2 : 1);
    mpw_kv_str(&w, "status", status);
    if (type) {
        mpw_str(&w, "error");
        mpw_map(&w, 2);
        mpw_kv_str(&w, "type", type);
        mpw_kv_str(&w, "message", message);
    }
    area_put_meta(a, out.data, out.len);
    buf_free(&out);
}
