/* mcp-frontend/state/holds.c — see holds.h. The holds of this process are one list; renewals go
 * out grouped by tenant and kind, one script per group (in batches), so a front-end holding ten
 * thousand streams sends a few scripts every third of a lease, not ten thousand. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/log.h"
#include "holds.h"

#define RENEW_BATCH 500 /* members per renewal script (Lua's unpack has a stack limit) */

/* KEYS[1] the tenant's set of this kind; ARGV member, lease ms, cap. {1, n} when granted (n
 * held with it), {0, n} when n already reach the cap. Redis's clock, so that front-ends whose
 * clocks differ agree on which leases have ended. */
static const char s_take_lua[] =
    "local t = redis.call('TIME')\n"
    "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
    "local lease = tonumber(ARGV[2])\n"
    "redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)\n"
    "local n = redis.call('ZCARD', KEYS[1])\n"
    "if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then\n"
    "  if n >= tonumber(ARGV[3]) then return {0, n} end\n"
    "  n = n + 1\n"
    "end\n"
    "redis.call('ZADD', KEYS[1], now + lease, ARGV[1])\n"
    "redis.call('PEXPIRE', KEYS[1], lease)\n"
    "return {1, n}\n";

/* KEYS[1] the set; ARGV lease ms, members...: their leases start again (members Redis lost — a
 * restart, an eviction, holds taken while it was away — come back). */
static const char s_renew_lua[] =
    "local t = redis.call('TIME')\n"
    "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
    "local lease = tonumber(ARGV[1])\n"
    "local z = {}\n"
    "for i = 2, #ARGV do z[#z + 1] = now + lease; z[#z + 1] = ARGV[i] end\n"
    "redis.call('ZADD', KEYS[1], unpack(z))\n"
    "redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)\n"
    "redis.call('PEXPIRE', KEYS[1], lease)\n"
    "return 1\n";

struct hold {
    holds_t *owner;
    hold_kind_t kind;
    char tenant[65];
    char member[128];
    struct hold *next, **prev;
};

struct holds {
    loop_t *loop;
    store_t **store_p;
    holds_conf_t conf;
    char prefix[96]; /* of the members made here: instance and start time */
    uint64_t seq;
    store_script_t *take, *renew;
    hold_t *all;
    uint64_t renew_timer;
    uint64_t last_fallback_log;
    holds_stats_t stats;
};

/* A take waiting for Redis. */
typedef struct {
    holds_t *self;
    hold_kind_t kind;
    char tenant[65];
    char member[128];
    long cap;
    hold_fn *fn;
    void *arg;
} take_t;

const char *hold_kind_name(hold_kind_t kind)
{
    static const char *const names[HOLD__COUNT] = {
        [HOLD_LISTEN] = "listen_streams", [HOLD_SSE] = "sse_streams", [HOLD_TASK] = "tasks"};
    return names[kind];
}

static void s_key(char *out, size_t len, hold_kind_t kind, const char *tenant)
{
    static const char *const short_names[HOLD__COUNT] = {
        [HOLD_LISTEN] = "listen", [HOLD_SSE] = "sse", [HOLD_TASK] = "task"};
    snprintf(out, len, "sp:t:{%s}:hold:%s", tenant, short_names[kind]);
}

static hold_t *s_grant(holds_t *self, const take_t *t)
{
    hold_t *h = xcalloc(1, sizeof *h);
    h->owner = self;
    h->kind = t->kind;
    memcpy(h->tenant, t->tenant, sizeof h->tenant);
    memcpy(h->member, t->member, sizeof h->member);
    h->next = self->all;
    if (self->all) self->all->prev = &h->next;
    h->prev = &self->all;
    self->all = h;
    self->stats.held[h->kind]++;
    self->stats.taken[h->kind]++;
    return h;
}

/* Redis cannot be asked: this front-end's own holds of the tenant against the cap (others may
 * be deciding the same way meanwhile; the renewals count them all once Redis is back). */
static void s_decide_here(holds_t *self, take_t *t)
{
    long n = 0;
    for (const hold_t *h = self->all; h; h = h->next)
        n += h->kind == t->kind && !strcmp(h->tenant, t->tenant);
    self->stats.fallbacks[t->kind]++;
    uint64_t now = clock_mono_ms();
    if (now - self->last_fallback_log > 10000) {
        self->last_fallback_log = now;
        log_warn("event=hold_fallback reason=redis_unreachable kind=%s tenant=%s held_here=%ld "
                 "cap=%ld",
                 hold_kind_name(t->kind), t->tenant, n, t->cap);
    }
    if (n >= t->cap) {
        self->stats.refused[t->kind]++;
        t->fn(t->arg, NULL, n);
    } else {
        t->fn(t->arg, s_grant(self, t), n + 1);
    }
}

static void s_on_take(void *arg, redisReply *reply)
{
    take_t *t = arg;
    holds_t *self = t->self;
    if (!*self->store_p) { /* the store is being destroyed: the front-end stops */
        t->fn(t->arg, NULL, -1);
    } else if (reply && reply->type == REDIS_REPLY_ARRAY && reply->elements == 2 &&
               reply->element[0]->type == REDIS_REPLY_INTEGER &&
               reply->element[1]->type == REDIS_REPLY_INTEGER) {
        long n = (long)reply->element[1]->integer;
        if (reply->element[0]->integer == 1) {
            t->fn(t->arg, s_grant(self, t), n);
        } else {
            self->stats.refused[t->kind]++;
            t->fn(t->arg, NULL, n);
        }
    } else {
        if (reply && reply->type == REDIS_REPLY_ERROR)
            log_warn("event=hold_take_failed kind=%s tenant=%s error=\"%.200s\"",
                     hold_kind_name(t->kind), t->tenant, reply->str);
        s_decide_here(self, t);
    }
    free(t);
}

