/* mcp-frontend/tools/jobargs.c — see jobargs.h. */
#define _GNU_SOURCE
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base64.h"
#include "common/buf.h"
#include "common/pep508.h"
#include "common/pep723.h"
#include "mcp-frontend/render/proftext.h"
#include "jobargs.h"
#include "tools.h"
#include "units.h"

/* All input files, decoded. The JobSpec must fit the 8 MiB job area, and over HTTP the whole
 * request (base64 is 4/3 of its data) the 4 MiB body limit: what the description promises must
 * get through (tests/integration/test_fe_protocol.py). */
#define FILES_MAX_BYTES (3u << 20)
#define MAX_DEPS        32

int jobargs_code(call_t *c, json_t *args, jobspec_t *spec)
{
    json_t *code = json_object_get(args, "code");
    size_t len = json_string_length(code);
    if (len > JOB_MAX_CODE)
        return tool_bad(c, "code is %zu bytes; the limit is %u", len, JOB_MAX_CODE);
    spec->code = xstrndup(json_string_value(code), len);
    spec->code_len = len;
    return 0;
}

int jobargs_names(call_t *c, json_t *args, const char *key, const profile_t *p, char ***out,
                  size_t *n)
{
    json_t *v = json_object_get(args, key);
    if (!v || json_is_null(v)) return 0;
    if (json_array_size(v) > JOB_MAX_NAMES)
        return tool_bad(c, "%s has more than %u names", key, JOB_MAX_NAMES);
    *out = xcalloc(json_array_size(v) + 1, sizeof **out);
    size_t i;
    json_t *e;
    json_array_foreach(v, i, e)
    {
        const char *s = json_string_value(e);
        if (!s) return tool_bad(c, "%s[%zu] must be a string", key, i);
        size_t len = json_string_length(e);
        if (!len || len > JOB_MAX_NAME)
            return tool_bad(c, "%s[%zu] must be 1-%u characters", key, i, JOB_MAX_NAME);
        for (size_t k = 0; k < len; k++)
            if (!(isalnum((unsigned char)s[k]) || s[k] == '_' || (p && s[k] == '.')))
                return tool_bad(c, "%s[%zu] is not a valid %s name", key, i,
                                p ? "module" : "variable");
        if (p && !profile_allows(p, s))
            return tool_bad(c,
                            "allowed_imports: module '%s' is not available in profile %s (see "
                            "get_sandbox_info)",
                            s, p->name);
        (*out)[(*n)++] = xstrndup(s, len);
    }
    return 0;
}

/* The distribution name a requirement string starts with (PEP 508), into out. */
static void s_req_name(const char *req, char *out, size_t cap)
{
    size_t o = 0;
    while (*req == ' ') req++;
    for (; *req && o + 1 < cap && (isalnum((unsigned char)*req) || strchr("._-", *req)); req++)
        out[o++] = *req;
    out[o] = '\0';
}

static int s_any_profile_provides(const char *name)
{
    for (size_t i = 0; i < n_profiles; i++)
        if (profile_provides(&profiles[i], name)) return 1;
    return 0;
}

/* A call without a profile whose code has a PEP 723 block, or that gives `dependencies`, runs
 * in the first profile, in table order, that the tenant may use and that has installed every
 * dependency some profile has (distribution names: scikit-learn is sklearn's, pillow PIL's,
 * common/profiles.c); what no profile has is left to the node's package source. Else in the
 * default, where the executor names what is missing. */
static const char *s_pep723_profile(call_t *c, json_t *args)
{
    json_t *code = json_object_get(args, "code"), *extra = json_object_get(args, "dependencies"), *e;
    char deps[2 * MAX_DEPS][PEP723_NAME];
    int n = json_is_string(code) ? pep723_dependencies(json_string_value(code),
                                                       json_string_length(code), deps, MAX_DEPS)
                                 : -1;
    size_t i;
    if (n < 0) n = 0;
    json_array_foreach(extra, i, e)
        if (json_is_string(e) && n < 2 * MAX_DEPS) s_req_name(json_string_value(e), deps[n++], PEP723_NAME);
    for (i = 0; n > 0 && i < n_profiles; i++) {
        const profile_t *p = &profiles[i];
        int all = tenant_allows_profile(c->tenant, p->name);
        for (int k = 0; k < n && all; k++)
            all = profile_provides(p, deps[k]) || !s_any_profile_provides(deps[k]);
        if (all) return p->name;
    }
    return profile_default()->name;
}

