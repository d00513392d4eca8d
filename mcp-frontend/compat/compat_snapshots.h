/* mcp-frontend/compat/compat_snapshots.h — the secure-sandbox endpoint's persistent workspace and
 * its snapshot tools (create_state_snapshot, restore_state_snapshot, list_state_snapshots,
 * delete_state_snapshot; their rows are in compat_secure_sandbox.c).
 *
 * That server keeps one workspace directory that lives between calls and snapshots it. Here the
 * workspace is a sandbox session of the tenant's, made on first use in a profile with a
 * workspace and named in Redis (sp:compat:{<tenant>}:workspace, no TTL), so that every
 * front-end finds the same one: run_sandbox_code's code runs as its cells (files, and variables
 * too, persist), and each snapshot tool is the session tool of the same name (subcall.h) on that
 * session, its answer reshaped as that server documented it. A workspace whose session has
 * ended (idle timeout, its node lost) is replaced by a new, empty one at the next call; its
 * snapshots stay until deleted. */
#ifndef SP_FE_COMPAT_SNAPSHOTS_H
#define SP_FE_COMPAT_SNAPSHOTS_H
#include "mcp-frontend/tools/tools.h"
#include "compat_job.h"

#define COMPAT_WORKSPACE_IDLE_S 3600 /* asked for; the tenant's max_idle_timeout_s caps it */

/* Runs job (args as compat_job_run takes them, without profile) as the workspace's next
 * cell; job->session is set here. */
void compat_workspace_run(call_t *c, json_t *args, const compat_job_t *job);

/* The tenant's workspace as it stands, without making one: st 0 with ws the live session as
 * list_sessions shows it (borrowed; NULL: none now), or st -1 when Redis did not answer. */
typedef void(workspace_peek_fn)(void *arg, call_t *c, int st, const json_t *ws);
void compat_workspace_peek(call_t *c, workspace_peek_fn *fn, void *arg);

void compat_create_snapshot(call_t *c, json_t *args, const tool_task_t *task);
void compat_restore_snapshot(call_t *c, json_t *args, const tool_task_t *task);
void compat_list_snapshots(call_t *c, json_t *args, const tool_task_t *task);
void compat_delete_snapshot(call_t *c, json_t *args, const tool_task_t *task);

#endif
