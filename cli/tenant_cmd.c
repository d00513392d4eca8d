/* cli/tenant_cmd.c — `snakepit tenant add|set|list|show|rotate-key|remove`: one row per verb.
 * Quotas are checked before they are stored: a tenant whose profiles do not exist, or whose
 * rate the front-end would not read, would otherwise fail every call it makes. Exit status:
 * 0 done, 1 the tenant is missing (or exists, for add), 64 usage, 69 Redis not reachable. */
#define _GNU_SOURCE
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "common/config.h"
#include "proto/egress_rule.h"
#include "common/profiles.h"
#include "proto/wire.h"
#include "cli/farm/farm.h"
#include "tenant.h"

/* the range the front-end reads a stored rate in (mcp-frontend/state/tenants.c) */
#define RATE_MIN 0.001
#define RATE_MAX 1e6

typedef struct {
    char state_dir[PATH_MAX];
    char redis[PATH_MAX + 16];
    tenant_quota_t q; /* as given: empty or 0 where a flag was not */
    int json;
} tenant_args_t;

static const cfg_opt_t s_opts[] = {
    CFG_OPT_STR(tenant_args_t, state_dir, "state-dir", "DIR", "farm state directory"),
    CFG_OPT_STR(tenant_args_t, redis, "redis", "URL",
                "the farm's Redis (default: the state directory's farm, else the installed "
                "farm's, from /etc/snakepit/mcp.conf)"),
    CFG_OPT_STR(tenant_args_t, q.rate, "rate", "R", "requests per second (e.g. 10, 0.5, or 10/s)"),
    CFG_OPT_INT(tenant_args_t, q.burst, "burst", 1, 1000000, "B",
                "requests allowed at once above the rate"),
    CFG_OPT_INT(tenant_args_t, q.max_concurrency, "max-concurrency", 1, 100000, "C",
                "jobs running at once"),
    CFG_OPT_INT(tenant_args_t, q.max_timeout_s, "max-timeout", 1, 3600, "S",
                "longest timeout a call may ask (at most its profiles' longest)"),
    CFG_OPT_INT(tenant_args_t, q.max_memory_mb, "max-memory", 16, 1 << 20, "MB",
                "most memory a call may ask (at most its profiles' most)"),
    CFG_OPT_LIST(tenant_args_t, q.profiles, "profiles", "LIST",
                 "profiles it may use (default and \"all\": every one)"),
    CFG_OPT_INT(tenant_args_t, q.record_ttl_s, "record-ttl", 60, 86400L * 3650, "S",
                "how long its execution records are kept (default: the front-end's "
                "--record-ttl-s, 7 days)"),
    CFG_OPT_INT(tenant_args_t, q.record_max, "record-max", 1, 100000000, "N",
                "how many of its execution records are kept, the oldest deleted first (default: "
                "the front-end's --record-max, 10000)"),
    CFG_OPT_INT(tenant_args_t, q.max_sessions, "max-sessions", 1, 100000, "N",
                "sandbox sessions open at once (default: the front-end's, 8)"),
    CFG_OPT_INT(tenant_args_t, q.max_session_memory_mb, "max-session-memory", 16, 1 << 24, "MB",
                "memory limits of its open sessions together (default: the front-end's, 4096)"),
    CFG_OPT_INT(tenant_args_t, q.max_idle_timeout_s, "max-idle-timeout", 1, 7 * 86400, "S",
                "longest idle timeout a session may ask (default: the front-end's, 3600)"),
    CFG_OPT_INT(tenant_args_t, q.max_snapshots, "max-snapshots", 1, 100000, "N",
                "state snapshots kept (default: the front-end's, 32)"),
    CFG_OPT_INT(tenant_args_t, q.max_snapshot_mb, "max-snapshot-mb", 1, 1 << 20, "MB",
                "bytes of its snapshots together (default: the front-end's, 256)"),
    CFG_OPT_INT(tenant_args_t, q.session_retention_s, "session-retention", 0, 366L * 86400, "S",
                "how long a session its node freed (idle past its timeout, memory pressure, a "
                "drain) stays resumable from its checkpoint; 0: such sessions end instead "
                "(default: the front-end's, 86400)"),
    CFG_OPT_INT(tenant_args_t, q.max_listen_streams, "max-listen-streams", 1, 1000000, "N",
                "subscriptions/listen streams open at once, on every front-end together "
                "(default: the front-end's, 64)"),
    CFG_OPT_INT(tenant_args_t, q.max_sse_streams, "max-sse-streams", 1, 1000000, "N",
                "legacy sessions' GET streams open at once, on every front-end together "
                "(default: the front-end's, 64)"),
    CFG_OPT_INT(tenant_args_t, q.max_tasks, "max-tasks", 1, 1000000, "N",
                "tasks running at once, on every front-end together (default: the "
                "front-end's, 256)"),
    CFG_OPT_INT(tenant_args_t, q.max_linked_mb, "max-linked-mb", 1, 1 << 20, "MB",
                "large files its executions wrote, kept in Redis for resources/read (as links, "
                "for --file-ttl-s), their bytes together; past it a file comes back with a note "
                "instead (default: the front-end's, 64)"),
    CFG_OPT_INT(tenant_args_t, q.max_linked_files, "max-linked-files", 1, 1000000, "N",
                "how many such linked files (default: the front-end's, 256)"),
    CFG_OPT_LIST(tenant_args_t, q.egress, "egress", "RULE",
                 "a destination its jobs may reach over the network: HOST[:PORT], *.DOMAIN[:PORT], "
                 "ADDR[:PORT] or CIDR[:PORT] ([IPv6]:PORT); repeat for more; on set, the rules "
                 "given replace the stored ones (default: none, no network)"),
    CFG_OPT_BOOL(tenant_args_t, q.no_egress, "no-egress", "remove every egress rule: no network"),
    CFG_OPT_INT(tenant_args_t, q.egress_max_bytes, "egress-max-bytes", 1, 1L << 40, "BYTES",
                "a job's network bytes, in and out together, at most; past it the job ends "
                "egress_limit (default: the executor's, 256 MiB)"),
    CFG_OPT_INT(tenant_args_t, q.egress_max_conns, "egress-max-conns", 1, 65536, "N",
                "a job's network connections, at most (default: the executor's, 256)"),
    CFG_OPT_BOOL(tenant_args_t, json, "json", "print JSON"),
    CFG_OPT_END,
};

