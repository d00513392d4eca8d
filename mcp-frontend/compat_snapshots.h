/* mcp-frontend/compat_snapshots.h — the secure-sandbox endpoint's snapshot tools
 * (create_state_snapshot, restore_state_snapshot, list_state_snapshots,
 * delete_state_snapshot; their rows are in compat_secure_sandbox.c). That server snapshots a
 * workspace that lives between calls; here that is a sandbox session (issue 12), which has not
 * landed yet, so each answers isError with {"success": false, "error": "... not available
 * yet ..."} (compat_unavailable) instead of pretending.
 *
 * Wiring them once sessions land is this file alone: keep one session per tenant for this
 * endpoint (its id under a Redis key such as sp:compat:<tenant>:workspace, created on first
 * use with profile python.filesystem), run run_sandbox_code's code as that session's cells,
 * and map each tool onto the session tool of the same name (create_state_snapshot with the
 * session_id and description, restore_state_snapshot with snapshot_id and session_id,
 * list/delete as they are), reshaping the answers as the seed documents them. */
#ifndef SP_FE_COMPAT_SNAPSHOTS_H
#define SP_FE_COMPAT_SNAPSHOTS_H
#include "tools.h"

void compat_create_snapshot(call_t *c, json_t *args, const tool_task_t *task);
void compat_restore_snapshot(call_t *c, json_t *args, const tool_task_t *task);
void compat_list_snapshots(call_t *c, json_t *args, const tool_task_t *task);
void compat_delete_snapshot(call_t *c, json_t *args, const tool_task_t *task);

#endif
