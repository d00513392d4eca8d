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
#include "mcp-frontend/cells/resume.h"
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
    json_t *atomic = json_object_get(args, "atomic");
    op->s.atomic = json_is_true(atomic);
    op->s.network = op->spec.egress.n_rules > 0;
    op->spec.kind = JOB_SESSION_NEW;
    op->spec.service = xstrdup(p->name);
    op->spec.limits.memory_mb = l.memory_mb;
    op->spec.idle_timeout_s = s_idle(c, args);
    op->spec.retention_s = c->tenant->session_retention_s;
    op->spec.has_new_session = 1;
    id_new(op->spec.new_session);
    id_format(op->spec.new_session, op->s.id);
    snprintf(op->s.profile, sizeof op->s.profile, "%s", p->name);
    session_records_admit(c->fe->session_records, c->tenant, op->s.id, l.memory_mb,
                          op->spec.idle_timeout_s, s_on_admitted, op);
}

/* ---- fork_session ---------------------------------------------------------------------------- */

/* A fork's clones beyond the first (op->extra): their ids. */
typedef struct {
    size_t n; /* clones in all, the first being op->s */
    char ids[JOB_MAX_FORKS][ID_STR_LEN + 1];
} fork_extra_t;

static void s_release_clones(call_t *c, const fork_extra_t *x)
{
    for (size_t i = 0; i < x->n; i++) session_records_release(c->fe->session_records, c->tenant, x->ids[i]);
}

/* The fork's answer: the first clone as before, and with count every clone's id in order. */
static void s_on_forked(void *arg, call_t *c, result_t *res)
{
    op_t *op = arg;
    fork_extra_t *x = op->extra;
    char parent[ID_STR_LEN + 1];
    id_format(op->spec.session, parent);
    if (res->status == ST_OK && res->session.present && res->session.alive &&
        res->session.n_clones == x->n) {
        json_t *ids = json_array();
        for (size_t i = 0; i < x->n; i++) {
            snprintf(op->s.id, sizeof op->s.id, "%s", x->ids[i]);
            sop_record(op, res, parent, NULL);
            json_array_append_new(ids, json_string(x->ids[i]));
        }
        snprintf(op->s.id, sizeof op->s.id, "%s", x->ids[0]);
        sop_reply_forked(c, &op->s, res->session.forks_left, ids);
        sop_op_free(op);
        return;
    }
    s_release_clones(c, x);
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
    fork_extra_t *x = op->extra;
    op->spec.kind = JOB_SESSION_FORK;
    op->spec.service = xstrdup(parent->profile);
    op->spec.has_session = op->spec.has_new_session = 1;
    op->spec.retention_s = c->tenant->session_retention_s;
    id_parse(parent->id, op->spec.session);
    id_new(op->spec.new_session);
    id_format(op->spec.new_session, x->ids[0]);
    if (x->n > 1) {
        op->spec.more_sessions = xcalloc(x->n - 1, ID_BYTES);
        op->spec.n_more_sessions = x->n - 1;
        for (size_t i = 1; i < x->n; i++) {
            id_new(op->spec.more_sessions[i - 1]);
            id_format(op->spec.more_sessions[i - 1], x->ids[i]);
        }
    }
    snprintf(op->s.id, sizeof op->s.id, "%s", x->ids[0]);
    snprintf(op->s.profile, sizeof op->s.profile, "%s", parent->profile);
    op->s.atomic = parent->atomic;   /* a clone's cells are as its parent's */
    op->s.network = parent->network; /* and so is its network (its parent's child's) */
    session_records_admit_n(c->fe->session_records, c->tenant,
                            (const char(*)[ID_STR_LEN + 1])x->ids, x->n, parent->memory_mb,
                            parent->idle_timeout_s, s_on_fork_admitted, op);
}

/* count: 1 (the default) to JOB_MAX_FORKS; 0 when the call was answered (a bad count). */
static size_t s_count(call_t *c, json_t *args)
{
    json_t *v = json_object_get(args, "count");
    if (!v || json_is_null(v)) return 1;
    if (!json_is_integer(v) || json_integer_value(v) < 1 ||
        json_integer_value(v) > JOB_MAX_FORKS) {
        tool_bad_arg(c, "count", "`count` must be an integer from 1 to %d (the clones to make)",
                     JOB_MAX_FORKS);
        return 0;
    }
    return (size_t)json_integer_value(v);
}

void fork_session_run(call_t *c, json_t *args, const tool_task_t *task)
{
    (void)task;
    size_t n = s_count(c, args);
    if (!n) return;
    fork_extra_t *x = xcalloc(1, sizeof *x);
    x->n = n;
    sop_with_session(c, args, s_fork, x);
}

/* ---- close_session --------------------------------------------------------------------------- */

static void s_on_closed(void *arg, call_t *c, result_t *res)
{
    op_t *op = arg;
    /* freed by its node meanwhile (hibernated, or lost after a checkpoint): closed all the
     * same, its checkpoint dropped with its record's end */
    int freed = session_job_gone(res) && (session_resume_hibernated(res->session.end_reason) ||
                                          !strcmp(res->error.type, "SessionLost"));
    if (res->status == ST_OK || freed) {
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
    call_t *c = op->call;
    if (s->hibernated) { /* no process to end: its record ends, its checkpoint goes */
        session_records_ended(c->fe->session_records, c->tenant, s->id, "closed by the client");
        char text[120];
        snprintf(text, sizeof text, "Closed session %s (it was hibernated).", s->id);
        sop_reply_landed(
            c, tool_result(text, json_pack("{s:s,s:b}", "session_id", s->id, "closed", 1), 0));
        sop_op_free(op);
        return;
    }
    sop_submit_on(op, s, JOB_SESSION_CLOSE, s_on_closed);
}

void close_session_run(call_t *c, json_t *args, const tool_task_t *task)
{
    (void)task;
    sop_with_session_as_is(c, args, s_close, NULL);
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
