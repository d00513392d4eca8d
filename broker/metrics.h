/* broker/metrics.h — what the broker shows: Prometheus series on /metrics (text 0.0.4, the
 * `snakepit_broker_` family; labels only from bounded sets: service names, which the broker
 * caps at 64, and fixed reason words — never a tenant or a job id), and the one-second
 * snapshot in Redis (sp:metrics:broker:{instance}) that `snakepit status` and the
 * front-end's get_sandbox_info read. Both read the broker's parts, never change them. */
#ifndef SP_BROKER_METRICS_H
#define SP_BROKER_METRICS_H
#include "common/buf.h"
#include "common/metrics_pub.h"
#include "broker/sched/sched.h"
#include "relay.h"
#include "zap.h"

#ifndef SNAKEPIT_VERSION
#define SNAKEPIT_VERSION "dev"
#endif

/* The parts shown; the broker owns them. */
typedef struct {
    const sched_t *sched;
    const relay_t *relay;
    const zap_t *zap;         /* NULL when CURVE is off */
    const metrics_pub_t *pub; /* NULL without --redis */
    double started;           /* wall clock, seconds */
} broker_metrics_t;

void broker_metrics_render(void *shown, buf_t *out);           /* metrics_render_fn */
void broker_metrics_snapshot(void *shown, metrics_pub_t *pub); /* metrics_pub_fill_fn */

#endif
