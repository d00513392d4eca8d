/* mcp-frontend/farm/served.h — which profiles the farm serves now, as every front-end can tell
 * alike. A call that names a profile no executor runs is refused at once (instead of waiting
 * in a broker's queue for the NoExecutor answer), a call that names none is placed among the
 * served ones, and the texts name only those (render/proftext.h, which this keeps up to date).
 *
 * The source is the hash sp:profiles, which every executor node rewrites every 5 s with one
 * field per profile whose zygote is warm (executor-node/node/snapshot.c: {python, packages,
 * node, updated_ms}). A profile is served while some node refreshed its field within
 * fresh_ms. That view is the executors' own, so it holds with any number of brokers (every
 * executor serves every broker) and of front-ends (they all read the same hash), and a
 * restarting broker, whose services have no executor until they register again, does not make
 * the farm look empty. The cost is lag: a node that stops stays "served" up to fresh_ms (its
 * calls then wait for the broker's answer, as before), a new one is seen within
 * refresh_ms + 5 s.
 *
 * What is not known is not refused: until Redis has answered, while it cannot be read, and
 * while no profile at all is reported (a farm starting, or executors without Redis), every
 * profile counts as served. */
#ifndef SP_FE_SERVED_H
#define SP_FE_SERVED_H
#include <stdint.h>

#include "common/loop.h"
#include "common/profiles.h"
#include "mcp-frontend/state/store.h"

typedef struct served served_t;

typedef struct {
    long refresh_ms; /* how often sp:profiles is read */
    long fresh_ms;   /* a profile whose field is older than this is not served */
} served_conf_t;

/* clang-format off */
#define SERVED_CONF_DEFAULTS {.refresh_ms = 1000, .fresh_ms = 30000}
/* clang-format on */

typedef struct {
    uint64_t reads;   /* sp:profiles read */
    uint64_t changes; /* times the served set changed */
} served_stats_t;

/* Reads sp:profiles at once when the store connects, then every refresh_ms. */
served_t *served_new(loop_t *loop, store_t *store, const served_conf_t *conf);
void served_destroy(served_t **self_p);

/* Bit i set: profiles[i] is served; 0: not known (every profile counts as served). */
uint32_t served_mask(const served_t *self);
/* 1 when p is served, or when that is not known. */
int served_has(const served_t *self, const profile_t *p);
const served_stats_t *served_stats(const served_t *self);

/* The mask sp:profiles' fields say (field name → JSON with updated_ms), as of now_ms: pure, for
 * the unit tests. names and values are n parallel strings. */
uint32_t served_parse(const char *const *names, const char *const *values, size_t n,
                      uint64_t now_ms, long fresh_ms);

#endif