static const char *s_usage =
    "snakepit tenant add NAME [--rate R/s] [--burst B] [--max-concurrency C] [--max-timeout S]\n"
    "                         [--max-memory MB] [--profiles a,b] [--record-ttl S] [--record-max N]\n"
    "                         [--max-sessions N] [--max-session-memory MB] [--max-idle-timeout S]\n"
    "                         [--max-snapshots N] [--max-snapshot-mb MB] [--session-retention S]\n"
    "                         [--max-listen-streams N] [--max-sse-streams N] [--max-tasks N]\n"
    "                         [--max-linked-mb MB] [--max-linked-files N]\n"
    "                         [--egress RULE ... | --no-egress] [--egress-max-bytes B]\n"
    "                         [--egress-max-conns N]\n"
    "       snakepit tenant set NAME [the same options: only those given change]\n"
    "       snakepit tenant list\n"
    "       snakepit tenant show NAME\n"
    "       snakepit tenant rotate-key NAME\n"
    "       snakepit tenant remove NAME\n"
    "       (each takes --state-dir DIR or --redis URL, and --json)";

/* ---- checking quotas ---------------------------------------------------------------------- */

/* --profiles: each one known, "all" for every one (stored empty). */
static int s_check_profiles(tenant_quota_t *q, char *err, size_t errlen)
{
    char list[sizeof q->profiles], names[512];
    snprintf(list, sizeof list, "%s", q->profiles);
    if (strcmp(list, "all") == 0) {
        q->profiles[0] = '\0';
        return 0;
    }
    for (char *save = NULL, *p = strtok_r(list, ",", &save); p; p = strtok_r(NULL, ",", &save))
        if (!profile_find(p)) {
            profiles_join(names, sizeof names, ", ", NULL);
            snprintf(err, errlen, "--profiles: no profile '%.64s' (profiles: %.300s, or all)", p,
                     names);
            return -1;
        }
    return 0;
}

/* The most a call may get in any of the tenant's profiles. */
static limits_t s_profiles_max(const tenant_quota_t *q)
{
    limits_t most = {0};
    for (size_t i = 0; i < n_profiles; i++) {
        char padded[sizeof q->profiles + 2], name[80];
        snprintf(padded, sizeof padded, ",%s,", q->profiles);
        snprintf(name, sizeof name, ",%s,", profiles[i].name);
        if (q->profiles[0] && !strstr(padded, name)) continue;
        if (profiles[i].max.wall_ms > most.wall_ms) most.wall_ms = profiles[i].max.wall_ms;
        if (profiles[i].max.memory_mb > most.memory_mb) most.memory_mb = profiles[i].max.memory_mb;
    }
    return most;
}

