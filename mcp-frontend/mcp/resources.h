/* mcp-frontend/mcp/resources.h — MCP resources: sandbox://info (what the sandbox offers) and the
 * template sandbox://executions/{id} (one of the caller's execution records), plus
 * watching them: an execution's URI gets notifications/resources/updated when the execution
 * ends, in legacy sessions that subscribed to it (resources/subscribe) and in 2026-07-28
 * subscriptions/listen streams that name it, whichever front-end they are on. */
#ifndef SP_FE_RESOURCES_H
#define SP_FE_RESOURCES_H
#include "mcp-frontend/farm/execution.h"
#include "mcp-frontend/rpc/call.h"
#include "mcp-frontend/rpc/fe.h"

typedef struct resources resources_t;

typedef struct {
    long page_size; /* resources/list and resources/templates/list */
    int fixtures;   /* the conformance suite's test:// resources too */
} resources_conf_t;

/* Subscribes to the end of fe's executions, for whoever watches their URIs. */
resources_t *resources_new(fe_t *fe, const resources_conf_t *conf);
void resources_destroy(resources_t **self_p);

/* The methods (mcp.c's table). */
void resources_list(call_t *c);
void resources_templates_list(call_t *c);
void resources_read(call_t *c);
void resources_subscribe(call_t *c);
void resources_unsubscribe(call_t *c);

/* A resource of the tenant's changed (an execution ended; any module that keeps a resource
 * calls it — a sandbox session, say): notifications/resources/updated for every
 * legacy session subscribed to uri and every 2026-07-28 listen stream naming it, on every
 * front-end. */
void resources_updated(fe_t *fe, const char *tenant, const char *uri);

#endif