static void s_add_dep(jobspec_t *spec, const char *req, size_t len)
{
    for (size_t k = 0; k < spec->n_dependencies; k++)
        if (strlen(spec->dependencies[k]) == len && !memcmp(spec->dependencies[k], req, len)) return;
    if (spec->n_dependencies < JOB_MAX_DEPS) spec->dependencies[spec->n_dependencies++] = xstrndup(req, len);
}

int jobargs_dependencies(call_t *c, json_t *args, jobspec_t *spec)
{
    json_t *v = json_object_get(args, "dependencies"), *code = json_object_get(args, "code"), *e;
    char reqs[MAX_DEPS][PEP723_REQ];
    size_t i;
    if (json_array_size(v) > JOB_MAX_DEPS)
        return tool_bad(c, "dependencies has more than %u requirements", JOB_MAX_DEPS);
    char why[320];
    json_array_foreach(v, i, e) {
        if (!json_is_string(e))
            return tool_bad(c, "dependencies[%zu] must be a string, a requirement like \"pandas>=2\"", i);
        if (pep508_check(json_string_value(e), json_string_length(e), why, sizeof why) < 0)
            return tool_bad(c, "dependencies[%zu]: %s", i, why);
    }
    int n = json_is_string(code) ? pep723_requirements(json_string_value(code),
                                                       json_string_length(code), reqs, MAX_DEPS)
                                 : -1;
    for (int k = 0; k < n; k++)
        if (pep508_check(reqs[k], strlen(reqs[k]), why, sizeof why) < 0)
            return tool_bad(c, "the script's `# /// script` block: %s", why);
    spec->dependencies = xcalloc(JOB_MAX_DEPS, sizeof *spec->dependencies);
    for (int k = 0; k < n; k++) s_add_dep(spec, reqs[k], strlen(reqs[k]));
    json_array_foreach(v, i, e) s_add_dep(spec, json_string_value(e), json_string_length(e));
    if (!spec->n_dependencies) {
        free(spec->dependencies);
        spec->dependencies = NULL;
    }
    v = json_object_get(args, "figure_format");
    if (json_is_string(v) && !strcmp(json_string_value(v), "svg")) spec->figure_format = FIGURES_SVG;
    else if (v && !json_is_null(v) && !(json_is_string(v) && !strcmp(json_string_value(v), "png")))
        return tool_bad(c, "figure_format must be \"png\" or \"svg\"");
    return 0;
}

const profile_t *jobargs_profile(call_t *c, json_t *args)
{
    json_t *v = json_object_get(args, "profile");
    const char *name = json_is_string(v) ? json_string_value(v) : s_pep723_profile(c, args);
    const profile_t *p = profile_find(name);
    if (!p) {
        char names[1024];
        profiles_join(names, sizeof names, ", ", NULL);
        tool_bad(c, "unknown profile '%.64s' (available: %s)", name, names);
        return NULL;
    }
    if (!tenant_allows_profile(c->tenant, p->name)) {
        tool_bad(c, "profile %s is not enabled for tenant %s", p->name, c->tenant->name);
        return NULL;
    }
    return p;
}

/* The call's values, then the profile's defaults for what it left out, then the tenant's and
 * the profile's caps. A job's CPU budget is its wall time. */
int jobargs_limits(call_t *c, json_t *args, const profile_t *p, limits_t *l)
{
    json_t *v = json_object_get(args, "timeout");
    if (v && !json_is_null(v)) {
        if (!(json_number_value(v) > 0) || json_number_value(v) > 86400)
            return tool_bad(c, "timeout must be a positive number of seconds");
        l->wall_ms = (long)ceil(json_number_value(v) * 1000);
    }
    v = json_object_get(args, "memory_limit");
    if (v && !json_is_null(v) && parse_memory_mb(v, &l->memory_mb) < 0)
        return tool_bad(
            c, "memory_limit must be MB as a positive integer or a string like \"256m\" or \"1g\"");
    v = json_object_get(args, "output_limit");
    if (v && !json_is_null(v)) {
        if (json_integer_value(v) < 1)
            return tool_bad(c, "output_limit must be a positive number of bytes");
        l->output_bytes = (long)json_integer_value(v);
    }
    limits_fill(l, &p->defaults);
    l->cpu_ms = l->wall_ms;
    limits_t tenant = tenant_limits(c->tenant);
    limits_cap(l, &tenant);
    profile_apply_limits(p, l);
    return 0;
}

