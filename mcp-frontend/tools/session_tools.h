/* mcp-frontend/tools/session_tools.h — the handlers of create_session, fork_session, close_session
 * and list_sessions (rows in sessiondefs.c). */
#ifndef SP_FE_SESSION_TOOLS_H
#define SP_FE_SESSION_TOOLS_H
#include "tools.h"

void create_session_run(call_t *c, json_t *args, const tool_task_t *task);
void fork_session_run(call_t *c, json_t *args, const tool_task_t *task);
void close_session_run(call_t *c, json_t *args, const tool_task_t *task);
void list_sessions_run(call_t *c, json_t *args, const tool_task_t *task);

#endif
