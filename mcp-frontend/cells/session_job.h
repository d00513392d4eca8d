/* mcp-frontend/cells/session_job.h — one job on the farm for a session tool (create_session,
 * fork_session, close_session, the snapshot tools, the sandbox://sessions resource): submitted
 * for a held call, its Result decoded and handed to the tool, which answers. Cells are not
 * these: they run as executions (execution.h), with records, progress and tasks. */
#ifndef SP_FE_SESSION_JOB_H
#define SP_FE_SESSION_JOB_H
#include "proto/job.h"
#include "proto/result.h"
#include "mcp-frontend/rpc/call.h"

#define SESSION_JOB_WALL_MS 30000 /* a session job's own time on the farm (not a cell's) */

/* res is the job's Result, valid during the call (a made-up internal_error when the farm's
 * could not be read). c is held until fn has run. */
typedef void(session_job_fn)(void *arg, call_t *c, result_t *res);

/* spec: kind, session ids, service and its parts set; its id, tenant and times are filled here. */
void session_job_submit(call_t *c, jobspec_t *spec, session_job_fn *fn, void *arg);

/* The farm said the job's session is not there (SessionUnknown, SessionEnded, SessionLost). */
int session_job_gone(const result_t *res);

#endif
