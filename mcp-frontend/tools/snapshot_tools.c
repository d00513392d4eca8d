/* mcp-frontend/tools/snapshot_tools.c — see snapshot_tools.h: create_state_snapshot,
 * restore_state_snapshot, list_state_snapshots and delete_state_snapshot (the names the
 * mcp-secure-sandbox seed uses). A snapshot is made by the session's own sandbox (its pickles)
 * and zygote (its files), described here (each file's size, mtime and SHA-256; the variables
 * saved and those skipped, with why) and stored as it came; a restore hands it back to a
 * sandbox — unpickling only ever happens inside one. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/profiles.h"
#include "common/sha256.h"
#include "proto/snapshot.h"
#include "mcp-frontend/cells/session_job.h"
#include "mcp-frontend/cells/session_records.h"
#include "mcp-frontend/cells/snapshots.h"
#include "mcp-frontend/farm/served.h"
#include "mcp-frontend/render/outcome.h"
#include "mcp-frontend/rpc/fe.h"
#include "session_ops.h"
#include "snapshot_tools.h"
#include "tools.h"

#define LIST_DEFAULT 50
#define LIST_MAX     500

/* ---- create_state_snapshot ------------------------------------------------------------------ */

typedef struct {
    json_t *names, *imports, *skipped;
} names_t;

static void s_name(void *arg, const char *name, size_t len, const char *reason, size_t rlen,
                   int is_import)
{
    names_t *n = arg;
    json_t *s = json_stringn(name, len);
    if (!s) return; /* not UTF-8: never a Python identifier, so never here */
    if (reason) {
        json_array_append_new(n->skipped, json_pack("{s:o,s:o}", "name", s, "reason",
                                                    json_stringn_nocheck(reason, rlen)));
    } else if (is_import) {
        json_object_set_new(n->imports, json_string_value(s), json_true());
        json_decref(s);
    } else {
        json_array_append_new(n->names, s);
    }
}

/* What list_state_snapshots shows of a snapshot, from its bytes. NULL when they do not decode. */
static json_t *s_meta(const char *id, const session_record_t *s, const char *description,
                      const result_t *res, char *err, size_t errlen)
{
    snapshot_view_t v;
    if (snapshot_decode(res->snapshot, res->snapshot_len, &v, err, errlen) < 0) return NULL;
    names_t n = {json_array(), json_object(), json_array()};
    snapshot_each_name(&v, s_name, &n);
    json_t *files = json_array();
    char iso[32], hex[65];
    for (size_t i = 0; i < v.n_files; i++) {
        const snapshot_file_t *f = &v.files[i];
        sha256_hex(f->data, f->len, hex);
        json_array_append_new(
            files, json_pack("{s:s,s:I,s:s,s:I,s:s,s:I}", "path", f->path, "size",
                             (json_int_t)f->len, "mtime",
                             session_record_iso((uint64_t)(f->mtime_ns / 1000000), iso), "mtime_ns",
                             (json_int_t)f->mtime_ns, "sha256", hex, "mode", (json_int_t)f->mode));
    }
    json_t *m =
        json_pack("{s:s,s:s,s:s,s:s,s:s,s:I,s:I,s:I,s:o,s:o,s:o,s:o}", "snapshot_id", id,
                  "session_id", s->id, "description", description ? description : "", "created",
                  session_record_iso(clock_wall_ms(), iso), "profile", s->profile, "memory_mb",
                  (json_int_t)s->memory_mb, "idle_timeout_s", (json_int_t)s->idle_timeout_s,
                  "bytes", (json_int_t)res->snapshot_len, "variables", n.names, "imports",
                  n.imports, "skipped", n.skipped, "files", files);
    snapshot_view_free(&v);
    return m;
}

/* "what: a, b, c" for the text, from an array of strings (or of objects' member key), at most
 * 20 names; nothing when the array is empty. */
