/* mcp-frontend/state/tenants.c — see tenants.h. Both caches are small chained hash tables; tenant
 * objects are never freed while the process runs (there are few, and sessions point at them),
 * only refreshed. */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/clock.h"
#include "proto/egress_rule.h"
#include "common/log.h"
#include "common/sha256.h"
#include "proto/wire.h"
#include "proto/job.h"
#include "tenants.h"

#define KEY_BUCKETS   1024
#define KEY_CACHE_MAX 100000

typedef struct key_entry {
    char hash[65];
    tenant_t *tenant;
    uint64_t expires_ms; /* monotonic: trusted until then */
    uint64_t stale_ms;   /* monotonic: still trusted until then while Redis cannot answer */
    struct key_entry *next;
} key_entry_t;

struct tenants {
    loop_t *loop;
    store_t *store;
    tenants_conf_t conf;
    tenant_t *list; /* every tenant seen */
    key_entry_t *keys[KEY_BUCKETS];
    long n_keys;
    uint64_t refresh_timer;
    uint64_t stale_auths; /* keys let in on a stale answer while Redis could not be asked */
    store_script_t *rotate; /* tenants_rotate_key's, made at the first rotation */
};

/* One lookup in flight: the key's hash, then the tenant's hash fields. */
typedef struct {
    tenants_t *self;
    char hash[65];
    char name[65];
    tenant_fn *fn;
    void *arg;
} lookup_t;

static unsigned s_bucket(const char *hash)
{
    return (unsigned)strtoul(
               (char[9]){hash[0], hash[1], hash[2], hash[3], hash[4], hash[5], hash[6], hash[7], 0},
               NULL, 16) %
           KEY_BUCKETS;
}

static tenant_t *s_find(tenants_t *self, const char *name)
{
    for (tenant_t *t = self->list; t; t = t->next)
        if (strcmp(t->name, name) == 0) return t;
    return NULL;
}

/* The quotas of sessions and of what a tenant holds: one row each (the hash field, where it
 * goes, its default and range). */
static const struct {
    const char *field;
    size_t offset;
    long def, lo, hi;
} s_quotas[] = {
    {"max_sessions", offsetof(tenant_t, max_sessions), TENANT_DEFAULT_MAX_SESSIONS, 0, 100000},
    {"max_session_memory_mb", offsetof(tenant_t, max_session_memory_mb),
     TENANT_DEFAULT_MAX_SESSION_MEM_MB, 16, 1 << 24},
    {"max_idle_timeout_s", offsetof(tenant_t, max_idle_timeout_s), TENANT_DEFAULT_MAX_IDLE_S, 1,
     7L * 86400},
    {"max_snapshots", offsetof(tenant_t, max_snapshots), TENANT_DEFAULT_MAX_SNAPSHOTS, 0, 100000},
    {"max_snapshot_mb", offsetof(tenant_t, max_snapshot_mb), TENANT_DEFAULT_MAX_SNAPSHOT_MB, 1,
     1 << 20},
    {"session_retention_s", offsetof(tenant_t, session_retention_s),
     TENANT_DEFAULT_SESSION_RETENTION_S, 0, JOB_MAX_RETENTION_S},
    {"max_listen_streams", offsetof(tenant_t, max_listen_streams),
     TENANT_DEFAULT_MAX_LISTEN_STREAMS, 0, 1000000},
    {"max_sse_streams", offsetof(tenant_t, max_sse_streams), TENANT_DEFAULT_MAX_SSE_STREAMS, 0,
     1000000},
    {"max_tasks", offsetof(tenant_t, max_tasks), TENANT_DEFAULT_MAX_TASKS, 0, 1000000},
    {"max_linked_mb", offsetof(tenant_t, max_linked_mb), TENANT_DEFAULT_MAX_LINKED_MB, 0, 1 << 20},
    {"max_linked_files", offsetof(tenant_t, max_linked_files), TENANT_DEFAULT_MAX_LINKED_FILES, 0,
     1000000},
};
#define N_QUOTAS (sizeof s_quotas / sizeof s_quotas[0])

