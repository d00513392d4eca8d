/* mcp-frontend/metrics.h — the front-end's Prometheus series (text format 0.0.4), rendered
 * on GET /metrics. A metric has at most two labels whose values come from small fixed sets
 * (method names we know, status names, outcome words): never a tenant or an id, so the
 * series count stays bounded whatever clients send. Single-threaded, like everything here. */
#ifndef SP_FE_METRICS_H
#define SP_FE_METRICS_H
#include "../common/buf.h"

typedef struct metric metric_t;

metric_t *metric_counter(const char *name, const char *help, const char *label1,
                         const char *label2);
metric_t *metric_gauge(const char *name, const char *help, const char *label1, const char *label2);
metric_t *metric_histogram(const char *name, const char *help, const char *label1,
                           const double *bounds, int n_bounds);

void metric_add(metric_t *m, double v, const char *l1, const char *l2);
void metric_set(metric_t *m, double v, const char *l1, const char *l2);
void metric_observe(metric_t *m, double v, const char *l1);
#define metric_inc(m, l1, l2) metric_add((m), 1, (l1), (l2))

void metrics_render(buf_t *out);
/* Sum over all of a metric's series (a histogram's observation count), for the Redis snapshot. */
double metric_total(const metric_t *m);
void metrics_free(void);

/* The front-end's metrics, created by fe_metrics_init. */
typedef struct {
    metric_t *requests;         /* {method, outcome} */
    metric_t *request_seconds;  /* {method} */
    metric_t *overhead_seconds; /* {method}: request time minus the job's time in the farm */
    metric_t *tool_calls;       /* {tool, status} */
    metric_t *rate_limited;     /* {source}: redis, local */
    metric_t *rate_fallback;    /* decisions made locally because Redis was unreachable */
    metric_t *auth_failures;    /* {reason} */
    metric_t *sessions;         /* gauge {transport} */
    metric_t *sessions_opened;  /* {transport} */
    metric_t *redis_errors;     /* {op} */
    metric_t *records_dropped;  /* record commands lost to a full buffer */
    metric_t *records_unconfirmed; /* {reason}: answers that left before their record landed */
    metric_t *rejections;       /* {reason}: malformed input refused before dispatch */
    metric_t *http_responses;   /* {code} */
    metric_t *jobs_inflight;    /* gauge */
    metric_t *broker_unavailable;
} fe_metrics_t;

extern fe_metrics_t M;
void fe_metrics_init(const char *version);

#endif