/* --egress: every rule one the egress process reads, stored as it would write it back. */
static int s_check_egress(tenant_quota_t *q, char *err, size_t errlen)
{
    egress_rule_t *rules;
    size_t n;
    if (egress_rules_parse(q->egress, &rules, &n, err, errlen) < 0) return -1;
    char out[sizeof q->egress] = "";
    size_t len = 0;
    for (size_t i = 0; i < n; i++) {
        char one[EGRESS_MAX_RULE + 16];
        egress_rule_format(&rules[i], one, sizeof one);
        int w = snprintf(out + len, sizeof out - len, "%s%s", i ? "," : "", one);
        if (w < 0 || (size_t)w >= sizeof out - len) {
            snprintf(err, errlen, "--egress: the rules take more than %zu bytes", sizeof out - 1);
            free(rules);
            return -1;
        }
        len += (size_t)w;
    }
    free(rules);
    snprintf(q->egress, sizeof q->egress, "%s", out);
    return 0;
}

/* The whole quota, as it will be stored: the rate a number the front-end reads, the profiles
 * known, the egress rules ones the executor reads, and no limit above what its profiles can
 * give (it could never be used). */
static int s_check(tenant_quota_t *q, char *err, size_t errlen)
{
    if (s_check_egress(q, err, errlen) < 0) return -1;
    size_t rl = strlen(q->rate);
    if (rl > 2 && strcmp(q->rate + rl - 2, "/s") == 0) q->rate[rl - 2] = '\0';
    char *end;
    double rate = strtod(q->rate, &end);
    if (end == q->rate || *end || !(rate >= RATE_MIN && rate <= RATE_MAX)) {
        snprintf(err, errlen, "--rate: '%s' is not a number of requests per second from %g to %.0f",
                 q->rate, RATE_MIN, RATE_MAX);
        return -1;
    }
    if (s_check_profiles(q, err, errlen) < 0) return -1;
    limits_t most = s_profiles_max(q);
    if (q->max_timeout_s * 1000 > most.wall_ms) {
        snprintf(err, errlen, "--max-timeout %ld: its profiles allow at most %ld s",
                 q->max_timeout_s, most.wall_ms / 1000);
        return -1;
    }
    if (q->max_memory_mb > most.memory_mb) {
        snprintf(err, errlen, "--max-memory %ld: its profiles allow at most %ld MB",
                 q->max_memory_mb, most.memory_mb);
        return -1;
    }
    return 0;
}

/* Fields given on the command line replace those of base. */
static void s_merge(tenant_quota_t *base, const tenant_quota_t *given)
{
    if (given->rate[0]) snprintf(base->rate, sizeof base->rate, "%s", given->rate);
    if (given->burst) base->burst = given->burst;
    if (given->max_concurrency) base->max_concurrency = given->max_concurrency;
    if (given->max_timeout_s) base->max_timeout_s = given->max_timeout_s;
    if (given->max_memory_mb) base->max_memory_mb = given->max_memory_mb;
    if (given->profiles[0]) snprintf(base->profiles, sizeof base->profiles, "%s", given->profiles);
    if (given->record_ttl_s) base->record_ttl_s = given->record_ttl_s;
    if (given->record_max) base->record_max = given->record_max;
    /* the session quotas: 0 is "not given", and what is stored stays */
    if (given->max_sessions) base->max_sessions = given->max_sessions;
    if (given->max_session_memory_mb) base->max_session_memory_mb = given->max_session_memory_mb;
    if (given->max_idle_timeout_s) base->max_idle_timeout_s = given->max_idle_timeout_s;
    if (given->max_snapshots) base->max_snapshots = given->max_snapshots;
    if (given->max_snapshot_mb) base->max_snapshot_mb = given->max_snapshot_mb;
    if (given->session_retention_s >= 0) base->session_retention_s = given->session_retention_s;
    if (given->max_listen_streams) base->max_listen_streams = given->max_listen_streams;
    if (given->max_sse_streams) base->max_sse_streams = given->max_sse_streams;
    if (given->max_tasks) base->max_tasks = given->max_tasks;
    if (given->max_linked_mb) base->max_linked_mb = given->max_linked_mb;
    if (given->max_linked_files) base->max_linked_files = given->max_linked_files;
    /* the network: --egress replaces the rules, --no-egress removes them */
    if (given->egress[0]) snprintf(base->egress, sizeof base->egress, "%s", given->egress);
    if (given->no_egress) base->egress[0] = '\0';
    if (given->egress_max_bytes) base->egress_max_bytes = given->egress_max_bytes;
    if (given->egress_max_conns) base->egress_max_conns = given->egress_max_conns;
}

