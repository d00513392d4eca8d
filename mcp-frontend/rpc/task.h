/* mcp-frontend/rpc/task.h — the Task object of MCP 2025-11-25 ("Tasks") as this server shapes it.
 * A task here is a task-augmented execute_code; its id is the execution id. While it runs its
 * state is the execution's (execution.c), afterwards the Redis record's (records.h); both are
 * turned into the same JSON by task_json, so a client cannot tell where the answer came from.
 *
 * Status mapping: running → working; ok → completed; cancelled (or tasks/cancel) → cancelled;
 * every other status → failed (the tool result has isError). Terminal states never change. */
#ifndef SP_FE_TASK_H
#define SP_FE_TASK_H
#include <jansson.h>
#include <stdint.h>

#include "proto/status.h"

/* {taskId, status, createdAt, lastUpdatedAt, ttl}: times as ISO 8601 UTC with milliseconds.
 * message, when not NULL, becomes statusMessage. */
json_t *task_json(const char *id, const char *status, uint64_t created_ms, uint64_t updated_ms,
                  long ttl_ms, const char *message);
/* The same task as the tasks extension of 2026-07-28 names it (ext-tasks Task): ttlMs and
 * pollIntervalMs instead of ttl and pollInterval. */
json_t *task_json_modern(const char *id, const char *status, uint64_t created_ms,
                         uint64_t updated_ms, long ttl_ms, long poll_ms, const char *message);
/* The task status an execution that ended with st has (2025-11-25: a tool error fails it). */
const char *task_status_for(status_t st, int cancelled);
/* 1 for completed, failed and cancelled. */
int task_terminal(const char *status);
/* The marker the spec asks for on a result delivered for a task: _meta's related-task. */
void task_mark_related(json_t *call_result, const char *id);

#endif
