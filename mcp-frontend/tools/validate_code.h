/* mcp-frontend/tools/validate_code.h — the validate_code tool (its row is in tooldefs.c). Parsing
 * hostile code can itself exhaust memory, so validation runs on the farm too, in a sandboxed
 * child with the profile's default limits and at most ten seconds; nothing is recorded. */
#ifndef SP_FE_VALIDATE_CODE_H
#define SP_FE_VALIDATE_CODE_H
#include "tools.h"

void validate_code_run(call_t *c, json_t *args, const tool_task_t *task);

#endif
