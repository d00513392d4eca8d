/* mcp-frontend/tools/map_session.c — see map_session.h. One map per call: the parent's record, a
 * place for every fork, the fork job, then one cell job per fork, gathered in order. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/utf8.h"
#include "mcp-frontend/cells/session_job.h"
#include "mcp-frontend/cells/session_records.h"
#include "mcp-frontend/render/outcome.h"
#include "mcp-frontend/rpc/fe.h"
#include "mcp-frontend/state/records.h"
#include "jobargs.h"
#include "map_session.h"
#include "session_ops.h"

#define TEXT_HEAD 300 /* bytes of each branch's stdout in the answer's text */

typedef struct map map_t;

/* One branch: its fork and its cell. */
typedef struct {
    map_t *map;
    size_t index;
    char session[ID_STR_LEN + 1];
    char execution[ID_STR_LEN + 1];
    uint64_t created_ms;
    json_t *result; /* its structuredContent, once in */
    status_t status;
    char *stdout_head;
} branch_t;

struct map {
    op_t *op;     /* the call, the parent's record, the fork's JobSpec (NULL once given away) */
    json_t *args; /* the call's */
    json_t *codes;
    limits_t limits;
    int keep;
    size_t n, done;
    branch_t *branches;
};

static void s_map_free(map_t *m)
{
    for (size_t i = 0; i < m->n; i++) {
        json_decref(m->branches[i].result);
        free(m->branches[i].stdout_head);
    }
    free(m->branches);
    json_decref(m->codes);
    json_decref(m->args);
    if (m->op) sop_op_free(m->op);
    free(m);
}

/* ---- the end ------------------------------------------------------------------------------- */

static void s_on_closed(void *arg, call_t *c, result_t *res)
{
    (void)arg, (void)c, (void)res; /* its record says ended already; a failure ends it anyway */
}

/* The forks go (their records now; their processes as their close jobs run). */
static void s_close_forks(map_t *m)
{
    call_t *c = m->op->call;
    for (size_t i = 0; i < m->n; i++) {
        jobspec_t spec;
        jobspec_init(&spec);
        spec.kind = JOB_SESSION_CLOSE;
        spec.service = xstrdup(m->op->s.profile);
        spec.has_session = 1;
        id_parse(m->branches[i].session, spec.session);
        session_records_ended(c->fe->session_records, c->tenant, m->branches[i].session,
                              "closed by map_session once its cell was done");
        session_job_submit(c, &spec, s_on_closed, NULL);
        jobspec_clear(&spec);
    }
}

static void s_reply(map_t *m)
{
    call_t *c = m->op->call;
    json_t *results = json_array(), *ids = json_array();
    buf_t text;
    buf_init(&text);
    size_t ok = 0;
    for (size_t i = 0; i < m->n; i++) {
        branch_t *b = &m->branches[i];
        ok += b->status == ST_OK;
        json_array_append(results, b->result);
        json_array_append_new(ids, json_string(b->session));
        buf_printf(&text, "[%zu] %s", i, status_name(b->status));
        if (b->stdout_head && *b->stdout_head) {
            buf_puts(&text, ": ");
            utf8_sanitize(&text, b->stdout_head, strlen(b->stdout_head));
        }
        buf_puts(&text, "\n");
    }
    if (!m->keep) s_close_forks(m);
    char head[200];
    snprintf(head, sizeof head, "Ran %zu code strings, one per fork of session %s: %zu ok.%s\n",
             m->n, m->op->s.parent, ok,
             m->keep ? " The forks are kept (session_ids)." : " The forks are closed.");
    json_t *out = json_pack("{s:s,s:o,s:b}", "session_id", m->op->s.parent, "results", results,
                            "kept", m->keep);
    if (m->keep)
        json_object_set_new(out, "session_ids", ids);
    else
        json_decref(ids);
    buf_t all;
    buf_init(&all);
    buf_puts(&all, head);
    buf_append(&all, text.data, text.len);
    buf_append(&all, "", 1);
    sop_reply_landed(c, tool_result((const char *)all.data, out, ok < m->n));
    buf_free(&all);
    buf_free(&text);
    s_map_free(m);
}

