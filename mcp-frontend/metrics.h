/* mcp-frontend/metrics.h — what the front-end shows of itself: its Prometheus series on
 * GET /metrics (text format 0.0.4, the snakepit_mcp_ family, written with common/prom.h) and its
 * one-second snapshot in Redis (sp:metrics:mcp:{instance}) for `snakepit status`.
 *
 * The counters live as plain structs in the modules that count (store_stats, limiter_stats,
 * mcp_sessions_stats, jobs_stats, executions_stats, tools_stats, mcp_stats, http_stats), the way
 * the broker's and the executor's do; this file only renders them, at the top, so no module
 * reaches up to count. Labels come from small fixed sets (method names we know, status names,
 * reason words): never a tenant or an id, so the series stay bounded whatever clients send. */
#ifndef SP_FE_METRICS_H
#define SP_FE_METRICS_H
#include "common/buf.h"
#include "common/metrics_pub.h"

void fe_metrics_render(void *fe, buf_t *out);           /* metrics_render_fn; fe is an fe_t */
void fe_metrics_snapshot(void *fe, metrics_pub_t *pub); /* metrics_pub_fill_fn */

#endif
