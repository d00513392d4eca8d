/* mcp-frontend/tools/session_ops.c — see session_ops.h. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/profiles.h"
#include "mcp-frontend/cells/resume.h"
#include "mcp-frontend/cells/session_records.h"
#include "mcp-frontend/render/outcome.h"
#include "mcp-frontend/rpc/fe.h"
#include "session_ops.h"
#include "tools.h"

op_t *sop_op(call_t *c)
{
    op_t *op = xcalloc(1, sizeof *op);
    op->call = c;
    call_hold(c);
    jobspec_init(&op->spec);
    return op;
}

void sop_op_free(op_t *op)
{
    call_release(op->call);
    jobspec_clear(&op->spec);
    free(op->extra);
    free(op);
}

/* An error the tool reports as its result (isError), with the farm's or our own words. */
void sop_fail(call_t *c, const char *fmt, ...)
{
    char text[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    call_reply(c, tool_result(text, NULL, 1));
}

void sop_fail_result(call_t *c, const char *what, const result_t *res)
{
    sop_fail(c, "%s: %s: %s", what, status_name(res->status),
             res->error.present && res->error.message ? res->error.message : "no reason given");
}

/* The session as create_session and fork_session describe it. */
static json_t *s_described(const session_record_t *s, const profile_t *p, long forks_left)
{
    char expires[32];
    json_t *o = json_pack(
        "{s:s,s:s,s:{s:I,s:I,s:I,s:I},s:s,s:I}", "session_id", s->id, "profile", s->profile,
        "limits", "memory_mb", (json_int_t)s->memory_mb, "idle_timeout_s",
        (json_int_t)s->idle_timeout_s, "timeout_s", (json_int_t)(p->defaults.wall_ms / 1000),
        "max_timeout_s", (json_int_t)(p->max.wall_ms / 1000), "expires_at",
        session_record_iso(s->last_used_ms + (uint64_t)s->idle_timeout_s * 1000, expires),
        "forks_left", (json_int_t)forks_left);
    if (s->parent[0]) json_object_set_new(o, "parent_session_id", json_string(s->parent));
    json_object_set_new(o, "atomic", json_boolean(s->atomic));
    return o;
}

typedef struct {
    call_t *call; /* held */
    json_t *result;
} landing_reply_t;

static void s_on_landed(void *arg)
{
    landing_reply_t *r = arg;
    call_reply(r->call, r->result);
    call_release(r->call);
    free(r);
}

void sop_reply_landed(call_t *c, json_t *result)
{
    landing_reply_t *r = xcalloc(1, sizeof *r);
    *r = (landing_reply_t){c, result};
    call_hold(c);
    session_records_landed(c->fe->session_records, s_on_landed, r);
}

void sop_reply_session(call_t *c, const session_record_t *s, const char *verb, long forks_left)
{
    const profile_t *p = profile_find(s->profile);
    char text[400];
    char expires[32];
    snprintf(text, sizeof text,
             "%s session %s (%s, %ld MB, idle timeout %ld s; expires %s unless used; %ld forks "
             "left). Run cells in it with execute_code and session_id; close_session ends it.",
             verb, s->id, s->profile, s->memory_mb, s->idle_timeout_s,
             session_record_iso(s->last_used_ms + (uint64_t)s->idle_timeout_s * 1000, expires),
             forks_left);
    sop_reply_landed(c, tool_result(text, s_described(s, p ? p : profile_default(), forks_left), 0));
}

void sop_reply_forked(call_t *c, const session_record_t *s, long forks_left, json_t *session_ids)
{
    const profile_t *p = profile_find(s->profile);
    char text[400];
    size_t n = json_array_size(session_ids);
    if (n > 1)
        snprintf(text, sizeof text,
                 "Forked session %s into %zu sessions (session_ids; %s, %ld MB each, idle timeout "
                 "%ld s). Run cells in each with execute_code and its session_id.",
                 s->parent, n, s->profile, s->memory_mb, s->idle_timeout_s);
    else
        snprintf(text, sizeof text,
                 "Forked session %s (%s, %ld MB, idle timeout %ld s). Run cells in it with "
                 "execute_code and session_id.",
                 s->id, s->profile, s->memory_mb, s->idle_timeout_s);
    json_t *o = s_described(s, p ? p : profile_default(), forks_left);
    json_object_set_new(o, "session_ids", session_ids);
    sop_reply_landed(c, tool_result(text, o, 0));
}

/* The new session's record, from the farm's answer. */
void sop_record(op_t *op, const result_t *res, const char *parent, const char *restored)
{
    session_record_t *s = &op->s;
    s->memory_mb = res->session.memory_mb;
    s->idle_timeout_s = res->session.idle_timeout_s;
    s->memory_kb = res->session.memory_kb;
    s->created_ms = s->last_used_ms = clock_wall_ms();
    snprintf(s->parent, sizeof s->parent, "%s", parent ? parent : "");
    snprintf(s->restored_from, sizeof s->restored_from, "%s", restored ? restored : "");
    session_records_opened(op->call->fe->session_records, op->call->tenant, s);
}

/* ---- sessions named by the call -------------------------------------------------------------- */

/* The call's session_id as a canonical id into out; -32602 and -1 when it is not one. */
int sop_session_arg(call_t *c, json_t *args, char out[ID_STR_LEN + 1])
{
    uint8_t raw[ID_BYTES];
    const char *id = json_string_value(json_object_get(args, "session_id"));
    if (!id || id_parse(id, raw) < 0)
        return tool_bad_arg(c, "session_id",
                            "`session_id` must be a session id as create_session returned it (a "
                            "UUID); list_sessions shows yours");
    id_format(raw, out);
    return 0;
}

/* ---- resuming a session the call names (resume.h) ---------------------------------------- */

static void s_on_op_resumed(void *arg, resume_status_t st, const resume_note_t *note,
                            const char *why)
{
    op_t *op = arg;
    (void)note;
    if (st != RESUME_OK) {
        sop_fail(op->call, "session %s was freed by its executor and %s: %s", op->s.id,
                 st == RESUME_BUSY ? "is being resumed by another call; try again shortly"
                                   : "could not be resumed",
                 why ? why : "?");
        sop_op_free(op);
        return;
    }
    op->resumed = 1;
    session_record_t s = op->s;
    jobspec_clear(&op->spec); /* the step fills it again */
    op->step(op, &s);
}

/* s (op->s's record) was freed by its node: resumed, then the op's step again. */
static void s_resume(op_t *op, const session_record_t *s, int lost, const char *reason)
{
    op->s = *s;
    session_resume(op->call, s, lost, reason, s_on_op_resumed, op);
}

typedef struct {
    op_t *op;
    int lost;
    char reason[256];
} gone_t;

static void s_on_gone_record(void *arg, session_record_status_t st, const session_record_t *s)
{
    gone_t *g = arg;
    op_t *op = g->op;
    if (st == SESSION_RECORD_FOUND && !s->ended)
        s_resume(op, s, g->lost, g->reason);
    else {
        sop_fail(op->call, "session %s ended: %s", op->s.id, g->reason);
        sop_op_free(op);
    }
    free(g);
}

/* The farm freed the session the op acted on: resumed (once), when the op can start over. */
static int s_resumable(op_t *op, int lost, const char *reason)
{
    if (!op->step || op->resumed || op->as_is) return 0;
    gone_t *g = xcalloc(1, sizeof *g);
    *g = (gone_t){op, lost, ""};
    snprintf(g->reason, sizeof g->reason, "%s", reason ? reason : "");
    session_records_lookup(op->call->fe->session_records, op->call->tenant, op->s.id,
                           s_on_gone_record, g);
    return 1;
}

/* A session the farm no longer holds: its record says why (or it is worked out), and the
 * call is answered with that. */
static void s_on_explained(void *arg, status_t st, const char *type, const char *reason)
{
    op_t *op = arg;
    if ((!strcmp(type, "SessionHibernated") || !strcmp(type, "SessionCheckpointed")) &&
        s_resumable(op, !strcmp(type, "SessionCheckpointed"), reason))
        return;
    sop_fail(op->call, "session %s: %s: %s", op->s.id, status_name(st), reason);
    sop_op_free(op);
}

void sop_gone(op_t *op, const result_t *res)
{
    session_records_t *ps = op->call->fe->session_records;
    const char *why = res->session.end_reason;
    int lost = !strcmp(res->error.type, "SessionLost");
    if ((lost || session_resume_hibernated(why)) && s_resumable(op, lost, why)) return;
    if (why && strcmp(res->error.type, "SessionUnknown") != 0) {
        if (!session_resume_hibernated(why)) session_records_ended(ps, op->call->tenant, op->s.id, why);
        sop_fail(op->call, "session %s ended: %s", op->s.id, why);
        sop_op_free(op);
        return;
    }
    session_records_explain(ps, op->call->tenant, op->s.id, s_on_explained, op);
}

typedef struct {
    op_t *op;
    op_step_fn *step;
} found_t;

static void s_on_found(void *arg, session_record_status_t st, const session_record_t *s)
{
    found_t *f = arg;
    op_t *op = f->op;
    op->step = f->step;
    if (st == SESSION_RECORD_UNAVAILABLE)
        tool_refuse(op->call, TOOL_UNAVAILABLE, NULL,
                    "the session store is unreachable right now; try again shortly");
    else if (st == SESSION_RECORD_NOT_FOUND)
        tool_refuse(op->call, TOOL_NOT_FOUND, "session_id",
                    "`session_id`: no session %s for your tenant (list_sessions shows the live "
                    "ones)",
                    op->s.id);
    else if (s->ended)
        sop_fail(op->call, "session %s ended: %s", op->s.id, s->end_reason);
    if (st != SESSION_RECORD_FOUND || s->ended)
        sop_op_free(op);
    else if (s->hibernated && !op->as_is)
        s_resume(op, s, 0, s->end_reason);
    else
        f->step(op, s);
    free(f);
}

static void s_with(call_t *c, json_t *args, op_step_fn *step, void *extra, int as_is)
{
    char id[ID_STR_LEN + 1];
    if (sop_session_arg(c, args, id) < 0) {
        free(extra);
        return;
    }
    op_t *op = sop_op(c);
    op->extra = extra;
    op->as_is = as_is;
    snprintf(op->s.id, sizeof op->s.id, "%s", id);
    found_t *f = xcalloc(1, sizeof *f);
    *f = (found_t){op, step};
    session_records_lookup(c->fe->session_records, c->tenant, id, s_on_found, f);
}

void sop_with_session(call_t *c, json_t *args, op_step_fn *step, void *extra)
{
    s_with(c, args, step, extra, 0);
}

void sop_with_session_as_is(call_t *c, json_t *args, op_step_fn *step, void *extra)
{
    s_with(c, args, step, extra, 1);
}

void sop_submit_on(op_t *op, const session_record_t *s, job_kind_t kind, session_job_fn *fn)
{
    op->spec.kind = kind;
    op->spec.service = xstrdup(s->profile);
    op->spec.has_session = 1;
    id_parse(s->id, op->spec.session);
    session_job_submit(op->call, &op->spec, fn, op);
}

void sop_reply_list(call_t *c, json_t *items, const char *key, const char *noun, const char *store,
                    sop_line_fn *line, const char *next)
{
    if (!items) {
        tool_refuse(c, TOOL_UNAVAILABLE, NULL,
                    "the %s store is unreachable right now; try again shortly", store);
    } else {
        buf_t b;
        size_t n = json_array_size(items), i;
        json_t *item;
        buf_init(&b);
        buf_printf(&b, "%zu %s%s%s\n", n, noun, n == 1 ? "" : "s", n ? ":" : ".");
        json_array_foreach(items, i, item)
        {
            if (i == SOP_LINES) {
                buf_printf(&b, "... and %zu more in structuredContent.%s\n", n - i, key);
                break;
            }
            buf_puts(&b, "- ");
            line(&b, item);
            buf_puts(&b, "\n");
        }
        if (next) buf_puts(&b, next);
        call_reply(c, tool_result((const char *)b.data, json_pack("{s:o}", key, items), 0));
        buf_free(&b);
    }
    call_release(c);
}
