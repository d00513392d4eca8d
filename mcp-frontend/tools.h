/* mcp-frontend/tools.h — tools/list and tools/call. The tools themselves: execute_code and
 * validate_code (jobs on the farm, tools.c), get_sandbox_info (info.c), get_execution and
 * list_executions (history.c), and the conformance fixtures when enabled (fixtures.c). */
#ifndef SP_FE_TOOLS_H
#define SP_FE_TOOLS_H
#include "call.h"

void tools_init(fe_t *fe);
void tools_shutdown(void);

/* Handlers with the call's arguments (an object, possibly empty). */
void tool_get_sandbox_info(call_t *c, json_t *args);
void tool_get_execution(call_t *c, json_t *args);
void tool_list_executions(call_t *c, json_t *args);
/* 1 when name is a fixture tool and the call was handled. */
int fixtures_call(call_t *c, const char *name, json_t *args);

#endif
