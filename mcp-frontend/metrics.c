/* mcp-frontend/metrics.c — see metrics.h. Series live in small arrays scanned linearly: a
 * metric has a handful of label combinations, and one scan of a few dozen short strings costs
 * less than the JSON parse of the request being counted. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../common/clock.h"
#include "metrics.h"

#define LABEL_MAX  48
#define MAX_SERIES 256 /* per metric: beyond it new label values fold into "other" */

typedef enum { KIND_COUNTER, KIND_GAUGE, KIND_HISTOGRAM } kind_t;

typedef struct {
    char l1[LABEL_MAX], l2[LABEL_MAX];
    double value;      /* counter/gauge value, or histogram sum */
    uint64_t count;    /* histogram observations */
    uint64_t *buckets; /* histogram: cumulative counts are computed at render time */
} series_t;

struct metric {
    char *name, *help;
    kind_t kind;
    const char *label1, *label2; /* label names, NULL when unused */
    const double *bounds;
    int n_bounds;
    series_t *series;
    int n_series;
    struct metric *next;
};

static metric_t *s_metrics, **s_tail = &s_metrics;
static double s_start_time;
static char s_version[64];
fe_metrics_t M;

static metric_t *s_new(const char *name, const char *help, kind_t kind, const char *l1,
                       const char *l2)
{
    metric_t *m = xcalloc(1, sizeof *m);
    m->name = xstrdup(name);
    m->help = xstrdup(help);
    m->kind = kind;
    m->label1 = l1;
    m->label2 = l2;
    m->series = xcalloc(MAX_SERIES, sizeof *m->series);
    *s_tail = m;
    s_tail = &m->next;
    return m;
}

metric_t *metric_counter(const char *name, const char *help, const char *l1, const char *l2)
{
    return s_new(name, help, KIND_COUNTER, l1, l2);
}

metric_t *metric_gauge(const char *name, const char *help, const char *l1, const char *l2)
{
    return s_new(name, help, KIND_GAUGE, l1, l2);
}

metric_t *metric_histogram(const char *name, const char *help, const char *l1, const double *bounds,
                           int n_bounds)
{
    metric_t *m = s_new(name, help, KIND_HISTOGRAM, l1, NULL);
    m->bounds = bounds;
    m->n_bounds = n_bounds;
    return m;
}

static series_t *s_series(metric_t *m, const char *l1, const char *l2)
{
    if (!m->label1) l1 = "";
    if (!m->label2) l2 = "";
    if (!l1) l1 = "";
    if (!l2) l2 = "";
    for (int i = 0; i < m->n_series; i++)
        if (strcmp(m->series[i].l1, l1) == 0 && strcmp(m->series[i].l2, l2) == 0)
            return &m->series[i];
    if (m->n_series == MAX_SERIES - 1) {
        l1 = m->label1 ? "other" : "";
        l2 = m->label2 ? "other" : "";
        for (int i = 0; i < m->n_series; i++)
            if (strcmp(m->series[i].l1, l1) == 0 && strcmp(m->series[i].l2, l2) == 0)
                return &m->series[i];
    }
    series_t *s = &m->series[m->n_series++];
    snprintf(s->l1, sizeof s->l1, "%s", l1);
    snprintf(s->l2, sizeof s->l2, "%s", l2);
    if (m->kind == KIND_HISTOGRAM) s->buckets = xcalloc((size_t)m->n_bounds, sizeof *s->buckets);
    return s;
}

void metric_add(metric_t *m, double v, const char *l1, const char *l2)
{
    s_series(m, l1, l2)->value += v;
}

void metric_set(metric_t *m, double v, const char *l1, const char *l2)
{
    s_series(m, l1, l2)->value = v;
}

void metric_observe(metric_t *m, double v, const char *l1)
{
    series_t *s = s_series(m, l1, NULL);
    s->value += v;
    s->count++;
    for (int i = 0; i < m->n_bounds; i++)
        if (v <= m->bounds[i]) {
            s->buckets[i]++;
            break;
        }
}

/* Label values are ours (method names, statuses), but escape per the text format anyway. */
static void s_label(buf_t *out, const char *name, const char *value)
{
    buf_printf(out, "%s=\"", name);
    for (const char *p = value; *p; p++) {
        if (*p == '\\' || *p == '"') buf_append(out, "\\", 1);
        if (*p == '\n') {
            buf_puts(out, "\\n");
            continue;
        }
        buf_append(out, p, 1);
    }
    buf_puts(out, "\"");
}

static void s_labels(buf_t *out, const metric_t *m, const series_t *s, const char *le)
{
    int n = 0;
    if (!m->label1 && !le) return;
    buf_puts(out, "{");
    if (m->label1) s_label(out, m->label1, s->l1), n++;
    if (m->label2) buf_puts(out, ","), s_label(out, m->label2, s->l2), n++;
    if (le) {
        if (n) buf_puts(out, ",");
        s_label(out, "le", le);
    }
    buf_puts(out, "}");
}

static void s_render_histogram(buf_t *out, const metric_t *m, const series_t *s)
{
    uint64_t cum = 0;
    char le[32];
    for (int i = 0; i < m->n_bounds; i++) {
        cum += s->buckets[i];
        snprintf(le, sizeof le, "%g", m->bounds[i]);
        buf_printf(out, "%s_bucket", m->name);
        s_labels(out, m, s, le);
        buf_printf(out, " %llu\n", (unsigned long long)cum);
    }
    buf_printf(out, "%s_bucket", m->name);
    s_labels(out, m, s, "+Inf");
    buf_printf(out, " %llu\n%s_sum", (unsigned long long)s->count, m->name);
    s_labels(out, m, s, NULL);
    buf_printf(out, " %.9g\n%s_count", s->value, m->name);
    s_labels(out, m, s, NULL);
    buf_printf(out, " %llu\n", (unsigned long long)s->count);
}

