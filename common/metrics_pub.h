/* common/metrics_pub.h — publishes a component's snapshot to Redis every interval as the hash
 * sp:metrics:{component}:{instance} with a TTL, for `snakepit status` and the
 * front-end's get_sandbox_info. hiredis's async API runs on the component's loop: the loop
 * never waits for Redis; at most one snapshot is in flight, so a slow or absent Redis costs
 * skipped snapshots (counted), never memory; the connection is retried with backoff, and made
 * by common/redis_dial.h, so a redis-sentinel:// URL follows its master through failovers. A
 * hostname in a redis:// URL is resolved once at start, before the loop runs. */
#ifndef SP_METRICS_PUB_H
#define SP_METRICS_PUB_H
#include <stddef.h>
#include <stdint.h>

#include "loop.h"

typedef struct metrics_pub metrics_pub_t;

/* Called once per interval to fill the snapshot with metrics_pub_field. */
typedef void(metrics_pub_fill_fn)(void *arg, metrics_pub_t *pub);

/* key: the whole hash key ("sp:metrics:broker:host-1"). NULL with the reason in err (a bad
 * URL or an unresolvable host). The first connection attempt is made at once, and the first
 * snapshot is published as soon as it connects (again after each reconnection). */
metrics_pub_t *metrics_pub_new(loop_t *loop, const char *redis_url, const char *key, long every_ms,
                               long ttl_s, metrics_pub_fill_fn *fn, void *arg, char *err,
                               size_t errlen);
/* Call with the loop stopped or from one of its callbacks. */
void metrics_pub_destroy(metrics_pub_t **self_p);
/* One field of the snapshot being filled; at most 64 per snapshot. */
void metrics_pub_field(metrics_pub_t *self, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

uint64_t metrics_pub_published(const metrics_pub_t *self); /* snapshots Redis acknowledged */
uint64_t metrics_pub_errors(const metrics_pub_t *self);    /* failed or skipped ones */
int metrics_pub_connected(const metrics_pub_t *self);

#endif
