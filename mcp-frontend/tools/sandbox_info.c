/* mcp-frontend/tools/sandbox_info.c — see sandbox_info.h. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/profiles.h"
#include "mcp-frontend/farm/jobs.h"
#include "mcp-frontend/farm/served.h"
#include "mcp-frontend/render/outcome.h"
#include "mcp-frontend/render/proftext.h"
#include "mcp-frontend/rpc/fe.h"
#include "mcp-frontend/rpc/jsonrpc.h"
#include "mcp-frontend/state/store.h"
#include "sandbox_info.h"

static json_t *s_limits(const limits_t *l)
{
    return json_pack("{s:f,s:f,s:I,s:I,s:I}", "timeout_s", (double)l->wall_ms / 1000.0, "cpu_s",
                     (double)l->cpu_ms / 1000.0, "memory_mb", (json_int_t)l->memory_mb,
                     "output_bytes", (json_int_t)l->output_bytes, "open_files",
                     (json_int_t)l->nofile);
}

static json_t *s_profile(const profile_t *p, const tenant_t *t)
{
    json_t *mods = json_array();
    for (const char *const *m = p->modules; *m; m++) json_array_append_new(mods, json_string(*m));
    return json_pack("{s:s,s:s,s:o,s:o,s:o,s:b,s:b,s:b}", "name", p->name, "summary", p->summary,
                     "modules", mods, "default_limits", s_limits(&p->defaults), "max_limits",
                     s_limits(&p->max), "workspace", p->workspace, "figures", p->figures,
                     "available", t ? tenant_allows_profile(t, p->name) : 1);
}

/* What sessions are and what the tenant may keep of them. */
static json_t *s_sessions(const tenant_t *t)
{
    json_t *o = json_pack(
        "{s:s,s:[s,s,s,s,s,s,s,s],s:s,s:I,s:s,s:s}", "what",
        "a sandboxed interpreter kept alive for you: execute_code with session_id runs its next "
        "cell, and globals, imports, figures and workspace files persist",
        "tools", "create_session", "fork_session", "close_session", "list_sessions",
        "create_state_snapshot", "restore_state_snapshot", "list_state_snapshots",
        "delete_state_snapshot", "resource", "sandbox://sessions/{id}", "fork_depth",
        (json_int_t)15, "timeouts",
        "a cell past its timeout gets KeyboardInterrupt and the session lives on; one that does "
        "not stop within a grace is killed with its session",
        "ends",
        "closed; idle past idle_timeout; a cell over the session's memory_limit; the "
        "least recently used idle ones when a node runs short of memory; its node's loss (save "
        "snapshots: they outlive nodes)");
    json_object_set_new(
        o, "snapshots",
        json_pack("{s:I,s:I,s:s}", "max_variables_mb", (json_int_t)4, "max_files_mb", (json_int_t)8,
                  "holds",
                  "workspace files (path, size, mtime, SHA-256, content) and "
                  "picklable variables; what cannot be pickled is listed with why"));
    if (t)
        json_object_set_new(o, "your_limits",
                            json_pack("{s:I,s:I,s:I,s:I,s:I,s:I}", "max_sessions",
                                      (json_int_t)t->max_sessions, "max_session_memory_mb",
                                      (json_int_t)t->max_session_memory_mb, "max_idle_timeout_s",
                                      (json_int_t)t->max_idle_timeout_s, "max_snapshots",
                                      (json_int_t)t->max_snapshots, "max_snapshot_mb",
                                      (json_int_t)t->max_snapshot_mb, "session_retention_s",
                                      (json_int_t)t->session_retention_s));
    return o;
}

/* The tenant's own network: its rules as an operator set them, or why it has none. */
static json_t *s_egress(const tenant_t *t)
{
    json_t *rules = json_array();
    for (const char *p = t->egress; *p;) {
        size_t len = strcspn(p, ",");
        if (len) json_array_append_new(rules, json_stringn(p, len));
        p += len;
        if (*p == ',') p++;
    }
    json_t *o = json_pack(
        "{s:o,s:s}", "rules", rules, "how",
        json_array_size(rules)
            ? "HTTP and HTTPS through the proxy in HTTP_PROXY/HTTPS_PROXY (urllib, requests, "
              "httpx and pip use it), TCP to an allowed host:port with socket.create_connection "
              "or asyncio.open_connection; names are resolved outside the sandbox; loopback, "
              "private, link-local and metadata addresses and the farm's own endpoints are "
              "refused unless a rule names the exact address (the farm's never); a call may "
              "pass network: false"
            : "no network: an operator grants destinations with `snakepit tenant set NAME "
              "--egress HOST[:PORT]` (also *.domain and CIDR[:PORT])");
    if (t->egress_max_bytes)
        json_object_set_new(o, "max_bytes_per_job", json_integer(t->egress_max_bytes));
    if (t->egress_max_conns)
        json_object_set_new(o, "max_connections_per_job", json_integer(t->egress_max_conns));
    return o;
}

/* What the farm serves, as far as the tenant needs to know: whether calls can reach it, and
 * which profiles run now. */
static json_t *s_capacity(fe_t *fe)
{
    json_t *served = json_array();
    for (size_t i = 0; i < n_profiles; i++)
        if (served_has(fe->served, &profiles[i]))
            json_array_append_new(served, json_string(profiles[i].name));
    return json_pack("{s:b,s:o,s:b}", "broker_connected", jobs_broker_connected(fe->jobs),
                     "profiles_served", served, "served_known", served_mask(fe->served) != 0);
}

