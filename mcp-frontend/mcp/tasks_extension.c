/* mcp-frontend/mcp/tasks_extension.c — see tasks_extension.h. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/ids.h"
#include "common/log.h"
#include "mcp-frontend/farm/execution.h"
#include "mcp-frontend/rpc/fe.h"
#include "mcp-frontend/rpc/task.h"
#include "mcp-frontend/state/history.h"
#include "listen.h"
#include "tasks_extension.h"

#define POLL_MS 1000 /* pollIntervalMs: a job's record changes once, at its end */

struct tasks_extension {
    executions_t *executions;
    bus_t *bus;
};

static long s_int(const json_t *fields, const char *name)
{
    json_t *v = field_int(fields, name);
    long n = json_is_integer(v) ? (long)json_integer_value(v) : 0;
    json_decref(v);
    return n;
}

/* The inlined result is the request's result as it would have come (ext-tasks GetTaskResult),
 * so it names its resultType too: the extension's schema (and its client) require it. */
static void s_result_type(json_t *result)
{
    if (!json_object_get(result, "resultType"))
        json_object_set_new(result, "resultType", json_string("complete"));
}

/* The DetailedTask a record describes (ext-tasks GetTaskResult): working until the execution's
 * final status is written; then cancelled if tasks/cancel asked, else completed with the
 * CallToolResult inlined, isError and all. */
static json_t *s_detailed(const char *id, const json_t *fields)
{
    const char *status = json_string_value(json_object_get(fields, "status"));
    const char *task_status = json_string_value(json_object_get(fields, "task_status"));
    uint64_t created = (uint64_t)s_int(fields, "created_ms");
    uint64_t updated = (uint64_t)s_int(fields, "task_updated_ms");
    long ttl = s_int(fields, "task_ttl_ms");
    int running = !status || !strcmp(status, "queued");
    int cancelled = task_status && !strcmp(task_status, "cancelled");
    const char *st = cancelled ? "cancelled" : running ? "working" : "completed";
    json_t *t = task_json_modern(id, st, created, updated ? updated : created, ttl, POLL_MS,
                                 cancelled ? "cancelled by tasks/cancel" : NULL);
    if (!running && !cancelled) {
        const char *text = json_string_value(json_object_get(fields, "call_result"));
        json_t *result = text ? json_loads(text, 0, NULL) : NULL;
        if (!json_is_object(result)) {
            json_decref(result);
            result = json_pack("{s:[{s:s,s:s}],s:b}", "content", "type", "text", "text",
                               "the result was too large to keep with the task; get_execution "
                               "has its record",
                               "isError", strcmp(status, "ok") != 0);
        }
        s_result_type(result);
        json_object_set_new(t, "result", result);
    }
    return t;
}

/* The task id of params, checked; NULL when c was answered -32602. */
static const char *s_task_id(call_t *c)
{
    const char *id = call_str(c, "taskId");
    uint8_t raw[ID_BYTES];
    if (!id || id_parse(id, raw) < 0) {
        call_error(c, RPC_INVALID_PARAMS,
                   "unknown taskId (tasks are named by the taskId of the "
                   "CreateTaskResult)",
                   NULL);
        return NULL;
    }
    return id;
}

typedef enum { OP_GET, OP_UPDATE, OP_CANCEL } op_t;

typedef struct {
    call_t *call;
    op_t op;
    char id[ID_STR_LEN + 1];
} op_ctx_t;

static void s_on_record(void *arg, fetch_status_t st, json_t *fields)
{
    op_ctx_t *o = arg;
    call_t *c = o->call;
    if (st == FETCH_UNAVAILABLE) {
        call_error(c, RPC_UNAVAILABLE, "the task store is unreachable right now; try again shortly",
                   NULL);
    } else if (st == FETCH_NOT_FOUND || !json_object_get(fields, "task")) {
        /* ext-tasks: an unknown or expired id MUST be -32602 */
        call_error(c, RPC_INVALID_PARAMS, "unknown task (or expired)", NULL);
    } else if (o->op == OP_GET) {
        call_reply(c, s_detailed(o->id, fields));
    } else if (o->op == OP_CANCEL) {
        json_t *t = s_detailed(o->id, fields);
        /* cooperative and idempotent: a finished task stays as it is; a running one is on
         * another front-end (or lost with it), which the bus reaches */
        if (!strcmp(json_string_value(json_object_get(t, "status")), "working"))
            tasks_extension_cancel_elsewhere(c->fe->bus, c->tenant->name, o->id);
        json_decref(t);
        call_reply(c, json_object());
    } else {
        call_reply(c, json_object()); /* tasks/update: no input is ever asked for */
    }
    call_release(c);
    free(o);
}

