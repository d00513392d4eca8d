/* mcp-frontend/tools/sandbox_info.h — the get_sandbox_info tool (its row is in tooldefs.c) and the
 * sandbox://info resource, which say the same: the profile table (common/profiles.h, the one
 * the executors enforce, so the two cannot disagree) with the package versions the executors
 * found (sp:profiles) — only the profiles the farm serves (farm/served.h) — and the calling
 * tenant's own limits. A tenant sees nothing of the others: no farm-wide queue, slot, executor
 * or tenant counts (operators have `snakepit status` and the metrics); its own use is
 * get_usage's. */
#ifndef SP_FE_SANDBOX_INFO_H
#define SP_FE_SANDBOX_INFO_H
#include "tools.h"

void sandbox_info_run(call_t *c, json_t *args, const tool_task_t *task);
/* Answers c with the info: as a resources/read of sandbox://info when resource, else as the
 * tool's result. */
void sandbox_info_request(call_t *c, int resource);

#endif
