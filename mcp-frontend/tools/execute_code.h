/* mcp-frontend/tools/execute_code.h — the execute_code tool (its row is in tooldefs.c): the
 * arguments become a JobSpec (jobargs.h) that runs on the farm (execution.h), recorded, and
 * comes back as outcome.h renders it. Task-augmented calls are answered at once. */
#ifndef SP_FE_EXECUTE_CODE_H
#define SP_FE_EXECUTE_CODE_H
#include "proto/job.h"
#include "mcp-frontend/farm/execution.h"
#include "tools.h"

void execute_code_run(call_t *c, json_t *args, const tool_task_t *task);

#endif
