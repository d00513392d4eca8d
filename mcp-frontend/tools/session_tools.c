/* mcp-frontend/tools/session_tools.c — see session_tools.h: create_session, fork_session,
 * close_session and list_sessions. Each is a little chain of asynchronous steps (the session's
 * record, a place within the tenant's quotas, the job on the farm, the record again), held
 * together by one op per call (session_ops.h). */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/clock.h"
#include "mcp-frontend/cells/session_job.h"
#include "mcp-frontend/cells/session_records.h"
#include "mcp-frontend/render/outcome.h"
#include "mcp-frontend/rpc/fe.h"
#include "jobargs.h"
#include "session_ops.h"
#include "session_tools.h"
#include "tools.h"

#define DEFAULT_IDLE_S 600

/* ---- create_session ------------------------------------------------------------------------ */

static void s_on_created(void *arg, call_t *c, result_t *res)
{
    op_t *op = arg;
    if (res->status == ST_OK && res->session.present && res->session.alive) {
        sop_record(op, res, NULL, NULL);
        sop_reply_session(c, &op->s, "Created", res->session.forks_left);
    } else {
        session_records_release(c->fe->session_records, c->tenant, op->s.id);
        sop_fail_result(c, "the session could not start", res);
    }
    sop_op_free(op);
}

static void s_on_admitted(void *arg, int ok, const char *why)
{
    op_t *op = arg;
    if (!ok) {
        sop_fail(op->call, "no session was created: %s", why);
        sop_op_free(op);
        return;
    }
    session_job_submit(op->call, &op->spec, s_on_created, op);
}

/* idle_timeout: the call's (whole seconds), else the default, within the tenant's maximum. */
static long s_idle(call_t *c, json_t *args)
{
    json_t *v = json_object_get(args, "idle_timeout");
    long idle = v && json_is_number(v) ? (long)ceil(json_number_value(v)) : DEFAULT_IDLE_S;
    if (idle < 1) idle = 1;
    return idle > c->tenant->max_idle_timeout_s ? c->tenant->max_idle_timeout_s : idle;
}

void create_session_run(call_t *c, json_t *args, const tool_task_t *task)
{
    (void)task;
    const profile_t *p = jobargs_profile(c, args);
    limits_t l = {0};
    if (!p || jobargs_limits(c, args, p, &l) < 0) return;
    op_t *op = sop_op(c);
    if (jobargs_files(c, args, p, &op->spec) < 0 || jobargs_egress(c, args, &op->spec) < 0) {
        sop_op_free(op);
        return;
    }
    op->spec.kind = JOB_SESSION_NEW;
    op->spec.service = xstrdup(p->name);
    op->spec.limits.memory_mb = l.memory_mb;
    op->spec.idle_timeout_s = s_idle(c, args);
    op->spec.has_new_session = 1;
    id_new(op->spec.new_session);
    id_format(op->spec.new_session, op->s.id);
    snprintf(op->s.profile, sizeof op->s.profile, "%s", p->name);
    session_records_admit(c->fe->session_records, c->tenant, op->s.id, l.memory_mb,
                          op->spec.idle_timeout_s, s_on_admitted, op);
}

/* ---- fork_session ---------------------------------------------------------------------------- */

static void s_on_forked(void *arg, call_t *c, result_t *res)
{
    op_t *op = arg;
    char parent[ID_STR_LEN + 1];
    id_format(op->spec.session, parent);
    if (res->status == ST_OK && res->session.present && res->session.alive) {
        sop_record(op, res, parent, NULL);
        sop_reply_session(c, &op->s, "Forked", res->session.forks_left);
        sop_op_free(op);
        return;
    }
    session_records_release(c->fe->session_records, c->tenant, op->s.id);
    if (session_job_gone(res)) {
        snprintf(op->s.id, sizeof op->s.id, "%s", parent); /* the parent is the one gone */
        sop_gone(op, res);
        return;
    }
    sop_fail_result(c, "the session could not be forked", res);
    sop_op_free(op);
}

static void s_on_fork_admitted(void *arg, int ok, const char *why)
{
    op_t *op = arg;
    if (!ok) {
        sop_fail(op->call, "the session was not forked: %s", why);
        sop_op_free(op);
        return;
    }
    session_job_submit(op->call, &op->spec, s_on_forked, op);
}

static void s_fork(op_t *op, const session_record_t *parent)
{
    call_t *c = op->call;
    op->spec.kind = JOB_SESSION_FORK;
    op->spec.service = xstrdup(parent->profile);
    op->spec.has_session = op->spec.has_new_session = 1;
    id_parse(parent->id, op->spec.session);
    id_new(op->spec.new_session);
    id_format(op->spec.new_session, op->s.id);
    snprintf(op->s.profile, sizeof op->s.profile, "%s", parent->profile);
    session_records_admit(c->fe->session_records, c->tenant, op->s.id, parent->memory_mb,
                          parent->idle_timeout_s, s_on_fork_admitted, op);
}

void fork_session_run(call_t *c, json_t *args, const tool_task_t *task)
{
    (void)task;
    sop_with_session(c, args, s_fork, NULL);
}

/* ---- close_session --------------------------------------------------------------------------- */

static void s_on_closed(void *arg, call_t *c, result_t *res)
{
    op_t *op = arg;
    if (res->status == ST_OK) {
        session_records_ended(c->fe->session_records, c->tenant, op->s.id, "closed by the client");
        char text[200];
        snprintf(text, sizeof text,
                 "Closed session %s. Its snapshots are kept (list_state_snapshots).", op->s.id);
        sop_reply_landed(
            c, tool_result(text, json_pack("{s:s,s:b}", "session_id", op->s.id, "closed", 1), 0));
    } else if (session_job_gone(res)) {
        sop_gone(op, res);
        return;
    } else {
        sop_fail_result(c, "the session could not be closed", res);
    }
    sop_op_free(op);
}

static void s_close(op_t *op, const session_record_t *s)
{
    sop_submit_on(op, s, JOB_SESSION_CLOSE, s_on_closed);
}

void close_session_run(call_t *c, json_t *args, const tool_task_t *task)
{
    (void)task;
    sop_with_session(c, args, s_close, NULL);
}

/* ---- list_sessions --------------------------------------------------------------------------- */

static const char *s_str(const json_t *item, const char *key)
{
    const char *v = json_string_value(json_object_get(item, key));
    return v ? v : "?";
}

static void s_session_line(buf_t *b, const json_t *s)
{
    const char *parent = json_string_value(json_object_get(s, "parent_session_id"));
    buf_printf(b, "%s %s, %lld cells, %lld of %lld MB in use, last used %s, expires %s",
               s_str(s, "session_id"), s_str(s, "profile"),
               (long long)json_integer_value(json_object_get(s, "cells")),
               (long long)json_integer_value(json_object_get(s, "memory_in_use_mb")),
               (long long)json_integer_value(json_object_get(s, "memory_limit_mb")),
               s_str(s, "last_used"), s_str(s, "expires_at"));
    if (parent) buf_printf(b, ", forked from %s", parent);
}

static void s_on_listed(void *arg, json_t *sessions)
{
    sop_reply_list(arg, sessions, "sessions", "live session", "session", s_session_line,
                   "execute_code with session_id runs a cell in one; fork_session copies one; "
                   "close_session ends one; list_state_snapshots shows saved states.\n");
}

void list_sessions_run(call_t *c, json_t *args, const tool_task_t *task)
{
    (void)args, (void)task;
    call_hold(c);
    session_records_list(c->fe->session_records, c->tenant, s_on_listed, c);
}
