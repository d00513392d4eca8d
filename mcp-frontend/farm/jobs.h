/* mcp-frontend/farm/jobs.h — the front-end's link to the farm: JobSpecs go out through one broker
 * client (proto/client.h) per broker of --broker, and each job's events come back to its owner
 * (execution.c), keyed by the job's id. Brokers are tried in the order given: a job goes to the
 * first one that is connected (front-ends and executors list them in the same order, so the
 * first usually holds the credit). The client library guarantees one final answer per
 * submitted job, and so does this module:
 *
 *   - while no broker connection can take a job (start-up, a broker restart) it is kept and
 *     retried for --broker-wait-ms, then answered `rejected`;
 *   - when the broker holding a job goes away, the job is sent again, once, marked `resubmit`,
 *     to whichever broker can take it (another one, or the same one restarted): that broker
 *     asks the executors first, so a job that had started is attached to its run, one that
 *     had finished is answered `lost`, and one that had not started runs — never twice
 *     (PROTOCOL.md §3.1). Lost a second time, or with no broker to take it within
 *     --broker-wait-ms, it is answered `lost`.
 *
 * Nothing here knows of MCP calls, records or tasks. */
#ifndef SP_FE_JOBS_H
#define SP_FE_JOBS_H
#include <stddef.h>
#include <stdint.h>

#include "common/loop.h"
#include "proto/job.h"

typedef struct jobs jobs_t;
typedef struct job job_t;

typedef struct {
    char broker[2048];         /* the brokers' client endpoints, comma-separated, in order */
    char curve_server_key[64]; /* Z85; empty: plain (loopback only at the broker) */
    char curve_public_key[64];
    char curve_secret_key[64];
    long heartbeat_ms;
    long queue_allowance_ms;  /* added to a job's timeout for its deadline at the broker */
    long broker_wait_ms;      /* how long a job waits for a broker connection */
    char broker_instance[65]; /* --broker-instance, accepted for older configurations */
} jobs_conf_t;

/* What a job's owner hears, on the loop thread. finished comes exactly once per submitted job;
 * the job is freed when it returns. */
typedef struct {
    void (*accepted)(void *owner);                                    /* queued at the broker */
    void (*progress)(void *owner, const uint8_t *chunk, size_t len);  /* PROTOCOL.md PROGRESS */
    void (*finished)(void *owner, const uint8_t *result, size_t len); /* a Result body */
} job_events_t;

typedef struct {
    uint64_t broker_unavailable; /* jobs answered `rejected` for want of a broker connection */
    uint64_t resubmitted;        /* jobs sent again after their broker was lost */
    uint64_t lost;               /* ...and answered `lost` after all (lost again, or no broker) */
} jobs_stats_t;

jobs_t *jobs_new(loop_t *loop, void *zmq_ctx, const jobs_conf_t *conf);
/* Pending jobs are dropped without an answer (their owners are going away too). */
void jobs_destroy(jobs_t **self_p);
/* Sends spec (its id, service and tenant set; its wall limit sets the deadline). The owner's
 * finished is never called before this returns. */
job_t *jobs_submit(jobs_t *self, const jobspec_t *spec, long max_inflight,
                   const job_events_t *events, void *owner);
/* Asks for the job to stop: its (cancelled) answer follows, at once for a job that never
 * reached the broker. */
void jobs_cancel(jobs_t *self, job_t *job);
size_t jobs_count(const jobs_t *self); /* in flight */
int jobs_broker_connected(const jobs_t *self); /* brokers connected now */
const jobs_stats_t *jobs_stats(const jobs_t *self);

#endif