/* ---- the verbs ---------------------------------------------------------------------------- */

typedef struct {
    redisContext *redis;
    const tenant_args_t *args;
    const char *name;
} verb_t;

static int s_print_key(const verb_t *v, const char *key)
{
    if (v->args->json) {
        json_t *o = json_pack("{s:s, s:s}", "tenant", v->name, "api_key", key);
        char *text = json_dumps(o, JSON_COMPACT);
        printf("%s\n", text ? text : "{}");
        free(text);
        json_decref(o);
    } else {
        printf("%s\n", key);
        fprintf(stderr, "tenant %s: new API key printed above; it is shown only once\n", v->name);
    }
    return 0;
}

/* Stores q with a fresh key (replacing the old one) and prints it. */
static int s_store_new_key(const verb_t *v, const tenant_quota_t *q, const char *verb)
{
    char key[68], err[512];
    tenant_new_key(key);
    int rc = tenant_store(v->redis, v->name, q, key, err, sizeof err);
    if (rc < 0)
        fprintf(stderr, "snakepit tenant %s: %s\n", verb, err);
    else
        s_print_key(v, key);
    explicit_bzero(key, sizeof key);
    return rc < 0 ? 1 : 0;
}

static int s_missing(const verb_t *v, const char *verb)
{
    if (tenant_exists(v->redis, v->name)) return 0;
    fprintf(stderr, "snakepit tenant %s: no tenant '%s'\n", verb, v->name);
    return 1;
}

static int s_add(const verb_t *v)
{
    if (tenant_exists(v->redis, v->name)) {
        fprintf(stderr,
                "snakepit tenant add: tenant '%s' already exists (tenant set changes its "
                "quotas, rotate-key its key)\n",
                v->name);
        return 1;
    }
    tenant_quota_t q;
    char err[512];
    tenant_quota_defaults(&q);
    s_merge(&q, &v->args->q);
    if (s_check(&q, err, sizeof err) < 0) {
        fprintf(stderr, "snakepit tenant add: %s\n", err);
        return EX_USAGE;
    }
    return s_store_new_key(v, &q, "add");
}

static int s_show(const verb_t *v);

static int s_set(const verb_t *v)
{
    tenant_quota_t q;
    char err[512];
    if (s_missing(v, "set") || tenant_quota_read(v->redis, v->name, &q) < 0) return 1;
    s_merge(&q, &v->args->q);
    if (s_check(&q, err, sizeof err) < 0) {
        fprintf(stderr, "snakepit tenant set: %s\n", err);
        return EX_USAGE;
    }
    if (tenant_quota_write(v->redis, v->name, &q, err, sizeof err) < 0) {
        fprintf(stderr, "snakepit tenant set: %s\n", err);
        return 1;
    }
    return s_show(v);
}

static int s_rotate_key(const verb_t *v)
{
    tenant_quota_t q;
    if (s_missing(v, "rotate-key") || tenant_quota_read(v->redis, v->name, &q) < 0) return 1;
    return s_store_new_key(v, &q, "rotate-key");
}

/* What it holds now against its caps (each front-end refuses past them): the operator's answer
 * to "why is this tenant refused". */
static void s_show_holding(const verb_t *v, json_t *o)
{
    tenant_holding_t h;
    if (tenant_holding_read(v->redis, v->name, &h) < 0) return;
    if (v->args->json) {
        json_object_set_new(o, "holding",
                            json_pack("{s:I,s:I,s:I,s:I,s:I}", "listen_streams",
                                      (json_int_t)h.listen_streams, "sse_streams",
                                      (json_int_t)h.sse_streams, "tasks", (json_int_t)h.tasks,
                                      "linked_files", (json_int_t)h.linked_files, "linked_bytes",
                                      (json_int_t)h.linked_bytes));
        return;
    }
    printf("  %-16s listen_streams=%ld sse_streams=%ld tasks=%ld linked_files=%ld "
           "linked_bytes=%lld\n",
           "holding", h.listen_streams, h.sse_streams, h.tasks, h.linked_files, h.linked_bytes);
}

