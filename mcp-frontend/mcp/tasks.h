/* mcp-frontend/mcp/tasks.h — the tasks methods of MCP 2025-11-25 ("Tasks"): tasks/get,
 * tasks/result, tasks/list, tasks/cancel (the handlers below). A task is a
 * task-augmented execute_code (task.h); while it runs here it is served from the execution,
 * afterwards from its Redis record, by any front-end. tasks/result calls wait in this module
 * until the task's end is announced: by execution.h for a task running here, over the bus
 * for one running on another front-end; tasks/cancel reaches that front-end the same way. */
#ifndef SP_FE_TASKS_H
#define SP_FE_TASKS_H
#include "mcp-frontend/farm/execution.h"
#include "mcp-frontend/rpc/call.h"
#include "mcp-frontend/state/bus.h"

typedef struct tasks tasks_t;

typedef struct {
    long page_size; /* tasks/list */
} tasks_conf_t;

/* Subscribes to the end of executions, here and (over the bus) elsewhere. */
tasks_t *tasks_new(executions_t *executions, bus_t *bus, const tasks_conf_t *conf);
void tasks_destroy(tasks_t **self_p);

/* The methods (mcp.c's table). */
void tasks_get(call_t *c);
void tasks_result(call_t *c);
void tasks_list(call_t *c);
void tasks_cancel(call_t *c);

#endif