/* ---- the cells ---------------------------------------------------------------------------- */

static record_about_t s_about(const branch_t *b, const call_t *c, const char *profile)
{
    return (record_about_t){.id = b->execution,
                            .tenant = c->tenant->name,
                            .profile = profile,
                            .tool = "map_session",
                            .created_ms = b->created_ms,
                            .ttl_s = c->tenant->record_ttl_s,
                            .keep = c->tenant->record_max};
}

static void s_on_cell(void *arg, call_t *c, result_t *res)
{
    branch_t *b = arg;
    map_t *m = b->map;
    record_about_t about = s_about(b, c, m->op->s.profile);
    record_finished(c->fe->records, &about, NULL, res, NULL, NULL); /* submitted: written */
    session_records_used(c->fe->session_records, c->tenant, b->session, res, 1);
    json_t *r = outcome_execute(b->execution, res);
    b->result = json_incref(json_object_get(r, "structuredContent"));
    if (!b->result) b->result = json_object();
    json_object_set_new(b->result, "index", json_integer((json_int_t)b->index));
    json_decref(r);
    b->status = res->status;
    size_t n = res->out_len < TEXT_HEAD ? res->out_len : TEXT_HEAD;
    b->stdout_head = xstrndup(res->out ? res->out : "", n);
    for (char *p = b->stdout_head; *p; p++)
        if (*p == '\n') *p = ' ';
    if (++m->done == m->n) s_reply(m);
}

static void s_run_cells(map_t *m)
{
    call_t *c = m->op->call;
    for (size_t i = 0; i < m->n; i++) {
        branch_t *b = &m->branches[i];
        jobspec_t spec;
        jobspec_init(&spec);
        json_t *code = json_array_get(m->codes, i);
        spec.kind = JOB_EXEC;
        spec.service = xstrdup(m->op->s.profile);
        spec.code = xstrndup(json_string_value(code), json_string_length(code));
        spec.code_len = json_string_length(code);
        spec.limits = m->limits;
        spec.has_session = 1;
        id_parse(b->session, spec.session);
        session_job_submit(c, &spec, s_on_cell, b); /* sets the id, the tenant, the time */
        id_format(spec.id, b->execution);
        b->created_ms = spec.submitted_ms;
        record_about_t about = s_about(b, c, m->op->s.profile);
        record_submit_t *sub = record_submit_new(c->fe->records, &about, &spec);
        record_submitted(c->fe->records, &about, sub); /* a branch's record from its start */
        record_submit_destroy(&sub);
        jobspec_clear(&spec);
    }
}

/* ---- the forks ----------------------------------------------------------------------------- */

static void s_on_forked(void *arg, call_t *c, result_t *res)
{
    map_t *m = arg;
    op_t *op = m->op;
    if (res->status == ST_OK && res->session.present && res->session.n_clones == m->n) {
        session_record_t s = op->s; /* each fork's record, from the parent's limits */
        for (size_t i = 0; i < m->n; i++) {
            snprintf(op->s.id, sizeof op->s.id, "%s", m->branches[i].session);
            sop_record(op, res, s.parent, NULL);
        }
        op->s = s;
        s_run_cells(m);
        return;
    }
    for (size_t i = 0; i < m->n; i++)
        session_records_release(c->fe->session_records, c->tenant, m->branches[i].session);
    if (session_job_gone(res)) {
        snprintf(op->s.id, sizeof op->s.id, "%s", op->s.parent);
        m->op = NULL;
        s_map_free(m);
        sop_gone(op, res); /* answers, and frees the op */
        return;
    }
    sop_fail_result(c, "the session could not be forked for map_session", res);
    s_map_free(m);
}

static void s_on_admitted(void *arg, int ok, const char *why)
{
    map_t *m = arg;
    if (!ok) {
        sop_fail(m->op->call, "map_session did not run: %s", why);
        s_map_free(m);
        return;
    }
    session_job_submit(m->op->call, &m->op->spec, s_on_forked, m);
}

