/* mcp-frontend/mcp/tasks.c — the tasks methods of MCP 2025-11-25 ("Tasks"); task.h says what a
 * task is here. The task's state is the job's while it runs here, and the Redis record's
 * afterwards (records.h), so tasks outlive a reconnect and can be read from any front-end. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/ids.h"
#include "common/log.h"
#include "mcp-frontend/farm/execution.h"
#include "mcp-frontend/rpc/fe.h"
#include "mcp-frontend/rpc/page.h"
#include "mcp-frontend/rpc/task.h"
#include "mcp-frontend/state/history.h"
#include "tasks.h"
#include "tasks_extension.h"

#define POLL_INTERVAL_MS 500

/* A tasks/result call waiting for a task that runs here. */
typedef struct waiter {
    char id[ID_STR_LEN + 1];
    call_t *call; /* held */
    struct waiter *next;
} waiter_t;

struct tasks {
    tasks_conf_t conf;
    waiter_t *waiters;
};

static json_t *s_task_json(const char *id, const char *status, uint64_t created, uint64_t updated,
                           long ttl, const char *message)
{
    json_t *t = task_json(id, status, created, updated, ttl, message);
    json_object_set_new(t, "pollInterval", json_integer(POLL_INTERVAL_MS));
    return t;
}

static json_t *s_task_running(const execution_t *ex)
{
    json_t *t = execution_task(ex);
    json_object_set_new(t, "pollInterval", json_integer(POLL_INTERVAL_MS));
    return t;
}

static long s_int(const json_t *fields, const char *name)
{
    json_t *v = field_int(fields, name);
    long n = json_is_integer(v) ? (long)json_integer_value(v) : 0;
    json_decref(v);
    return n;
}

static json_t *s_task_from_record(const char *id, const json_t *fields)
{
    const char *status = json_string_value(json_object_get(fields, "task_status"));
    const char *msg = json_string_value(json_object_get(fields, "error_message"));
    long created = s_int(fields, "created_ms"), updated = s_int(fields, "task_updated_ms");
    return s_task_json(id, status ? status : "working", (uint64_t)created,
                       (uint64_t)(updated ? updated : created), s_int(fields, "task_ttl_ms"),
                       msg && *msg ? msg : NULL);
}

/* The task id from params, and this tenant's execution for it when it runs here. */
static const char *s_task_id(call_t *c, execution_t **ex)
{
    const char *id = call_str(c, "taskId");
    uint8_t raw[ID_BYTES];
    if (!id || id_parse(id, raw) < 0) {
        call_error(c, RPC_INVALID_PARAMS, "taskId must be a task id returned by tools/call", NULL);
        return NULL;
    }
    *ex = executions_find_task(c->fe->executions, id, c->tenant);
    return id;
}

static void s_wait(call_t *c, const char *id);

typedef enum { OP_GET, OP_RESULT, OP_CANCEL } op_t;

typedef struct {
    call_t *call;
    op_t op;
    char id[ID_STR_LEN + 1];
} task_op_t;

static void s_on_record(void *arg, fetch_status_t st, json_t *fields)
{
    task_op_t *t = arg;
    call_t *c = t->call;
    if (st == FETCH_UNAVAILABLE) {
        call_error(c, RPC_UNAVAILABLE, "the task store is unreachable right now; try again shortly",
                   NULL);
    } else if (st == FETCH_NOT_FOUND || !json_object_get(fields, "task")) {
        call_error(c, RPC_INVALID_PARAMS, "unknown task (or expired)", NULL);
    } else {
        const char *status = json_string_value(json_object_get(fields, "task_status"));
        if (t->op == OP_GET) {
            call_reply(c, s_task_from_record(t->id, fields));
        } else if (t->op == OP_CANCEL) {
            if (task_terminal(status)) {
                call_error(c, RPC_INVALID_PARAMS,
                           "the task is already in a terminal state and cannot be cancelled", NULL);
            } else { /* running on another front-end: the bus reaches it */
                tasks_extension_cancel_elsewhere(c->fe->bus, c->tenant->name, t->id);
                json_t *task = s_task_from_record(t->id, fields);
                json_object_set_new(task, "status", json_string("cancelled"));
                json_object_set_new(task, "statusMessage", json_string("cancellation requested"));
                call_reply(c, task);
            }
        } else {
            const char *text = json_string_value(json_object_get(fields, "call_result"));
            json_t *result = text ? json_loads(text, 0, NULL) : NULL;
            if (!task_terminal(status)) {
                /* running on another front-end: answered when its end is announced */
                json_decref(result);
                s_wait(c, t->id);
            } else if (!json_is_object(result)) {
                json_decref(result);
                call_error(c, RPC_INVALID_PARAMS,
                           "the task's result was too large to keep; get_execution has its record",
                           NULL);
            } else {
                task_mark_related(result, t->id);
                call_reply(c, result);
            }
        }
    }
    call_release(c);
    free(t);
}

