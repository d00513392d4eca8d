/* mcp-frontend/resources.h — MCP resources: sandbox://info (what the sandbox offers) and the
 * template sandbox://executions/{id} (one of the caller's execution records), plus
 * subscriptions: a subscribed execution URI gets notifications/resources/updated when the
 * execution ends. */
#ifndef SP_FE_RESOURCES_H
#define SP_FE_RESOURCES_H
#include "bus.h"
#include "call.h"
#include "execution.h"

typedef struct resources resources_t;

typedef struct {
    long page_size; /* resources/list and resources/templates/list */
    int fixtures;   /* the conformance suite's test:// resources too */
} resources_conf_t;

/* Subscribes to the end of executions, for subscriptions to their URIs; bus: where their
 * updates are announced to subscriptions/listen streams. */
resources_t *resources_new(executions_t *executions, bus_t *bus, const resources_conf_t *conf);
void resources_destroy(resources_t **self_p);

/* The methods (mcp.c's table). */
void resources_list(call_t *c);
void resources_templates_list(call_t *c);
void resources_read(call_t *c);
void resources_subscribe(call_t *c);
void resources_unsubscribe(call_t *c);

#endif
