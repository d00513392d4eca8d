/* executor-node/node/snapshot.h — what the node publishes in Redis: every second its
 * hash sp:metrics:executor:{node} (slots, services served, those asked for and not served,
 * draining, layers, counters) for `snakepit status` and get_sandbox_info's capacity, and every
 * 5 s one field per served profile in the shared hash sp:profiles (its Python and package
 * versions, from the zygotes' HELLOs, and updated_ms), which get_sandbox_info reads in one
 * HGETALL and the front-ends take as the profiles the farm serves; a draining node writes none.
 * Redis being slow or away costs skipped snapshots (common/metrics_pub.h), never the node's loop.
 */
#ifndef SP_SNAPSHOT_H
#define SP_SNAPSHOT_H
#include <stddef.h>

#include "common/loop.h"
#include "metrics.h"
#include "node_conf.h"
#include "zygotes.h"

typedef struct snapshot snapshot_t;

/* Publishing starts at once; a Redis URL that cannot be used is logged and leaves that
 * snapshot off (the node serves jobs without it). */
snapshot_t *snapshot_new(loop_t *loop, const node_conf_t *conf, const zygotes_t *zygotes,
                         const exec_metrics_t *metrics);
void snapshot_destroy(snapshot_t **self_p);

#endif
