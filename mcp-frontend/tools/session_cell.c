/* mcp-frontend/tools/session_cell.c — see session_cell.h. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/log.h"
#include "mcp-frontend/cells/resume.h"
#include "mcp-frontend/cells/session_job.h"
#include "mcp-frontend/cells/session_records.h"
#include "mcp-frontend/rpc/fe.h"
#include "session_cell.h"

#define RESEND_MAX 25  /* sends of a cell while its session is being resumed elsewhere */
#define RESEND_MS  200 /* between them */

typedef struct {
    session_records_t *sessions;
    const tenant_t *tenant;
    call_t *call; /* held: a resume submits on its behalf */
    char id[ID_STR_LEN + 1];
    execution_t *ex;
    result_t *res;
    buf_t job;   /* the cell's JobSpec, encoded: sent again once its session is resumed */
    int resends; /* sent again so far (bounded) */
    int lost;    /* it is resumed from its node's loss, not its hibernation */
    char reason[256];
    char *resumed, *resumed_note; /* the note, once resumed */
} cell_t;

static void s_free(cell_t *cell)
{
    explicit_bzero(cell->job.data, cell->job.len); /* the tenant's code */
    buf_free(&cell->job);
    free(cell->resumed);
    free(cell->resumed_note);
    call_release(cell->call);
    free(cell);
}

void session_cell_gone(result_t *res, const char *id, status_t st, const char *type,
                       const char *reason)
{
    char *t = xstrdup(type), *m = xstrdup(reason), *e = xstrdup(reason);
    res->status = st;
    id_parse(id, res->session.id);
    res->error.present = 1;
    free(res->error.type);
    free(res->error.message);
    free(res->session.end_reason);
    res->error.type = t;
    res->error.message = m;
    res->session.present = 1;
    res->session.alive = 0;
    res->session.end_reason = e;
}

/* The cell's answer goes on (its record follows it). */
static void s_go_on(cell_t *cell)
{
    result_t *res = cell->res;
    if (cell->resumed) {
        res->session.resumed = cell->resumed;
        res->session.resumed_note = cell->resumed_note;
        cell->resumed = cell->resumed_note = NULL;
    }
    session_records_used(cell->sessions, cell->tenant, cell->id, res, 1);
    execution_go_on(cell->ex);
    s_free(cell);
}

/* The session is gone for good: the answer says why, and its record does. */
static void s_ended(cell_t *cell, status_t st, const char *type, const char *reason)
{
    char *why = xstrdup(reason);
    session_records_ended(cell->sessions, cell->tenant, cell->id, why);
    session_cell_gone(cell->res, cell->id, st, type, why);
    free(why);
    execution_go_on(cell->ex);
    s_free(cell);
}

static void s_on_resend_timer(loop_t *loop, void *arg);

/* The cell's answer after its session was resumed (or while it is being). */
static void s_on_resent(void *arg, call_t *c, result_t *res)
{
    (void)c;
    cell_t *cell = arg;
    if (session_job_gone(res) && cell->resends < RESEND_MAX) { /* not placed yet: again */
        loop_timer_add(cell->call->fe->loop, RESEND_MS, 0, s_on_resend_timer, cell);
        return;
    }
    result_clear(cell->res); /* the first answer (gone) makes way for this one */
    *cell->res = *res;
    result_init(res); /* moved: nothing for session_job to free */
    s_go_on(cell);
}

static void s_resend(cell_t *cell)
{
    jobspec_t spec;
    char err[160];
    cell->resends++;
    if (jobspec_decode(cell->job.data, cell->job.len, &spec, err, sizeof err) < 0) {
        s_ended(cell, ST_INTERNAL_ERROR, "InternalError", "the cell could not be sent again");
        return;
    }
    session_job_submit(cell->call, &spec, s_on_resent, cell);
    jobspec_clear(&spec);
}

static void s_on_resend_timer(loop_t *loop, void *arg)
{
    (void)loop;
    s_resend(arg);
}

