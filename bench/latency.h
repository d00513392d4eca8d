/* bench/latency.h — what every load driver of `make bench` records and how it reports it.
 *
 * A run is closed-loop: the driver keeps N requests outstanding; each answer immediately
 * makes room for the next. Time is split in three phases so that start-up and tail-off do
 * not colour the figures:
 *
 *   warm-up (answers not counted) → window (answers counted: rate and latencies) → drain
 *   (no new requests; the outstanding ones are waited for, bounded, and any that never
 *   answer are errors, like every answer that is not `ok`).
 *
 * Each driver prints one JSON line per configuration with latency_report; bench/bench.py
 * assembles them into bench/results/. */
#ifndef SP_BENCH_LATENCY_H
#define SP_BENCH_LATENCY_H
#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

typedef struct latency latency_t;

latency_t *latency_new(void);
void       latency_destroy(latency_t **self_p);
void       latency_add(latency_t *self, uint64_t us);
size_t     latency_count(const latency_t *self);
double     latency_pct_ms(latency_t *self, double pct); /* nearest rank; 0 when empty */

/* The phases of one configuration, on the monotonic clock (µs). The window opens once the
 * warm-up time has passed AND each of the first C requests has been answered (every place in
 * the closed loop has turned over once, so latencies are the steady state's), and closes once
 * `seconds` have passed AND at least `window_answers` answers landed in it; each phase gives up
 * waiting after 30 s. Until decided, window_us, end_us and give_up_us are far away. */
typedef struct {
    uint64_t start_us;       /* requests start */
    uint64_t warm_us;        /* the earliest the window may open */
    uint64_t min_answers;    /* answers needed before it opens */
    uint64_t window_us;      /* counting starts */
    uint64_t end_us;         /* counting ends, no new requests */
    uint64_t give_up_us;     /* outstanding requests still unanswered then are errors */
    double   seconds, drain_s;
    uint64_t window_answers; /* answers needed in the window before it closes */
    uint64_t answers;        /* in any phase, ok or not */
    uint64_t done_in_window;
    uint64_t errors;         /* in any phase */
    uint64_t lost;           /* never answered (counted in errors too) */
    char     first_error[200];
} run_t;

void run_begin(run_t *run, double warmup_s, double seconds, double drain_s, int concurrency,
               long window_answers);
/* Call once per loop turn: opens and closes the window when their time has come. */
void run_tick(run_t *run, uint64_t now_us);
int  run_in_window(const run_t *run, uint64_t now_us);
int  run_accepting(const run_t *run, uint64_t now_us); /* may a new request start? */
/* An answer arrived: counts it, records its latency when it lands in the window. */
void run_answer(run_t *run, latency_t *lat, uint64_t started_us, uint64_t now_us, int ok,
                const char *error);

/* One JSON object (no newline): variant, snippet, concurrency, the five measured fields
 * (exec_per_s, p50_ms, p90_ms, p99_ms, errors), n, and whatever `extra` holds (a JSON
 * fragment starting with a comma, or NULL). */
void latency_report(buf_t *out, const char *variant, const char *snippet, int concurrency,
                    run_t *run, latency_t *lat, const char *extra);

/* The concurrencies a driver runs each snippet at, from "1,8,64". */
typedef struct {
    int v[16];
    int n;
} conc_list_t;
/* Each value 1..max. 0, or -1 when malformed or more than 16. */
int bench_parse_concurrency(const char *s, conc_list_t *out, int max);

/* Set by SIGINT/SIGTERM once bench_stop_on_signals() ran: drivers end the run at hand, skip
 * the rest and exit 130. */
extern volatile sig_atomic_t bench_stop;
void bench_stop_on_signals(void);

/* JSON string escaping for reports. */
void json_escape(buf_t *out, const char *s);

#endif
