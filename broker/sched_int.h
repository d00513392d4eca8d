/* broker/sched_int.h — the scheduler's state and the helpers its two halves share
 * (sched.c: admission, dispatch, results; sched_life.c: executors, clients, clocks).
 * Private to those two files. */
#ifndef SP_SCHED_INT_H
#define SP_SCHED_INT_H
#include "../common/idmap.h"
#include "deadlines.h"
#include "sched.h"

struct sched {
    sched_conf_t conf;
    sched_io_t io;
    services_t *services;
    tenants_t *tenants;
    clients_t *clients;
    executors_t *executors;
    idmap_t *jobs;          /* every job held, queued or leased, by id */
    deadlines_t *deadlines; /* jobs with a deadline */
    size_t queued;          /* jobs in queues, all services */
    size_t queued_bytes;    /* their JobSpec bytes */
    size_t inflight;        /* jobs leased */
    uint64_t started_ms;    /* monotonic; the start-up grace runs from here */
    sched_stats_t stats;
};

/* Counts a job into (sign > 0) or out of the queued totals. */
void s_count_queued(sched_t *s, job_t *job, int sign);
/* Marks the services in mask for the next dispatch pass. */
void s_mark_dirty(sched_t *s, uint64_t mask);
/* A lease ended: in-flight counts drop and a parked tenant may be unparked. */
void s_inflight_done(sched_t *s, job_t *job);
/* Takes a job out of every structure (queue or lease, deadlines, id map, tenant counts);
 * returns the executor that held it, if it was leased. */
executor_t *s_detach(sched_t *s, job_t *job);
/* A detached job's end: its client's count drops, it is freed. */
void s_finish(sched_t *s, job_t *job);
/* A detached job's end with an answer made by the broker. */
void s_answer(sched_t *s, job_t *job, status_t st, const char *type, const char *message);
/* An executor is gone: its leases meet their fate (lease.h) and it is forgotten. */
void s_executor_lost(sched_t *s, executor_t *ex, const char *why);

#endif
