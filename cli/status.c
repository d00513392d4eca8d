/* cli/status.c — `snakepit status`; see status.h. Reading the snapshots and their rates is
 * snapshots.h's; this file sums them up and shows them, on the screen or as JSON. */
#define _GNU_SOURCE
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/config.h"
#include "cli/farm/farm.h"
#include "snapshots.h"
#include "status.h"

#define EX_USAGE_       64
#define EX_UNAVAILABLE_ 69

typedef struct {
    char state_dir[PATH_MAX];
    char redis[PATH_MAX + 16];
    int json;
    long interval_ms;
} status_args_t;

static const cfg_opt_t s_opts[] = {
    CFG_OPT_STR(status_args_t, state_dir, "state-dir", "DIR",
                "farm state directory (its ready.json names the Redis)"),
    CFG_OPT_STR(status_args_t, redis, "redis", "URL",
                "the farm's Redis (default: the state directory's farm, else the installed "
                "farm's, from /etc/snakepit/mcp.conf)"),
    CFG_OPT_BOOL(status_args_t, json, "json", "print one JSON object instead of the screen"),
    CFG_OPT_INT(status_args_t, interval_ms, "interval-ms", 0, 60000, "MS",
                "time between the two readings rates come from (0: one reading, no rates)"),
    CFG_OPT_END,
};

/* ---- the picture --------------------------------------------------------------------- */

typedef struct {
    long long now_ms;
    size_t brokers, frontends, stale;
    size_t executors; /* registered with the broker (or publishing, without one) */
    size_t executors_publishing;
    long long slots, busy, free_slots, queued, inflight;
    long long reserve; /* slots kept for tenants with nothing running, on top of slots */
    double jobs_per_s;
    int have_rates;
    json_t *problems; /* array of strings: any makes the exit status 1 */
    json_t *notes;    /* array of strings: worth knowing, not a failure */
} summary_t;

/* Capacity comes from the broker, which sees every executor registered with it, publishing
 * or not (a node started without --redis publishes nothing); with several brokers each
 * executor registers with all, so the largest view is taken, not the sum. Without a fresh
 * broker snapshot, the executors' own snapshots are all there is. */
