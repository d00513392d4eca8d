/* executor-node/area/jobcopy.h — a decoded JobSpec laid out flat in one block of memory, pointers
 * and all, so that it can live where the zygote's heap must not hold it.
 *
 * The zygote decodes each JobSpec once, at dispatch, and keeps nothing of it in its heap: every
 * child forked later would inherit that heap, and in python.data_science a job can read any
 * byte of its own process (scrub.h). Instead it copies the parts each reader needs:
 *  - JOBCOPY_RUN into the child's job area, which the child shares with the zygote at the same
 *    address and no later child inherits (MADV_DONTFORK): the child runs the copy as it finds
 *    it, without decoding anything;
 *  - JOBCOPY_FILES into a private mapping of its own, also MADV_DONTFORK, kept until the job
 *    is answered: its input files, to tell them from what the job wrote.
 * The zygote never follows a pointer the child could have written: the area's copy is the
 * child's alone; the zygote reads only its private one. */
#ifndef SP_JOBCOPY_H
#define SP_JOBCOPY_H
#include <stddef.h>
#include <stdint.h>

#include "proto/job.h"

enum {
    JOBCOPY_RUN = 1 << 0,   /* code, stdin, variable names, allowed imports, snapshot */
    JOBCOPY_FILES = 1 << 1, /* the input files */
};
/* The kind, tenant, service, limits and other scalars come along in every copy. */

/* Bytes a copy of these parts of job takes. */
size_t jobcopy_size(const jobspec_t *job, unsigned parts);
/* The copy, laid out in mem (cap bytes, 8-byte aligned); NULL when it does not fit. */
jobspec_t *jobcopy_put(const jobspec_t *job, unsigned parts, void *mem, size_t cap);
/* The same for a reader that sees mem at the address at (a session's clone maps its area
 * wherever its address space has room): every pointer in the copy is at's. The returned
 * pointer is mem's, for the writer. */
jobspec_t *jobcopy_put_at(const jobspec_t *job, unsigned parts, void *mem, size_t cap,
                          uintptr_t at);

/* A copy in a private mapping no later fork inherits; NULL (logged) when it cannot be made. */
jobspec_t *jobcopy_private(const jobspec_t *job, unsigned parts);
/* Zeroes and unmaps a private copy; sets *copy_p to NULL. */
void jobcopy_private_free(jobspec_t **copy_p);

#endif
