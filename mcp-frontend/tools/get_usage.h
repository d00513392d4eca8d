/* mcp-frontend/tools/get_usage.h — the get_usage tool (its row is in tooldefs.c): what the calling
 * tenant used, by UTC day, from its usage hashes (state/records.h: sp:t:<tenant>:use:<yyyymmdd>,
 * written as executions end, sessions start and snapshots are saved), and what it holds now
 * against its quotas (live sessions, snapshots and their bytes). Only ever the caller's own keys:
 * a tenant's name comes from its key, never from the arguments. */
#ifndef SP_FE_GET_USAGE_H
#define SP_FE_GET_USAGE_H
#include "tools.h"

#define USAGE_DAYS_DEFAULT 7
#define USAGE_DAYS_MAX     90

void get_usage_run(call_t *c, json_t *args, const tool_task_t *task);

#endif
