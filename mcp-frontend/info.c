/* mcp-frontend/info.c — get_sandbox_info and the sandbox://info resource: the profile table
 * (common/profiles.h, the same table the executor enforces, so the two cannot disagree), the
 * calling tenant's own limits, and the farm's capacity as far as this front-end knows it. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "../common/profiles.h"
#include "info.h"
#include "outcome.h"
#include "tools.h"

static json_t *s_limits(const limits_t *l)
{
    return json_pack("{s:f,s:f,s:I,s:I,s:I}", "timeout_s", (double)l->wall_ms / 1000.0, "cpu_s",
                     (double)l->cpu_ms / 1000.0, "memory_mb", (json_int_t)l->memory_mb, "output_bytes",
                     (json_int_t)l->output_bytes, "open_files", (json_int_t)l->nofile);
}

static json_t *s_profile(const profile_t *p, const tenant_t *t)
{
    json_t *mods = json_array();
    for (const char *const *m = p->modules; *m; m++) json_array_append_new(mods, json_string(*m));
    return json_pack("{s:s,s:s,s:o,s:o,s:o,s:b,s:b,s:b}", "name", p->name, "summary", p->summary, "modules", mods,
                     "default_limits", s_limits(&p->defaults), "max_limits", s_limits(&p->max), "workspace",
                     p->workspace, "figures", p->figures, "available", t ? tenant_allows_profile(t, p->name) : 1);
}

json_t *info_json(fe_t *fe, const tenant_t *t)
{
    json_t *profs = json_array();
    for (size_t i = 0; i < n_profiles; i++) json_array_append_new(profs, s_profile(&profiles[i], t));
    json_t *tenant = t ? json_pack("{s:s,s:f,s:I,s:I,s:I,s:I,s:s}", "name", t->name, "rate_per_s", t->rate,
                                   "burst", (json_int_t)t->burst, "max_concurrency", (json_int_t)t->max_concurrency,
                                   "max_timeout_s", (json_int_t)t->max_timeout_s, "max_memory_mb",
                                   (json_int_t)t->max_memory_mb, "profiles", t->profiles[0] ? t->profiles : "all")
                       : json_object();
    json_t *capacity = json_pack("{s:b,s:I}", "broker_connected", client_connected(fe->client), "jobs_in_flight",
                                 (json_int_t)idmap_size(fe->jobs));
    json_t *security = json_pack(
        "{s:s,s:[s,s,s,s,s,s,s]}", "isolation",
        "one forked CPython per execution: rlimits, namespaces, Landlock, no_new_privs, seccomp allowlist, "
        "import allowlist and audit hook",
        "blocked", "filesystem", "network", "subprocesses", "threads", "ctypes", "environment", "host signals");
    return json_pack("{s:s,s:o,s:o,s:o,s:o}", "python", "3.11", "profiles", profs, "tenant", tenant, "capacity",
                     capacity, "security", security);
}

void tool_get_sandbox_info(call_t *c, json_t *args)
{
    if (json_object_size(args)) {
        call_error(c, RPC_INVALID_PARAMS, "get_sandbox_info takes no arguments", NULL);
        return;
    }
    json_t *info = info_json(c->fe, c->session->tenant);
    char    text[512];
    snprintf(text, sizeof text,
             "%zu profile(s): default python.basic (Python 3.11, safe standard library). Your limits: "
             "timeout up to %ld s, memory up to %ld MB, %ld concurrent executions, %.3g calls/s. "
             "structuredContent has the module lists and limits.",
             n_profiles, c->session->tenant->max_timeout_s, c->session->tenant->max_memory_mb,
             c->session->tenant->max_concurrency, c->session->tenant->rate);
    call_reply(c, tool_result(text, info, 0));
}
