/* mcp-frontend/mcp/tasks_extension.h — tasks as the 2026-07-28 extension
 * io.modelcontextprotocol/tasks (ext-tasks specification/draft/tasks.md, SEP-2663): tasks/get,
 * tasks/update, tasks/cancel for requests that declare the extension (mcp.c refuses the others
 * -32021).
 *
 * The server decides when a call becomes a task: an execute_code call that declared the
 * extension and is still running after --task-after-ms is answered with a CreateTaskResult
 * (resultType "task", flat) once Redis holds the task (execution.h). Its DetailedTask is the
 * execution's while it runs on this front-end, else the Redis record's, so any front-end
 * answers; a tool error is a completed task whose result has isError (only JSON-RPC errors
 * fail a task there, unlike 2025-11-25). Its status changes reach subscriptions/listen streams
 * that name its id (notifications/tasks), and tasks/cancel reaches the front-end that runs it
 * over the bus. snakepit's tasks never need input, so tasks/update only acknowledges. */
#ifndef SP_FE_TASKS_EXTENSION_H
#define SP_FE_TASKS_EXTENSION_H
#include "mcp-frontend/farm/execution.h"
#include "mcp-frontend/rpc/call.h"
#include "mcp-frontend/state/bus.h"

typedef struct tasks_extension tasks_extension_t;

/* Subscribes to the end of executions (status notifications) and to the bus's cancellations
 * of tasks that run here. */
tasks_extension_t *tasks_extension_new(executions_t *executions, bus_t *bus);
void tasks_extension_destroy(tasks_extension_t **self_p);

/* The methods (mcp.c's table). */
void tasks_extension_get(call_t *c);
void tasks_extension_update(call_t *c);
void tasks_extension_cancel(call_t *c);

/* Asks whichever front-end runs the tenant's task to cancel it (tasks.c uses it too). */
void tasks_extension_cancel_elsewhere(bus_t *bus, const char *tenant, const char *id);

#endif
