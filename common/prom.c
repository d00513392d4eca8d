/* common/prom.c — see prom.h. */
#define _GNU_SOURCE
#include <assert.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "prom.h"

const double prom_seconds_buckets[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                       0.25,   0.5,   1,      2.5,   5,    10,    30,   60};
const size_t prom_seconds_buckets_n = sizeof prom_seconds_buckets / sizeof prom_seconds_buckets[0];

static const char *s_type_names[] = {"counter", "gauge", "histogram", "untyped"};

static void s_escape(buf_t *out, const char *s, int help)
{
    for (const char *p = s; *p; p++) {
        if (*p == '\\')
            buf_puts(out, "\\\\");
        else if (*p == '\n')
            buf_puts(out, "\\n");
        else if (*p == '"' && !help)
            buf_puts(out, "\\\"");
        else
            buf_append(out, p, 1);
    }
}

void prom_family(buf_t *out, const char *name, prom_type_t type, const char *help)
{
    buf_printf(out, "# HELP %s ", name);
    s_escape(out, help, 1);
    buf_printf(out, "\n# TYPE %s %s\n", name, s_type_names[type]);
}

static void s_value(buf_t *out, double v)
{
    if (isnan(v))
        buf_puts(out, "NaN");
    else if (isinf(v))
        buf_puts(out, v > 0 ? "+Inf" : "-Inf");
    else if (v == (double)(int64_t)v && fabs(v) < 9007199254740992.0)
        buf_printf(out, "%lld", (long long)v);
    else
        buf_printf(out, "%.17g", v);
}

static void s_labels(buf_t *out, const char *const *labels, const char *extra_name,
                     const char *extra_value)
{
    int n = 0;
    if (labels)
        for (int i = 0; labels[i] && labels[i + 1]; i += 2) {
            buf_puts(out, n++ ? "," : "{");
            buf_printf(out, "%s=\"", labels[i]);
            s_escape(out, labels[i + 1], 0);
            buf_puts(out, "\"");
        }
    if (extra_name) {
        buf_puts(out, n++ ? "," : "{");
        buf_printf(out, "%s=\"%s\"", extra_name, extra_value);
    }
    if (n) buf_puts(out, "}");
}

void prom_sample_labels(buf_t *out, const char *name, double value, const char *const *labels)
{
    buf_puts(out, name);
    s_labels(out, labels, NULL, NULL);
    buf_puts(out, " ");
    s_value(out, value);
    buf_puts(out, "\n");
}

void prom_sample(buf_t *out, const char *name, double value, ...)
{
    const char *labels[17];
    int n = 0;
    va_list ap;
    va_start(ap, value);
    for (const char *s; (s = va_arg(ap, const char *)) != NULL;) {
        assert(n < 16); /* eight label pairs are more than any snakepit series has */
        labels[n++] = s;
    }
    va_end(ap);
    labels[n] = NULL;
    prom_sample_labels(out, name, value, labels);
}

void prom_hist_init(prom_hist_t *h, const double *bounds, size_t n)
{
    assert(n <= PROM_MAX_BUCKETS);
    memset(h, 0, sizeof *h);
    h->bounds = bounds;
    h->n = n;
}

void prom_hist_observe(prom_hist_t *h, double value)
{
    size_t i = 0;
    while (i < h->n && value > h->bounds[i]) i++;
    h->counts[i]++;
    h->count++;
    h->sum += value;
}

void prom_hist_write(buf_t *out, const char *name, const prom_hist_t *h, const char *const *labels)
{
    uint64_t cumulative = 0;
    char le[32];
    for (size_t i = 0; i <= h->n; i++) {
        cumulative += h->counts[i];
        if (i < h->n)
            snprintf(le, sizeof le, "%g", h->bounds[i]);
        else
            snprintf(le, sizeof le, "+Inf");
        buf_printf(out, "%s_bucket", name);
        s_labels(out, labels, "le", le);
        buf_printf(out, " %llu\n", (unsigned long long)cumulative);
    }
    buf_printf(out, "%s_sum", name);
    s_labels(out, labels, NULL, NULL);
    buf_puts(out, " ");
    s_value(out, h->sum);
    buf_printf(out, "\n%s_count", name);
    s_labels(out, labels, NULL, NULL);
    buf_printf(out, " %llu\n", (unsigned long long)h->count);
}

void prom_write_process(buf_t *out, const char *component, const char *version, double start)
{
    prom_family(out, "snakepit_build_info", PROM_GAUGE,
                "Always 1; the labels say which snakepit component and version this is.");
    prom_sample(out, "snakepit_build_info", 1, "component", component, "version", version, NULL);
    prom_family(out, "process_start_time_seconds", PROM_GAUGE,
                "Start time of the process since unix epoch in seconds.");
    prom_sample(out, "process_start_time_seconds", start, NULL);
}