static void s_from_record(call_t *c, const char *id, op_t op)
{
    task_op_t *t = xcalloc(1, sizeof *t);
    t->call = c;
    t->op = op;
    snprintf(t->id, sizeof t->id, "%s", id);
    call_hold(c);
    record_fetch(c->fe->store, id, c->tenant, s_on_record, t);
}

/* A tasks/result call that waits for its task's end, announced here or by another front-end. */
static void s_wait(call_t *c, const char *id)
{
    tasks_t *self = c->fe->tasks;
    waiter_t *w = xcalloc(1, sizeof *w);
    snprintf(w->id, sizeof w->id, "%s", id);
    w->call = c;
    call_hold(c);
    w->next = self->waiters;
    self->waiters = w;
}

void tasks_get(call_t *c)
{
    execution_t *ex;
    const char *id = s_task_id(c, &ex);
    if (!id) return;
    if (ex)
        call_reply(c, s_task_running(ex));
    else
        s_from_record(c, id, OP_GET);
}

void tasks_result(call_t *c)
{
    execution_t *ex;
    const char *id = s_task_id(c, &ex);
    if (!id) return;
    if (!ex) {
        s_from_record(c, id, OP_RESULT);
        return;
    }
    s_wait(c, id); /* answered when the execution ends (s_on_execution_end) */
}

void tasks_cancel(call_t *c)
{
    execution_t *ex;
    const char *id = s_task_id(c, &ex);
    if (!id) return;
    if (!ex) {
        s_from_record(c, id, OP_CANCEL);
        return;
    }
    if (execution_ended(ex)) { /* its result is in: terminal, whatever the record says yet */
        call_error(c, RPC_INVALID_PARAMS,
                   "the task is already in a terminal state and cannot be cancelled", NULL);
        return;
    }
    json_t *t = execution_task(ex);
    if (!strcmp(json_string_value(json_object_get(t, "status")), "cancelled")) {
        /* cancelled is terminal: the spec refuses a second cancel */
        json_decref(t);
        call_error(c, RPC_INVALID_PARAMS, "the task is already cancelled", NULL);
        return;
    }
    json_decref(t);
    t = execution_cancel_task(ex); /* ex may be gone now */
    json_object_set_new(t, "pollInterval", json_integer(POLL_INTERVAL_MS));
    call_reply(c, t);
}

/* ---- tasks/list: the tenant's task zset, newest first, then each record */

typedef struct {
    call_t *call;
    size_t n, pending, offset, replied;
    char (*ids)[ID_STR_LEN + 1];
    json_t **tasks;
    int more;
} task_list_t;

static void s_list_done(task_list_t *l)
{
    json_t *list = json_array();
    for (size_t i = 0; i < l->n; i++)
        if (l->tasks[i]) json_array_append_new(list, l->tasks[i]);
    json_t *r = json_pack("{s:o}", "tasks", list);
    if (l->more) {
        char next[48];
        page_cursor(next, "k", l->offset + l->n);
        json_object_set_new(r, "nextCursor", json_string(next));
    }
    call_reply(l->call, r);
    call_release(l->call);
    free(l->ids);
    free(l->tasks);
    free(l);
}

static void s_on_list_record(void *arg, fetch_status_t st, json_t *fields)
{
    task_list_t *l = arg;
    size_t i = l->replied++; /* answers come in the order asked */
    if (st == FETCH_OK) {
        execution_t *ex = executions_find_task(l->call->fe->executions, l->ids[i], l->call->tenant);
        l->tasks[i] = ex ? s_task_running(ex) : s_task_from_record(l->ids[i], fields);
    }
    if (--l->pending == 0) s_list_done(l);
}

