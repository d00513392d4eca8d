/* mcp-frontend/tasks.c — the tasks methods of MCP 2025-11-25 ("Tasks"); task.h says what a
 * task is here. The task's state is the job's while it runs here, and the Redis record's
 * afterwards (records.h), so tasks outlive a reconnect and can be read from any front-end. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/clock.h"
#include "../common/ids.h"
#include "history.h"
#include "jobs.h"
#include "methods.h"
#include "records.h"
#include "task.h"

#define POLL_INTERVAL_MS 500

static json_t *s_task_json(const char *id, const char *status, uint64_t created, uint64_t updated,
                           long ttl, const char *message)
{
    json_t *t = task_json(id, status, created, updated, ttl, message);
    json_object_set_new(t, "pollInterval", json_integer(POLL_INTERVAL_MS));
    return t;
}

static json_t *s_task_from_job(const job_t *job)
{
    return s_task_json(job->id_str, job->task_cancelled ? "cancelled" : "working", job->created_ms,
                       job->created_ms, job->task_ttl_ms,
                       job->task_cancelled ? "cancellation requested" : NULL);
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

/* The task id from params, and this tenant's job for it when it runs here. */
static const char *s_task_id(call_t *c, job_t **job)
{
    const char *id = call_str(c, "taskId");
    uint8_t raw[ID_BYTES];
    *job = NULL;
    if (!id || id_parse(id, raw) < 0) {
        call_error(c, RPC_INVALID_PARAMS, "taskId must be a task id returned by tools/call", NULL);
        return NULL;
    }
    job_t *j = jobs_find(c->fe, raw);
    if (j && j->task && j->tenant == c->session->tenant) *job = j;
    return id;
}

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
            if (task_terminal(status))
                call_error(c, RPC_INVALID_PARAMS,
                           "the task is already in a terminal state and cannot be cancelled", NULL);
            else /* running on another front-end, or lost with it: the record says working */
                call_error(c, RPC_INVALID_PARAMS,
                           "the task is not running on this server; poll tasks/get", NULL);
        } else {
            const char *text = json_string_value(json_object_get(fields, "call_result"));
            json_t *result = text ? json_loads(text, 0, NULL) : NULL;
            if (!task_terminal(status) || !json_is_object(result)) {
                json_decref(result);
                call_error(c, RPC_INVALID_PARAMS, "the task has no result here yet; poll tasks/get",
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
    record_fetch(c->fe, id, c->session->tenant, s_on_record, t);
}

void methods_tasks_get(call_t *c)
{
    job_t *job;
    const char *id = s_task_id(c, &job);
    if (!id) return;
    if (job)
        call_reply(c, s_task_from_job(job));
    else
        s_from_record(c, id, OP_GET);
}

void methods_tasks_result(call_t *c)
{
    job_t *job;
    const char *id = s_task_id(c, &job);
    if (!id) return;
    if (job)
        jobs_add_waiter(job, c); /* answered when the job ends (jobs.c) */
    else
        s_from_record(c, id, OP_RESULT);
}

void methods_tasks_cancel(call_t *c)
{
    job_t *job;
    const char *id = s_task_id(c, &job);
    if (!id) return;
    if (!job) {
        s_from_record(c, id, OP_CANCEL);
        return;
    }
    if (job->task_cancelled) { /* cancelled is terminal: the spec refuses a second cancel */
        call_error(c, RPC_INVALID_PARAMS, "the task is already cancelled", NULL);
        return;
    }
    /* built first: a job still waiting for the broker ends (and is freed) inside jobs_cancel */
    json_t *t = s_task_json(job->id_str, "cancelled", job->created_ms, clock_wall_ms(),
                            job->task_ttl_ms, "cancellation requested");
    jobs_cancel(job);
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
        char next[32];
        snprintf(next, sizeof next, "k:%zu", l->offset + l->n);
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
        job_t *job = NULL;
        uint8_t raw[ID_BYTES];
        if (id_parse(l->ids[i], raw) == 0) job = jobs_find(l->call->fe, raw);
        l->tasks[i] =
            job && job->task ? s_task_from_job(job) : s_task_from_record(l->ids[i], fields);
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
    size_t page = (size_t)l->call->fe->conf.page_size;
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
        record_fetch(l->call->fe, l->ids[i], l->call->session->tenant, s_on_list_record, l);
    if (--l->pending == 0) s_list_done(l);
}

void methods_tasks_list(call_t *c)
{
    size_t offset = 0;
    const char *cursor = call_str(c, "cursor");
    if (json_object_get(c->params, "cursor") && !cursor) {
        call_error(c, RPC_INVALID_PARAMS, "tasks/list: cursor must be a string", NULL);
        return;
    }
    if (cursor) {
        char *end;
        if (strncmp(cursor, "k:", 2) != 0 || (offset = strtoul(cursor + 2, &end, 10), *end)) {
            call_error(c, RPC_INVALID_PARAMS, "tasks/list: unknown cursor", NULL);
            return;
        }
    }
    task_list_t *l = xcalloc(1, sizeof *l);
    l->call = c;
    l->offset = offset;
    call_hold(c);
    if (store_queryf(c->fe->store, s_on_task_ids, l, "ZREVRANGE sp:t:%s:tasks %lu %lu",
                     c->session->tenant->name, (unsigned long)offset,
                     (unsigned long)(offset + (size_t)c->fe->conf.page_size)) < 0) {
        call_error(c, RPC_UNAVAILABLE, "the task store is unreachable right now; try again shortly",
                   NULL);
        call_release(c);
        free(l);
    }
}
