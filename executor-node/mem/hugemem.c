/* executor-node/mem/hugemem.c — see hugemem.h. */
#define _GNU_SOURCE
#include <Python.h>
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "common/log.h"
#include "hugemem.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif

#define HUGE      (2ul << 20)
#define HEAP_KEEP (64 << 20) /* M_TRIM_THRESHOLD: the break never shrinks in practice */

/* The current run: [s_next, s_end) is mapped and not yet handed out; 0: none. A run is mapped
 * in whole, aligned 2 MiB, so that no arena of it is left on 4 KiB pages behind a run that
 * ends part-way into one (a 1 MiB arena per mapping did that: the last 1 MiB of every run, ~1,100
 * page-table entries per fork in python.basic). At most 1 MiB of it is mapped ahead of need. */
static uintptr_t s_next, s_end;

/* A fresh run of arenas, starting on a 2 MiB boundary, HUGE-rounded. */
static void *s_new_run(size_t size)
{
    size_t len = (size + HUGE - 1) & ~(HUGE - 1), span = len + HUGE;
    char *q = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (q == MAP_FAILED) return NULL;
    uintptr_t lo = (uintptr_t)q, a = (lo + HUGE - 1) & ~(HUGE - 1);
    if (a > lo) munmap(q, a - lo);
    if (lo + span > a + len) munmap((void *)(a + len), lo + span - (a + len));
    s_next = a + size;
    s_end = a + len;
    return (void *)a;
}

static void *s_arena_alloc(void *ctx, size_t size)
{
    (void)ctx;
    if (s_next && s_end - s_next >= size) { /* mapped with the run already */
        void *p = (void *)s_next;
        s_next += size;
        return p;
    }
    if (s_next) { /* extend the run by whole 2 MiB where the addresses are free */
        size_t len = (size - (s_end - s_next) + HUGE - 1) & ~(HUGE - 1);
        void *p = mmap((void *)s_end, len, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
        if (p == (void *)s_end) {
            void *arena = (void *)s_next;
            s_end += len;
            s_next += size;
            return arena;
        }
        if (p != MAP_FAILED) munmap(p, len); /* a kernel before 4.17 took it as a hint */
        /* the rest of this run stays mapped and unused: at most one arena's worth */
    }
    return s_new_run(size);
}

static void s_arena_free(void *ctx, void *p, size_t size)
{
    (void)ctx;
    if (munmap(p, size) < 0) log_warn("event=arena_munmap_failed error=\"%s\"", strerror(errno));
}

void hugemem_arenas(void)
{
    PyObjectArenaAllocator a = {NULL, s_arena_alloc, s_arena_free};
    PyObject_SetArenaAllocator(&a);
}

/* Every aligned 2 MiB of [lo, hi) on huge pages; how many were made. */
static long s_collapse_range(uintptr_t lo, uintptr_t hi)
{
    uintptr_t a = (lo + HUGE - 1) & ~(HUGE - 1), b = hi & ~(HUGE - 1);
    if (b <= a) return 0;
    if (madvise((void *)a, b - a, MADV_COLLAPSE) == 0) return (long)((b - a) / HUGE);
    /* EAGAIN/ENOMEM: some could not be made (no free huge page now); EINVAL: no THP here */
    long made = 0;
    if (errno == EINVAL) return 0;
    for (uintptr_t at = a; at < b; at += HUGE) made += madvise((void *)at, HUGE, MADV_COLLAPSE) == 0;
    return made;
}

long hugemem_collapse(char *err, size_t errlen)
{
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f) {
        snprintf(err, errlen, "/proc/self/maps: %s", strerror(errno));
        return -1;
    }
    char line[512];
    long made = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        char perms[5], name[64] = "";
        if (sscanf(line, "%lx-%lx %4s %*s %*s %*s %63s", &lo, &hi, perms, name) < 3) continue;
        /* private, writable, anonymous: pymalloc's arenas, mmapped blocks, the heap */
        if (strcmp(perms, "rw-p") != 0 || (name[0] && strcmp(name, "[heap]") != 0)) continue;
        made += s_collapse_range(lo, hi);
    }
    fclose(f);
    mallopt(M_TRIM_THRESHOLD, HEAP_KEEP);
    return made;
}
