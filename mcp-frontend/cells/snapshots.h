/* mcp-frontend/cells/snapshots.h — sessions' snapshots, kept in Redis (common/session_keys.h): each
 * one's description (meta: JSON, what list_state_snapshots shows) and its bytes as the farm made
 * them (proto/snapshot.h, what a restore hands back), within the tenant's quotas
 * (max_snapshots, max_snapshot_mb), counted by one script so that no two front-ends can both
 * take the last place. Snapshots outlive the session and its node, and a farm restart when
 * Redis persists (snakepit up runs it with an append-only file). No snapshot key has a TTL
 * (under volatile-lru only execution records may be evicted). A put is a query, not a journaled
 * write (store.h): the tool answers only once Redis said it has the snapshot (or why not), and a
 * 14 MiB blob does not belong in the write journal; the script is idempotent all the same, so a
 * retried put counts once. */
#ifndef SP_FE_SNAPSHOTS_H
#define SP_FE_SNAPSHOTS_H
#include <jansson.h>
#include <stddef.h>

#include "mcp-frontend/state/store.h"
#include "mcp-frontend/state/tenants.h"

typedef struct snapshots snapshots_t;

typedef void(snapshots_put_fn)(void *arg, int ok, const char *why);
/* found: 1, 0 (no such snapshot of the tenant's), -1 (Redis away). meta and blob valid during
 * the call. */
typedef void(snapshots_get_fn)(void *arg, int found, json_t *meta, const void *blob, size_t len);
/* metas: a JSON array, newest first (stolen), or NULL when Redis is away. */
typedef void(snapshots_list_fn)(void *arg, json_t *metas);
typedef void(snapshots_del_fn)(void *arg, int deleted, int unavailable);

snapshots_t *snapshots_new(store_t *store);
void snapshots_destroy(snapshots_t **self_p);

void snapshots_put(snapshots_t *self, const tenant_t *t, const char *id, json_t *meta,
                   const void *blob, size_t len, snapshots_put_fn *fn, void *arg);
void snapshots_get(snapshots_t *self, const tenant_t *t, const char *id, snapshots_get_fn *fn,
                   void *arg);
/* session: only that session's (NULL: all), at most limit. */
void snapshots_list(snapshots_t *self, const tenant_t *t, const char *session, long limit,
                    snapshots_list_fn *fn, void *arg);
void snapshots_delete(snapshots_t *self, const tenant_t *t, const char *id, snapshots_del_fn *fn,
                      void *arg);

#endif
