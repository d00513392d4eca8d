/* mcp-frontend/farm/execution.h — one tools/call that runs on the farm (execute_code,
 * validate_code): the call and its job bound together. The job's progress becomes the call's
 * progress notifications; its Result is rendered by the tool into a CallToolResult; for an
 * execution the final record goes to Redis, and the answer leaves only once Redis has it (or
 * --record-wait-ms has passed, or Redis is away: then it leaves anyway, counted), so that a
 * client holding an answer finds the final record on any front-end. Then the end is announced
 * to whoever subscribed (executions_on_end): resources (subscriptions), tasks (tasks/result
 * waiters, status notifications), http (writes the answers out at once).
 *
 * A task-augmented call is answered at once with its task (MCP 2025-11-25 "Tasks"); the
 * execution goes on without a call, and tasks.c serves the task from here while it runs.
 * Under 2026-07-28 the server decides (the tasks extension): a call that declared the
 * extension and is still running after task_after_ms is answered with a task once Redis has
 * the task's record, and tasks_extension.c serves it. */
#ifndef SP_FE_EXECUTION_H
#define SP_FE_EXECUTION_H
#include <jansson.h>
#include <stdint.h>

#include "proto/job.h"
#include "proto/result.h"
#include "mcp-frontend/rpc/call.h"
#include "mcp-frontend/state/filestore.h"
#include "mcp-frontend/state/holds.h"
#include "mcp-frontend/state/records.h"
#include "jobs.h"

typedef struct executions executions_t;
typedef struct execution execution_t;

/* The tool's CallToolResult for a Result (content, structuredContent, isError). */
typedef json_t *(execution_render_fn)(const char *id, const result_t *res);
/* The same for tools whose rendering needs the call's own arguments (compat.h's). */
typedef json_t *(execution_render_with_fn)(const char *id, const result_t *res, const json_t *ctx);

/* Sees (and may change) a Result before it is rendered; the execution goes on once
 * execution_go_on(ex) is called, at once or later (a session's cell: its record, or why its
 * session is gone). */
typedef void(execution_result_fn)(void *arg, execution_t *ex, result_t *res);

typedef struct {
    const char *tool; /* the tool's name, for records, logs and metrics */
    execution_render_fn *render;
    execution_render_with_fn *render_with; /* used instead of render when set */
    json_t *render_ctx; /* what render_with gets; the execution holds a reference */
    /* execute_code's: said in the answer (structuredContent.profile, profile_reason,
     * limits_adjusted, and its text) and the record; NULL: nothing said (drop-in endpoints keep
     * their servers' shapes). The execution copies the one and holds the other. */
    const char *profile_reason;     /* why the call runs in its profile */
    json_t *adjusted;               /* limits asked for beyond a maximum (jobargs.h) */
    execution_result_fn *on_result; /* NULL: none */
    void *on_result_arg;            /* owned by the hook */
    int record;       /* write sp:exec and usage (executions, not validations) */
    int task;         /* task-augmented: answer at once with the task */
    long task_ttl_ms; /* asked for; -1 or beyond the record's lifetime: that */
    hold_t *task_hold; /* its place in the tenant's max_tasks (holds.h), taken by the tool;
                        * the execution owns it from here and lets it go when it ends */
    /* 2026-07-28 tasks (the extension; the server decides): the request declared the extension,
     * so if it still runs after --task-after-ms it is answered with a task and goes on */
    int may_become_task;
} execution_opts_t;

/* What the end hook hears: the execution's last state, valid while the hook runs. */
typedef struct {
    const char *id;     /* execution id, which is also the task id */
    mcp_session_t *session; /* that started it */
    tenant_t *tenant;
    status_t status;
    const json_t *call_result;
    uint64_t created_ms;
    int task;
    long task_ttl_ms;
    int task_cancelled;
    /* its id left this front-end before its end (a task, or its queued record was written):
     * only then can anyone have subscribed to it before it ended */
    int exposed;
} execution_end_t;

typedef void(execution_end_fn)(void *arg, const execution_end_t *end);

/* Why an answer left before Redis confirmed its record. */
typedef enum {
    UNCONFIRMED_BUFFERED, /* Redis away or backed up: the write waits in the store's buffer */
    UNCONFIRMED_SLOW,     /* no answer within --record-wait-ms */
    UNCONFIRMED_FAILED,   /* Redis refused the write, or the connection broke */
    UNCONFIRMED__COUNT
} unconfirmed_t;

#define EXECUTIONS_MAX_TOOLS 16 /* the tools that run on the farm, compat endpoints' too */