void holds_take(holds_t *self, hold_kind_t kind, const char *tenant, long cap, const char *member,
                hold_fn *fn, void *arg)
{
    take_t *t = xcalloc(1, sizeof *t);
    *t = (take_t){.self = self, .kind = kind, .cap = cap, .fn = fn, .arg = arg};
    snprintf(t->tenant, sizeof t->tenant, "%s", tenant);
    if (member)
        snprintf(t->member, sizeof t->member, "%s", member);
    else
        snprintf(t->member, sizeof t->member, "%s/%llu", self->prefix,
                 (unsigned long long)++self->seq);
    store_t *store = *self->store_p;
    if (!store) {
        fn(arg, NULL, -1);
        free(t);
        return;
    }
    if (!self->take) self->take = store_script(store, s_take_lua);
    char key[128], lease[24], capn[24];
    s_key(key, sizeof key, kind, t->tenant);
    snprintf(lease, sizeof lease, "%ld", self->conf.lease_ms);
    snprintf(capn, sizeof capn, "%ld", cap);
    const char *args[] = {key, t->member, lease, capn};
    if (store_eval(store, self->take, s_on_take, t, 1, 4, args) < 0) {
        s_decide_here(self, t);
        free(t);
    }
}

void holds_release(hold_t **hold_p)
{
    hold_t *h = *hold_p;
    if (!h) return;
    holds_t *self = h->owner;
    *h->prev = h->next;
    if (h->next) h->next->prev = h->prev;
    self->stats.held[h->kind]--;
    store_t *store = *self->store_p;
    if (store) { /* a write: kept while Redis is away, and flushed when the front-end stops */
        char key[128];
        s_key(key, sizeof key, h->kind, h->tenant);
        store_writef(store, "ZREM %s %s", key, h->member);
    }
    free(h);
    *hold_p = NULL;
}

/* ---- renewals */

static int s_by_group(const void *a, const void *b)
{
    const hold_t *x = *(hold_t *const *)a, *y = *(hold_t *const *)b;
    if (x->kind != y->kind) return (int)x->kind - (int)y->kind;
    return strcmp(x->tenant, y->tenant);
}

static void s_ignore(void *arg, redisReply *reply)
{
    (void)arg, (void)reply;
}

/* One script for holds[0..n), all of one tenant and kind. */
static void s_renew_group(holds_t *self, store_t *store, hold_t **group, size_t n)
{
    char key[128], lease[24];
    s_key(key, sizeof key, group[0]->kind, group[0]->tenant);
    snprintf(lease, sizeof lease, "%ld", self->conf.lease_ms);
    const char **args = xcalloc(n + 2, sizeof *args);
    args[0] = key;
    args[1] = lease;
    for (size_t i = 0; i < n; i++) args[2 + i] = group[i]->member;
    if (!self->renew) self->renew = store_script(store, s_renew_lua);
    store_eval(store, self->renew, s_ignore, NULL, 1, (int)n + 2, args); /* away: next time */
    free(args);
}

static void s_on_renew(loop_t *loop, void *arg)
{
    (void)loop;
    holds_t *self = arg;
    store_t *store = *self->store_p;
    size_t n = 0;
    for (const hold_t *h = self->all; h; h = h->next) n++;
    if (!store || !n) return;
    hold_t **all = xcalloc(n, sizeof *all);
    size_t i = 0;
    for (hold_t *h = self->all; h; h = h->next) all[i++] = h;
    qsort(all, n, sizeof *all, s_by_group);
    for (size_t from = 0; from < n;) {
        size_t to = from + 1;
        while (to < n && to - from < RENEW_BATCH && s_by_group(&all[from], &all[to]) == 0) to++;
        s_renew_group(self, store, all + from, to - from);
        from = to;
    }
    free(all);
}

/* ---- the registry */

holds_t *holds_new(loop_t *loop, store_t **store_p, const holds_conf_t *conf, const char *instance)
{
    holds_t *self = xcalloc(1, sizeof *self);
    self->loop = loop;
    self->store_p = store_p;
    self->conf = *conf;
    /* the start time too: a later process with the same pid makes other members */
    snprintf(self->prefix, sizeof self->prefix, "%s:%llx", instance,
             (unsigned long long)clock_wall_ms());
    uint64_t every = (uint64_t)(conf->lease_ms / 3 > 0 ? conf->lease_ms / 3 : 1);
    self->renew_timer = loop_timer_add(loop, every, every, s_on_renew, self);
    return self;
}

void holds_destroy(holds_t **self_p)
{
    holds_t *self = *self_p;
    if (!self) return;
    loop_timer_cancel(self->loop, self->renew_timer);
    while (self->all) { /* forgotten: their holders are gone with the process */
        hold_t *h = self->all;
        self->all = h->next;
        free(h);
    }
    free(self);
    *self_p = NULL;
}

const holds_stats_t *holds_stats(const holds_t *self)
{
    return &self->stats;
}
