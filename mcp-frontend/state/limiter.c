/* mcp-frontend/state/limiter.c — see limiter.h.
 *
 * The shared limiter's state is one GCRA timestamp per tenant in Redis, but a Redis round
 * trip per call would sit on every call's critical path. So the front-end leases permits: one
 * script run reserves up to a batch of calls at once (as if they had arrived together, which
 * GCRA allows only within the burst), and calls spend them locally; the lease is renewed in
 * the background when half spent. Permits unspent after a second lapse: the reservation
 * already moved the shared TAT, so lapsing errs on the strict side, never the generous one.
 * A tenant with a small burst gets small batches (a quarter of its burst), so several
 * front-ends together still cannot exceed the tenant's rate and burst. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/log.h"
#include "gcra.h"
#include "limiter.h"

#define LEASE_MS  1000
#define BATCH_MAX 64

/* KEYS[1] the TAT; ARGV period ms, burst, permits wanted. Returns {granted, retry_after_ms}:
 * the most permits (≤ wanted) that GCRA allows now, reserved by moving the TAT past them. */
static const char s_gcra_lua[] =
    "local t = redis.call('TIME')\n"
    "local now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000\n"
    "local period = tonumber(ARGV[1])\n"
    "local burst = tonumber(ARGV[2])\n"
    "local want = tonumber(ARGV[3])\n"
    "local tat = tonumber(redis.call('GET', KEYS[1]) or now)\n"
    "if tat < now then tat = now end\n"
    "local k = math.floor((now - tat) / period + burst + 1e-9)\n"
    "if k > want then k = want end\n"
    "if k <= 0 then return {0, math.ceil(tat + period - burst * period - now)} end\n"
    "local new_tat = tat + k * period\n"
    "redis.call('SET', KEYS[1], string.format('%.3f', new_tat), 'PX', math.ceil(new_tat - now) + "
    "1000)\n"
    "return {k, 0}\n";

struct limiter {
    store_t *store;
    limiter_conf_t conf;
    store_script_t *gcra;
    uint64_t last_fallback_log;
    limiter_stats_t stats;
};

typedef struct limit_waiter {
    limit_fn *fn;
    void *arg;
    struct limit_waiter *next;
} waiter_t;

typedef struct {
    limiter_t *self;
    tenant_t *tenant;
} lease_t;

static long s_batch(const tenant_t *t)
{
    long n = t->burst / 4;
    return n < 1 ? 1 : n > BATCH_MAX ? BATCH_MAX : n;
}

/* Redis is unreachable: decide here, at a share of the rate, since other front-ends may be
 * deciding for the same tenant at the same time. */
static int s_local(limiter_t *self, tenant_t *t, long *retry_after_ms)
{
    self->stats.fallbacks++;
    uint64_t now = clock_mono_ms();
    if (now - self->last_fallback_log > 10000) {
        self->last_fallback_log = now;
        log_warn("event=rate_limit_fallback reason=redis_unreachable share_pct=%ld",
                 self->conf.local_rate_pct);
    }
    double rate = t->rate * (double)self->conf.local_rate_pct / 100.0;
    long burst = (long)((double)t->burst * (double)self->conf.local_rate_pct / 100.0);
    if (burst < 1) burst = 1;
    if (gcra_step(&t->local_tat_ms, (double)now, rate > 0 ? rate : 0.001, burst, retry_after_ms))
        return LIMIT_ALLOW;
    self->stats.denied_local++;
    return LIMIT_DENY;
}

static int s_take(tenant_t *t)
{
    if (t->permits <= 0 || clock_mono_ms() >= t->permits_expire_ms) return 0;
    t->permits--;
    return 1;
}

static void s_refill(limiter_t *self, tenant_t *t);

