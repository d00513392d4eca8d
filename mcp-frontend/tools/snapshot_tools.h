/* mcp-frontend/tools/snapshot_tools.h — the handlers of create_state_snapshot,
 * restore_state_snapshot, list_state_snapshots and delete_state_snapshot (rows in
 * sessiondefs.c). */
#ifndef SP_FE_SNAPSHOT_TOOLS_H
#define SP_FE_SNAPSHOT_TOOLS_H
#include "tools.h"

void create_state_snapshot_run(call_t *c, json_t *args, const tool_task_t *task);
void restore_state_snapshot_run(call_t *c, json_t *args, const tool_task_t *task);
void list_state_snapshots_run(call_t *c, json_t *args, const tool_task_t *task);
void delete_state_snapshot_run(call_t *c, json_t *args, const tool_task_t *task);

#endif
