/* executor-node/mem/hugemem.h — the zygote's anonymous memory on 2 MiB pages, so that a fork
 * copies one page-table entry per 2 MiB instead of 512.
 *
 * fork() copies the page-table entries of every present page of the zygote's private
 * writable memory (the kernel's copy_page_range): ~4,700 entries and ~0.5 ms of the zygote's
 * CPU per child for python.basic, ~15 ms for python.data_science. A transparent huge page is
 * one entry. A child that writes into one gets the 2 MiB mapping split in its own page table
 * and copies the 4 KiB it wrote, as before; the zygote keeps its huge page.
 *
 * Two steps. Before the interpreter starts, hugemem_arenas gives pymalloc an arena allocator
 * that places its 1 MiB arenas end to end in runs mapped in whole, aligned 2 MiB (the default
 * mmap scatters them, and a huge page needs an aligned 2 MiB of one mapping); at most one
 * arena's worth is mapped ahead of need (RLIMIT_AS, the job's memory limit, counts it). A run
 * that ended on a 1 MiB boundary left its last 1 MiB on 4 KiB pages: measured, mapping whole
 * 2 MiB took python.basic's zygote from 2,428 to 1,332 small entries and 10 to 13 huge pages,
 * and cut 0.25 ms of CPU per print(1) (python.data_science: 9,251 → 1,973 small entries,
 * 9.1 → 8.2 ms per job). Once the zygote is warm,
 * hugemem_collapse asks the kernel (MADV_COLLAPSE, Linux 6.1) to put every aligned 2 MiB of
 * its anonymous private mappings and of its heap on huge pages, and stops the heap from
 * shrinking (a shrinking break would split the last one). Kernels or hosts without it
 * (EINVAL, THP "never") keep 4 KiB pages: only forks are slower. */
#ifndef SP_HUGEMEM_H
#define SP_HUGEMEM_H
#include <stddef.h>

/* Zygote, before Py_PreInitialize. */
void hugemem_arenas(void);
/* Zygote, warm, while /proc is mounted. Returns the huge pages made, or -1 when
 * /proc/self/maps cannot be read (err says why). */
long hugemem_collapse(char *err, size_t errlen);

#endif
