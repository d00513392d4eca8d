/* broker/tables/queue.h — one service's queue: a FIFO per tenant, served deficit round robin
 * (Shreedhar & Varghese, 1995) so that a tenant that floods the queue gets its share and no
 * more: with the default quantum of one job, tenants with work take turns job by job, and a
 * tenant that arrives behind a backlog of 2,000 jobs waits for one job of each other tenant
 * per turn, not for the backlog.
 *
 * A tenant at its in-flight quota is parked: its FIFO leaves the round until the broker
 * unparks it, so the round never spins over tenants that may not run. The queue enforces no
 * caps (the broker admits jobs against global and per-tenant caps before pushing). */
#ifndef SP_QUEUE_H
#define SP_QUEUE_H
#include <stddef.h>

#include "job.h"

typedef struct queue queue_t;

/* Whether the tenant of `job` (the head of its FIFO) may run now. */
typedef int(queue_eligible_fn)(void *arg, const job_t *job);

queue_t *queue_new(unsigned quantum);
void queue_destroy(queue_t **self_p); /* the queue must be empty */

void queue_push(queue_t *self, job_t *job);      /* at the tail of its tenant's FIFO */
void queue_push_head(queue_t *self, job_t *job); /* a requeued job: at the head */
void queue_remove(queue_t *self, job_t *job);    /* cancelled or expired while queued */
/* The next job in DRR order among eligible tenants, removed; NULL when none may run. A FIFO
 * whose head is not eligible is parked. eligible may be NULL (everyone may run). */
job_t *queue_pop(queue_t *self, queue_eligible_fn *eligible, void *arg);
/* The head of the first FIFO in the round, from the one whose turn it is, whose head `take`
 * accepts, removed; NULL when none does. Out of turn: no FIFO is parked, no turn moves, no
 * deficit is spent — for jobs that may jump the round (the reserve, executors.h). */
job_t *queue_pop_first(queue_t *self, queue_eligible_fn *take, void *arg);
/* Returns a parked tenant's FIFO to the round. No effect when it is not parked. */
void queue_unpark(queue_t *self, const char *tenant);

size_t queue_depth(const queue_t *self);   /* jobs queued */
size_t queue_tenants(const queue_t *self); /* tenants with queued jobs */
size_t queue_parked(const queue_t *self);  /* of which parked */
/* The head of a tenant's FIFO, NULL when it has nothing queued here. */
job_t *queue_peek_tenant(const queue_t *self, const char *tenant);

#endif
