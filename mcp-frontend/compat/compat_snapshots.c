/* mcp-frontend/compat/compat_snapshots.c — see compat_snapshots.h. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/ids.h"
#include "common/log.h"
#include "common/profiles.h"
#include "mcp-frontend/cells/session_records.h"
#include "mcp-frontend/rpc/fe.h"
#include "mcp-frontend/state/store.h"
#include "mcp-frontend/tools/pyscan.h"
#include "mcp-frontend/tools/session_tools.h"
#include "mcp-frontend/tools/snapshot_tools.h"
#include "compat_snapshots.h"
#include "subcall.h"

#define LIST_ALL         500  /* list_state_snapshots' most */

/* KEYS[1] the workspace key; ARGV the id it held when it was found stale ("" for none), the
 * new session's. The new one is kept only if nobody replaced the stale one first: two calls
 * that both found no workspace agree on the first one made. The current id. */
static const char s_claim_lua[] = "local cur = redis.call('GET', KEYS[1])\n"
                                  "if cur == false or cur == ARGV[1] then\n"
                                  "  redis.call('SET', KEYS[1], ARGV[2])\n"
                                  "  return ARGV[2]\n"
                                  "end\n"
                                  "return cur\n";

static store_script_t *s_claim;
static store_t *s_claim_store;

static void s_workspace_key(char *out, size_t cap, const char *tenant)
{
    snprintf(out, cap, "sp:compat:{%s}:workspace", tenant);
}

/* ---- the workspace: one sandbox session per tenant --------------------------------------- */

/* sid NULL: no workspace, and c was answered with why. */
typedef void(ws_fn)(call_t *c, const char *sid, const char *profile, void *arg);

typedef struct {
    call_t *call; /* held */
    char *code;   /* the first code it runs, for its profile; NULL: none */
    ws_fn *fn;
    void *arg;
    char stale[ID_STR_LEN + 1]; /* the ended session the key still names */
    char made[ID_STR_LEN + 1];  /* the session this call made */
    int rounds;                 /* claims lost: a bound, not a loop */
} ws_t;

static void s_ws_end(ws_t *w, const char *sid, const char *profile)
{
    w->fn(w->call, sid, profile, w->arg);
    call_release(w->call);
    free(w->code);
    free(w);
}

static void s_ws_fail(ws_t *w, const char *why)
{
    compat_failed(w->call, why);
    s_ws_end(w, NULL, NULL);
}

static int s_has_workspace(const profile_t *p, void *tenant)
{
    return p->workspace && tenant_allows_profile(tenant, p->name);
}

/* The first profile with a workspace the tenant may use that covers the code's imports, else
 * the first with a workspace; NULL when there is none. */
static const profile_t *s_profile(call_t *c, const char *code)
{
    const profile_t *p = NULL;
    if (code) {
        pyscan_t *scan = xmalloc(sizeof *scan);
        pyscan(code, strlen(code), scan);
        const char *names[PYSCAN_MAX];
        for (size_t i = 0; i < scan->n_modules; i++) names[i] = scan->modules[i];
        p = profile_for_dependencies(names, scan->n_modules, s_has_workspace, c->tenant);
        free(scan);
    }
    return p ? p : profile_for_dependencies(NULL, 0, s_has_workspace, c->tenant);
}

static void s_ws_lookup(ws_t *w, const char *sid);

static void s_on_closed_extra(void *arg, call_t *outer, const json_t *result, const char *msg)
{
    (void)arg, (void)outer, (void)result, (void)msg; /* best effort: else its idle timeout */
}

static void s_on_claimed(void *arg, redisReply *r)
{
    ws_t *w = arg;
    if (!r || r->type != REDIS_REPLY_STRING) {
        s_ws_fail(w, "the workspace could not be kept: the session store did not answer");
        return;
    }
    if (strcmp(r->str, w->made) != 0) { /* another call made one first: that one, ours goes */
        json_t *args = json_pack("{s:s}", "session_id", w->made);
        subcall_run(w->call, "close_session", close_session_run, args, s_on_closed_extra, NULL);
        json_decref(args);
        if (++w->rounds > 2) {
            s_ws_fail(w, "the workspace is being replaced by another call; try again");
            return;
        }
    }
    s_ws_lookup(w, r->str);
}

