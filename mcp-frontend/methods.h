/* mcp-frontend/methods.h — the MCP method handlers, by the file that holds them: tools.c
 * (tools/list, tools/call), resources.c, prompts.c (prompts and completion), tasks.c. Each
 * answers its call exactly once, at once or later (mcp.h). */
#ifndef SP_FE_METHODS_H
#define SP_FE_METHODS_H
#include "call.h"

void methods_tools_list(call_t *c);
void methods_tools_call(call_t *c);
void methods_resources_list(call_t *c);
void methods_resources_templates_list(call_t *c);
void methods_resources_read(call_t *c);
void methods_resources_subscribe(call_t *c);
void methods_resources_unsubscribe(call_t *c);
void methods_prompts_list(call_t *c);
void methods_prompts_get(call_t *c);
void methods_completion_complete(call_t *c);
void methods_tasks_get(call_t *c);
void methods_tasks_result(call_t *c);
void methods_tasks_list(call_t *c);
void methods_tasks_cancel(call_t *c);

#endif
