/* mcp-frontend/tools/execute_code.c — see execute_code.h. With session_id the code runs as the
 * session's next cell: its profile is the session's (from this front-end's cache
 * when it has it: no Redis round trip before the job leaves), and once the cell's Result is in,
 * the session's record follows it — or, when the farm no longer holds the session, the answer
 * says why (session_records_explain). */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/ids.h"
#include "common/log.h"
#include "mcp-frontend/cells/session_job.h"
#include "mcp-frontend/cells/session_records.h"
#include "mcp-frontend/farm/execution.h"
#include "mcp-frontend/render/outcome.h"
#include "mcp-frontend/rpc/envelope.h"
#include "mcp-frontend/rpc/fe.h"
#include "mcp-frontend/rpc/jsonrpc.h"
#include "mcp-frontend/state/holds.h"
#include "execute_code.h"
#include "jobargs.h"
#include "session_cell.h"
#include "tools.h"

/* The JobSpec from the call's arguments, in profile p; limits asked for above a maximum go
 * into adjusted. 0, or -1 (the call was answered). */
static int s_spec(call_t *c, json_t *args, const profile_t *p, jobspec_t *spec, json_t *adjusted)
{
    if (jobargs_code(c, args, spec) < 0 ||
        jobargs_limits_noted(c, args, p, &spec->limits, adjusted) < 0 ||
        jobargs_names(c, args, "allowed_imports", p, &spec->allowed_imports,
                      &spec->n_allowed_imports) < 0 ||
        jobargs_names(c, args, "inspect_variables", NULL, &spec->inspect, &spec->n_inspect) < 0 ||
        jobargs_files(c, args, p, spec) < 0 || jobargs_dependencies(c, args, spec) < 0 ||
        jobargs_egress(c, args, spec) < 0)
        return -1;
    json_t *v = json_object_get(args, "stdin");
    if (json_is_string(v)) {
        if (json_string_length(v) > JOB_MAX_STDIN)
            return tool_bad_arg(c, "stdin", "`stdin` must be a string of at most %u bytes; got %zu",
                                JOB_MAX_STDIN, json_string_length(v));
        spec->stdin_data = xstrndup(json_string_value(v), json_string_length(v));
        spec->stdin_len = json_string_length(v);
    }
    v = json_object_get(args, "capture_output");
    spec->capture_output = v ? json_is_true(v) : 1;
    spec->kind = JOB_EXEC;
    spec->tenant = xstrdup(c->tenant->name);
    spec->service = xstrdup(p->name);
    return 0;
}

/* The execution takes the task's hold (its place in the tenant's max_tasks) over. */
static void s_start(call_t *c, jobspec_t *spec, tool_task_t *task, const char *session,
                    const char *why, json_t *adjusted)
{
    execution_opts_t opts = {.tool = "execute_code",
                             .render = outcome_execute,
                             .profile_reason = why,
                             .adjusted = json_object_size(adjusted) ? adjusted : NULL,
                             .record = 1,
                             .task = task->wanted,
                             .task_ttl_ms = task->ttl_ms,
                             .task_hold = task->hold,
                             .may_become_task =
                                 c->modern && envelope_has_extension(c->caps, EXT_TASKS)};
    task->hold = NULL;
    if (session) execute_code_as_cell(c, spec, &opts, session);
    execution_start(c->fe->executions, c, spec, &opts);
}

/* The cell, once its session is known. 0, or -1 (answered). */
static void s_cell(call_t *c, json_t *args, tool_task_t *task, const session_record_t *s)
{
    const profile_t *p = profile_find(s->profile);
    const char *asked = json_string_value(json_object_get(args, "profile"));
    jobspec_t spec;
    json_t *adjusted = json_object();
    jobspec_init(&spec);
    if (!p) {
        tool_refuse(c, TOOL_UNAVAILABLE, "session_id",
                    "the session's profile (%s) is not served any more", s->profile);
    } else if (asked && strcmp(asked, s->profile) != 0) {
        tool_bad_arg(c, "profile",
                     "`profile` %.64s differs from the session's (%s); leave it out: a cell runs "
                     "in its session's profile",
                     asked, s->profile);
    } else if (s_spec(c, args, p, &spec, adjusted) == 0) {
        json_t *atomic = json_object_get(args, "atomic"); /* else the session's own default */
        spec.atomic = atomic && !json_is_null(atomic) ? json_is_true(atomic) : s->atomic;
        s_start(c, &spec, task, s->id, "the session's profile", adjusted);
    }
    json_decref(adjusted);
    jobspec_clear(&spec);
}

typedef struct {
    call_t *call;
    json_t *args;
    tool_task_t task;
} pending_t;

/* The farm's answer for a session it no longer holds, in the session's own words. */
static void s_gone(result_t *res, const char *id, status_t st, const char *type, const char *reason)
{
    session_cell_gone(res, id, st, type, reason);
}

/* A session this front-end knows has ended: the answer the farm would give, without asking
 * it (nothing runs, so nothing is recorded; the execution id is only the answer's). */
static void s_ended(call_t *c, const char *id, const session_record_t *s)
{
    result_t res;
    uint8_t raw[ID_BYTES];
    char eid[ID_STR_LEN + 1];
    int lost = !strncmp(s->end_reason, "session lost", 12);
    result_init(&res);
    s_gone(&res, id, lost ? ST_LOST : ST_REJECTED, lost ? "SessionLost" : "SessionEnded",
           s->end_reason);
    id_new(raw);
    id_format(raw, eid);
    call_reply(c, outcome_execute(eid, &res));
    result_clear(&res);
}