static json_t *s_info(fe_t *fe, const tenant_t *t)
{
    json_t *profs = json_array();
    for (size_t i = 0; i < n_profiles; i++)
        if (served_has(fe->served, &profiles[i]))
            json_array_append_new(profs, s_profile(&profiles[i], t));
    json_t *tenant =
        t ? json_pack("{s:s,s:f,s:I,s:I,s:I,s:I,s:s}", "name", t->name, "rate_per_s", t->rate,
                      "burst", (json_int_t)t->burst, "max_concurrency",
                      (json_int_t)t->max_concurrency, "max_timeout_s", (json_int_t)t->max_timeout_s,
                      "max_memory_mb", (json_int_t)t->max_memory_mb, "profiles",
                      t->profiles[0] ? t->profiles : "all")
          : json_object();
    if (t) json_object_set_new(tenant, "egress", s_egress(t));
    json_t *security = json_pack("{s:s,s:[s,s,s,s,s,s,s]}", "isolation",
                                 "one forked CPython per execution: rlimits, namespaces, Landlock, "
                                 "no_new_privs, seccomp allowlist, "
                                 "import allowlist and audit hook",
                                 "blocked", "filesystem", "network", "subprocesses", "threads",
                                 "ctypes", "environment", "host signals");
    json_t *info = json_pack("{s:s,s:o,s:o,s:o,s:o}", "python", "3.11", "profiles", profs, "tenant",
                             tenant, "capacity", s_capacity(fe), "security", security);
    json_object_set_new(info, "sessions", s_sessions(t));
    return info;
}

/* sp:profiles (executor-node/node/snapshot.c): per profile, the Python version and the packages
 * with their versions as the executors found them. Entries no executor refreshed for two minutes
 * are left out: nobody serves that profile now. */
static void s_add_packages(json_t *profs, const redisReply *r)
{
    long long now = (long long)clock_wall_ms();
    for (size_t i = 0; r && r->type == REDIS_REPLY_ARRAY && i + 1 < r->elements; i += 2) {
        const redisReply *k = r->element[i], *v = r->element[i + 1];
        if (k->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING) continue;
        json_t *entry = json_loads(v->str, 0, NULL);
        json_t *pkgs = json_object_get(entry, "packages");
        json_t *upd = json_object_get(entry, "updated_ms");
        size_t idx;
        json_t *p;
        if (json_is_object(pkgs) && json_is_integer(upd) && now - json_integer_value(upd) < 120000)
            json_array_foreach(profs, idx, p)
            {
                const char *name = json_string_value(json_object_get(p, "name"));
                if (!name || strcmp(name, k->str) != 0) continue;
                json_object_set(p, "packages", pkgs);
                json_t *py = json_object_get(entry, "python");
                if (json_is_string(py)) json_object_set(p, "python", py);
            }
        json_decref(entry);
    }
}

typedef struct {
    call_t *c;
    json_t *info;
    int resource; /* 1: resources/read sandbox://info; 0: the get_sandbox_info tool */
} info_req_t;

static void s_finish(info_req_t *q)
{
    call_t *c = q->c;
    if (q->resource) {
        char *text = json_text(q->info, JSON_COMPACT);
        call_reply(c, json_pack("{s:[{s:s,s:s,s:s}]}", "contents", "uri", "sandbox://info",
                                "mimeType", "application/json", "text", text ? text : "{}"));
        free(text);
        json_decref(q->info);
    } else {
        const tenant_t *t = c->tenant;
        buf_t text;
        buf_init(&text);
        size_t n = json_array_size(json_object_get(q->info, "profiles"));
        buf_printf(&text, "%zu profile%s served: ", n, n == 1 ? "" : "s");
        proftext_expand(&text, "{profile_summaries}");
        buf_printf(&text,
                   ".\nWithout `profile`, execute_code runs code in the smallest of these that has "
                   "every module it imports.\nYour limits: timeout up to %ld s, memory up to %ld "
                   "MB, %ld concurrent executions, %.3g calls/s (burst %ld), profiles: %s.\n"
                   "Network: %s%s.\n"
                   "structuredContent has each profile's modules, package versions and limits; "
                   "get_usage shows what you used.",
                   t->max_timeout_s, t->max_memory_mb, t->max_concurrency, t->rate, t->burst,
                   t->profiles[0] ? t->profiles : "all",
                   t->egress[0] ? "your egress policy allows " : "none (no egress policy)",
                   t->egress);
        call_reply(c, tool_result((const char *)text.data, q->info, 0));
        buf_free(&text);
    }
    free(q);
    call_release(c);
}

static void s_on_profiles(void *arg, redisReply *reply)
{
    info_req_t *q = arg;
    s_add_packages(json_object_get(q->info, "profiles"), reply);
    s_finish(q);
}

void sandbox_info_request(call_t *c, int resource)
{
    info_req_t *q = xcalloc(1, sizeof *q);
    q->c = c;
    q->info = s_info(c->fe, c->tenant);
    q->resource = resource;
    call_hold(c);
    if (store_queryf(c->fe->store, s_on_profiles, q, "HGETALL sp:profiles") < 0)
        s_finish(q); /* without Redis: what this front-end knows */
}

void sandbox_info_run(call_t *c, json_t *args, const tool_task_t *task)
{
    (void)args, (void)task; /* the row takes no arguments and no tasks */
    sandbox_info_request(c, 0);
}
