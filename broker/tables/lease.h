/* broker/tables/lease.h — a dispatched job is leased to its executor until a RESULT ends the lease
 * (PROTOCOL.md §3). When the executor is lost (liveness expired, DISCONNECT,
 * a new READY, unreachable), each of its leases meets one fate: requeued at the head of its
 * tenant's FIFO the first time (user code has no network or filesystem side effects, so a
 * second run is safe), answered `lost` the second time, or answered `cancelled` when its
 * client had already cancelled it. */
#ifndef SP_LEASE_H
#define SP_LEASE_H
#include "executors.h"
#include "job.h"

#define LEASE_MAX_RUNS 2 /* first run + one retry */

typedef enum {
    LEASE_REQUEUE,   /* run it again elsewhere: attempt + 1, at the head of its queue */
    LEASE_LOST,      /* it has been lost LEASE_MAX_RUNS times: answer `lost` */
    LEASE_CANCELLED, /* the client cancelled it meanwhile: answer `cancelled` */
} lease_fate_t;

void lease_grant(job_t *job, executor_t *ex); /* detached → leased to ex */
void lease_end(job_t *job);                   /* leased → detached */
lease_fate_t lease_fate(const job_t *job);    /* for a job whose executor was lost */

#endif
