/* mcp-frontend/compat_snapshots.c — see compat_snapshots.h. */
#include "compat_job.h"
#include "compat_snapshots.h"

void compat_create_snapshot(call_t *c, json_t *args, const tool_task_t *task)
{
    (void)args, (void)task;
    compat_unavailable(c, "create_state_snapshot");
}

void compat_restore_snapshot(call_t *c, json_t *args, const tool_task_t *task)
{
    (void)args, (void)task;
    compat_unavailable(c, "restore_state_snapshot");
}

void compat_list_snapshots(call_t *c, json_t *args, const tool_task_t *task)
{
    (void)args, (void)task;
    compat_unavailable(c, "list_state_snapshots");
}

void compat_delete_snapshot(call_t *c, json_t *args, const tool_task_t *task)
{
    (void)args, (void)task;
    compat_unavailable(c, "delete_state_snapshot");
}