static void s_on_session(void *arg, session_record_status_t st, const session_record_t *s)
{
    pending_t *p = arg;
    char text[400];
    const char *id = json_string_value(json_object_get(p->args, "session_id"));
    if (st == SESSION_RECORD_FOUND && !s->ended) {
        s_cell(p->call, p->args, &p->task, s);
    } else if (st == SESSION_RECORD_FOUND) {
        s_ended(p->call, id, s);
    } else {
        if (st == SESSION_RECORD_UNAVAILABLE)
            snprintf(text, sizeof text, "the session store is unreachable right now; try again");
        else
            snprintf(text, sizeof text,
                     "`session_id`: no session %.40s for your tenant (list_sessions shows the live "
                     "ones; create_session makes one)",
                     id);
        call_reply(p->call,
                   tool_error(st == SESSION_RECORD_UNAVAILABLE ? TOOL_UNAVAILABLE : TOOL_NOT_FOUND,
                              "session_id", text));
    }
    holds_release(&p->task.hold); /* when no execution took it over */
    call_release(p->call);
    json_decref(p->args);
    free(p);
}

/* The call, its task's hold (if any) in task: whatever does not start an execution leaves the
 * hold in task for the caller to let go. */
static void s_run(call_t *c, json_t *args, tool_task_t *task)
{
    json_t *sid = json_object_get(args, "session_id");
    if (sid && !json_is_null(sid)) {
        uint8_t raw[ID_BYTES];
        char id[ID_STR_LEN + 1];
        if (!json_is_string(sid) || id_parse(json_string_value(sid), raw) < 0) {
            tool_bad_arg(c, "session_id",
                         "`session_id` must be a session id as create_session returned it (a "
                         "UUID); list_sessions shows yours");
            return;
        }
        id_format(raw, id);
        const session_record_t *s = session_records_cached(c->fe->session_records, c->tenant, id);
        if (s && s->ended) {
            s_ended(c, id, s);
            return;
        }
        if (s) { /* the hot path: straight to the farm, which knows whether it still lives */
            s_cell(c, args, task, s);
            return;
        }
        pending_t *p = xcalloc(1, sizeof *p);
        *p = (pending_t){c, json_incref(args), *task};
        task->hold = NULL; /* the lookup has it now */
        call_hold(c);
        session_records_lookup(c->fe->session_records, c->tenant, id, s_on_session, p);
        return;
    }
    if (json_is_true(json_object_get(args, "atomic"))) {
        tool_bad_arg(c, "atomic",
                     "`atomic` applies to a session's cell: give `session_id` (a call without one "
                     "runs in a fresh sandbox and changes nothing that lasts)");
        return;
    }
    char why[JOBARGS_WHY];
    const profile_t *p = jobargs_place(c, args, why, sizeof why);
    json_t *adjusted = json_object();
    jobspec_t spec;
    jobspec_init(&spec);
    if (p && s_spec(c, args, p, &spec, adjusted) == 0) s_start(c, &spec, task, NULL, why, adjusted);
    json_decref(adjusted);
    jobspec_clear(&spec);
}

/* ---- a task-augmented call (2025-11-25) ----------------------------------------------------- */

typedef struct {
    call_t *call;
    json_t *args;
    tool_task_t task;
} task_wait_t;

/* A task runs on after its call is answered, held by the front-end that started it: its place in
 * the tenant's max_tasks, counted across the farm, is taken before its job leaves. */
static void s_on_task_hold(void *arg, hold_t *hold, long held)
{
    task_wait_t *w = arg;
    call_t *c = w->call;
    if (hold && call_alive(c)) {
        w->task.hold = hold;
        s_run(c, w->args, &w->task);
        holds_release(&w->task.hold); /* no execution took it over */
    } else {
        holds_release(&hold);
        if (call_alive(c) && held >= 0) {
            long cap = c->tenant->max_tasks;
            char msg[320];
            log_warn("event=tenant_cap_refused cap=max_tasks tenant=%s held=%ld limit=%ld",
                     c->tenant->name, held, cap);
            snprintf(msg, sizeof msg,
                     "tenant %s already has %ld task%s running, its cap (max_tasks %ld, counted "
                     "across every front-end): wait for one to finish or cancel one "
                     "(tasks/cancel), call without a task, or ask the operator to raise the cap",
                     c->tenant->name, held, held == 1 ? "" : "s", cap);
            call_error(c, RPC_QUOTA, msg,
                       json_pack("{s:s,s:I,s:I}", "cap", "max_tasks", "limit", (json_int_t)cap,
                                 "held", (json_int_t)held));
        } else if (call_alive(c)) {
            call_error(c, RPC_UNAVAILABLE, "the server is stopping; try again", NULL);
        }
    }
    call_release(c);
    json_decref(w->args);
    free(w);
}

void execute_code_run(call_t *c, json_t *args, const tool_task_t *task)
{
    if (task->wanted) {
        task_wait_t *w = xcalloc(1, sizeof *w);
        *w = (task_wait_t){c, json_incref(args), *task};
        call_hold(c);
        holds_take(c->fe->holds, HOLD_TASK, c->tenant->name, c->tenant->max_tasks, NULL,
                   s_on_task_hold, w);
        return;
    }
    tool_task_t t = *task;
    s_run(c, args, &t);
}