static void s_summarise(const snapshots_t *all, json_t *const *rates, summary_t *sum)
{
    sum->problems = json_array();
    sum->notes = json_array();
    long long ex_slots = 0, ex_busy = 0, ex_free = 0, ex_reserve = 0;
    double ex_jobs_per_s = 0, broker_jobs_per_s = 0;
    int ex_rates = 0, broker_rates = 0;
    for (size_t i = 0; i < all->n; i++) {
        const snapshot_t *s = &all->v[i];
        int stale = snapshot_stale(s, sum->now_ms);
        sum->stale += stale;
        if (stale)
            json_array_append_new(sum->problems,
                                  json_sprintf("%s %s: snapshot is %s", s->component, s->instance,
                                               s->ts_ms ? "stale" : "without a timestamp"));
        if (stale) continue;
        if (!strcmp(s->component, "broker")) {
            sum->brokers++;
            sum->queued += snapshot_num(s->fields, "queued", 0);
            sum->inflight += snapshot_num(s->fields, "inflight", 0);
            if ((size_t)snapshot_num(s->fields, "executors", 0) >= sum->executors) {
                sum->executors = (size_t)snapshot_num(s->fields, "executors", 0);
                sum->slots = snapshot_num(s->fields, "slots", 0);
                sum->free_slots = snapshot_num(s->fields, "free_slots", 0);
                sum->reserve = snapshot_num(s->fields, "reserve_slots", 0);
            }
            if (rates[i] && json_object_get(rates[i], "completed_total")) {
                broker_rates = 1;
                broker_jobs_per_s +=
                    json_number_value(json_object_get(rates[i], "completed_total"));
            }
        } else if (!strcmp(s->component, "executor")) {
            long long slots = snapshot_num(s->fields, "slots", 0);
            const char *unserved = json_string_value(json_object_get(s->fields, "unserved"));
            sum->executors_publishing++;
            if (snapshot_num(s->fields, "draining", 0))
                json_array_append_new(sum->notes,
                                      json_sprintf("executor %s is draining: it takes no new "
                                                   "job and stops once its running ones end",
                                                   s->instance));
            if (unserved && unserved[0])
                json_array_append_new(sum->notes,
                                      json_sprintf("executor %s does not serve %s: its sandbox "
                                                   "could not start (its log says why)",
                                                   s->instance, unserved));
            ex_slots += slots;
            ex_busy += snapshot_num(s->fields, "busy", 0);
            ex_reserve += snapshot_num(s->fields, "reserve_slots", 0);
            ex_free += snapshot_num(s->fields, "free", slots - snapshot_num(s->fields, "busy", 0));
            if (rates[i] && json_object_get(rates[i], "jobs")) {
                ex_rates = 1;
                ex_jobs_per_s += json_number_value(json_object_get(rates[i], "jobs"));
            }
        } else if (!strcmp(s->component, "mcp")) {
            sum->frontends++;
        }
    }
    if (!sum->brokers) {
        sum->executors = sum->executors_publishing;
        sum->slots = ex_slots;
        sum->free_slots = ex_free;
        sum->reserve = ex_reserve;
    } else if (sum->brokers > 1 && sum->executors_publishing >= sum->executors) {
        /* several brokers: each sees as free only the credit it holds (PROTOCOL.md §3.1); the
         * executors' own counts say what is busy */
        sum->slots = ex_slots;
        sum->free_slots = ex_free;
        sum->reserve = ex_reserve;
    }
    sum->busy = sum->brokers ? sum->slots - sum->free_slots : ex_busy;
    sum->have_rates = broker_rates || ex_rates;
    sum->jobs_per_s = broker_rates ? broker_jobs_per_s : ex_jobs_per_s;
    if (!sum->brokers)
        json_array_append_new(sum->problems, json_string("no broker publishes a fresh snapshot"));
    if (!sum->executors)
        json_array_append_new(sum->problems, json_string("no executor node is registered"));
    if (sum->executors > sum->executors_publishing)
        json_array_append_new(
            sum->notes, json_sprintf("%zu executor node(s) registered with the broker publish no "
                                     "snapshot (start them with --redis to see them here)",
                                     sum->executors - sum->executors_publishing));
    if (!sum->frontends)
        json_array_append_new(sum->notes,
                              json_string("no front-end publishes a snapshot (sp:metrics:mcp:*); "
                                          "their figures are on their /metrics"));
}

static json_t *s_to_json(const char *redis, const snapshots_t *all, json_t *const *rates,
                         const summary_t *sum)
{
    json_t *comps = json_array();
    for (size_t i = 0; i < all->n; i++) {
        const snapshot_t *s = &all->v[i];
        json_t *o =
            json_pack("{s:s, s:s, s:O, s:b}", "component", s->component, "instance", s->instance,
                      "fields", s->fields, "stale", snapshot_stale(s, sum->now_ms));
        json_object_set_new(o, "age_s",
                            s->ts_ms ? json_real((double)(sum->now_ms - s->ts_ms) / 1000.0)
                                     : json_null());
        json_object_set_new(o, "ttl_s",
                            s->ttl_ms >= 0 ? json_real((double)s->ttl_ms / 1000.0) : json_null());
        json_object_set_new(o, "rates", rates[i] ? json_incref(rates[i]) : json_null());
        json_array_append_new(comps, o);
    }
    json_t *summary = json_pack(
        "{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "brokers", (json_int_t)sum->brokers,
        "executors", (json_int_t)sum->executors, "executors_publishing",
        (json_int_t)sum->executors_publishing, "frontends", (json_int_t)sum->frontends, "slots",
        (json_int_t)sum->slots, "busy", (json_int_t)sum->busy, "free", (json_int_t)sum->free_slots,
        "queued", (json_int_t)sum->queued, "inflight", (json_int_t)sum->inflight, "stale",
        (json_int_t)sum->stale);
    json_object_set_new(summary, "reserve_slots", json_integer((json_int_t)sum->reserve));
    json_object_set_new(summary, "jobs_per_s",
                        sum->have_rates ? json_real(sum->jobs_per_s) : json_null());
    return json_pack("{s:s, s:I, s:b, s:O, s:O, s:o, s:o}", "redis", redis, "time_ms",
                     (json_int_t)sum->now_ms, "healthy", json_array_size(sum->problems) == 0,
                     "problems", sum->problems, "notes", sum->notes, "summary", summary,
                     "components", comps);
}

