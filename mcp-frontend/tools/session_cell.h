/* mcp-frontend/tools/session_cell.h — a session's cell once its Result is in (execute_code with
 * session_id, and the drop-in endpoints' cells: execute_code_as_cell below): the
 * session's record follows the cell, or — when the farm no longer holds the session — the answer
 * says why, unless the session can be resumed from its checkpoint (its node hibernated it, or
 * went away after checkpointing it: mcp-frontend/cells/resume.h). Then it is resumed under the
 * same id on any executor, the cell is sent again, and its answer carries a resumed note. */
#ifndef SP_FE_SESSION_CELL_H
#define SP_FE_SESSION_CELL_H
#include "proto/job.h"
#include "proto/result.h"
#include "mcp-frontend/farm/execution.h"
#include "mcp-frontend/rpc/call.h"

/* Makes spec a cell of session (a live session of c's tenant, its service already the
 * session's profile) whose record follows the cell, as execute_code's session_id does: the
 * drop-in endpoints' cells (compat_snapshots.c) go through here too. */
void execute_code_as_cell(call_t *c, jobspec_t *spec, execution_opts_t *opts, const char *session);

/* res becomes the answer for a session the farm no longer holds: status, type, reason. */
void session_cell_gone(result_t *res, const char *id, status_t st, const char *type,
                       const char *reason);

#endif