static void s_on_created(void *arg, call_t *c, const json_t *result, const char *message)
{
    ws_t *w = arg;
    const char *why = NULL;
    json_t *sc = subcall_ok(result, message, &why);
    const char *sid = json_string_value(json_object_get(sc, "session_id"));
    if (!sid) {
        char text[600];
        snprintf(text, sizeof text, "the workspace could not be made: %s", why ? why : "no id");
        s_ws_fail(w, text);
        return;
    }
    snprintf(w->made, sizeof w->made, "%s", sid);
    char key[200];
    s_workspace_key(key, sizeof key, c->tenant->name);
    store_t *store = c->fe->store;
    if (s_claim_store != store) {
        s_claim = store_script(store, s_claim_lua);
        s_claim_store = store;
    }
    const char *argv[] = {key, w->stale, w->made};
    if (store_eval(store, s_claim, s_on_claimed, w, 1, 3, argv) < 0) s_on_claimed(w, NULL);
}

static void s_ws_create(ws_t *w)
{
    const profile_t *p = s_profile(w->call, w->code);
    if (!p) {
        s_ws_fail(w, "no profile with a workspace is open to you, so there is no workspace");
        return;
    }
    json_t *args =
        json_pack("{s:s,s:i}", "profile", p->name, "idle_timeout", COMPAT_WORKSPACE_IDLE_S);
    subcall_run(w->call, "create_session", create_session_run, args, s_on_created, w);
    json_decref(args);
}

static void s_on_found(void *arg, session_record_status_t st, const session_record_t *s)
{
    ws_t *w = arg;
    if (st == SESSION_RECORD_FOUND && !s->ended) {
        s_ws_end(w, s->id, s->profile);
    } else if (st == SESSION_RECORD_UNAVAILABLE) {
        s_ws_fail(w, "the session store is unreachable right now; try again");
    } else if (w->made[0]) { /* the one just claimed is gone already */
        s_ws_fail(w, "the workspace ended as it was made; try again");
    } else {
        s_ws_create(w);
    }
}

static void s_ws_lookup(ws_t *w, const char *sid)
{
    snprintf(w->stale, sizeof w->stale, "%s", sid);
    session_records_lookup(w->call->fe->session_records, w->call->tenant, sid, s_on_found, w);
}

static void s_on_key(void *arg, redisReply *r)
{
    ws_t *w = arg;
    uint8_t raw[ID_BYTES];
    if (r && r->type == REDIS_REPLY_STRING && id_parse(r->str, raw) == 0)
        s_ws_lookup(w, r->str);
    else if (r && r->type == REDIS_REPLY_NIL)
        s_ws_create(w);
    else
        s_ws_fail(w, "the session store is unreachable right now; try again");
}

/* The tenant's workspace session (made when there is none or it ended), then fn. */
static void s_workspace(call_t *c, const char *code, ws_fn *fn, void *arg)
{
    ws_t *w = xcalloc(1, sizeof *w);
    *w = (ws_t){.call = c, .code = code ? xstrdup(code) : NULL, .fn = fn, .arg = arg};
    call_hold(c);
    char key[200];
    s_workspace_key(key, sizeof key, c->tenant->name);
    if (store_queryf(c->fe->store, s_on_key, w, "GET %s", key) < 0) s_on_key(w, NULL);
}

/* ---- the workspace as it stands, made by nobody ------------------------------------------- */

typedef struct {
    call_t *call; /* held */
    workspace_peek_fn *fn;
    void *arg;
} peek_t;

static void s_peek_end(peek_t *p, int st, json_t *ws)
{
    p->fn(p->arg, p->call, st, ws);
    json_decref(ws);
    call_release(p->call);
    free(p);
}

static void s_on_peek_found(void *arg, session_record_status_t st, const session_record_t *s)
{
    peek_t *p = arg;
    if (st == SESSION_RECORD_UNAVAILABLE)
        s_peek_end(p, -1, NULL);
    else
        s_peek_end(p, 0, st == SESSION_RECORD_FOUND && !s->ended ? session_record_json(s) : NULL);
}