static void s_names_line(buf_t *b, const char *what, const json_t *list, const char *key)
{
    size_t i, n = json_array_size(list);
    json_t *e;
    if (!n) return;
    buf_printf(b, "%s (%zu): ", what, n);
    json_array_foreach(list, i, e)
    {
        if (i == 20) {
            buf_puts(b, ", ...");
            break;
        }
        const char *name = json_string_value(key ? json_object_get(e, key) : e);
        buf_printf(b, "%s%.200s", i ? ", " : "", name ? name : "?");
    }
    buf_puts(b, "\n");
}

typedef struct {
    char description[1024];
    char snapshot_id[ID_STR_LEN + 1];
    json_t *meta;
} snap_t;

static void s_on_stored(void *arg, int ok, const char *why)
{
    op_t *op = arg;
    snap_t *x = op->extra;
    if (ok) {
        buf_t text;
        buf_init(&text);
        session_records_snapshotted(op->call->fe->session_records, op->call->tenant, op->s.id,
                                    x->snapshot_id);
        buf_printf(&text, "Saved snapshot %s of session %s (%lld bytes).\n", x->snapshot_id,
                   op->s.id, json_integer_value(json_object_get(x->meta, "bytes")));
        s_names_line(&text, "variables", json_object_get(x->meta, "variables"), NULL);
        s_names_line(&text, "files", json_object_get(x->meta, "files"), "path");
        s_names_line(&text, "skipped (not picklable)", json_object_get(x->meta, "skipped"), "name");
        buf_puts(&text, "restore_state_snapshot brings it back, into this session or a new one.");
        sop_reply_landed(op->call, tool_result((const char *)text.data, json_incref(x->meta), 0));
        buf_free(&text);
    } else {
        sop_fail(op->call, "the snapshot was not saved: %s", why);
    }
    json_decref(x->meta);
    sop_op_free(op);
}

static void s_on_snapshot(void *arg, call_t *c, result_t *res)
{
    op_t *op = arg;
    snap_t *x = op->extra;
    char err[200];
    session_records_used(c->fe->session_records, c->tenant, op->s.id, res, 0);
    if (session_job_gone(res)) {
        sop_gone(op, res);
        return;
    }
    if (res->status != ST_OK || !res->snapshot) {
        sop_fail_result(c, "the snapshot could not be made", res);
        sop_op_free(op);
        return;
    }
    uint8_t raw[ID_BYTES];
    id_new(raw);
    id_format(raw, x->snapshot_id);
    if (!(x->meta = s_meta(x->snapshot_id, &op->s, x->description, res, err, sizeof err))) {
        sop_fail(c, "the snapshot came back malformed: %s", err);
        sop_op_free(op);
        return;
    }
    snapshots_put(c->fe->snapshots, c->tenant, x->snapshot_id, x->meta, res->snapshot,
                  res->snapshot_len, s_on_stored, op);
}

static void s_snapshot(op_t *op, const session_record_t *s)
{
    op->s = *s;
    sop_submit_on(op, s, JOB_SESSION_SNAPSHOT, s_on_snapshot);
}

void create_state_snapshot_run(call_t *c, json_t *args, const tool_task_t *task)
{
    (void)task;
    const char *d = json_string_value(json_object_get(args, "description"));
    if (d && strlen(d) >= sizeof((snap_t *)0)->description) {
        tool_bad_arg(c, "description", "`description` must be at most 1023 bytes; got %zu",
                     strlen(d));
        return;
    }
    snap_t *x = xcalloc(1, sizeof *x);
    snprintf(x->description, sizeof x->description, "%s", d ? d : "");
    sop_with_session(c, args, s_snapshot, x);
}

/* ---- restore_state_snapshot ----------------------------------------------------------------- */

typedef struct {
    char snapshot_id[ID_STR_LEN + 1];
    json_t *meta;
    char *blob;
    size_t len;
} restore_t;

static void s_restore_free(restore_t *x)
{
    json_decref(x->meta);
    if (x->blob) explicit_bzero(x->blob, x->len);
    free(x->blob);
    x->meta = NULL, x->blob = NULL;
}

