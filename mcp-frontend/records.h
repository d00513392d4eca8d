/* mcp-frontend/records.h — what the front-end writes to Redis about executions (DESIGN.md §7):
 *
 *   sp:exec:<id>                 hash, TTL --record-ttl (7 d): tenant, status, profile, code
 *                                (≤ --code-cap bytes, else code_sha256), created/started/
 *                                finished ms, queue/wall/cpu ms, max_rss_kb, exit_*, stdout/
 *                                stderr heads, error_*, executor, and `call_result`: the whole
 *                                MCP CallToolResult JSON (≤ --result-cap), which get_execution
 *                                and tasks/result serve back; task_* fields for tasks.
 *   sp:t:<tenant>:execs          zset of ids by created ms, trimmed to the newest 10,000.
 *   sp:t:<tenant>:tasks          the same for task-augmented calls (tasks/list).
 *   sp:t:<tenant>:use:<yyyymmdd> hash, TTL 90 d: executions, status:<status>, cpu_ms, wall_ms.
 *
 * A record is written twice: when the job is submitted (status `queued`, so a task or a running
 * execution can be looked up) and when it ends. Writes are pipelined and buffered (bounded)
 * while Redis is away. The final one is the exception that makes the others safe to pipeline:
 * its caller can be told when Redis has it (record_finished), so that an answer leaves only
 * once any front-end would read the final record (execution.c). */
#ifndef SP_FE_RECORDS_H
#define SP_FE_RECORDS_H
#include <jansson.h>
#include <stdint.h>

#include "../proto/job.h"
#include "../proto/result.h"
#include "store.h"

#define RECORD_MAX_PER_TENANT 10000

typedef struct records records_t;

typedef struct {
    long ttl_s;      /* lifetime of sp:exec:<id> (and of the indexes) */
    long code_cap;   /* bytes of code kept in a record (else its sha256) */
    long head_cap;   /* bytes of stdout/stderr kept in a record */
    long result_cap; /* bytes of the whole CallToolResult kept in a record */
    long file_link_bytes; /* written files larger than this are links (rich.h), kept apart */
    long file_ttl_s;      /* how long those stay (filestore.h) */
} records_conf_t;

/* instance: this front-end's name, written into each record it makes. */
records_t *records_new(store_t *store, const records_conf_t *conf, const char *instance);
void records_destroy(records_t **self_p);
long records_ttl_ms(const records_t *self); /* how long a record (and so a task) lives */

/* The execution a record is about. */
typedef struct {
    const char *id; /* execution id */
    const char *tenant;
    const char *profile;
    const char *tool;
    uint64_t created_ms;
    int task; /* task-augmented: task_* fields too */
    long task_ttl_ms;
    int task_cancelled;
} record_about_t;

void record_submitted(records_t *self, const record_about_t *r, const jobspec_t *spec);
/* Writes the final record. Returns 1 when landed will be called once Redis has answered the
 * write (with NULL, or an error reply, when it failed); 0 when no answer will come: Redis is
 * away or backed up and the write waits in the bounded buffer (or was dropped, counted). */
int record_finished(records_t *self, const record_about_t *r, const result_t *res,
                    const json_t *call_result, store_reply_fn *landed, void *arg);
/* A running execution became a task (2026-07-28: the server decides, while it runs): its task
 * fields and the tenant's task index. landed is called once Redis has them (as for
 * record_finished), since a task id may be handed out only once any front-end can read it;
 * 0 when no answer will come (Redis away: the write waits in the buffer). */
int record_task_started(records_t *self, const record_about_t *r, store_reply_fn *landed,
                        void *arg);
/* Only the task status changes (tasks/cancel before the result is in). */
void record_task_status(records_t *self, const char *id, const char *task_status);

#endif