static int s_show(const verb_t *v)
{
    redisReply *r = redisCommand(v->redis, "HGETALL sp:t:%s", v->name);
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements == 0) {
        fprintf(stderr, "snakepit tenant: no tenant '%s'\n", v->name);
        if (r) freeReplyObject(r);
        return 1;
    }
    json_t *o = json_pack("{s:s}", "tenant", v->name);
    if (!v->args->json) printf("%s\n", v->name);
    for (size_t i = 0; i + 1 < r->elements; i += 2) {
        const char *k = r->element[i]->str, *val = r->element[i + 1]->str;
        if (!k || !val || strcmp(k, "key_sha256") == 0) continue; /* not secret, but useless */
        if (v->args->json)
            json_object_set_new(o, k, json_string(val));
        else
            printf("  %-16s %s\n", k, val[0] ? val : "(all)");
    }
    s_show_holding(v, o);
    if (v->args->json) {
        char *text = json_dumps(o, JSON_COMPACT);
        printf("%s\n", text ? text : "{}");
        free(text);
    }
    json_decref(o);
    freeReplyObject(r);
    return 0;
}

static int s_list(const verb_t *v)
{
    redisReply *r = redisCommand(v->redis, "SMEMBERS sp:tenants");
    if (r && r->type == REDIS_REPLY_ARRAY)
        for (size_t i = 0; i < r->elements; i++) {
            verb_t one = *v;
            one.name = r->element[i]->str;
            s_show(&one);
        }
    if (r) freeReplyObject(r);
    return 0;
}

static int s_remove(const verb_t *v)
{
    char err[512];
    if (tenant_remove(v->redis, v->name, err, sizeof err) < 0) {
        fprintf(stderr, "snakepit tenant remove: %s\n", err);
        return 1;
    }
    fprintf(stderr, "tenant %s removed; its key no longer works\n", v->name);
    return 0;
}

static const struct {
    const char *verb;
    int needs_name;
    int (*fn)(const verb_t *v);
    int writes; /* waits for the replicas, if any, to have it */
} s_verbs[] = {
    {"add", 1, s_add, 1},
    {"set", 1, s_set, 1},
    {"list", 0, s_list, 0},
    {"show", 1, s_show, 0},
    {"rotate-key", 1, s_rotate_key, 1},
    {"remove", 1, s_remove, 1},
};

int tenant_main(int argc, char **argv)
{
    tenant_args_t a = {0}, shown = {0};
    a.q.session_retention_s = -1; /* not given */
    tenant_quota_defaults(&shown.q);
    char *rest[4];
    int n_rest = 4;
    char err[512];
    switch (config_load(&a, s_opts, argc, argv, rest, &n_rest, err, sizeof err)) {
    case CONFIG_HELP:
        config_usage(stdout, s_usage, "Manage tenants: API keys and quotas.", s_opts, &shown);
        return 0;
    case CONFIG_ERROR:
        fprintf(stderr, "snakepit tenant: %s\n", err);
        return EX_USAGE;
    case CONFIG_OK:
        break;
    }
    if (a.q.egress[0] && a.q.no_egress) {
        fprintf(stderr, "snakepit tenant: --egress and --no-egress together\n");
        return EX_USAGE;
    }
    size_t i = 0, n = sizeof s_verbs / sizeof s_verbs[0];
    while (i < n && (n_rest < 1 || strcmp(rest[0], s_verbs[i].verb) != 0)) i++;
    if (i == n || n_rest > 1 + s_verbs[i].needs_name) {
        fprintf(stderr, "usage: %s\n", s_usage);
        return EX_USAGE;
    }
    verb_t v = {.args = &a, .name = n_rest > 1 ? rest[1] : NULL};
    if (s_verbs[i].needs_name && (!v.name || !wire_name_ok(v.name, strlen(v.name)))) {
        fprintf(stderr, "snakepit tenant %s: a tenant name of 1-64 [A-Za-z0-9._-] is needed\n",
                s_verbs[i].verb);
        return EX_USAGE;
    }
    v.redis = farm_connect("snakepit tenant", a.state_dir, a.redis, sizeof a.redis);
    if (!v.redis) return EX_UNAVAILABLE;
    int rc = s_verbs[i].fn(&v);
    if (rc == 0 && s_verbs[i].writes && farm_replicated(v.redis, err, sizeof err) < 0)
        fprintf(stderr, "snakepit tenant: WARNING: %s\n", err);
    redisFree(v.redis);
    return rc;
}