/* One entry of files: a string, or {"content": string, "encoding": "utf-8" | "base64"}. */
static int s_file(call_t *c, const char *path, json_t *f, buf_t *data)
{
    json_t *content = json_is_object(f) ? json_object_get(f, "content") : f;
    json_t *enc = json_is_object(f) ? json_object_get(f, "encoding") : NULL;
    const char *e = enc ? json_string_value(enc) : "utf-8";
    if (!json_is_string(content) || !e || (strcmp(e, "utf-8") && strcmp(e, "base64")))
        return tool_bad(c,
                        "files['%.100s'] must be a string, or {\"content\": string, "
                        "\"encoding\": \"utf-8\" | \"base64\"}",
                        path);
    if (strcmp(e, "base64") != 0) {
        buf_append(data, json_string_value(content), json_string_length(content));
        return 0;
    }
    if (base64_decode(data, json_string_value(content), json_string_length(content)) < 0)
        return tool_bad(c, "files['%.100s'] is not valid base64", path);
    return 0;
}

/* Paths follow the executor's rule (jobspec_check_path), checked here so a bad one is an
 * argument error naming it rather than a rejected execution. */
int jobargs_files(call_t *c, json_t *args, const profile_t *p, jobspec_t *spec)
{
    json_t *v = json_object_get(args, "files");
    if (!v || json_is_null(v) || !json_object_size(v)) return 0;
    if (!p->workspace) {
        char *with = proftext("{workspace_profiles}");
        tool_bad(c, "profile %s has no workspace for files; use one of %s", p->name, with);
        free(with);
        return -1;
    }
    if (json_object_size(v) > JOB_MAX_FILES)
        return tool_bad(c, "files has more than %u entries", JOB_MAX_FILES);
    spec->files = xcalloc(json_object_size(v), sizeof *spec->files);
    size_t total = 0;
    const char *path;
    json_t *f;
    json_object_foreach(v, path, f)
    {
        char err[200];
        if (jobspec_check_path(path, err, sizeof err) < 0) return tool_bad(c, "files: %s", err);
        buf_t data;
        buf_init(&data);
        if (s_file(c, path, f, &data) < 0) {
            buf_free(&data);
            return -1;
        }
        total += data.len;
        if (data.len > JOB_MAX_FILE || total > FILES_MAX_BYTES) {
            buf_free(&data);
            return tool_bad(c,
                            "files: '%.100s' makes the files too large (at most %u bytes in all)",
                            path, FILES_MAX_BYTES);
        }
        job_file_t *jf = &spec->files[spec->n_files++];
        jf->path = xstrdup(path);
        jf->data = buf_steal(&data, &jf->len);
    }
    return 0;
}

int jobargs_egress(call_t *c, json_t *args, jobspec_t *spec)
{
    json_t *v = json_object_get(args, "network");
    if (v && !json_is_null(v) && !json_is_boolean(v))
        return tool_bad(c, "network must be true or false");
    if (json_is_false(v) || !c->tenant->egress[0]) return 0;
    size_t n = 1;
    for (const char *p = c->tenant->egress; *p; p++) n += *p == ',';
    if (n > EGRESS_MAX_RULES) n = EGRESS_MAX_RULES;
    spec->egress.rules = xcalloc(n, sizeof *spec->egress.rules);
    for (const char *p = c->tenant->egress; *p && spec->egress.n_rules < n;) {
        size_t len = strcspn(p, ",");
        while (len && (*p == ' ' || *p == '\t')) p++, len--;
        if (len) spec->egress.rules[spec->egress.n_rules++] = xstrndup(p, len);
        p += len;
        if (*p == ',') p++;
    }
    spec->egress.max_bytes = (uint64_t)c->tenant->egress_max_bytes;
    spec->egress.max_conns = (uint64_t)c->tenant->egress_max_conns;
    return 0;
}