/* What the session's process says it rebound ({restored, failed}), and the snapshot's files. */
static json_t *s_restored(const op_t *op, const restore_t *x, const result_t *res, int made)
{
    json_t *sum = res->session.summary ? json_loads(res->session.summary, 0, NULL) : NULL;
    json_t *restored = json_object_get(sum, "restored"), *failed = json_object_get(sum, "failed");
    json_t *out = json_pack("{s:s,s:s,s:b,s:O,s:O,s:I}", "session_id", op->s.id, "snapshot_id",
                            x->snapshot_id, "new_session", made, "restored",
                            json_is_array(restored) ? restored : json_array(), "failed",
                            json_is_array(failed) ? failed : json_array(), "files",
                            (json_int_t)json_array_size(json_object_get(x->meta, "files")));
    json_t *skipped = json_object_get(x->meta, "skipped");
    json_object_set(out, "skipped_at_snapshot", json_is_array(skipped) ? skipped : json_array());
    json_decref(sum);
    return out;
}

static void s_on_restored(void *arg, call_t *c, result_t *res)
{
    op_t *op = arg;
    restore_t *x = op->extra;
    int made = op->spec.has_new_session;
    if (res->status == ST_OK && res->session.present && res->session.alive) {
        if (made)
            sop_record(op, res, NULL, x->snapshot_id);
        else
            session_records_used(c->fe->session_records, c->tenant, op->s.id, res, 0);
        json_t *out = s_restored(op, x, res, made);
        buf_t text;
        buf_init(&text);
        buf_printf(&text,
                   "Restored snapshot %s into %s session %s: %zu names rebound, %zu failed, %lld "
                   "files.\n",
                   x->snapshot_id, made ? "the new" : "the", op->s.id,
                   json_array_size(json_object_get(out, "restored")),
                   json_array_size(json_object_get(out, "failed")),
                   json_integer_value(json_object_get(out, "files")));
        s_names_line(&text, "failed", json_object_get(out, "failed"), NULL);
        buf_printf(&text, "Run cells in it with execute_code and session_id %s.", op->s.id);
        sop_reply_landed(c, tool_result((const char *)text.data, out, 0));
        buf_free(&text);
    } else if (made) {
        session_records_release(c->fe->session_records, c->tenant, op->s.id);
        sop_fail_result(c, "the snapshot could not be restored", res);
    } else if (session_job_gone(res)) {
        s_restore_free(x);
        sop_gone(op, res);
        return;
    } else {
        session_records_used(c->fe->session_records, c->tenant, op->s.id, res, 0);
        sop_fail_result(c, "the snapshot could not be restored", res);
    }
    s_restore_free(x);
    sop_op_free(op);
}

static void s_submit_restore(op_t *op)
{
    restore_t *x = op->extra;
    op->spec.kind = JOB_SESSION_RESTORE;
    op->spec.snapshot = x->blob; /* the JobSpec owns it now */
    op->spec.snapshot_len = x->len;
    x->blob = NULL;
    session_job_submit(op->call, &op->spec, s_on_restored, op);
}

/* Into the session the call names: it must run the snapshot's profile. */
static void s_into(op_t *op, const session_record_t *s)
{
    restore_t *x = op->extra;
    const char *profile = json_string_value(json_object_get(x->meta, "profile"));
    op->s = *s;
    if (!profile || strcmp(profile, s->profile) != 0) {
        sop_fail(op->call,
                 "snapshot %s was made in profile %s and session %s runs %s; restore it "
                 "into a new session (leave session_id out)",
                 x->snapshot_id, profile ? profile : "?", s->id, s->profile);
        s_restore_free(x);
        sop_op_free(op);
        return;
    }
    op->spec.service = xstrdup(s->profile);
    op->spec.has_session = 1;
    id_parse(s->id, op->spec.session);
    s_submit_restore(op);
}

static void s_on_new_admitted(void *arg, int ok, const char *why)
{
    op_t *op = arg;
    if (!ok) {
        sop_fail(op->call, "no session was restored: %s", why);
        s_restore_free(op->extra);
        sop_op_free(op);
        return;
    }
    s_submit_restore(op);
}