static void s_age(char *out, size_t cap, const snapshot_t *s, long long now_ms)
{
    if (!s->ts_ms)
        snprintf(out, cap, "?!");
    else
        snprintf(out, cap, "%.1fs%s", (double)(now_ms - s->ts_ms) / 1000.0,
                 snapshot_stale(s, now_ms) ? "!" : "");
}

static void s_rate(char *out, size_t cap, const json_t *rates, const char *name)
{
    const json_t *v = rates ? json_object_get(rates, name) : NULL;
    if (v)
        snprintf(out, cap, "%.1f", json_number_value(v));
    else
        snprintf(out, cap, "-");
}

static void s_print_brokers(const snapshots_t *all, json_t *const *rates, long long now_ms)
{
    printf("\n%-22s %9s %5s %5s %7s %8s %7s %7s %10s %9s %6s %6s\n", "BROKER", "EXECUTORS", "SLOTS",
           "FREE", "QUEUED", "INFLIGHT", "TENANTS", "CLIENTS", "DISPATCH/S", "REJECT/S", "LOST",
           "AGE");
    size_t n = 0;
    for (size_t i = 0; i < all->n; i++) {
        const snapshot_t *s = &all->v[i];
        if (strcmp(s->component, "broker")) continue;
        char age[16], disp[16], rej[16];
        s_age(age, sizeof age, s, now_ms);
        s_rate(disp, sizeof disp, rates[i], "dispatched_total");
        s_rate(rej, sizeof rej, rates[i], "rejected_total");
        printf("%-22.22s %9lld %5lld %5lld %7lld %8lld %7lld %7lld %10s %9s %6lld %6s\n",
               s->instance, snapshot_num(s->fields, "executors", 0),
               snapshot_num(s->fields, "slots", 0), snapshot_num(s->fields, "free_slots", 0),
               snapshot_num(s->fields, "queued", 0), snapshot_num(s->fields, "inflight", 0),
               snapshot_num(s->fields, "tenants", 0), snapshot_num(s->fields, "clients", 0), disp,
               rej, snapshot_num(s->fields, "lost_total", 0), age);
        n++;
    }
    if (!n) printf("  (none: no sp:metrics:broker:* snapshot)\n");

    printf("\n%-22s %-16s %9s %5s %5s %7s %8s\n", "SERVICE", "BROKER", "EXECUTORS", "SLOTS", "FREE",
           "QUEUED", "INFLIGHT");
    for (size_t i = 0; i < all->n; i++) {
        const snapshot_t *s = &all->v[i];
        const json_t *svs = json_object_get(s->fields, "services");
        if (strcmp(s->component, "broker") || !json_is_object(svs)) continue;
        const char *name;
        json_t *sv;
        json_object_foreach((json_t *)svs, name, sv)
        {
            printf("%-22.22s %-16.16s %9lld %5lld %5lld %7lld %8lld\n", name, s->instance,
                   snapshot_num(sv, "executors", 0), snapshot_num(sv, "slots", 0),
                   snapshot_num(sv, "free", 0), snapshot_num(sv, "queued", 0),
                   snapshot_num(sv, "inflight", 0));
        }
    }
}

