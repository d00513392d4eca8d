/* mcp-frontend/resources.h — MCP resources: sandbox://info (what the sandbox offers) and the
 * template sandbox://executions/{id} (one of the caller's execution records), plus
 * subscriptions: a subscribed execution URI gets notifications/resources/updated when the
 * execution ends. */
#ifndef SP_FE_RESOURCES_H
#define SP_FE_RESOURCES_H
#include "fe.h"

#include "call.h"

/* Also subscribes to the end of executions (execution.h), for subscriptions. */
void resources_init(fe_t *fe);
void resources_shutdown(fe_t *fe);

/* The methods (mcp.c's table). */
void resources_list(call_t *c);
void resources_templates_list(call_t *c);
void resources_read(call_t *c);
void resources_subscribe(call_t *c);
void resources_unsubscribe(call_t *c);

#endif