/* Into a new session, with the limits the snapshot's session had (within today's quotas). */
static void s_into_new(op_t *op)
{
    restore_t *x = op->extra;
    call_t *c = op->call;
    const char *name = json_string_value(json_object_get(x->meta, "profile"));
    const profile_t *p = name ? profile_find(name) : NULL;
    if (!p || !tenant_allows_profile(c->tenant, p->name)) {
        sop_fail(c, "snapshot %s was made in profile %s, which you may not use", x->snapshot_id,
                 name ? name : "?");
        s_restore_free(x);
        sop_op_free(op);
        return;
    }
    if (!served_has(c->fe->served, p)) { /* at once, not after the broker's wait for one */
        tool_refuse(c, TOOL_UNAVAILABLE, "snapshot_id",
                    "snapshot %s was made in profile %s, which this farm does not serve now",
                    x->snapshot_id, p->name);
        s_restore_free(x);
        sop_op_free(op);
        return;
    }
    limits_t l = {.memory_mb = (long)json_integer_value(json_object_get(x->meta, "memory_mb"))};
    limits_t cap = tenant_limits(c->tenant);
    limits_fill(&l, &p->defaults);
    limits_cap(&l, &cap);
    profile_apply_limits(p, &l);
    long idle = (long)json_integer_value(json_object_get(x->meta, "idle_timeout_s"));
    if (idle <= 0 || idle > c->tenant->max_idle_timeout_s) idle = c->tenant->max_idle_timeout_s;
    op->spec.service = xstrdup(p->name);
    op->spec.limits.memory_mb = l.memory_mb;
    op->spec.idle_timeout_s = idle;
    op->spec.retention_s = c->tenant->session_retention_s;
    op->spec.has_new_session = 1;
    tenant_egress_spec(c->tenant, &op->spec.egress); /* a new session has the tenant's network */
    op->s.network = op->spec.egress.n_rules > 0;
    id_new(op->spec.new_session);
    id_format(op->spec.new_session, op->s.id);
    snprintf(op->s.profile, sizeof op->s.profile, "%s", p->name);
    session_records_admit(c->fe->session_records, c->tenant, op->s.id, l.memory_mb, idle,
                          s_on_new_admitted, op);
}

typedef struct {
    op_t *op;
    json_t *args; /* held */
} fetch_t;

static void s_on_fetched(void *arg, int found, json_t *meta, const void *blob, size_t len)
{
    fetch_t *f = arg;
    op_t *op = f->op;
    restore_t *x = op->extra;
    if (found < 0) {
        tool_refuse(op->call, TOOL_UNAVAILABLE, NULL,
                    "the snapshot store is unreachable right now; try again shortly");
        sop_op_free(op);
    } else if (!found) {
        tool_refuse(op->call, TOOL_NOT_FOUND, "snapshot_id",
                    "`snapshot_id`: no snapshot %s for your tenant (list_state_snapshots shows "
                    "yours)",
                    x->snapshot_id);
        sop_op_free(op);
    } else {
        x->meta = json_incref(meta);
        x->blob = xmalloc(len ? len : 1);
        memcpy(x->blob, blob, len);
        x->len = len;
        if (json_object_get(f->args, "session_id") &&
            !json_is_null(json_object_get(f->args, "session_id"))) {
            /* the session's lookup makes an op of its own: hand the restore over to it */
            restore_t *y = xcalloc(1, sizeof *y);
            *y = *x;
            memset(x, 0, sizeof *x);
            call_t *c = op->call;
            call_hold(c);
            sop_op_free(op);
            sop_with_session(c, f->args, s_into, y);
            call_release(c);
        } else {
            s_into_new(op);
        }
    }
    json_decref(f->args);
    free(f);
}

/* The call's snapshot_id, canonical; -32602 and -1 when it is not one. */
static int s_snapshot_arg(call_t *c, json_t *args, char out[ID_STR_LEN + 1])
{
    const char *id = json_string_value(json_object_get(args, "snapshot_id"));
    uint8_t raw[ID_BYTES];
    if (!id || id_parse(id, raw) < 0) {
        tool_bad_arg(c, "snapshot_id",
                     "`snapshot_id` must be a snapshot id as create_state_snapshot returned it (a "
                     "UUID); list_state_snapshots shows yours");
        return -1;
    }
    id_format(raw, out);
    return 0;
}