static void s_on_lease(void *arg, redisReply *reply)
{
    lease_t *l = arg;
    tenant_t *t = l->tenant;
    limiter_t *self = l->self;
    free(l);
    t->refilling = 0;
    int ok = reply && reply->type == REDIS_REPLY_ARRAY && reply->elements == 2 &&
             reply->element[0]->type == REDIS_REPLY_INTEGER &&
             reply->element[1]->type == REDIS_REPLY_INTEGER;
    long retry = ok ? (long)reply->element[1]->integer : 0;
    if (ok) {
        uint64_t now = clock_mono_ms();
        if (now >= t->permits_expire_ms) t->permits = 0;
        t->permits += (long)reply->element[0]->integer;
        t->permits_expire_ms = now + LEASE_MS;
    }
    /* answer the waiters in arrival order; detach the list first, since an answer may start a
     * call that checks the limit again */
    waiter_t *w = t->waiters;
    t->waiters = NULL;
    while (w) {
        waiter_t *next = w->next;
        long r = retry;
        int allowed;
        if (!ok) {
            allowed = s_local(self, t, &r) == LIMIT_ALLOW;
        } else {
            allowed = s_take(t);
            if (!allowed) {
                self->stats.denied_redis++;
                if (r < 1) r = (long)ceil(1000.0 / t->rate);
            }
        }
        w->fn(w->arg, allowed, r);
        free(w);
        w = next;
    }
    if (ok && t->waiters && !t->refilling) s_refill(self, t);
}

static void s_refill(limiter_t *self, tenant_t *t)
{
    char key[96], period[32], burst[32], want[32];
    snprintf(key, sizeof key, "sp:rl:%s", t->name);
    snprintf(period, sizeof period, "%.6f", 1000.0 / t->rate);
    snprintf(burst, sizeof burst, "%ld", t->burst);
    snprintf(want, sizeof want, "%ld", s_batch(t));
    const char *args[] = {key, period, burst, want};
    lease_t *l = xcalloc(1, sizeof *l);
    *l = (lease_t){self, t};
    t->refilling = 1;
    if (store_eval(self->store, self->gcra, s_on_lease, l, 1, 4, args) < 0) {
        t->refilling = 0;
        free(l);
    }
}

int limiter_check(limiter_t *self, tenant_t *t, limit_fn *fn, void *arg, long *retry_after_ms)
{
    if (s_take(t)) {
        /* renew in the background when half spent, so the next calls find permits */
        if (t->permits <= s_batch(t) / 2 && !t->refilling && store_connected(self->store))
            s_refill(self, t);
        return LIMIT_ALLOW;
    }
    if (!store_connected(self->store)) return s_local(self, t, retry_after_ms);
    if (!t->refilling) s_refill(self, t);
    if (!t->refilling) return s_local(self, t, retry_after_ms); /* could not even send */
    waiter_t *w = xcalloc(1, sizeof *w);
    w->fn = fn;
    w->arg = arg;
    waiter_t **pp = &t->waiters;
    while (*pp) pp = &(*pp)->next;
    *pp = w;
    return LIMIT_PENDING;
}

typedef struct {
    limit_key_fn *fn;
    void *arg;
} key_check_t;

static void s_on_key_step(void *arg, redisReply *reply)
{
    key_check_t k = *(key_check_t *)arg;
    free(arg);
    if (!reply || reply->type != REDIS_REPLY_ARRAY || reply->elements != 2 ||
        reply->element[0]->type != REDIS_REPLY_INTEGER ||
        reply->element[1]->type != REDIS_REPLY_INTEGER) {
        k.fn(k.arg, LIMIT_UNAVAILABLE, 0);
        return;
    }
    long retry = (long)reply->element[1]->integer;
    k.fn(k.arg, reply->element[0]->integer > 0 ? LIMIT_ALLOW : LIMIT_DENY, retry < 1 ? 1 : retry);
}

int limiter_check_key(limiter_t *self, const char *key, double rate, long burst, limit_key_fn *fn,
                      void *arg)
{
    char period[32], b[32];
    snprintf(period, sizeof period, "%.6f", 1000.0 / (rate > 0 ? rate : 0.001));
    snprintf(b, sizeof b, "%ld", burst < 1 ? 1 : burst);
    const char *args[] = {key, period, b, "1"};
    key_check_t *k = xcalloc(1, sizeof *k);
    *k = (key_check_t){fn, arg};
    if (store_eval(self->store, self->gcra, s_on_key_step, k, 1, 4, args) < 0) {
        free(k);
        return -1;
    }
    return 0;
}

limiter_t *limiter_new(store_t *store, const limiter_conf_t *conf)
{
    limiter_t *self = xcalloc(1, sizeof *self);
    self->store = store;
    self->conf = *conf;
    self->gcra = store_script(store, s_gcra_lua);
    return self;
}

void limiter_destroy(limiter_t **self_p)
{
    free(*self_p);
    *self_p = NULL;
}

const limiter_stats_t *limiter_stats(const limiter_t *self)
{
    return &self->stats;
}