/* The layer a security event came from (result.h), as metrics count them: a fixed set. */
typedef enum {
    REFUSAL_PYTHON,
    REFUSAL_SECCOMP,
    REFUSAL_EGRESS, /* the egress process refused a destination (the tenant's policy) */
    REFUSAL_OTHER,
    REFUSAL__COUNT
} refusal_layer_t;

typedef struct {
    struct {
        const char *tool;
        uint64_t by_status[ST__COUNT];
    } tools[EXECUTIONS_MAX_TOOLS]; /* executions ended, by tool and status */
    size_t n_tools;
    uint64_t unconfirmed[UNCONFIRMED__COUNT];
    uint64_t bad_results; /* Results the front-end could not decode */
    /* operations the sandbox refused (security_events, by their counts), by layer and whether
     * the run ended as a security_violation ([1]) or the code went on ([0]) */
    uint64_t refusals[REFUSAL__COUNT][2];
} executions_stats_t;

typedef struct {
    long record_wait_ms; /* how long an answer waits for its record to reach Redis; 0: never */
    long task_after_ms;  /* a 2026-07-28 call that may become a task becomes one after this */
    /* a job still running after this has its queued record written (0: every job, at once);
     * one that ends sooner is recorded by one write at its end */
    long record_queued_after_ms;
} executions_conf_t;

executions_t *executions_new(loop_t *loop, jobs_t *jobs, records_t *records, filestore_t *files,
                             holds_t *holds, const executions_conf_t *conf);

/* What executions ask of the farm (jobs.h), of Redis (records.h, filestore.h: which linked files
 * are kept) and of the tenants' counts (holds.h: a task's place): executions_new wires those
 * modules' own verbs; tests/unit give fakes of the same shape (their own objects behind the
 * jobs, records, files and holds pointers) to executions_new_io. */
typedef struct {
    job_t *(*submit)(jobs_t *jobs, const jobspec_t *spec, long max_inflight,
                     const job_events_t *events, void *owner);
    void (*cancel)(jobs_t *jobs, job_t *job);
    long (*ttl_ms)(const records_t *records);
    record_submit_t *(*submit_new)(records_t *records, const record_about_t *r,
                                   const jobspec_t *spec);
    void (*submit_destroy)(record_submit_t **sub_p);
    void (*submitted)(records_t *records, const record_about_t *r, record_submit_t *sub);
    int (*finished)(records_t *records, const record_about_t *r, const record_submit_t *sub,
                    const result_t *res, store_reply_fn *landed, void *arg);
    int (*task_started)(records_t *records, const record_about_t *r, store_reply_fn *landed,
                        void *arg);
    void (*task_status)(records_t *records, const char *id, const char *task_status);
    void (*keep_files)(filestore_t *files, const tenant_t *t, const char *id, const result_t *res,
                       filestore_kept_fn *fn, void *arg);
    void (*take_hold)(holds_t *holds, hold_kind_t kind, const char *tenant, long cap,
                      const char *member, hold_fn *fn, void *arg);
    void (*release_hold)(hold_t **hold_p);
} executions_io_t;

executions_t *executions_new_io(loop_t *loop, const executions_io_t *io, jobs_t *jobs,
                                records_t *records, filestore_t *files, holds_t *holds,
                                const executions_conf_t *conf);
/* Executions still running are dropped unanswered (shutdown). */
void executions_destroy(executions_t **self_p);
/* Subscribes fn to every execution's end, after its answer; in subscription order. */
void executions_on_end(executions_t *self, execution_end_fn *fn, void *arg);
const executions_stats_t *executions_stats(const executions_t *self);
const char *unconfirmed_name(unconfirmed_t why);
const char *refusal_layer_name(refusal_layer_t layer);

/* Runs spec (its kind, code, limits, tenant and service filled) for c, which is answered
 * exactly once: with the rendered result, or an error, or — for a task — at once. */
void execution_start(executions_t *self, call_t *c, jobspec_t *spec, const execution_opts_t *opts);

/* After on_result: render, record, answer. */
void execution_go_on(execution_t *ex);

/* The tenant's task with this id while it runs here (any tenant's when tenant is NULL), else
 * NULL. */
execution_t *executions_find_task(executions_t *self, const char *id, const tenant_t *tenant);
/* Its Task object (task.h): working, or cancelled once tasks/cancel asked. modern: the
 * extension's shape (ttlMs, pollIntervalMs). */
json_t *execution_task(const execution_t *ex);
json_t *execution_task_modern(const execution_t *ex);
tenant_t *execution_tenant(const execution_t *ex);
/* 1 once its result is in (its answer may still wait for the record). */
int execution_ended(const execution_t *ex);
/* tasks/cancel: marks the task cancelled and stops the job. The Task object as it stands after
 * the request; ex may be gone when this returns. */
json_t *execution_cancel_task(execution_t *ex);

#endif