static void s_print_executors(const snapshots_t *all, json_t *const *rates, long long now_ms)
{
    printf("\n%-22s %-16s %5s %4s %4s %6s %6s %10s %6s %8s %6s %6s\n", "EXECUTOR", "SERVICES",
           "SLOTS", "BUSY", "FREE", "JOBS", "JOBS/S", "VIOLATIONS", "FORKS", "RESTARTS", "BROKER",
           "AGE");
    size_t n = 0;
    for (size_t i = 0; i < all->n; i++) {
        const snapshot_t *s = &all->v[i];
        if (strcmp(s->component, "executor")) continue;
        char age[16], jps[16];
        const char *svc = json_string_value(json_object_get(s->fields, "services"));
        long long conn = snapshot_num(s->fields, "broker_connected", -1);
        s_age(age, sizeof age, s, now_ms);
        s_rate(jps, sizeof jps, rates[i], "jobs");
        printf("%-22.22s %-16.16s %5lld %4lld %4lld %6lld %6s %10lld %6lld %8lld %6s %6s\n",
               s->instance, svc ? svc : "-", snapshot_num(s->fields, "slots", 0),
               snapshot_num(s->fields, "busy", 0), snapshot_num(s->fields, "free", 0),
               snapshot_num(s->fields, "jobs", 0), jps, snapshot_num(s->fields, "violations", 0),
               snapshot_num(s->fields, "forks", 0), snapshot_num(s->fields, "zygote_restarts", 0),
               conn < 0 ? "?"
               : conn   ? "up"
                        : "DOWN",
               age);
        n++;
    }
    if (!n) printf("  (none: no sp:metrics:executor:* snapshot)\n");
}

/* Front-ends and anything else: their fields as they are, counters with their rate. */
static void s_print_others(const snapshots_t *all, json_t *const *rates, long long now_ms)
{
    for (size_t i = 0; i < all->n; i++) {
        const snapshot_t *s = &all->v[i];
        if (!strcmp(s->component, "broker") || !strcmp(s->component, "executor")) continue;
        char age[16];
        s_age(age, sizeof age, s, now_ms);
        printf("\n%s %s (age %s)\n ", s->component, s->instance, age);
        const char *name;
        json_t *v;
        json_object_foreach(s->fields, name, v)
        {
            if (!strcmp(name, "ts_ms") || !strcmp(name, "updated_ms")) continue;
            char *text = json_is_string(v) ? strdup(json_string_value(v))
                                           : json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
            printf(" %s=%s", name, text ? text : "?");
            free(text);
            const json_t *r = rates[i] ? json_object_get(rates[i], name) : NULL;
            if (r) printf(" (%.1f/s)", json_number_value(r));
        }
        printf("\n");
    }
}

static void s_print(const char *redis, const snapshots_t *all, json_t *const *rates,
                    const summary_t *sum)
{
    char when[32];
    time_t secs = (time_t)(sum->now_ms / 1000);
    struct tm tm;
    gmtime_r(&secs, &tm);
    strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm);
    printf("snakepit farm   %s   redis %s\n\n", when, redis);
    printf("  executors %zu   slots %lld", sum->executors, sum->slots);
    if (sum->reserve) printf(" + %lld reserved", sum->reserve);
    printf(" (busy %lld, free %lld)   queued %lld   in flight %lld", sum->busy, sum->free_slots,
           sum->queued, sum->inflight);
    if (sum->have_rates) printf("   jobs %.1f/s", sum->jobs_per_s);
    printf("\n  brokers %zu   executors publishing %zu   front-ends publishing %zu\n", sum->brokers,
           sum->executors_publishing, sum->frontends);
    s_print_brokers(all, rates, sum->now_ms);
    s_print_executors(all, rates, sum->now_ms);
    s_print_others(all, rates, sum->now_ms);
    size_t i;
    json_t *p;
    if (json_array_size(sum->notes)) {
        printf("\nNOTES\n");
        json_array_foreach(sum->notes, i, p) printf("  %s\n", json_string_value(p));
    }
    if (json_array_size(sum->problems)) {
        printf("\nPROBLEMS (AGE ending in ! = snapshot older than %d s)\n",
               SNAPSHOT_STALE_MS / 1000);
        json_array_foreach(sum->problems, i, p) printf("  %s\n", json_string_value(p));
    }
}