void restore_state_snapshot_run(call_t *c, json_t *args, const tool_task_t *task)
{
    (void)task;
    char id[ID_STR_LEN + 1], sid[ID_STR_LEN + 1];
    json_t *session = json_object_get(args, "session_id");
    if (s_snapshot_arg(c, args, id) < 0) return;
    if (session && !json_is_null(session) && sop_session_arg(c, args, sid) < 0) return;
    op_t *op = sop_op(c);
    restore_t *x = xcalloc(1, sizeof *x);
    snprintf(x->snapshot_id, sizeof x->snapshot_id, "%s", id);
    op->extra = x;
    fetch_t *f = xcalloc(1, sizeof *f);
    *f = (fetch_t){op, json_incref(args)};
    snapshots_get(c->fe->snapshots, c->tenant, x->snapshot_id, s_on_fetched, f);
}

/* ---- list and delete ------------------------------------------------------------------------ */

static void s_snapshot_line(buf_t *b, const json_t *m)
{
    const char *id = json_string_value(json_object_get(m, "snapshot_id"));
    const char *sid = json_string_value(json_object_get(m, "session_id"));
    const char *created = json_string_value(json_object_get(m, "created"));
    const char *d = json_string_value(json_object_get(m, "description"));
    buf_printf(b, "%s of session %s, %s, %lld bytes, %zu variables, %zu files", id ? id : "?",
               sid ? sid : "?", created ? created : "?",
               (long long)json_integer_value(json_object_get(m, "bytes")),
               json_array_size(json_object_get(m, "variables")),
               json_array_size(json_object_get(m, "files")));
    if (d && *d) buf_printf(b, ": \"%.120s\"", d);
}

static void s_on_listed(void *arg, json_t *metas)
{
    sop_reply_list(arg, metas, "snapshots", "snapshot", "snapshot", s_snapshot_line,
                   "restore_state_snapshot restores one (into its session or a new one); "
                   "delete_state_snapshot deletes one.\n");
}

void list_state_snapshots_run(call_t *c, json_t *args, const tool_task_t *task)
{
    (void)task;
    char sid[ID_STR_LEN + 1] = "";
    json_t *session = json_object_get(args, "session_id");
    if (session && !json_is_null(session) && sop_session_arg(c, args, sid) < 0) return;
    json_t *l = json_object_get(args, "limit");
    long limit = json_is_integer(l) ? (long)json_integer_value(l) : LIST_DEFAULT;
    if (limit < 1 || limit > LIST_MAX) {
        tool_bad_arg(c, "limit", "`limit` must be 1-%d; got %ld", LIST_MAX, limit);
        return;
    }
    call_hold(c);
    snapshots_list(c->fe->snapshots, c->tenant, sid[0] ? sid : NULL, limit, s_on_listed, c);
}

typedef struct {
    call_t *call;
    char id[ID_STR_LEN + 1];
} del_t;

static void s_on_deleted(void *arg, int deleted, int unavailable)
{
    del_t *d = arg;
    char text[120];
    if (unavailable) {
        tool_refuse(d->call, TOOL_UNAVAILABLE, NULL,
                    "the snapshot store is unreachable right now; try again shortly");
    } else {
        snprintf(text, sizeof text,
                 deleted ? "Deleted snapshot %s." : "No snapshot %s for your tenant.", d->id);
        call_reply(d->call,
                   tool_result(text,
                               json_pack("{s:s,s:b}", "snapshot_id", d->id, "deleted", deleted),
                               !deleted));
    }
    call_release(d->call);
    free(d);
}

void delete_state_snapshot_run(call_t *c, json_t *args, const tool_task_t *task)
{
    (void)task;
    char id[ID_STR_LEN + 1];
    if (s_snapshot_arg(c, args, id) < 0) return;
    del_t *d = xcalloc(1, sizeof *d);
    d->call = c;
    snprintf(d->id, sizeof d->id, "%s", id);
    call_hold(c);
    snapshots_delete(c->fe->snapshots, c->tenant, d->id, s_on_deleted, d);
}
