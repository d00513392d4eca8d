/* mcp-frontend/cells/resume.c — see resume.h. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/profiles.h"
#include "proto/snapshot.h"
#include "mcp-frontend/rpc/fe.h"
#include "resume.h"
#include "session_job.h"

#define HIBERNATED_PREFIX "hibernated: " /* executor-node/node/hibernate.h's */

typedef struct {
    call_t *call; /* held */
    session_record_t s;
    int lost;
    char reason[256];
    resume_fn *fn;
    void *arg;
    resume_note_t note;
} resume_t;

int session_resume_hibernated(const char *end_reason)
{
    return end_reason && !strncmp(end_reason, HIBERNATED_PREFIX, strlen(HIBERNATED_PREFIX));
}

static void s_done(resume_t *r, resume_status_t st, const char *why)
{
    r->fn(r->arg, st, st == RESUME_OK ? &r->note : NULL, why);
    json_decref(r->note.not_restored);
    call_release(r->call);
    free(r);
}

/* Each name the checkpoint left out, and why. */
static void s_on_name(void *arg, const char *name, size_t len, const char *reason,
                      size_t reason_len, int is_import)
{
    (void)is_import;
    if (!reason) return;
    json_array_append_new(
        arg, json_pack("{s:s%,s:s%}", "name", name, len, "reason", reason, reason_len));
}

static void s_on_restored(void *arg, call_t *c, result_t *res)
{
    resume_t *r = arg;
    char idstr[ID_STR_LEN + 1];
    snprintf(idstr, sizeof idstr, "%s", r->s.id);
    if (res->status != ST_OK || !res->session.present || !res->session.alive) {
        session_records_unclaim(c->fe->session_records, c->tenant, idstr, r->lost);
        log_warn("event=session_resume_failed session=%s error=\"%s\"", idstr,
                 res->error.present && res->error.message ? res->error.message : "?");
        s_done(r, RESUME_FAILED,
               res->error.present && res->error.message ? res->error.message
                                                        : status_name(res->status));
        return;
    }
    json_t *summary = res->session.summary ? json_loads(res->session.summary, 0, NULL) : NULL;
    size_t i;
    json_t *f;
    json_array_foreach(json_object_get(summary, "failed"), i, f)
        json_array_append(r->note.not_restored, f);
    json_decref(summary);
    session_record_t *s = &r->s;
    s->ended = s->hibernated = 0;
    s->end_reason[0] = '\0';
    s->cells = r->note.from_cell;
    s->last_used_ms = clock_wall_ms();
    s->memory_mb = res->session.memory_mb;
    s->idle_timeout_s = res->session.idle_timeout_s;
    session_records_resumed(c->fe->session_records, c->tenant, s);
    log_info("event=session_resumed session=%s from_cell=%u lost=%d", idstr, r->note.from_cell,
             r->lost);
    s_done(r, RESUME_OK, NULL);
}

static void s_on_claim(void *arg, int st, const char *blob, size_t len, const char *meta_text)
{
    resume_t *r = arg;
    call_t *c = r->call;
    if (st != 1) {
        s_done(r,
               st == 2   ? RESUME_BUSY
               : st == 0 ? RESUME_NONE
                         : RESUME_FAILED,
               st == 2   ? "another front-end is resuming it"
               : st == 0 ? "it has no checkpoint to resume from"
                         : "the session store is unreachable right now");
        return;
    }
    json_t *meta = json_loads(meta_text, 0, NULL);
    const char *profile = json_string_value(json_object_get(meta, "profile"));
    const profile_t *p = profile ? profile_find(profile) : NULL;
    if (!p || !tenant_allows_profile(c->tenant, p->name)) {
        json_decref(meta);
        session_records_unclaim(c->fe->session_records, c->tenant, r->s.id, r->lost);
        s_done(r, RESUME_FAILED, "its checkpoint's profile is not one you may use");
        return;
    }
    r->note.from_cell = (uint32_t)json_integer_value(json_object_get(meta, "cells"));
    r->note.checkpoint_ms = (uint64_t)json_integer_value(json_object_get(meta, "created_ms"));
    r->note.not_restored = json_array();
    snapshot_view_t v;
    char err[160];
    if (snapshot_decode(blob, len, &v, err, sizeof err) == 0) {
        snapshot_each_name(&v, s_on_name, r->note.not_restored);
        snapshot_view_free(&v);
    }
    jobspec_t spec;
    jobspec_init(&spec);
    spec.kind = JOB_SESSION_RESTORE;
    spec.service = xstrdup(p->name);
    spec.has_new_session = 1;
    id_parse(r->s.id, spec.new_session);
    spec.limits.memory_mb = (long)json_integer_value(json_object_get(meta, "memory_mb"));
    spec.idle_timeout_s = (long)json_integer_value(json_object_get(meta, "idle_timeout_s"));
    spec.retention_s = c->tenant->session_retention_s;
    spec.resume_cells = r->note.from_cell;
    if (r->s.network) tenant_egress_spec(c->tenant, &spec.egress); /* it had network: it keeps it */
    spec.snapshot = xmalloc(len ? len : 1);
    memcpy(spec.snapshot, blob, len);
    spec.snapshot_len = len;
    snprintf(r->s.profile, sizeof r->s.profile, "%s", p->name);
    json_decref(meta);
    session_job_submit(c, &spec, s_on_restored, r);
    explicit_bzero(spec.snapshot, spec.snapshot_len); /* the tenant's bytes: sent already */
    jobspec_clear(&spec);
}

void session_resume(call_t *c, const session_record_t *s, int lost, const char *reason,
                    resume_fn *fn, void *arg)
{
    resume_t *r = xcalloc(1, sizeof *r);
    r->call = c;
    call_hold(c);
    r->s = *s;
    r->lost = lost;
    r->fn = fn;
    r->arg = arg;
    snprintf(r->reason, sizeof r->reason, "%s", reason ? reason : "");
    snprintf(r->note.reason, sizeof r->note.reason, "%s",
             lost                ? "its executor went away"
             : reason && *reason ? reason
                                 : "hibernated");
    session_records_claim(c->fe->session_records, c->tenant, s->id, lost, s_on_claim, r);
}

json_t *session_resume_json(const resume_note_t *n)
{
    char at[32];
    return json_pack("{s:I,s:s,s:s,s:o}", "from_cell", (json_int_t)n->from_cell, "reason",
                     n->reason, "checkpointed_at", session_record_iso(n->checkpoint_ms, at),
                     "not_restored", n->not_restored ? json_incref(n->not_restored) : json_array());
}

void session_resume_text(const resume_note_t *n, char *text, size_t cap)
{
    size_t k = json_array_size(n->not_restored);
    snprintf(text, cap, "session resumed from its checkpoint taken after cell %u (%s)%s%s",
             n->from_cell, n->reason, k ? "; not brought back: " : "",
             k ? "see session.resumed.not_restored" : "");
}