static void s_on_resumed(void *arg, resume_status_t st, const resume_note_t *note, const char *why)
{
    cell_t *cell = arg;
    char text[600];
    switch (st) {
    case RESUME_OK: {
        json_t *j = session_resume_json(note);
        cell->resumed = json_dumps(j, JSON_COMPACT);
        json_decref(j);
        session_resume_text(note, text, sizeof text);
        cell->resumed_note = xstrdup(text);
        s_resend(cell);
        return;
    }
    case RESUME_BUSY: /* another front-end resumes it: the cell follows in a moment */
        if (cell->resends < RESEND_MAX) {
            cell->resends++;
            loop_timer_add(cell->call->fe->loop, RESEND_MS, 0, s_on_resend_timer, cell);
            return;
        }
        break;
    default:
        break;
    }
    snprintf(text, sizeof text, "%.250s; it could not be resumed: %.200s", cell->reason,
             why ? why : "?");
    s_ended(cell, cell->lost ? ST_LOST : ST_REJECTED, cell->lost ? "SessionLost" : "SessionEnded",
            text);
}

static void s_on_record(void *arg, session_record_status_t st, const session_record_t *s)
{
    cell_t *cell = arg;
    if (st != SESSION_RECORD_FOUND || s->ended) {
        s_ended(cell, cell->lost ? ST_LOST : ST_REJECTED,
                cell->lost ? "SessionLost" : "SessionEnded", cell->reason);
        return;
    }
    session_resume(cell->call, s, cell->lost, cell->reason, s_on_resumed, cell);
}

/* Resumed from its checkpoint if it has one (reason: why it was freed). */
static void s_try_resume(cell_t *cell, int lost, const char *reason)
{
    cell->lost = lost;
    snprintf(cell->reason, sizeof cell->reason, "%s", reason ? reason : "the session ended");
    session_records_lookup(cell->sessions, cell->tenant, cell->id, s_on_record, cell);
}

static void s_on_explained(void *arg, status_t st, const char *type, const char *reason)
{
    cell_t *cell = arg;
    if (!strcmp(type, "SessionHibernated") || !strcmp(type, "SessionCheckpointed")) {
        s_try_resume(cell, !strcmp(type, "SessionCheckpointed"), reason);
        return;
    }
    session_cell_gone(cell->res, cell->id, st, type, reason);
    execution_go_on(cell->ex);
    s_free(cell);
}

/* execution_result_fn: the session's record follows its cell. */
static void s_on_cell(void *arg, execution_t *ex, result_t *res)
{
    cell_t *cell = arg;
    const char *type = res->error.present ? res->error.type : NULL;
    cell->ex = ex;
    cell->res = res;
    if (!session_job_gone(res)) {
        s_go_on(cell);
        return;
    }
    if (!strcmp(type, "SessionUnknown")) {
        session_records_explain(cell->sessions, cell->tenant, cell->id, s_on_explained, cell);
        return;
    }
    const char *why = res->session.end_reason ? res->session.end_reason : res->error.message;
    if (!strcmp(type, "SessionLost")) {
        s_try_resume(cell, 1, why);
        return;
    }
    if (session_resume_hibernated(why)) {
        s_try_resume(cell, 0, why);
        return;
    }
    s_ended(cell, ST_REJECTED, type, why ? why : "the session ended");
}

void execute_code_as_cell(call_t *c, jobspec_t *spec, execution_opts_t *opts, const char *session)
{
    cell_t *cell = xcalloc(1, sizeof *cell);
    cell->sessions = c->fe->session_records;
    cell->tenant = c->tenant;
    cell->call = c;
    call_hold(c);
    snprintf(cell->id, sizeof cell->id, "%s", session);
    spec->has_session = 1;
    id_parse(session, spec->session);
    buf_init(&cell->job);
    jobspec_encode(spec, &cell->job);
    opts->on_result = s_on_cell;
    opts->on_result_arg = cell;
}