static void s_map(map_t *m, const session_record_t *parent)
{
    op_t *op = m->op;
    call_t *c = op->call;
    const profile_t *p = profile_find(parent->profile);
    if (!p) {
        sop_fail(c, "the session's profile is not served any more");
        s_map_free(m);
        return;
    }
    /* the session's profile and memory; the cells' timeout and output limit from the call */
    if (jobargs_limits(c, m->args, p, &m->limits) < 0) {
        s_map_free(m);
        return;
    }
    char(*ids)[ID_STR_LEN + 1] = xcalloc(m->n, ID_STR_LEN + 1);
    op->spec.kind = JOB_SESSION_FORK;
    op->spec.service = xstrdup(parent->profile);
    op->spec.has_session = op->spec.has_new_session = 1;
    op->spec.retention_s = c->tenant->session_retention_s;
    id_parse(parent->id, op->spec.session);
    id_new(op->spec.new_session);
    if (m->n > 1) {
        op->spec.more_sessions = xcalloc(m->n - 1, ID_BYTES);
        op->spec.n_more_sessions = m->n - 1;
    }
    for (size_t i = 0; i < m->n; i++) {
        if (i) id_new(op->spec.more_sessions[i - 1]);
        id_format(i ? op->spec.more_sessions[i - 1] : op->spec.new_session, ids[i]);
        snprintf(m->branches[i].session, sizeof m->branches[i].session, "%s", ids[i]);
    }
    op->s = *parent;
    snprintf(op->s.parent, sizeof op->s.parent, "%s", parent->id);
    op->s.cells = 0;
    session_records_admit_n(c->fe->session_records, c->tenant, (const char(*)[ID_STR_LEN + 1]) ids,
                            m->n, parent->memory_mb, parent->idle_timeout_s, s_on_admitted, m);
    free(ids);
}

/* The parent's record: missing, another tenant's or ended is answered here. */
static void s_on_parent(void *arg, session_record_status_t st, const session_record_t *s)
{
    map_t *m = arg;
    call_t *c = m->op->call;
    if (st == SESSION_RECORD_UNAVAILABLE)
        sop_fail(c, "the session store is unreachable right now; try again shortly");
    else if (st == SESSION_RECORD_NOT_FOUND)
        sop_fail(c, "no session %s for your tenant", m->op->s.id);
    else if (s->ended)
        sop_fail(c, "session %s ended: %s", m->op->s.id, s->end_reason);
    if (st != SESSION_RECORD_FOUND || s->ended)
        s_map_free(m);
    else
        s_map(m, s);
}

void map_session_run(call_t *c, json_t *args, const tool_task_t *task)
{
    (void)task;
    char id[ID_STR_LEN + 1];
    json_t *codes = json_object_get(args, "codes");
    size_t n = json_array_size(codes);
    if (sop_session_arg(c, args, id) < 0) return;
    if (!n || n > MAP_MAX_CODES) {
        tool_bad_arg(c, "codes", "`codes` must be a list of 1 to %d code strings (one per fork)",
                     MAP_MAX_CODES);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        json_t *code = json_array_get(codes, i);
        if (!json_is_string(code) || json_string_length(code) > JOB_MAX_CODE) {
            tool_bad_arg(c, "codes", "`codes[%zu]` must be a string of at most %u bytes", i,
                         JOB_MAX_CODE);
            return;
        }
    }
    map_t *m = xcalloc(1, sizeof *m);
    m->op = sop_op(c);
    snprintf(m->op->s.id, sizeof m->op->s.id, "%s", id);
    m->args = json_incref(args);
    m->codes = json_incref(codes);
    m->n = n;
    m->keep = json_is_true(json_object_get(args, "keep"));
    m->branches = xcalloc(n, sizeof *m->branches);
    for (size_t i = 0; i < n; i++) m->branches[i] = (branch_t){.map = m, .index = i};
    session_records_lookup(c->fe->session_records, c->tenant, id, s_on_parent, m);
}
