/* bench/latency.c — see latency.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "latency.h"

struct latency {
    uint64_t *us;     /* one sample per answer in the window */
    size_t    n, cap;
    int       sorted; /* us[0..n) is in order */
};

latency_t *latency_new(void)
{
    latency_t *self = xcalloc(1, sizeof *self);
    self->cap = 4096;
    self->us = xmalloc(self->cap * sizeof *self->us);
    return self;
}

void latency_destroy(latency_t **self_p)
{
    if (!*self_p) return;
    free((*self_p)->us);
    free(*self_p);
    *self_p = NULL;
}

void latency_add(latency_t *self, uint64_t us)
{
    if (self->n == self->cap) {
        self->cap *= 2;
        self->us = xrealloc(self->us, self->cap * sizeof *self->us);
    }
    self->us[self->n++] = us;
    self->sorted = 0;
}

size_t latency_count(const latency_t *self)
{
    return self->n;
}

static int s_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

double latency_pct_ms(latency_t *self, double pct)
{
    if (!self->n) return 0;
    if (!self->sorted) {
        qsort(self->us, self->n, sizeof *self->us, s_cmp);
        self->sorted = 1;
    }
    /* nearest rank: the smallest sample with at least pct% of the samples at or below it */
    size_t rank = (size_t)(pct / 100.0 * (double)self->n + 0.999999);
    if (rank < 1) rank = 1;
    if (rank > self->n) rank = self->n;
    return (double)self->us[rank - 1] / 1000.0;
}

#define PHASE_CAP_US (30u * 1000000u)
#define FAR_AWAY     (UINT64_MAX / 4)

void run_begin(run_t *run, double warmup_s, double seconds, double drain_s, int concurrency,
               long window_answers)
{
    memset(run, 0, sizeof *run);
    run->start_us = clock_mono_us();
    run->warm_us = run->start_us + (uint64_t)(warmup_s * 1e6);
    run->min_answers = (uint64_t)concurrency;
    run->window_answers = window_answers > 0 ? (uint64_t)window_answers : (uint64_t)concurrency;
    run->seconds = seconds;
    run->drain_s = drain_s;
    run->window_us = run->end_us = run->give_up_us = FAR_AWAY;
}

void run_tick(run_t *run, uint64_t now_us)
{
    if (run->window_us == FAR_AWAY) {
        if ((now_us >= run->warm_us && run->answers >= run->min_answers) ||
            now_us >= run->start_us + PHASE_CAP_US)
            run->window_us = now_us;
        return;
    }
    if (run->end_us != FAR_AWAY) return;
    if ((now_us >= run->window_us + (uint64_t)(run->seconds * 1e6) &&
         run->done_in_window >= run->window_answers) ||
        now_us >= run->window_us + PHASE_CAP_US) {
        run->end_us = now_us;
        run->give_up_us = now_us + (uint64_t)(run->drain_s * 1e6);
    }
}

int run_in_window(const run_t *run, uint64_t now_us)
{
    return now_us >= run->window_us && now_us < run->end_us;
}

int run_accepting(const run_t *run, uint64_t now_us)
{
    return now_us < run->end_us;
}

void run_answer(run_t *run, latency_t *lat, uint64_t started_us, uint64_t now_us, int ok,
                const char *error)
{
    run->answers++;
    if (!ok) {
        run->errors++;
        if (!run->first_error[0])
            snprintf(run->first_error, sizeof run->first_error, "%s", error ? error : "error");
        return;
    }
    if (!run_in_window(run, now_us)) return;
    run->done_in_window++;
    latency_add(lat, now_us - started_us);
}

void json_escape(buf_t *out, const char *s)
{
    buf_puts(out, "\"");
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') buf_printf(out, "\\%c", c);
        else if (c == '\n') buf_puts(out, "\\n");
        else if (c < 0x20) buf_printf(out, "\\u%04x", c);
        else buf_append(out, &c, 1);
    }
    buf_puts(out, "\"");
}

void latency_report(buf_t *out, const char *variant, const char *snippet, int concurrency,
                    run_t *run, latency_t *lat, const char *extra)
{
    double secs = run->window_us == FAR_AWAY ? 0 : (double)(run->end_us - run->window_us) / 1e6;
    buf_puts(out, "{\"variant\":");
    json_escape(out, variant);
    buf_puts(out, ",\"snippet\":");
    json_escape(out, snippet);
    buf_printf(out, ",\"concurrency\":%d,\"exec_per_s\":%.1f,\"p50_ms\":%.3f,\"p90_ms\":%.3f,"
                    "\"p99_ms\":%.3f,\"errors\":%llu,\"n\":%zu,\"lost\":%llu,\"seconds\":%.2f,"
                    "\"answers\":%llu",
               concurrency, secs > 0 ? (double)run->done_in_window / secs : 0,
               latency_pct_ms(lat, 50), latency_pct_ms(lat, 90), latency_pct_ms(lat, 99),
               (unsigned long long)run->errors, latency_count(lat),
               (unsigned long long)run->lost, secs, (unsigned long long)run->answers);
    if (run->first_error[0]) {
        buf_puts(out, ",\"first_error\":");
        json_escape(out, run->first_error);
    }
    if (extra) buf_puts(out, extra);
    buf_puts(out, "}");
}

int bench_parse_concurrency(const char *s, conc_list_t *out, int max)
{
    out->n = 0;
    while (*s) {
        char *end;
        long  v = strtol(s, &end, 10);
        if (end == s || v < 1 || v > max || (*end && *end != ',')) return -1;
        if (out->n == (int)(sizeof out->v / sizeof *out->v)) return -1;
        out->v[out->n++] = (int)v;
        s = *end ? end + 1 : end;
    }
    return out->n ? 0 : -1;
}

volatile sig_atomic_t bench_stop;

static void s_on_signal(int sig)
{
    (void)sig;
    bench_stop = 1;
}

void bench_stop_on_signals(void)
{
    signal(SIGINT, s_on_signal);
    signal(SIGTERM, s_on_signal);
}