double metric_total(const metric_t *m)
{
    double total = 0;
    for (int i = 0; m && i < m->n_series; i++)
        total += m->kind == KIND_HISTOGRAM ? (double)m->series[i].count : m->series[i].value;
    return total;
}

void metrics_render(buf_t *out)
{
    static const char *types[] = {"counter", "gauge", "histogram"};
    buf_printf(
        out,
        "# HELP snakepit_build_info Build of this process.\n"
        "# TYPE snakepit_build_info gauge\n"
        "snakepit_build_info{component=\"mcp\",version=\"%s\"} 1\n"
        "# HELP process_start_time_seconds Start time of the process since unix epoch in seconds.\n"
        "# TYPE process_start_time_seconds gauge\n"
        "process_start_time_seconds %.3f\n",
        s_version, s_start_time);
    for (const metric_t *m = s_metrics; m; m = m->next) {
        buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", m->name, m->help, m->name, types[m->kind]);
        if (!m->n_series && !m->label1) {
            buf_printf(out, "%s%s 0\n", m->name, m->kind == KIND_HISTOGRAM ? "_count" : "");
            continue;
        }
        for (int i = 0; i < m->n_series; i++) {
            const series_t *s = &m->series[i];
            if (m->kind == KIND_HISTOGRAM) {
                s_render_histogram(out, m, s);
                continue;
            }
            buf_puts(out, m->name);
            s_labels(out, m, s, NULL);
            buf_printf(out, " %.17g\n", s->value);
        }
    }
}

void metrics_free(void)
{
    while (s_metrics) {
        metric_t *m = s_metrics;
        s_metrics = m->next;
        for (int i = 0; i < m->n_series; i++) free(m->series[i].buckets);
        free(m->series);
        free(m->name);
        free(m->help);
        free(m);
    }
    s_tail = &s_metrics;
}

static const double s_duration_bounds[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
                                           0.025,  0.05,    0.1,    0.25,  0.5,    1,     2.5,
                                           5,      10,      30,     60,    120,    300};

static const double s_overhead_bounds[] = {0.00005, 0.0001, 0.00015, 0.0002,  0.00025,
                                           0.0003,  0.0004, 0.0005,  0.00075, 0.001,
                                           0.002,   0.005,  0.01,    0.05};

void fe_metrics_init(const char *version)
{
    snprintf(s_version, sizeof s_version, "%s", version);
    s_start_time = (double)clock_wall_ms() / 1000.0;
    M.requests = metric_counter("snakepit_mcp_requests_total",
                                "MCP messages handled, by JSON-RPC method and outcome.", "method",
                                "outcome");
    M.request_seconds = metric_histogram(
        "snakepit_mcp_request_duration_seconds",
        "Time from a request's arrival to its final response.", "method", s_duration_bounds,
        (int)(sizeof s_duration_bounds / sizeof s_duration_bounds[0]));
    M.overhead_seconds = metric_histogram(
        "snakepit_mcp_overhead_seconds",
        "The front-end's own time per job-backed request: its duration "
        "minus the job's time between submit and result.",
        "method", s_overhead_bounds, (int)(sizeof s_overhead_bounds / sizeof s_overhead_bounds[0]));
    M.tool_calls = metric_counter("snakepit_mcp_tool_calls_total",
                                  "Tool calls by tool and result status.", "tool", "status");
    M.rate_limited = metric_counter(
        "snakepit_mcp_rate_limit_rejections_total",
        "Calls refused by the per-tenant rate limit, by where it was decided.", "source", NULL);
    M.rate_fallback = metric_counter(
        "snakepit_mcp_rate_limit_fallbacks_total",
        "Rate-limit decisions made by the local limiter because Redis was unreachable.", NULL,
        NULL);
    M.auth_failures =
        metric_counter("snakepit_mcp_auth_failures_total",
                       "HTTP requests refused by authentication, by reason.", "reason", NULL);
    M.sessions = metric_gauge("snakepit_mcp_sessions", "Open MCP sessions.", "transport", NULL);
    M.sessions_opened = metric_counter("snakepit_mcp_sessions_opened_total", "MCP sessions opened.",
                                       "transport", NULL);
    M.redis_errors = metric_counter(
        "snakepit_mcp_redis_errors_total",
        "Redis commands that failed or could not be sent, by operation.", "op", NULL);
    M.records_dropped = metric_counter(
        "snakepit_mcp_records_dropped_total",
        "Record and usage writes dropped because the bounded buffer was full.", NULL, NULL);
    M.records_unconfirmed = metric_counter(
        "snakepit_mcp_records_unconfirmed_total",
        "Answers sent before Redis confirmed the execution's final record, by reason: buffered "
        "(Redis away or backed up), slow (no answer within --record-wait-ms), failed.",
        "reason", NULL);
    M.rejections = metric_counter("snakepit_mcp_rejections_total",
                                  "Malformed or refused input, by reason.", "reason", NULL);
    M.http_responses = metric_counter("snakepit_mcp_http_responses_total",
                                      "HTTP responses by status code.", "code", NULL);
    M.jobs_inflight = metric_gauge("snakepit_mcp_jobs_inflight",
                                   "Jobs submitted and not yet answered.", NULL, NULL);
    M.broker_unavailable =
        metric_counter("snakepit_mcp_broker_unavailable_total",
                       "Jobs refused at once because no broker was connected.", NULL, NULL);
}
