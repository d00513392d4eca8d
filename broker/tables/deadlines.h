/* broker/tables/deadlines.h — jobs ordered by when the broker must act on them without being asked:
 * a queued job whose deadline passes is answered `timeout`; a leased job whose deadline plus
 * the lease grace passes is answered `timeout` and cancelled at its executor. A binary
 * min-heap on job->due_ms; each job remembers its slot, so removal and re-keying are
 * O(log n) and the periodic check only ever looks at the top. Jobs without a deadline never
 * enter it. */
#ifndef SP_DEADLINES_H
#define SP_DEADLINES_H
#include <stddef.h>
#include <stdint.h>

#include "job.h"

typedef struct deadlines deadlines_t;

deadlines_t *deadlines_new(void);
void deadlines_destroy(deadlines_t **self_p);

void deadlines_add(deadlines_t *self, job_t *job);    /* keyed on job->due_ms */
void deadlines_remove(deadlines_t *self, job_t *job); /* no effect when absent */
void deadlines_update(deadlines_t *self, job_t *job); /* after job->due_ms changed */
job_t *deadlines_first(const deadlines_t *self);      /* earliest, or NULL */
size_t deadlines_size(const deadlines_t *self);

#endif
