/* executor-node/mem/holes.h — the zygote takes its allocators' free memory before it forks, so that
 * what a child (or the zygote itself, job after job) allocates lands in fresh memory, not on
 * pages all over the zygote's heap.
 *
 * After the warm imports both allocators are full of holes: pymalloc's pools of free blocks,
 * glibc's free chunks. A child's allocations fill them one after another, and each hole is on
 * a page the child then copies (~2.7 µs a copy-on-write fault on the VM of bench/README.md):
 * ~90 of the pages a print(1) job wrote. The zygote's own allocations (a job's decode, its
 * result) did the same to pages it shares with every pooled child — a fault in the zygote for
 * each — and split its huge pages (hugemem.h) one by one. Taking every hole once, for good,
 * costs the zygote the memory they hold (and pages that malloc_trim had given back become
 * resident again); then allocations come from fresh pools and from the top of the heap, which
 * holes_fill_heap moves to a 2 MiB boundary, above everything hugemem_collapse puts on huge
 * pages.
 *
 * Both know their allocator's layout (CPython 3.11's pool header, glibc's chunk header) and
 * stop, having taken what they took, when a block does not look as they expect. */
#ifndef SP_HOLES_H
#define SP_HOLES_H
#include <stddef.h>

/* Zygote, with the GIL, after gc.freeze and malloc_trim. Bytes taken. */
size_t holes_fill_pools(void);
/* Zygote, after holes_fill_pools. Bytes taken, padding included. */
size_t holes_fill_heap(void);

#endif
