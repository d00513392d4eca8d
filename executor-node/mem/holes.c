/* executor-node/mem/holes.c — see holes.h. */
#define _GNU_SOURCE
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/log.h"
#include "holes.h"

#define FILL_MAX (256u << 20) /* never take more than this from either allocator */

/* ---- pymalloc ------------------------------------------------------------------------------ */

#if PY_VERSION_HEX < 0x030B0000 || PY_VERSION_HEX >= 0x030C0000
#error "holes.c knows CPython 3.11's pymalloc pools"
#endif

/* CPython 3.11's obmalloc.c on 64-bit (WITH_PYMALLOC_RADIX_TREE: 16 KiB pools), blocks of
 * 16..512 bytes in 32 size classes; each pool starts with this header. */
#define POOL_SIZE  (16u << 10)
#define SIZE_CLASS 16u
#define N_CLASSES  32u
typedef struct {
    union {
        void *padding;
        unsigned count; /* blocks allocated in this pool */
    } ref;
    void *freeblock;
    void *nextpool;
    void *prevpool;
    unsigned arenaindex;
    unsigned szidx; /* its size class */
    unsigned nextoffset;
    unsigned maxnextoffset;
} pool_header_t;

/* Blocks of class idx until one comes from a pool with no other block allocated: a fresh pool,
 * which the class's allocations then fill in order. Bytes taken; *bad when a pool header does
 * not look like pymalloc's. */
static size_t s_fill_class(unsigned idx, size_t budget, int *bad)
{
    size_t size = (idx + 1) * SIZE_CLASS, taken = 0;
    while (taken < budget) {
        void *p = PyObject_Malloc(size);
        if (!p) break;
        taken += size;
        const pool_header_t *pool =
            (const pool_header_t *)((uintptr_t)p & ~(uintptr_t)(POOL_SIZE - 1));
        if (pool->szidx != idx || pool->ref.count == 0 || pool->ref.count > POOL_SIZE / size) {
            *bad = 1;
            break;
        }
        if (pool->ref.count == 1) break;
    }
    return taken;
}

size_t holes_fill_pools(void)
{
    size_t total = 0;
    int bad = 0;
    for (unsigned idx = 0; idx < N_CLASSES && !bad && total < FILL_MAX; idx++)
        total += s_fill_class(idx, FILL_MAX - total, &bad);
    if (bad) log_warn("event=holes_stopped allocator=pymalloc reason=\"not the pool layout expected\"");
    return total;
}

/* ---- glibc --------------------------------------------------------------------------------- */

#if defined(__GLIBC__) && !defined(__SANITIZE_ADDRESS__)
#define CHUNK_HDR      (2 * sizeof(size_t)) /* prev_size, size */
#define SIZE_BITS      ((size_t)7)
#define IS_MMAPPED     ((size_t)2)
#define NON_MAIN_ARENA ((size_t)4)
#define HUGE           ((uintptr_t)2 << 20)
#define STEP_MAX       ((size_t)64 << 10) /* below glibc's smallest mmap threshold (128 KiB) */

/* The chunk after the one malloc returned at p, when that is the top chunk (it ends at the
 * break): p was carved from the top. NULL when it was a hole; *bad when p is not a chunk of
 * the main heap (mmapped, another arena). */
static char *s_top_after(const void *p, int *bad)
{
    size_t sz = ((const size_t *)p)[-1];
    char *brk = sbrk(0);
    char *next = (char *)p - CHUNK_HDR + (sz & ~SIZE_BITS);
    if ((sz & (IS_MMAPPED | NON_MAIN_ARENA)) || next <= (const char *)p || next >= brk) {
        *bad = 1;
        return NULL;
    }
    size_t top = ((const size_t *)(void *)next)[1] & ~SIZE_BITS;
    return next + top == brk ? next : NULL;
}

/* Requests of r bytes until two in a row come from the top (the first may be a cached chunk
 * that happens to lie against it). Bytes taken; *top: where the top chunk starts. */
static size_t s_fill_size(size_t r, size_t budget, char **top, int *bad)
{
    size_t taken = 0;
    int from_top = 0;
    while (taken < budget && from_top < 2 && !*bad) {
        void *p = malloc(r);
        if (!p) break;
        taken += r;
        char *t = s_top_after(p, bad);
        from_top = t ? from_top + 1 : 0;
        if (t) *top = t;
    }
    return taken;
}

size_t holes_fill_heap(void)
{
    /* the large holes first, in few steps, then every tcache/small-bin size down to the least */
    static const size_t big[] = {STEP_MAX - 8, (16u << 10) - 8, (4u << 10) - 8};
    size_t total = 0;
    char *top = NULL;
    int bad = 0;
    for (size_t i = 0; i < sizeof big / sizeof big[0] && !bad; i++)
        total += s_fill_size(big[i], FILL_MAX - total, &top, &bad);
    for (size_t r = 1032; r >= 24 && !bad && total < FILL_MAX; r -= 16)
        total += s_fill_size(r, FILL_MAX - total, &top, &bad);
    /* then the top to a 2 MiB boundary: what is allocated from now on is above the huge pages */
    while (top && !bad && (uintptr_t)top % HUGE) {
        size_t gap = HUGE - (uintptr_t)top % HUGE;
        if (gap < 32) gap += HUGE; /* a chunk is at least 32 bytes */
        size_t chunk = gap > STEP_MAX ? STEP_MAX : gap;
        if (gap - chunk && gap - chunk < 32) chunk -= 32;
        void *p = malloc(chunk - 8); /* a request of n makes a chunk of n + 8, rounded to 16 */
        if (!p) break;
        total += chunk;
        top = s_top_after(p, &bad);
    }
    if (bad) log_warn("event=holes_stopped allocator=glibc reason=\"not the main heap's chunk\"");
    return total;
}
#else
size_t holes_fill_heap(void)
{
    return 0; /* another allocator (ASan's): its holes stay */
}
#endif
