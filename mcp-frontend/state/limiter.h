/* mcp-frontend/state/limiter.h — per-tenant rate limiting by GCRA (the generic cell rate algorithm
 * of ATM networks, as in redis-cell): one timestamp per tenant, the theoretical arrival time
 * (TAT), kept in Redis (`sp:rl:<tenant>`, PX-expiring) by a Lua script so that every
 * front-end shares it. A tenant with rate r and burst b may make b calls at once and then one
 * per 1/r seconds. Calls spend permits leased from Redis in small batches, so most calls do
 * not wait for Redis (limiter.c). When Redis cannot answer, a local GCRA at a conservative
 * share of the rate decides instead, and each such decision is counted. */
#ifndef SP_FE_LIMITER_H
#define SP_FE_LIMITER_H
#include <stdint.h>

#include "store.h"
#include "tenants.h"

enum { LIMIT_ALLOW, LIMIT_DENY, LIMIT_PENDING };

typedef void(limit_fn)(void *arg, int allowed, long retry_after_ms);

typedef struct limiter limiter_t;

typedef struct {
    uint64_t denied_redis; /* calls refused by the shared (Redis) limiter */
    uint64_t denied_local; /* ... by the local one, while Redis was unreachable */
    uint64_t fallbacks;    /* decisions the local limiter made */
} limiter_stats_t;

typedef struct {
    long local_rate_pct; /* the local limiter's share of a tenant's rate while Redis is down */
} limiter_conf_t;

limiter_t *limiter_new(store_t *store, const limiter_conf_t *conf);
void limiter_destroy(limiter_t **self_p);
const limiter_stats_t *limiter_stats(const limiter_t *self);
/* LIMIT_ALLOW or LIMIT_DENY (retry_after_ms set) when decided at once; LIMIT_PENDING when
 * fn will be called with the decision. */
int limiter_check(limiter_t *self, tenant_t *t, limit_fn *fn, void *arg, long *retry_after_ms);

/* One GCRA step on a key of the caller's (not a tenant's: the console's sign-in attempts per
 * client address), by the same script on Redis's clock, every front-end sharing it: no lease,
 * each check asks Redis. fn(arg, LIMIT_ALLOW or LIMIT_DENY with retry_after_ms, or
 * LIMIT_UNAVAILABLE when Redis did not answer). 0: fn will be called once; -1: Redis cannot be
 * asked now (fn is never called). */
enum { LIMIT_UNAVAILABLE = LIMIT_PENDING + 1 };
typedef void(limit_key_fn)(void *arg, int outcome, long retry_after_ms);
int limiter_check_key(limiter_t *self, const char *key, double rate, long burst, limit_key_fn *fn,
                      void *arg);

#endif
