/* mcp-frontend/tools/map_session.h — the handler of map_session (a row in sessiondefs.c): a list of
 * code strings run one per fresh fork of a session, all at once.
 *
 * The forks come from one fork_session job (every clone in one go, within the tenant's session
 * quotas); then each code string runs as its fork's first cell, each a job of its own, so the
 * broker spreads them over the node's slots as it would any cells (the tenant's
 * max_concurrency still applies: beyond it they queue). The answer lists every branch's result
 * in the order of the code strings, each as execute_code's structuredContent. Each cell is an
 * execution with its record and its usage, like execute_code's. The forks are closed afterwards
 * unless keep is true, and then their ids come back. */
#ifndef SP_FE_MAP_SESSION_H
#define SP_FE_MAP_SESSION_H
#include "tools.h"

#define MAP_MAX_CODES 64 /* JOB_MAX_FORKS: one fork per code string */

void map_session_run(call_t *c, json_t *args, const tool_task_t *task);

#endif
