/* mcp-frontend/info.c — get_sandbox_info and the sandbox://info resource: the profile table
 * (common/profiles.h, the same table the executor enforces, so the two cannot disagree), the
 * calling tenant's own limits, and the farm's capacity as far as this front-end knows it. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/clock.h"

#include "../common/profiles.h"
#include "info.h"
#include "outcome.h"
#include "tools.h"

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

json_t *info_json(fe_t *fe, const tenant_t *t)
{
    json_t *profs = json_array();
    for (size_t i = 0; i < n_profiles; i++)
        json_array_append_new(profs, s_profile(&profiles[i], t));
    json_t *tenant =
        t ? json_pack("{s:s,s:f,s:I,s:I,s:I,s:I,s:s}", "name", t->name, "rate_per_s", t->rate,
                      "burst", (json_int_t)t->burst, "max_concurrency",
                      (json_int_t)t->max_concurrency, "max_timeout_s", (json_int_t)t->max_timeout_s,
                      "max_memory_mb", (json_int_t)t->max_memory_mb, "profiles",
                      t->profiles[0] ? t->profiles : "all")
          : json_object();
    json_t *capacity = json_pack("{s:b,s:I}", "broker_connected", client_connected(fe->client),
                                 "jobs_in_flight", (json_int_t)idmap_size(fe->jobs));
    json_t *security = json_pack("{s:s,s:[s,s,s,s,s,s,s]}", "isolation",
                                 "one forked CPython per execution: rlimits, namespaces, Landlock, "
                                 "no_new_privs, seccomp allowlist, "
                                 "import allowlist and audit hook",
                                 "blocked", "filesystem", "network", "subprocesses", "threads",
                                 "ctypes", "environment", "host signals");
    return json_pack("{s:s,s:o,s:o,s:o,s:o}", "python", "3.11", "profiles", profs, "tenant", tenant,
                     "capacity", capacity, "security", security);
}

/* The broker's one-second snapshot (sp:metrics:broker:<instance>, broker/metrics.c) adds
 * what only the broker knows: executors, slots, queue depth, per-service figures. */
static void s_add_snapshot(json_t *capacity, const redisReply *r)
{
    static const char *const nums[] = {"executors", "slots",   "free_slots", "queued",
                                       "inflight",  "tenants", NULL};
    for (size_t i = 0; r && r->type == REDIS_REPLY_ARRAY && i + 1 < r->elements; i += 2) {
        const redisReply *k = r->element[i], *v = r->element[i + 1];
        if (k->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING) continue;
        for (int n = 0; nums[n]; n++)
            if (!strcmp(k->str, nums[n]))
                json_object_set_new(capacity, nums[n], json_integer(strtoll(v->str, NULL, 10)));
        if (!strcmp(k->str, "services")) {
            json_t *sv = json_loads(v->str, 0, NULL);
            if (sv) json_object_set_new(capacity, "services", sv);
        } else if (!strcmp(k->str, "ts_ms")) {
            long long ts = strtoll(v->str, NULL, 10), now = (long long)clock_wall_ms();
            json_object_set_new(capacity, "snapshot_age_ms", json_integer(now > ts ? now - ts : 0));
        }
    }
}

static void s_reply_info(call_t *c, const redisReply *snapshot)
{
    json_t *info = info_json(c->fe, c->session->tenant);
    s_add_snapshot(json_object_get(info, "capacity"), snapshot);
    char text[512];
    snprintf(
        text, sizeof text,
        "%zu profile(s): default python.basic (Python 3.11, safe standard library). Your limits: "
        "timeout up to %ld s, memory up to %ld MB, %ld concurrent executions, %.3g calls/s. "
        "structuredContent has the module lists and limits.",
        n_profiles, c->session->tenant->max_timeout_s, c->session->tenant->max_memory_mb,
        c->session->tenant->max_concurrency, c->session->tenant->rate);
    call_reply(c, tool_result(text, info, 0));
}

static void s_on_snapshot(void *arg, redisReply *reply)
{
    call_t *c = arg;
    s_reply_info(c, reply);
    call_release(c);
}

void tool_get_sandbox_info(call_t *c, json_t *args)
{
    if (json_object_size(args)) {
        call_error(c, RPC_INVALID_PARAMS, "get_sandbox_info takes no arguments", NULL);
        return;
    }
    call_hold(c);
    if (store_queryf(c->fe->store, s_on_snapshot, c, "HGETALL sp:metrics:broker:%s",
                     c->fe->conf.broker_instance) < 0) {
        s_reply_info(c, NULL); /* without Redis: what this front-end knows */
        call_release(c);
    }
}
