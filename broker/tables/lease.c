/* broker/tables/lease.c — see lease.h. */
#include <assert.h>
#include <stddef.h>

#include "lease.h"

void lease_grant(job_t *job, executor_t *ex)
{
    assert(job->state == JOB_DETACHED && !job->executor);
    job->state = JOB_LEASED;
    job->executor = ex;
    job->prev = NULL;
    job->next = ex->leases;
    if (ex->leases) ex->leases->prev = job;
    ex->leases = job;
    ex->n_leases++;
}

void lease_end(job_t *job)
{
    assert(job->state == JOB_LEASED && job->executor);
    executor_t *ex = job->executor;
    if (job->prev)
        job->prev->next = job->next;
    else
        ex->leases = job->next;
    if (job->next) job->next->prev = job->prev;
    job->prev = job->next = NULL;
    job->executor = NULL;
    job->state = JOB_DETACHED;
    ex->n_leases--;
    if (job->on_reserve) executors_unreserve(ex);
    job->on_reserve = 0;
}

lease_fate_t lease_fate(const job_t *job)
{
    if (job->cancelled) return LEASE_CANCELLED;
    return job->route.attempt + 1 < LEASE_MAX_RUNS ? LEASE_REQUEUE : LEASE_LOST;
}
