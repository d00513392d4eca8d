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
 * All writes go through store_write: pipelined, off the job's critical path, buffered (bounded)
 * while Redis is away. A record is written twice: when the job is submitted (status `queued`,
 * so a task or a running execution can be looked up) and when it ends. */
#ifndef SP_FE_RECORDS_H
#define SP_FE_RECORDS_H
#include <jansson.h>

#include "jobs.h"

#define RECORD_MAX_PER_TENANT 10000
#define USAGE_TTL_S           (90L * 24 * 3600)

void record_submitted(fe_t *fe, const job_t *job, const jobspec_t *spec);
void record_finished(fe_t *fe, const job_t *job, const result_t *res, const json_t *call_result);
/* Only the task status changes (tasks/cancel before the result is in). */
void record_task_status(fe_t *fe, const job_t *job, const char *task_status);

#endif