static void s_on_peek_key(void *arg, redisReply *r)
{
    peek_t *p = arg;
    uint8_t raw[ID_BYTES];
    if (r && r->type == REDIS_REPLY_STRING && id_parse(r->str, raw) == 0)
        session_records_lookup(p->call->fe->session_records, p->call->tenant, r->str,
                               s_on_peek_found, p);
    else
        s_peek_end(p, r && r->type == REDIS_REPLY_NIL ? 0 : -1, NULL);
}

void compat_workspace_peek(call_t *c, workspace_peek_fn *fn, void *arg)
{
    peek_t *p = xcalloc(1, sizeof *p);
    *p = (peek_t){c, fn, arg};
    call_hold(c);
    char key[200];
    s_workspace_key(key, sizeof key, c->tenant->name);
    if (store_queryf(c->fe->store, s_on_peek_key, p, "GET %s", key) < 0) s_on_peek_key(p, NULL);
}

/* ---- run_sandbox_code's cell ------------------------------------------------------------- */

typedef struct {
    json_t *args;
    compat_job_t job;
} run_t;

static void s_run_in(call_t *c, const char *sid, const char *profile, void *arg)
{
    run_t *r = arg;
    if (sid) {
        json_object_set_new(r->args, "profile", json_string(profile));
        r->job.session = sid;
        compat_job_run(c, r->args, &r->job);
    }
    json_decref(r->args);
    json_decref(r->job.ctx);
    free(r);
}

void compat_workspace_run(call_t *c, json_t *args, const compat_job_t *job)
{
    run_t *r = xcalloc(1, sizeof *r);
    r->args = json_deep_copy(args);
    r->job = *job;
    if (job->ctx) json_incref(job->ctx);
    s_workspace(c, json_string_value(json_object_get(args, "code")), s_run_in, r);
}

/* ---- the snapshot tools ------------------------------------------------------------------- */

/* A tool of /mcp whose answer becomes that server's: doc from its structuredContent. */
typedef json_t *(reshape_fn)(const json_t *sc, int *is_error);

static void s_on_answer(void *arg, call_t *c, const json_t *result, const char *message)
{
    reshape_fn *reshape = (reshape_fn *)arg;
    const char *why = NULL;
    json_t *sc = subcall_ok(result, message, &why);
    /* delete's "no such snapshot" is an isError answer with a structuredContent: still ours */
    if (!sc && result) sc = json_object_get(result, "structuredContent");
    int is_error = 0;
    json_t *doc = json_is_object(sc) ? reshape(sc, &is_error) : NULL;
    if (doc)
        call_reply(c, compat_json_result(doc, is_error));
    else
        compat_failed(c, why ? why : "no answer");
}

static void s_subcall(call_t *c, const char *name, tool_fn *tool, json_t *args, reshape_fn *fn)
{
    subcall_run(c, name, tool, args, s_on_answer, (void *)fn);
}

/* That server's file registry: path → {size, mtime, sha256}. */
static json_t *s_registry(const json_t *files)
{
    json_t *reg = json_object();
    size_t i;
    const json_t *f;
    json_array_foreach(files, i, f)
    {
        const char *path = json_string_value(json_object_get(f, "path"));
        if (path)
            json_object_set_new(reg, path,
                                json_pack("{s:O,s:O,s:O}", "size", json_object_get(f, "size"),
                                          "mtime", json_object_get(f, "mtime"), "sha256",
                                          json_object_get(f, "sha256")));
    }
    return reg;
}

static json_t *s_created(const json_t *sc, int *is_error)
{
    (void)is_error;
    const json_t *files = json_object_get(sc, "files");
    return json_pack("{s:b,s:O,s:O,s:O,s:I,s:o,s:O}", "success", 1, "snapshot_id",
                     json_object_get(sc, "snapshot_id"), "timestamp", json_object_get(sc, "created"),
                     "description", json_object_get(sc, "description"), "file_count",
                     (json_int_t)json_array_size(files), "files", s_registry(files), "variables",
                     json_object_get(sc, "variables"));
}

