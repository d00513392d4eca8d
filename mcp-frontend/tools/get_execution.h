/* mcp-frontend/tools/get_execution.h — the get_execution tool (its row is in tooldefs.c): one of
 * the caller's execution records by id, as history.h reads it (another tenant's id is "not found",
 * exactly like a made-up one). */
#ifndef SP_FE_GET_EXECUTION_H
#define SP_FE_GET_EXECUTION_H
#include "tools.h"

void get_execution_run(call_t *c, json_t *args, const tool_task_t *task);

#endif