/* ---- main ----------------------------------------------------------------------------- */

/* Reads the options into a. -1 to go on, or the exit status (--help answered, or a usage
 * error said). */
static int s_options(status_args_t *a, int argc, char **argv)
{
    status_args_t defaults = {.interval_ms = 1000};
    *a = defaults;
    char *rest[1];
    int n_rest = 1;
    char err[512];
    switch (config_load(a, s_opts, argc, argv, rest, &n_rest, err, sizeof err)) {
    case CONFIG_HELP:
        config_usage(
            stdout, "snakepit status [--state-dir DIR | --redis URL] [--json] [--interval-ms MS]",
            "The whole farm on one screen, from the snapshots each broker, executor node and\n"
            "front-end publishes to Redis (sp:metrics:COMPONENT:INSTANCE). Exit status: 0\n"
            "healthy, 1 degraded (no broker, no executor, or a stale snapshot), 69 Redis\n"
            "unreachable.",
            s_opts, &defaults);
        return 0;
    case CONFIG_ERROR:
        fprintf(stderr, "snakepit status: %s\n", err);
        return EX_USAGE_;
    case CONFIG_OK:
        break;
    }
    if (n_rest) {
        fprintf(stderr, "snakepit status: unexpected argument '%s' (see --help)\n", rest[0]);
        return EX_USAGE_;
    }
    return -1;
}

/* Sums up the reading cur, with rates against the reading before (NULL: no rates), and shows
 * it. 0 when the farm is healthy, else 1. */
static int s_show(const status_args_t *a, const snapshots_t *cur, const snapshots_t *before)
{
    json_t **rates = calloc(cur->n ? cur->n : 1, sizeof *rates);
    for (size_t i = 0; rates && before && i < cur->n; i++)
        rates[i] = snapshot_rates(&cur->v[i], snapshots_find(before, &cur->v[i]));
    summary_t sum = {.now_ms = (long long)clock_wall_ms()};
    s_summarise(cur, rates, &sum);
    int healthy = json_array_size(sum.problems) == 0;
    if (a->json) {
        json_t *o = s_to_json(a->redis, cur, rates, &sum);
        json_dumpf(o, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(6));
        printf("\n");
        json_decref(o);
    } else {
        s_print(a->redis, cur, rates, &sum);
    }
    json_decref(sum.problems);
    json_decref(sum.notes);
    for (size_t i = 0; rates && i < cur->n; i++) json_decref(rates[i]);
    free(rates);
    return healthy ? 0 : 1;
}

int status_main(int argc, char **argv)
{
    status_args_t a;
    int rc = s_options(&a, argc, argv);
    if (rc >= 0) return rc;
    redisContext *c = farm_connect("snakepit status", a.state_dir, a.redis, sizeof a.redis);
    if (!c) return EX_UNAVAILABLE_;
    char err[512];
    snapshots_t first = {0}, now = {0};
    rc = snapshots_read(c, &first, err, sizeof err);
    if (rc == 0 && a.interval_ms > 0)
        rc = snapshots_read_again(c, &first, &now, a.interval_ms, err, sizeof err);
    redisFree(c);
    if (rc < 0)
        fprintf(stderr, "snakepit status: %s\n", err);
    else if (a.interval_ms > 0)
        rc = s_show(&a, &now, &first);
    else
        rc = s_show(&a, &first, NULL);
    snapshots_free(&first);
    snapshots_free(&now);
    return rc < 0 ? EX_UNAVAILABLE_ : rc;
}
