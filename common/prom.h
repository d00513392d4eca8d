/* common/prom.h — writing the Prometheus text exposition format, version 0.0.4
 * (https://prometheus.io/docs/instrumenting/exposition_formats/), into a buf_t. Components
 * keep their own counters in plain structs and render them on each scrape with these verbs;
 * nothing here allocates per sample or keeps global state.
 *
 *   prom_family(out, "snakepit_broker_jobs_dispatched_total", PROM_COUNTER, "Jobs sent ...");
 *   prom_sample(out, "snakepit_broker_jobs_dispatched_total", 42, "service", "python.basic", NULL);
 *
 * Label values are escaped (backslash, double quote, newline) as the format requires; names
 * are the caller's constants and are not checked. */
#ifndef SP_PROM_H
#define SP_PROM_H
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

typedef enum { PROM_COUNTER, PROM_GAUGE, PROM_HISTOGRAM, PROM_UNTYPED } prom_type_t;

/* # HELP and # TYPE lines; once per metric family, before its samples. */
void prom_family(buf_t *out, const char *name, prom_type_t type, const char *help);
/* One sample line. After value: label name/value string pairs, ended by NULL. */
void prom_sample(buf_t *out, const char *name, double value, ...) __attribute__((sentinel));
/* Same, with the pairs in an array ending with NULL (may be NULL itself). */
void prom_sample_labels(buf_t *out, const char *name, double value, const char *const *labels);

/* A histogram with fixed bucket bounds (ascending, the +Inf bucket is implicit). */
#define PROM_MAX_BUCKETS 32
typedef struct {
    const double *bounds;                  /* upper bounds, caller-owned, static */
    size_t n;                              /* how many (≤ PROM_MAX_BUCKETS) */
    uint64_t counts[PROM_MAX_BUCKETS + 1]; /* per bucket, not cumulative; last = +Inf */
    uint64_t count;
    double sum;
} prom_hist_t;

void prom_hist_init(prom_hist_t *h, const double *bounds, size_t n);
void prom_hist_observe(prom_hist_t *h, double value);
/* name is the family name without _bucket/_sum/_count; labels as for prom_sample_labels. */
void prom_hist_write(buf_t *out, const char *name, const prom_hist_t *h, const char *const *labels);

/* Buckets for durations in seconds, from half a millisecond to a minute. */
extern const double prom_seconds_buckets[];
extern const size_t prom_seconds_buckets_n;

/* The two series every snakepit component exports: snakepit_build_info{component,version}
 * and process_start_time_seconds (start is wall-clock seconds since the epoch). */
void prom_write_process(buf_t *out, const char *component, const char *version, double start);

#endif
