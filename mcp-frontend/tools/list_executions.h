/* mcp-frontend/tools/list_executions.h — the list_executions tool (its row is in tooldefs.c): the
 * caller's executions, newest first, from the tenant's index in Redis (records.h), optionally
 * only those with one status, a page at a time. */
#ifndef SP_FE_LIST_EXECUTIONS_H
#define SP_FE_LIST_EXECUTIONS_H
#include "tools.h"

void list_executions_run(call_t *c, json_t *args, const tool_task_t *task);

#endif