static void s_on_task_ids(void *arg, redisReply *reply)
{
    task_list_t *l = arg;
    if (!reply || reply->type != REDIS_REPLY_ARRAY) {
        call_error(l->call, RPC_UNAVAILABLE,
                   "the task store is unreachable right now; try again shortly", NULL);
        call_release(l->call);
        free(l);
        return;
    }
    size_t page = (size_t)l->call->fe->tasks->conf.page_size;
    l->more = reply->elements > page;
    size_t n = l->more ? page : reply->elements;
    l->ids = xcalloc(n + 1, sizeof *l->ids);
    l->tasks = xcalloc(n + 1, sizeof *l->tasks);
    for (size_t i = 0; i < n; i++)
        if (reply->element[i]->type == REDIS_REPLY_STRING && reply->element[i]->len == ID_STR_LEN)
            memcpy(l->ids[l->n++], reply->element[i]->str, ID_STR_LEN + 1);
    if (!l->n) {
        s_list_done(l);
        return;
    }
    l->pending = l->n + 1; /* + this loop's own hold: fetches may answer at once */
    for (size_t i = 0; i < l->n; i++)
        record_fetch(l->call->fe->store, l->ids[i], l->call->tenant, s_on_list_record, l);
    if (--l->pending == 0) s_list_done(l);
}

void tasks_list(call_t *c)
{
    size_t offset;
    if (page_offset(c, "k", &offset) < 0) return;
    task_list_t *l = xcalloc(1, sizeof *l);
    l->call = c;
    l->offset = offset;
    call_hold(c);
    if (store_queryf(c->fe->store, s_on_task_ids, l, "ZREVRANGE sp:t:%s:tasks %lu %lu",
                     c->tenant->name, (unsigned long)offset,
                     (unsigned long)(offset + (size_t)c->fe->tasks->conf.page_size)) < 0) {
        call_error(c, RPC_UNAVAILABLE, "the task store is unreachable right now; try again shortly",
                   NULL);
        call_release(c);
        free(l);
    }
}

/* ---- the end of a task-augmented execution (execution.h's hook) */

static void s_on_execution_end(void *arg, const execution_end_t *end)
{
    tasks_t *self = arg;
    if (!end->task) return;
    json_t *p = task_json(end->id, task_status_for(end->status, end->task_cancelled),
                          end->created_ms, clock_wall_ms(), end->task_ttl_ms, NULL);
    mcp_session_notify(end->session, rpc_notification("notifications/tasks/status", p));
    json_t *payload = json_deep_copy(end->call_result);
    task_mark_related(payload, end->id);
    for (waiter_t **pp = &self->waiters; *pp;) {
        waiter_t *w = *pp;
        if (strcmp(w->id, end->id) != 0) {
            pp = &w->next;
            continue;
        }
        *pp = w->next;
        call_reply(w->call, json_incref(payload));
        call_release(w->call);
        free(w);
    }
    json_decref(payload);
}

/* A task ended on another front-end (tasks_extension.c announces every task's end): tasks/result
 * calls waiting for it here read its final record. */
static void s_on_task_event(void *arg, const json_t *ev, int from_self)
{
    tasks_t *self = arg;
    const char *id = json_string_value(json_object_get(ev, "id"));
    const char *tn = json_string_value(json_object_get(ev, "tn"));
    const char *st = json_string_value(json_object_get(json_object_get(ev, "task"), "status"));
    if (from_self || !id || !tn || !st || !strcmp(st, "working")) return;
    for (waiter_t **pp = &self->waiters; *pp;) {
        waiter_t *w = *pp;
        if (strcmp(w->id, id) != 0 || strcmp(w->call->tenant->name, tn) != 0) {
            pp = &w->next;
            continue;
        }
        *pp = w->next;
        s_from_record(w->call, w->id, OP_RESULT); /* the record is final by now (execution.h) */
        call_release(w->call);
        free(w);
    }
}

tasks_t *tasks_new(executions_t *executions, bus_t *bus, const tasks_conf_t *conf)
{
    tasks_t *self = xcalloc(1, sizeof *self);
    self->conf = *conf;
    executions_on_end(executions, s_on_execution_end, self);
    bus_on(bus, "task", s_on_task_event, self);
    return self;
}

void tasks_destroy(tasks_t **self_p)
{
    tasks_t *self = *self_p;
    if (!self) return;
    while (self->waiters) {
        waiter_t *w = self->waiters;
        self->waiters = w->next;
        call_release(w->call);
        free(w);
    }
    free(self);
    *self_p = NULL;
}
