/* mcp-frontend/limiter.c — see limiter.h. GCRA with emission interval T = 1000/rate ms and
 * burst b: a call at time t is allowed when max(TAT, t) + T - b*T <= t, and then TAT becomes
 * max(TAT, t) + T. The script uses Redis's own clock (TIME) so that front-ends with skewed
 * clocks agree; Redis 7 replicates the script's effects, not the script, so TIME is allowed. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "../common/buf.h"
#include "../common/clock.h"
#include "../common/log.h"
#include "gcra.h"
#include "limiter.h"
#include "metrics.h"

static const char s_gcra_lua[] =
    "local t = redis.call('TIME')\n"
    "local now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000\n"
    "local period = tonumber(ARGV[1])\n"
    "local burst = tonumber(ARGV[2])\n"
    "local tat = tonumber(redis.call('GET', KEYS[1]) or now)\n"
    "if tat < now then tat = now end\n"
    "local new_tat = tat + period\n"
    "local allow_at = new_tat - burst * period\n"
    "if allow_at > now then return {0, math.ceil(allow_at - now)} end\n"
    "redis.call('SET', KEYS[1], tostring(new_tat), 'PX', math.ceil(new_tat - now) + 1000)\n"
    "return {1, 0}\n";

struct limiter {
    fe_t           *fe;
    store_script_t *gcra;
    uint64_t        last_fallback_log;
};

typedef struct {
    limiter_t *self;
    tenant_t  *tenant;
    limit_fn  *fn;
    void      *arg;
} check_t;

/* Redis is unreachable: decide here, at a share of the rate, since other front-ends may be
 * deciding for the same tenant at the same time. */
static int s_local(limiter_t *self, tenant_t *t, long *retry_after_ms)
{
    metric_inc(M.rate_fallback, NULL, NULL);
    uint64_t now = clock_mono_ms();
    if (now - self->last_fallback_log > 10000) {
        self->last_fallback_log = now;
        log_warn("event=rate_limit_fallback reason=redis_unreachable share_pct=%ld",
                 self->fe->conf.local_rate_pct);
    }
    double rate = t->rate * (double)self->fe->conf.local_rate_pct / 100.0;
    long   burst = (long)((double)t->burst * (double)self->fe->conf.local_rate_pct / 100.0);
    if (burst < 1) burst = 1;
    if (gcra_step(&t->local_tat_ms, (double)now, rate > 0 ? rate : 0.001, burst, retry_after_ms))
        return LIMIT_ALLOW;
    metric_inc(M.rate_limited, "local", NULL);
    return LIMIT_DENY;
}

static void s_on_reply(void *arg, redisReply *reply)
{
    check_t *ck = arg;
    long     retry = 0;
    int      allowed;
    if (reply && reply->type == REDIS_REPLY_ARRAY && reply->elements == 2 &&
        reply->element[0]->type == REDIS_REPLY_INTEGER && reply->element[1]->type == REDIS_REPLY_INTEGER) {
        allowed = reply->element[0]->integer == 1;
        retry = (long)reply->element[1]->integer;
        if (!allowed) metric_inc(M.rate_limited, "redis", NULL);
    } else {
        allowed = s_local(ck->self, ck->tenant, &retry) == LIMIT_ALLOW;
    }
    ck->fn(ck->arg, allowed, retry);
    free(ck);
}

int limiter_check(limiter_t *self, tenant_t *t, limit_fn *fn, void *arg, long *retry_after_ms)
{
    char key[96], period[32], burst[32];
    snprintf(key, sizeof key, "sp:rl:%s", t->name);
    snprintf(period, sizeof period, "%.6f", 1000.0 / t->rate);
    snprintf(burst, sizeof burst, "%ld", t->burst);
    const char *args[] = {key, period, burst};
    check_t    *ck = xcalloc(1, sizeof *ck);
    *ck = (check_t){self, t, fn, arg};
    if (store_connected(self->fe->store) &&
        store_eval(self->fe->store, self->gcra, s_on_reply, ck, 1, 3, args) == 0)
        return LIMIT_PENDING;
    free(ck);
    return s_local(self, t, retry_after_ms);
}

limiter_t *limiter_new(fe_t *fe)
{
    limiter_t *self = xcalloc(1, sizeof *self);
    self->fe = fe;
    self->gcra = store_script(fe->store, s_gcra_lua);
    return self;
}

void limiter_destroy(limiter_t **self_p)
{
    free(*self_p);
    *self_p = NULL;
}
