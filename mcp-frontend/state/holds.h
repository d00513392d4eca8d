/* mcp-frontend/state/holds.h — what a tenant holds open on the front-ends, counted farm-wide
 * so that a tenant's cap is the same whichever front-ends its clients reach, and so that no
 * tenant can take what a front-end has for everyone .
 *
 * Front-ends keep nothing a later request needs, so the count cannot live in one of them.
 * It lives in Redis, one sorted set per tenant and kind:
 *
 *   sp:t:{<tenant>}:hold:<kind>   zset: one member per thing held (a listen stream, a legacy
 *                                 session's GET stream, a working task), scored by when its
 *                                 lease ends (Redis's clock, ms); the key itself expires a
 *                                 lease after the last take or renewal
 *
 * A take is one script (prune the members whose lease ended, count, add when under the cap),
 * so two front-ends cannot both take the last one. The front-end holding a member renews its
 * lease every third of --hold-lease-ms while it holds it; a release removes it. A front-end that
 * dies simply stops renewing: its members lapse within a lease, so no count leaks (a bare
 * INCR/DECR would keep a dead front-end's streams counted for ever). Taking a member already
 * there (a session's GET stream replaced on another front-end) is granted without counting it
 * twice.
 *
 * While Redis cannot be asked, a take is decided here against this front-end's own holds of
 * the tenant (counted: fallbacks), and the renewals put those into Redis once it is back. */
#ifndef SP_FE_HOLDS_H
#define SP_FE_HOLDS_H
#include <stdint.h>

#include "common/loop.h"
#include "store.h"

typedef enum {
    HOLD_LISTEN, /* a subscriptions/listen stream (2026-07-28) */
    HOLD_SSE,    /* a legacy session's GET stream (2025-11-25 and older) */
    HOLD_TASK,   /* a task whose execution is still running */
    HOLD__COUNT
} hold_kind_t;

typedef struct holds holds_t;
typedef struct hold hold_t;

typedef struct {
    long lease_ms; /* a member not renewed for this long no longer counts */
} holds_conf_t;

typedef struct {
    long held[HOLD__COUNT];          /* held by this front-end now */
    uint64_t taken[HOLD__COUNT];     /* takes granted */
    uint64_t refused[HOLD__COUNT];   /* takes refused: the tenant's cap was reached */
    uint64_t fallbacks[HOLD__COUNT]; /* takes decided here: Redis could not be asked */
} holds_stats_t;

/* A take's answer, exactly once: hold when granted (the caller owns it: holds_release), else
 * NULL with held, the tenant's count when its cap refused it, or -1 when nothing can be
 * granted any more (the front-end is stopping). */
typedef void(hold_fn)(void *arg, hold_t *hold, long held);

/* store_p: &fe->store, read at each use (NULL once the store is gone, at shutdown).
 * instance: this process's name, part of the members it makes. */
holds_t *holds_new(loop_t *loop, store_t **store_p, const holds_conf_t *conf, const char *instance);
/* Holds still held are forgotten here (their members lapse in Redis within a lease). */
void holds_destroy(holds_t **self_p);
const holds_stats_t *holds_stats(const holds_t *self);
const char *hold_kind_name(hold_kind_t kind); /* "listen_streams", "sse_streams", "tasks" */

/* Takes one of kind for tenant under cap. member: what is held, unique within the tenant and
 * kind (a session's id for its GET stream, a task's id), or NULL for a fresh one. fn may be
 * called before this returns. */
void holds_take(holds_t *self, hold_kind_t kind, const char *tenant, long cap, const char *member,
                hold_fn *fn, void *arg);
/* Gives it back (its member leaves the count at once); *hold_p is set to NULL. NULL is fine. */
void holds_release(hold_t **hold_p);

#endif
