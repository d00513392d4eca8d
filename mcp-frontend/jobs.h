/* mcp-frontend/jobs.h — jobs in flight between the front-end and the farm. A tool handler
 * builds the JobSpec, jobs_submit sends it through the broker client (proto/client.h) and
 * the job waits here, keyed by its id, for its one final answer. Then the job's tool renders
 * the MCP result, the record goes to Redis (records.c), and whoever waits is answered: the
 * tools/call itself, or — for a task — any tasks/result calls parked on it. */
#ifndef SP_FE_JOBS_H
#define SP_FE_JOBS_H
#include <jansson.h>
#include <stdint.h>

#include "../common/ids.h"
#include "../proto/job.h"
#include "../proto/result.h"
#include "../proto/wire.h"
#include "fe.h"
#include "call.h"
#include "tenants.h"

typedef struct job job_t;

/* Turns the farm's Result into the tool's CallToolResult (content, structuredContent,
 * isError). The job is read-only here. */
typedef json_t *(job_render_fn)(const job_t *job, const result_t *res);

struct job {
    uint8_t id[ID_BYTES];
    char id_str[ID_STR_LEN + 1];
    fe_t *fe;
    tenant_t *tenant;
    session_t *session; /* held: task status notifications go there */
    call_t *call;       /* the waiting tools/call; NULL once answered (tasks) */
    job_kind_t kind;
    char service[65];
    const char *tool; /* tool name, for metrics */
    job_render_fn *render;
    int record;            /* write sp:exec and usage (executions, not validations) */
    uint64_t created_ms;   /* wall clock */
    uint64_t submitted_us; /* monotonic, when handed to the broker client */
    uint64_t farm_us;      /* submit → result, set when the result arrives */
    int running_sent;      /* "running" progress already sent */
    int task;              /* task-augmented: the call was answered with a task */
    long task_ttl_ms;
    int task_cancelled;
    call_t **waiters; /* tasks/result calls waiting for the outcome */
    size_t n_waiters;
    /* while no broker connection can take the job (start-up, broker restart): kept here and
     * retried until broker_wait_until, then answered `rejected` */
    buf_t body;
    route_t route;
    uint64_t broker_wait_until; /* monotonic ms; 0 once submitted */
    job_t *next_waiting;
};

void jobs_init(fe_t *fe); /* the broker client's event handler is jobs.c's */
void jobs_shutdown(fe_t *fe);

job_t *job_new(fe_t *fe, call_t *call, job_kind_t kind, const char *service, const char *tool,
               job_render_fn *render);
/* Sends the job (spec->id is set from job). Always answers: on a refused submit the job is
 * finished at once with a `rejected` result. Takes ownership of job. */
void jobs_submit(job_t *job, jobspec_t *spec, long wall_ms);
void jobs_discard(job_t *job); /* a job built but never submitted */
job_t *jobs_find(fe_t *fe, const uint8_t id[ID_BYTES]);
int jobs_cancel(job_t *job);          /* tasks/cancel */
void jobs_add_waiter(job_t *job, call_t *c);

#endif
