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
#include "mcp-frontend/farm/served.h"
#include "mcp-frontend/render/proftext.h"
#include "mcp-frontend/rpc/fe.h"
#include "mcp-frontend/state/tenants.h"
#include "jobargs.h"
#include "pyscan.h"
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
        return tool_bad_arg(c, "code", "`code` is %zu bytes; the limit is %u", len, JOB_MAX_CODE);
    spec->code = xstrndup(json_string_value(code), len);
    spec->code_len = len;
    return 0;
}

/* The served profiles that allow module, joined; "none served here" when there is none. */
static void s_profiles_with(const char *module, char *out, size_t cap)
{
    size_t n = 0, count = 0;
    out[0] = '\0';
    for (size_t i = 0; i < n_profiles; i++) {
        if (!profile_allows(&profiles[i], module) || !proftext_is_served(&profiles[i])) continue;
        int w =
            snprintf(out + n, n < cap ? cap - n : 0, "%s%s", count++ ? ", " : "", profiles[i].name);
        if (w > 0) n += (size_t)w;
    }
    if (!count) snprintf(out, cap, "none served here");
}

int jobargs_names(call_t *c, json_t *args, const char *key, const profile_t *p, char ***out,
                  size_t *n)
{
    json_t *v = json_object_get(args, key);
    if (!v || json_is_null(v)) return 0;
    if (json_array_size(v) > JOB_MAX_NAMES)
        return tool_bad_arg(c, key, "`%s` has %zu names; at most %u", key, json_array_size(v),
                            JOB_MAX_NAMES);
    *out = xcalloc(json_array_size(v) + 1, sizeof **out);
    size_t i;
    json_t *e;
    json_array_foreach(v, i, e)
    {
        const char *s = json_string_value(e);
        if (!s) return tool_bad_arg(c, key, "`%s[%zu]` must be a string (a name)", key, i);
        size_t len = json_string_length(e);
        if (!len || len > JOB_MAX_NAME)
            return tool_bad_arg(c, key, "`%s[%zu]` must be 1-%u characters", key, i, JOB_MAX_NAME);
        for (size_t k = 0; k < len; k++)
            if (!(isalnum((unsigned char)s[k]) || s[k] == '_' || (p && s[k] == '.')))
                return tool_bad_arg(c, key, "`%s[%zu]` (\"%.64s\") is not a valid %s name", key, i,
                                    s, p ? "module" : "variable");
        if (p && !profile_allows(p, s)) {
            char with[512];
            s_profiles_with(s, with, sizeof with);
            return tool_bad_arg(c, key,
                                "`allowed_imports`: module '%s' is not available in profile %s "
                                "(profiles that have it: %s; get_sandbox_info lists the modules)",
                                s, p->name, with);
        }
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
        return tool_bad_arg(c, "dependencies", "`dependencies` has %zu requirements; at most %u",
                            json_array_size(v), JOB_MAX_DEPS);
    char why[320];
    json_array_foreach(v, i, e) {
        if (!json_is_string(e))
            return tool_bad_arg(
                c, "dependencies",
                "`dependencies[%zu]` must be a string, a requirement like \"pandas>=2\"", i);
        if (pep508_check(json_string_value(e), json_string_length(e), why, sizeof why) < 0)
            return tool_bad_arg(c, "dependencies", "`dependencies[%zu]` (\"%.100s\"): %s", i,
                                json_string_value(e), why);
    }
    int n = json_is_string(code) ? pep723_requirements(json_string_value(code),
                                                       json_string_length(code), reqs, MAX_DEPS)
                                 : -1;
    for (int k = 0; k < n; k++)
        if (pep508_check(reqs[k], strlen(reqs[k]), why, sizeof why) < 0)
            return tool_bad_arg(c, "code", "`code`: the script's `# /// script` block: %s", why);
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
        return tool_bad_arg(c, "figure_format", "`figure_format` must be \"png\" or \"svg\"");
    return 0;
}

/* ---- where a call runs */

/* What the code needs of a profile, read without running it: the modules it imports
 * (common/pyscan.h), the distributions its PEP 723 block and `dependencies` name, the modules
 * of allowed_imports, and a workspace when it brings files. Only names some profile has count:
 * anything else is for the node's package source (dependencies) or the sandbox's refusal
 * (imports), whatever the profile. */
typedef struct {
    char names[PYSCAN_MAX + 2 * MAX_DEPS + JOB_MAX_NAMES][PYSCAN_NAME];
    char from[PYSCAN_MAX + 2 * MAX_DEPS + JOB_MAX_NAMES]; /* 'i' import, 'd' dependency */
    size_t n;
    int workspace;
} needs_t;

static int s_in_some_profile(const char *name)
{
    for (size_t i = 0; i < n_profiles; i++)
        if (profile_allows(&profiles[i], name) || profile_provides(&profiles[i], name)) return 1;
    return 0;
}

static void s_need(needs_t *n, const char *name, char from)
{
    if (!name[0] || !s_in_some_profile(name)) return;
    for (size_t i = 0; i < n->n; i++)
        if (!strcmp(n->names[i], name)) return;
    if (n->n == sizeof n->names / sizeof n->names[0]) return;
    snprintf(n->names[n->n], PYSCAN_NAME, "%s", name);
    n->from[n->n++] = from;
}

static void s_needs(json_t *args, needs_t *n)
{
    json_t *code = json_object_get(args, "code"), *e;
    size_t i;
    char deps[MAX_DEPS][PEP723_NAME], name[PEP723_NAME];
    memset(n, 0, sizeof *n);
    if (json_is_string(code)) {
        pyscan_t *scan = xmalloc(sizeof *scan);
        pyscan(json_string_value(code), json_string_length(code), scan);
        for (i = 0; i < scan->n_modules; i++) s_need(n, scan->modules[i], 'i');
        free(scan);
        int k =
            pep723_dependencies(json_string_value(code), json_string_length(code), deps, MAX_DEPS);
        for (int d = 0; d < k; d++) s_need(n, deps[d], 'd');
    }
    json_array_foreach(json_object_get(args, "dependencies"), i, e) if (json_is_string(e))
    {
        s_req_name(json_string_value(e), name, sizeof name);
        s_need(n, name, 'd');
    }
    json_array_foreach(json_object_get(args, "allowed_imports"), i, e) if (json_is_string(e))
        s_need(n, json_string_value(e), 'i');
    json_t *files = json_object_get(args, "files");
    n->workspace = json_is_object(files) && json_object_size(files) > 0;
}

static int s_covers(const profile_t *p, const needs_t *n)
{
    if (n->workspace && !p->workspace) return 0;
    for (size_t i = 0; i < n->n; i++)
        if (!profile_allows(p, n->names[i]) && !profile_provides(p, n->names[i])) return 0;
    return 1;
}

/* The names in n (from: 'i' imports, 'd' dependencies, 0 both) that base lacks: why a larger
 * profile was chosen, or what no profile the call may use has. */
static void s_lacking(buf_t *b, const profile_t *base, const needs_t *n, char from)
{
    size_t shown = 0;
    for (size_t i = 0; i < n->n; i++) {
        if ((from && n->from[i] != from) || profile_allows(base, n->names[i]) ||
            profile_provides(base, n->names[i]))
            continue;
        if (shown == 6) {
            buf_puts(b, ", ...");
            break;
        }
        buf_printf(b, "%s%s", shown++ ? ", " : "", n->names[i]);
    }
}

static void s_cut(buf_t *b, size_t len)
{
    b->len = len;
    if (b->data) b->data[len] = '\0';
}

static void s_why_inferred(buf_t *b, const profile_t *base, const needs_t *n)
{
    static const struct {
        char from;
        const char *words;
    } kinds[] = {{'i', "imports"}, {'d', "dependencies"}};
    buf_puts(b, "inferred from ");
    size_t start = b->len;
    for (size_t k = 0; k < 2; k++) {
        size_t at = b->len;
        buf_printf(b, "%s%s ", b->len > start ? " and " : "", kinds[k].words);
        size_t names = b->len;
        s_lacking(b, base, n, kinds[k].from);
        if (b->len == names) s_cut(b, at); /* none of this kind decided */
    }
    if (n->workspace && !base->workspace)
        buf_puts(b, b->len > start ? " and files (a workspace)" : "files (a workspace)");
}

static int s_may_run(call_t *c, const profile_t *p)
{
    return tenant_allows_profile(c->tenant, p->name) && served_has(c->fe->served, p);
}

/* No profile the call may use has everything: the smallest it may use runs it (the sandbox
 * names what it refuses), and why says where the rest is. */
static const profile_t *s_fallback(call_t *c, const profile_t *first, const needs_t *n, buf_t *why)
{
    buf_puts(why, "the smallest profile you may use; none served here that you may use has ");
    size_t mark = why->len;
    s_lacking(why, first, n, 0);
    if (n->workspace && !first->workspace)
        buf_puts(why, why->len > mark ? " and a workspace for files" : "a workspace for files");
    for (size_t i = 0; i < n_profiles; i++) {
        const profile_t *p = &profiles[i];
        if (s_may_run(c, p) || !s_covers(p, n)) continue;
        buf_printf(why, " (%s has that, but %s)", p->name,
                   !tenant_allows_profile(c->tenant, p->name) ? "it is not enabled for your tenant"
                                                              : "this farm does not serve it now");
        break;
    }
    return first;
}

/* A profile the call named: and, when the code imports what it lacks, which profile has that, so
 * that the sandbox's refusal is not the model's only clue. */
static void s_why_named(call_t *c, json_t *args, const profile_t *p, char *why, size_t whylen)
{
    needs_t *n = xmalloc(sizeof *n);
    buf_t b;
    buf_init(&b);
    s_needs(args, n);
    buf_puts(&b, "named by the call");
    if (!s_covers(p, n)) {
        buf_puts(&b, "; it lacks ");
        size_t mark = b.len;
        s_lacking(&b, p, n, 0);
        if (b.len == mark) buf_puts(&b, "a workspace for files");
        for (size_t i = 0; i < n_profiles; i++)
            if (s_may_run(c, &profiles[i]) && s_covers(&profiles[i], n)) {
                buf_printf(&b, ", which %s has (leave out `profile` to run there)",
                           profiles[i].name);
                break;
            }
    }
    snprintf(why, whylen, "%s", (const char *)b.data);
    buf_free(&b);
    free(n);
}

const profile_t *jobargs_place(call_t *c, json_t *args, char *why, size_t whylen)
{
    json_t *v = json_object_get(args, "profile");
    char names[1024];
    buf_t b;
    if (json_is_string(v)) {
        const profile_t *p = profile_find(json_string_value(v));
        proftext_join(names, sizeof names, ", ", NULL);
        if (!p) {
            tool_bad_arg(c, "profile",
                         "`profile` must be one of the profiles served here (%s); got \"%.64s\". "
                         "Leave it out to run in the smallest one that has what the code imports",
                         names, json_string_value(v));
            return NULL;
        }
        if (!tenant_allows_profile(c->tenant, p->name)) {
            tool_bad_arg(c, "profile",
                         "`profile`: %s is not enabled for tenant %s (yours: %s); leave `profile` "
                         "out to run in one you may use",
                         p->name, c->tenant->name,
                         c->tenant->profiles[0] ? c->tenant->profiles : "all");
            return NULL;
        }
        if (!served_has(c->fe->served, p)) {
            tool_bad_arg(c, "profile",
                         "`profile`: %s is not served by this farm now (no executor runs it); the "
                         "profiles served: %s. Leave `profile` out to run in the smallest served "
                         "one that has what the code imports",
                         p->name, names);
            return NULL;
        }
        s_why_named(c, args, p, why, whylen);
        return p;
    }
    needs_t *n = xmalloc(sizeof *n);
    s_needs(args, n);
    const profile_t *first = NULL, *chosen = NULL;
    for (size_t i = 0; i < n_profiles && !chosen; i++) {
        const profile_t *p = &profiles[i];
        if (!s_may_run(c, p)) continue;
        if (!first) first = p;
        if (s_covers(p, n)) chosen = p;
    }
    buf_init(&b);
    if (!first) {
        proftext_join(names, sizeof names, ", ", NULL);
        tool_refuse(c, TOOL_UNAVAILABLE, NULL,
                    "no profile you may use (%s) is served by this farm now (served: %s); try "
                    "again later",
                    c->tenant->profiles[0] ? c->tenant->profiles : "all", names);
    } else if (chosen && chosen == first) {
        buf_printf(&b, "the smallest profile served%s; the code needs nothing beyond it",
                   tenant_allows_profile(c->tenant, profiles[0].name) ? "" : " that you may use");
    } else if (chosen) {
        s_why_inferred(&b, first, n);
    } else {
        chosen = s_fallback(c, first, n, &b);
    }
    if (chosen) snprintf(why, whylen, "%s", b.len ? (const char *)b.data : "");
    buf_free(&b);
    free(n);
    return chosen;
}

const profile_t *jobargs_profile(call_t *c, json_t *args)
{
    char why[JOBARGS_WHY];
    return jobargs_place(c, args, why, sizeof why);
}

/* A limit the call asked for above a maximum: lowered, and said (adjusted, when given, gets
 * {name: {requested, used, unit, why}}). */
static void s_adjusted(json_t *adjusted, const char *name, double asked, double used,
                       const char *unit, const char *why)
{
    if (!adjusted || asked <= used) return;
    json_object_set_new(
        adjusted, name,
        json_pack("{s:f,s:f,s:s,s:s}", "requested", asked, "used", used, "unit", unit, "why", why));
}

/* Which cap lowered a limit: the tenant's (its plan) or the profile's maximum. */
static const char *s_cap_why(long asked, long tenant_cap, const profile_t *p, char *buf, size_t cap)
{
    if (tenant_cap > 0 && asked > tenant_cap) return "your tenant's maximum";
    snprintf(buf, cap, "the maximum of profile %s", p->name);
    return buf;
}

/* The call's values, then the profile's defaults for what it left out, then the tenant's and
 * the profile's caps. A job's CPU budget is its wall time. */
int jobargs_limits_noted(call_t *c, json_t *args, const profile_t *p, limits_t *l, json_t *adjusted)
{
    json_t *v = json_object_get(args, "timeout");
    if (v && !json_is_null(v)) {
        if (!(json_number_value(v) > 0) || json_number_value(v) > 86400)
            return tool_bad_arg(c, "timeout",
                                "`timeout` must be a positive number of seconds (at most %ld for "
                                "profile %s); got %g",
                                p->max.wall_ms / 1000, p->name, json_number_value(v));
        l->wall_ms = (long)ceil(json_number_value(v) * 1000);
    }
    v = json_object_get(args, "memory_limit");
    if (v && !json_is_null(v) && parse_memory_mb(v, &l->memory_mb) < 0)
        return tool_bad_arg(c, "memory_limit",
                            "`memory_limit` must be MB as a positive integer or a string like "
                            "\"256m\" or \"1g\"");
    v = json_object_get(args, "output_limit");
    if (v && !json_is_null(v)) {
        if (json_integer_value(v) < 1)
            return tool_bad_arg(c, "output_limit",
                                "`output_limit` must be a positive number of bytes; got %lld",
                                (long long)json_integer_value(v));
        l->output_bytes = (long)json_integer_value(v);
    }
    limits_t asked = *l;
    limits_fill(l, &p->defaults);
    l->cpu_ms = l->wall_ms;
    limits_t tenant = tenant_limits(c->tenant);
    limits_cap(l, &tenant);
    profile_apply_limits(p, l);
    char why[96];
    if (asked.wall_ms)
        s_adjusted(adjusted, "timeout", asked.wall_ms / 1000.0, l->wall_ms / 1000.0, "s",
                   s_cap_why(asked.wall_ms, tenant.wall_ms, p, why, sizeof why));
    if (asked.memory_mb)
        s_adjusted(adjusted, "memory_limit", (double)asked.memory_mb, (double)l->memory_mb, "MB",
                   s_cap_why(asked.memory_mb, tenant.memory_mb, p, why, sizeof why));
    if (asked.output_bytes)
        s_adjusted(adjusted, "output_limit", (double)asked.output_bytes, (double)l->output_bytes,
                   "bytes", s_cap_why(asked.output_bytes, 0, p, why, sizeof why));
    return 0;
}

int jobargs_limits(call_t *c, json_t *args, const profile_t *p, limits_t *l)
{
    return jobargs_limits_noted(c, args, p, l, NULL);
}

/* One entry of files: a string, or {"content": string, "encoding": "utf-8" | "base64"}. */
static int s_file(call_t *c, const char *path, json_t *f, buf_t *data)
{
    json_t *content = json_is_object(f) ? json_object_get(f, "content") : f;
    json_t *enc = json_is_object(f) ? json_object_get(f, "encoding") : NULL;
    const char *e = enc ? json_string_value(enc) : "utf-8";
    if (!json_is_string(content) || !e || (strcmp(e, "utf-8") && strcmp(e, "base64")))
        return tool_bad_arg(c, "files",
                            "`files['%.100s']` must be a string, or {\"content\": string, "
                            "\"encoding\": \"utf-8\" | \"base64\"}",
                            path);
    if (strcmp(e, "base64") != 0) {
        buf_append(data, json_string_value(content), json_string_length(content));
        return 0;
    }
    if (base64_decode(data, json_string_value(content), json_string_length(content)) < 0)
        return tool_bad_arg(c, "files", "`files['%.100s']` is not valid base64", path);
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
        tool_bad_arg(c, "files",
                     "`files`: profile %s has no workspace for files; use one of %s (or leave out "
                     "`profile`: a call with files runs in one)",
                     p->name, with);
        free(with);
        return -1;
    }
    if (json_object_size(v) > JOB_MAX_FILES)
        return tool_bad_arg(c, "files", "`files` has %zu entries; at most %u", json_object_size(v),
                            JOB_MAX_FILES);
    spec->files = xcalloc(json_object_size(v), sizeof *spec->files);
    size_t total = 0;
    const char *path;
    json_t *f;
    json_object_foreach(v, path, f)
    {
        char err[200];
        if (jobspec_check_path(path, err, sizeof err) < 0)
            return tool_bad_arg(c, "files", "`files`: %s", err);
        buf_t data;
        buf_init(&data);
        if (s_file(c, path, f, &data) < 0) {
            buf_free(&data);
            return -1;
        }
        total += data.len;
        if (data.len > JOB_MAX_FILE || total > FILES_MAX_BYTES) {
            buf_free(&data);
            return tool_bad_arg(c, "files",
                                "`files`: '%.100s' makes the files too large (at most %u bytes "
                                "in all)",
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
    if (!json_is_false(v)) tenant_egress_spec(c->tenant, &spec->egress);
    return 0;
}