static void s_fetch(call_t *c, const char *id, op_t op)
{
    op_ctx_t *o = xcalloc(1, sizeof *o);
    o->call = c;
    o->op = op;
    snprintf(o->id, sizeof o->id, "%s", id);
    call_hold(c);
    record_fetch(c->fe->store, id, c->tenant, s_on_record, o);
}

void tasks_extension_get(call_t *c)
{
    const char *id = s_task_id(c);
    if (!id) return;
    execution_t *ex = executions_find_task(c->fe->executions, id, c->tenant);
    if (ex && !execution_ended(ex))
        call_reply(c, execution_task_modern(ex));
    else
        s_fetch(c, id, OP_GET); /* ended: its record is (about to be) final */
}

void tasks_extension_update(call_t *c)
{
    const char *id = s_task_id(c);
    if (!id) return;
    json_t *responses = json_object_get(c->params, "inputResponses");
    if (responses && !json_is_object(responses)) {
        call_error(c, RPC_INVALID_PARAMS, "tasks/update: inputResponses must be an object", NULL);
        return;
    }
    /* keys that are unknown, answered or superseded are ignored (ext-tasks): all of ours are */
    if (executions_find_task(c->fe->executions, id, c->tenant))
        call_reply(c, json_object());
    else
        s_fetch(c, id, OP_UPDATE);
}

void tasks_extension_cancel(call_t *c)
{
    const char *id = s_task_id(c);
    if (!id) return;
    execution_t *ex = executions_find_task(c->fe->executions, id, c->tenant);
    if (!ex) {
        s_fetch(c, id, OP_CANCEL);
        return;
    }
    if (!execution_ended(ex)) json_decref(execution_cancel_task(ex)); /* ex may be gone now */
    call_reply(c, json_object());
}

void tasks_extension_cancel_elsewhere(bus_t *bus, const char *tenant, const char *id)
{
    bus_publish(bus, json_pack("{s:s,s:s,s:s}", "t", "tcancel", "tn", tenant, "id", id));
}

/* Another front-end was asked to cancel a task; if it runs here, this is where it stops. */
static void s_on_cancel_event(void *arg, const json_t *ev, int from_self)
{
    (void)from_self;
    tasks_extension_t *self = arg;
    const char *id = json_string_value(json_object_get(ev, "id"));
    const char *tn = json_string_value(json_object_get(ev, "tn"));
    execution_t *ex = id ? executions_find_task(self->executions, id, NULL) : NULL;
    if (!ex || !tn || strcmp(tn, execution_tenant(ex)->name) != 0 || execution_ended(ex)) return;
    log_info("event=task_cancel_remote job=%s tenant=%s", id, tn);
    json_decref(execution_cancel_task(ex));
}

/* A task ended: streams listening to its id hear its final state, on every front-end. */
static void s_on_execution_end(void *arg, const execution_end_t *end)
{
    tasks_extension_t *self = arg;
    if (!end->task) return;
    int cancelled = end->task_cancelled || end->status == ST_CANCELLED;
    uint64_t now = clock_wall_ms();
    json_t *t = task_json_modern(end->id, cancelled ? "cancelled" : "completed", end->created_ms,
                                 now, end->task_ttl_ms, POLL_MS, NULL);
    if (!cancelled && end->call_result) {
        json_t *result = json_deep_copy(end->call_result);
        s_result_type(result);
        json_object_set_new(t, "result", result);
    }
    listen_task_changed(self->bus, end->tenant->name, end->id, t);
}

tasks_extension_t *tasks_extension_new(executions_t *executions, bus_t *bus)
{
    tasks_extension_t *self = xcalloc(1, sizeof *self);
    self->executions = executions;
    self->bus = bus;
    executions_on_end(executions, s_on_execution_end, self);
    bus_on(bus, "tcancel", s_on_cancel_event, self);
    return self;
}

void tasks_extension_destroy(tasks_extension_t **self_p)
{
    free(*self_p);
    *self_p = NULL;
}
