/* mcp-frontend/mcp/listen.h — subscriptions/listen (MCP 2026-07-28 basic/patterns/subscriptions):
 * a long-lived request whose response stream carries the change notifications its filter asks
 * for — resources/updated for the URIs it names (an execution's record when the execution
 * ends, or any resource of ours that changes), notifications/tasks for the task ids it names
 * (the tasks extension), and the list_changed notifications the server advertises.
 *
 * The stream starts with notifications/subscriptions/acknowledged naming the subset honoured;
 * every message on it carries _meta io.modelcontextprotocol/subscriptionId (the listen
 * request's id, type kept). It ends when the client closes it (HTTP: closes the stream; stdio:
 * notifications/cancelled), or when the server shuts down: then with a result. Nothing is
 * replayed after a drop: the client listens again.
 *
 * A stream's resourceSubscriptions are registered in Redis beside legacy sessions'
 * subscriptions (sp:t:{T}:uri:<uri> holds "L:<inbox>" for the front-end holding the stream), so
 * a resource's update (resources_updated, on any front-end) reaches exactly the front-ends that
 * listen to it, through their inboxes; list and task changes are announced to every front-end
 * over the bus (bus.h). Each delivers to the streams it holds for the same tenant. */
#ifndef SP_FE_LISTEN_H
#define SP_FE_LISTEN_H
#include <jansson.h>
#include <stddef.h>

#include "mcp-frontend/rpc/call.h"
#include "mcp-frontend/state/bus.h"
#include "mcp-frontend/state/store.h"

typedef struct listeners listeners_t;

typedef struct {
    long max_streams; /* open listen streams per front-end */
} listen_conf_t;

typedef struct {
    long open;          /* streams open now */
    uint64_t opened;    /* ever */
    uint64_t delivered; /* notifications written to streams */
    uint64_t refused;   /* listen requests refused (bad filter, limit) */
} listen_stats_t;

/* fixtures: the conformance suite's list-changing tools exist, so tool and prompt list
 * changes are honoured. Subscribes to the bus's change events. */
listeners_t *listeners_new(bus_t *bus, store_t **store_p, const listen_conf_t *conf, int fixtures);
/* Ends every stream gracefully (its result), then frees. */
void listeners_destroy(listeners_t **self_p);
const listen_stats_t *listeners_stats(const listeners_t *self);

/* The method (mcp.c's table). */
void listen_open(call_t *c);

/* Announcements, to every front-end's streams. */
void listen_list_changed(bus_t *bus, const char *which); /* "tools", "prompts", "resources" */
/* A task's new state (its DetailedTask, stolen) for streams that listen to its id. */
void listen_task_changed(bus_t *bus, const char *tenant, const char *task_id, json_t *task);

#endif