static long *s_quota(tenant_t *t, size_t i)
{
    return (long *)(void *)((char *)t + s_quotas[i].offset);
}

static void s_quota_defaults(tenant_t *t)
{
    for (size_t i = 0; i < N_QUOTAS; i++) *s_quota(t, i) = s_quotas[i].def;
}

static tenant_t *s_get(tenants_t *self, const char *name)
{
    tenant_t *t = s_find(self, name);
    if (t) return t;
    t = xcalloc(1, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", name);
    t->rate = TENANT_DEFAULT_RATE;
    t->burst = TENANT_DEFAULT_BURST;
    t->max_concurrency = TENANT_DEFAULT_MAX_CONCURRENCY;
    t->max_timeout_s = TENANT_DEFAULT_MAX_TIMEOUT_S;
    t->max_memory_mb = TENANT_DEFAULT_MAX_MEMORY_MB;
    s_quota_defaults(t);
    t->next = self->list;
    self->list = t;
    return t;
}

static double s_num(const redisReply *v, double def, double lo, double hi)
{
    if (!v || v->type != REDIS_REPLY_STRING || !v->len) return def;
    char *end;
    double d = strtod(v->str, &end);
    if (end == v->str || *end || d != d) return def;
    return d < lo ? lo : d > hi ? hi : d;
}

/* Applies an HGETALL reply; fields the operator did not set keep the defaults. */
static void s_apply_fields(tenant_t *t, const redisReply *r)
{
    double rate = TENANT_DEFAULT_RATE;
    long burst = TENANT_DEFAULT_BURST, conc = TENANT_DEFAULT_MAX_CONCURRENCY;
    long tmo = TENANT_DEFAULT_MAX_TIMEOUT_S, mem = TENANT_DEFAULT_MAX_MEMORY_MB;
    long record_ttl = 0, record_max = 0, egress_bytes = 0, egress_conns = 0;
    char profiles[512] = "", egress[sizeof t->egress] = "";
    for (size_t i = 0; r && r->type == REDIS_REPLY_ARRAY && i + 1 < r->elements; i += 2) {
        const redisReply *k = r->element[i], *v = r->element[i + 1];
        if (k->type != REDIS_REPLY_STRING) continue;
        if (strcmp(k->str, "rate") == 0)
            rate = s_num(v, rate, 0.001, 1e6);
        else if (strcmp(k->str, "burst") == 0)
            burst = (long)s_num(v, (double)burst, 1, 1e6);
        else if (strcmp(k->str, "max_concurrency") == 0)
            conc = (long)s_num(v, (double)conc, 1, 1e5);
        else if (strcmp(k->str, "max_timeout_s") == 0)
            tmo = (long)s_num(v, (double)tmo, 1, 86400);
        else if (strcmp(k->str, "max_memory_mb") == 0)
            mem = (long)s_num(v, (double)mem, 16, 1 << 20);
        else if (strcmp(k->str, "profiles") == 0 && v->type == REDIS_REPLY_STRING)
            snprintf(profiles, sizeof profiles, "%s", v->str);
        else if (strcmp(k->str, "record_ttl_s") == 0)
            record_ttl = (long)s_num(v, 0, 0, 86400.0 * 3650);
        else if (strcmp(k->str, "record_max") == 0)
            record_max = (long)s_num(v, 0, 0, 1e8);
        else if (strcmp(k->str, "egress") == 0 && v->type == REDIS_REPLY_STRING)
            snprintf(egress, sizeof egress, "%s", v->str);
        else if (strcmp(k->str, "egress_max_bytes") == 0)
            egress_bytes = (long)s_num(v, 0, 0, (double)(1LL << 40));
        else if (strcmp(k->str, "egress_max_conns") == 0)
            egress_conns = (long)s_num(v, 0, 0, 65536);
    }
    /* rules the CLI did not store (by hand, or cut to fit): none at all, never some */
    egress_rule_t *rules;
    size_t n_rules;
    char why[200];
    if (egress_rules_parse(egress, &rules, &n_rules, why, sizeof why) < 0) {
        log_warn("event=tenant_egress_ignored tenant=%s error=\"%s\"", t->name, why);
        egress[0] = '\0';
    }
    free(rules);
    snprintf(t->egress, sizeof t->egress, "%s", egress);
    t->egress_max_bytes = egress_bytes;
    t->egress_max_conns = egress_conns;
    t->record_ttl_s = record_ttl;
    t->record_max = record_max;
    s_quota_defaults(t);
    for (size_t i = 0; r && r->type == REDIS_REPLY_ARRAY && i + 1 < r->elements; i += 2) {
        const redisReply *k = r->element[i], *v = r->element[i + 1];
        for (size_t q = 0; q < N_QUOTAS && k->type == REDIS_REPLY_STRING; q++)
            if (strcmp(k->str, s_quotas[q].field) == 0)
                *s_quota(t, q) = (long)s_num(v, (double)s_quotas[q].def, (double)s_quotas[q].lo,
                                             (double)s_quotas[q].hi);
    }
    t->rate = rate;
    t->burst = burst;
    t->max_concurrency = conc;
    t->max_timeout_s = tmo;
    t->max_memory_mb = mem;
    snprintf(t->profiles, sizeof t->profiles, "%s", profiles);
}

static void s_cache_put(tenants_t *self, const char *hash, tenant_t *t)
{
    unsigned b = s_bucket(hash);
    key_entry_t *e;
    for (e = self->keys[b]; e; e = e->next)
        if (strcmp(e->hash, hash) == 0) break;
    if (!e) {
        if (self->n_keys >= KEY_CACHE_MAX) return; /* a flood of distinct keys: stop caching */
        e = xcalloc(1, sizeof *e);
        memcpy(e->hash, hash, sizeof e->hash);
        e->next = self->keys[b];
        self->keys[b] = e;
        self->n_keys++;
    }
    uint64_t now = clock_mono_ms();
    e->tenant = t;
    e->expires_ms = now + (uint64_t)self->conf.auth_cache_ms;
    long stale = self->conf.auth_stale_ms > self->conf.auth_cache_ms ? self->conf.auth_stale_ms
                                                                      : self->conf.auth_cache_ms;
    e->stale_ms = now + (uint64_t)stale;
}

static key_entry_t *s_cache_find(tenants_t *self, const char *hash)
{
    for (key_entry_t *e = self->keys[s_bucket(hash)]; e; e = e->next)
        if (strcmp(e->hash, hash) == 0) return e;
    return NULL;
}

/* The tenant an earlier answer gave, when Redis cannot be asked now: a failover or a Redis
 * restart must not lock out every tenant that was working a moment ago. A key removed meanwhile
 * keeps working until Redis answers again (or --auth-stale-ms passes). */
static tenant_t *s_stale(tenants_t *self, const char *hash)
{
    key_entry_t *e = s_cache_find(self, hash);
    if (!e || e->stale_ms <= clock_mono_ms()) return NULL;
    self->stale_auths++;
    return e->tenant;
}

tenant_t *tenants_cached(tenants_t *self, const char *key, size_t key_len)
{
    char hash[65];
    sha256_hex(key, key_len, hash);
    return tenants_cached_hash(self, hash);
}

tenant_t *tenants_cached_hash(tenants_t *self, const char *hash)
{
    key_entry_t *e = s_cache_find(self, hash);
    if (e && e->expires_ms > clock_mono_ms()) return e->tenant;
    return e && !store_connected(self->store) ? s_stale(self, hash) : NULL;
}

uint64_t tenants_stale_auths(const tenants_t *self)
{
    return self->stale_auths;
}

static void s_finish(lookup_t *l, tenant_t *t, auth_status_t st)
{
    if (st == AUTH_UNAVAILABLE && (t = s_stale(l->self, l->hash))) st = AUTH_OK;
    l->fn(l->arg, t, st);
    free(l);
}

static void s_on_fields(void *arg, redisReply *reply)
{
    lookup_t *l = arg;
    if (!reply || reply->type != REDIS_REPLY_ARRAY) {
        s_finish(l, NULL, AUTH_UNAVAILABLE);
        return;
    }
    tenant_t *t = s_get(l->self, l->name);
    s_apply_fields(t, reply);
    s_cache_put(l->self, l->hash, t);
    s_finish(l, t, AUTH_OK);
}

static void s_on_key(void *arg, redisReply *reply)
{
    lookup_t *l = arg;
    if (!reply || reply->type == REDIS_REPLY_ERROR) {
        s_finish(l, NULL, AUTH_UNAVAILABLE);
        return;
    }
    if (reply->type != REDIS_REPLY_STRING || !wire_name_ok(reply->str, reply->len)) {
        if (reply->type == REDIS_REPLY_STRING)
            log_warn("event=bad_tenant_name key_hash=%.12s", l->hash);
        s_finish(l, NULL, AUTH_UNKNOWN_KEY);
        return;
    }
    memcpy(l->name, reply->str, reply->len);
    l->name[reply->len] = '\0';
    if (store_queryf(l->self->store, s_on_fields, l, "HGETALL sp:t:%s", l->name) < 0)
        s_finish(l, NULL, AUTH_UNAVAILABLE);
}

int tenants_lookup(tenants_t *self, const char *key, size_t key_len, tenant_fn *fn, void *arg)
{
    char hash[65];
    sha256_hex(key, key_len, hash);
    return tenants_lookup_hash(self, hash, fn, arg);
}

int tenants_lookup_hash(tenants_t *self, const char *hash, tenant_fn *fn, void *arg)
{
    lookup_t *l = xcalloc(1, sizeof *l);
    l->self = self;
    l->fn = fn;
    l->arg = arg;
    snprintf(l->hash, sizeof l->hash, "%s", hash);
    if (store_queryf(self->store, s_on_key, l, "GET sp:key:%s", l->hash) < 0) {
        free(l);
        return -1;
    }
    return 0;
}

/* KEYS: the tenant's hash, the old key's, the new key's; ARGV: the tenant, the new key's
 * hash. The old key must still name the tenant (a rotation elsewhere, or a removal, wins). */
static const char s_rotate_lua[] =
    "if redis.call('GET', KEYS[2]) ~= ARGV[1] then return 0 end\n"
    "redis.call('SET', KEYS[3], ARGV[1])\n"
    "redis.call('HSET', KEYS[1], 'key_sha256', ARGV[2])\n"
    "redis.call('DEL', KEYS[2])\n"
    "return 1\n";

typedef struct {
    tenants_t *self;
    char old_hash[65];
    tenant_key_fn *fn;
    void *arg;
} rotation_t;

static void s_forget(tenants_t *self, const char *hash)
{
    for (key_entry_t **pp = &self->keys[s_bucket(hash)]; *pp; pp = &(*pp)->next)
        if (strcmp((*pp)->hash, hash) == 0) {
            key_entry_t *e = *pp;
            *pp = e->next;
            free(e);
            self->n_keys--;
            return;
        }
}

static void s_on_rotated(void *arg, redisReply *reply)
{
    rotation_t *r = arg;
    int rc = !reply || reply->type != REDIS_REPLY_INTEGER ? -1 : reply->integer == 1 ? 0 : -2;
    if (rc == 0) s_forget(r->self, r->old_hash);
    r->fn(r->arg, rc);
    free(r);
}

int tenants_rotate_key(tenants_t *self, const char *name, const char *old_hash,
                       const char *new_key, tenant_key_fn *fn, void *arg)
{
    char new_hash[65], k_tenant[96], k_old[80], k_new[80];
    sha256_hex(new_key, strlen(new_key), new_hash);
    snprintf(k_tenant, sizeof k_tenant, "sp:t:%s", name);
    snprintf(k_old, sizeof k_old, "sp:key:%s", old_hash);
    snprintf(k_new, sizeof k_new, "sp:key:%s", new_hash);
    if (!self->rotate) self->rotate = store_script(self->store, s_rotate_lua);
    rotation_t *r = xcalloc(1, sizeof *r);
    r->self = self;
    snprintf(r->old_hash, sizeof r->old_hash, "%s", old_hash);
    r->fn = fn;
    r->arg = arg;
    const char *args[] = {k_tenant, k_old, k_new, name, new_hash};
    if (store_eval(self->store, self->rotate, s_on_rotated, r, 3, 5, args) < 0) {
        free(r);
        return -1;
    }
    return 0;
}

static void s_on_named_fields(void *arg, redisReply *reply)
{
    tenant_t *t = arg;
    if (reply && reply->type == REDIS_REPLY_ARRAY) s_apply_fields(t, reply);
}

/* Named tenants have no key to re-check; their quotas are re-read every few seconds. */
static void s_on_refresh(loop_t *loop, void *arg)
{
    (void)loop;
    tenants_t *self = arg;
    uint64_t now = clock_mono_ms();
    for (tenant_t *t = self->list; t;
         t = t->next) /* only tenants in use: stale quotas of idle ones harm no one */
        if (t->sessions > 0)
            store_queryf(self->store, s_on_named_fields, t, "HGETALL sp:t:%s", t->name);
    /* drop key entries past their stale window (a fresh answer is needed before then anyway,
     * so a rotated or removed key stops working once Redis answers) */
    for (unsigned b = 0; b < KEY_BUCKETS; b++) {
        key_entry_t **pp = &self->keys[b];
        while (*pp) {
            key_entry_t *e = *pp;
            if (e->stale_ms <= now) {
                *pp = e->next;
                free(e);
                self->n_keys--;
            } else {
                pp = &e->next;
            }
        }
    }
}

tenant_t *tenants_named(tenants_t *self, const char *name)
{
    tenant_t *t = s_find(self, name);
    if (t) return t;
    t = s_get(self, name);
    store_queryf(self->store, s_on_named_fields, t, "HGETALL sp:t:%s", t->name);
    return t;
}

tenants_t *tenants_new(loop_t *loop, store_t *store, const tenants_conf_t *conf)
{
    tenants_t *self = xcalloc(1, sizeof *self);
    self->loop = loop;
    self->store = store;
    self->conf = *conf;
    long every = conf->auth_cache_ms > 1000 ? conf->auth_cache_ms : 1000;
    self->refresh_timer =
        loop_timer_add(loop, (uint64_t)every, (uint64_t)every, s_on_refresh, self);
    return self;
}

void tenants_destroy(tenants_t **self_p)
{
    tenants_t *self = *self_p;
    if (!self) return;
    loop_timer_cancel(self->loop, self->refresh_timer);
    for (unsigned b = 0; b < KEY_BUCKETS; b++)
        while (self->keys[b]) {
            key_entry_t *e = self->keys[b];
            self->keys[b] = e->next;
            free(e);
        }
    while (self->list) {
        tenant_t *t = self->list;
        self->list = t->next;
        free(t);
    }
    free(self);
    *self_p = NULL;
}

void tenant_egress_spec(const tenant_t *t, job_egress_t *out)
{
    if (!t->egress[0]) return;
    size_t n = 1;
    for (const char *p = t->egress; *p; p++) n += *p == ',';
    if (n > EGRESS_MAX_RULES) n = EGRESS_MAX_RULES;
    out->rules = xcalloc(n, sizeof *out->rules);
    for (const char *p = t->egress; *p && out->n_rules < n;) {
        size_t len = strcspn(p, ",");
        while (len && (*p == ' ' || *p == '\t')) p++, len--;
        if (len) out->rules[out->n_rules++] = xstrndup(p, len);
        p += len;
        if (*p == ',') p++;
    }
    out->max_bytes = (uint64_t)t->egress_max_bytes;
    out->max_conns = (uint64_t)t->egress_max_conns;
}