typedef struct {
    json_t *args; /* the snapshot tool's, the workspace's session_id added */
    const char *name;
    tool_fn *tool;
    reshape_fn *reshape;
} on_ws_t;

static void s_on_workspace(call_t *c, const char *sid, const char *profile, void *arg)
{
    (void)profile;
    on_ws_t *o = arg;
    if (sid) {
        json_object_set_new(o->args, "session_id", json_string(sid));
        s_subcall(c, o->name, o->tool, o->args, o->reshape);
    }
    json_decref(o->args);
    free(o);
}

static void s_in_workspace(call_t *c, json_t *args, const char *name, tool_fn *tool,
                           reshape_fn *reshape)
{
    on_ws_t *o = xcalloc(1, sizeof *o);
    *o = (on_ws_t){args, name, tool, reshape};
    s_workspace(c, NULL, s_on_workspace, o);
}

void compat_create_snapshot(call_t *c, json_t *args, const tool_task_t *task)
{
    (void)task;
    json_t *a = json_pack("{s:O}", "description", json_object_get(args, "description"));
    s_in_workspace(c, a, "create_state_snapshot", create_state_snapshot_run, s_created);
}

static json_t *s_restored(const json_t *sc, int *is_error)
{
    (void)is_error;
    return json_pack("{s:b,s:O,s:O,s:O,s:s}", "success", 1, "snapshot_id",
                     json_object_get(sc, "snapshot_id"), "files_restored",
                     json_object_get(sc, "files"), "variables_restored",
                     json_object_get(sc, "restored"),
                     "message", "The workspace now holds exactly the snapshot's files, with their "
                                "modification times.");
}

void compat_restore_snapshot(call_t *c, json_t *args, const tool_task_t *task)
{
    (void)task;
    json_t *a = json_pack("{s:O}", "snapshot_id", json_object_get(args, "snapshot_id"));
    s_in_workspace(c, a, "restore_state_snapshot", restore_state_snapshot_run, s_restored);
}

/* Oldest first ("chronologically"); /mcp's tool lists the newest first. */
static json_t *s_listed(const json_t *sc, int *is_error)
{
    (void)is_error;
    const json_t *metas = json_object_get(sc, "snapshots");
    json_t *out = json_array();
    for (size_t i = json_array_size(metas); i-- > 0;) {
        const json_t *m = json_array_get(metas, i);
        json_array_append_new(
            out, json_pack("{s:O,s:O,s:O,s:I}", "snapshot_id", json_object_get(m, "snapshot_id"),
                           "timestamp", json_object_get(m, "created"), "description",
                           json_object_get(m, "description"), "file_count",
                           (json_int_t)json_array_size(json_object_get(m, "files"))));
    }
    return json_pack("{s:I,s:o}", "count", (json_int_t)json_array_size(out), "snapshots", out);
}

void compat_list_snapshots(call_t *c, json_t *args, const tool_task_t *task)
{
    (void)args, (void)task;
    json_t *a = json_pack("{s:i}", "limit", LIST_ALL);
    s_subcall(c, "list_state_snapshots", list_state_snapshots_run, a, s_listed);
    json_decref(a);
}

static json_t *s_deleted(const json_t *sc, int *is_error)
{
    int deleted = json_is_true(json_object_get(sc, "deleted"));
    *is_error = !deleted;
    json_t *doc = json_pack("{s:b,s:O}", "success", deleted, "snapshot_id",
                            json_object_get(sc, "snapshot_id"));
    if (!deleted) json_object_set_new(doc, "error", json_string("Snapshot not found"));
    return doc;
}

void compat_delete_snapshot(call_t *c, json_t *args, const tool_task_t *task)
{
    (void)task;
    json_t *a = json_pack("{s:O}", "snapshot_id", json_object_get(args, "snapshot_id"));
    s_subcall(c, "delete_state_snapshot", delete_state_snapshot_run, a, s_deleted);
    json_decref(a);
}
