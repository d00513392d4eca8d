/* mcp-frontend/stubs.c — temporary: methods not yet implemented answer -32601. */
#include "methods.h"
#include "tools.h"
#include "tooldefs.h"

#define STUB(fn) void fn(call_t *c) { call_error(c, RPC_METHOD_NOT_FOUND, "not implemented yet", NULL); }
STUB(methods_resources_list)
STUB(methods_resources_templates_list)
STUB(methods_resources_read)
STUB(methods_resources_subscribe)
STUB(methods_resources_unsubscribe)
STUB(methods_prompts_list)
STUB(methods_prompts_get)
STUB(methods_completion_complete)
STUB(methods_tasks_get)
STUB(methods_tasks_result)
STUB(methods_tasks_list)
STUB(methods_tasks_cancel)
void tool_get_execution(call_t *c, json_t *a) { (void)a; call_error(c, RPC_METHOD_NOT_FOUND, "not implemented yet", NULL); }
void tool_list_executions(call_t *c, json_t *a) { (void)a; call_error(c, RPC_METHOD_NOT_FOUND, "not implemented yet", NULL); }
int fixtures_call(call_t *c, const char *n, json_t *a) { (void)c; (void)n; (void)a; return 0; }
json_t *fixtures_tools(void) { return json_array(); }
#include "resources.h"
void resources_init(fe_t *fe) { (void)fe; }
void resources_shutdown(fe_t *fe) { (void)fe; }
void resources_execution_updated(fe_t *fe, const job_t *job) { (void)fe; (void)job; }
