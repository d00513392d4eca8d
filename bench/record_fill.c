/* bench/record_fill.c — writes N execution records into a Redis exactly as the front-end does
 * (mcp-frontend/state/records.c, through its store and journal: the same scripts, fields, sizes and
 * indexes), for the memory budget of docs/operating.md "Failure and recovery". Running a million real
 * jobs would take an hour on a small machine; what Redis holds per execution is the record,
 * and this is the front-end's own code writing it.
 *
 *   record_fill --redis URL --records N [--tenants T] [--code-bytes B] [--stdout-bytes B]
 *               [--pace-ms P]
 *
 * The record's shape: a realistic small job (the sample below, ~70 bytes of code printing one
 * line and ending in an expression), spread over T tenants, each with the farm's default
 * retention (10,000 records, 7 days). Writes are paced so the journal never drops any; the
 * tool exits 0 once Redis has acknowledged every record, and prints the count. With --pace-ms,
 * one record at a time instead, the next P ms after the previous one's answer, as on a quiet
 * farm (bench/redis_cost.py): it prints the count and the round trips' p50 and p90 in µs. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/ids.h"
#include "common/log.h"
#include "common/loop.h"
#include "common/redis_url.h"
#include "mcp-frontend/state/records.h"
#include "mcp-frontend/state/store.h"

#define BATCH 1000 /* records in flight at most */

typedef struct {
    loop_t *loop;
    long landed, sent, failed;
} fill_t;

static int s_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static void s_landed(void *arg, redisReply *reply)
{
    fill_t *f = arg;
    f->landed++;
    if (!reply || reply->type == REDIS_REPLY_ERROR) f->failed++;
    if (f->landed == f->sent) loop_stop(f->loop);
}

static void s_until_connected(loop_t *loop, void *arg)
{
    if (store_connected(arg)) loop_stop(loop);
}

static void s_pause(loop_t *loop, void *arg)
{
    (void)arg;
    loop_stop(loop);
}

static const char *s_arg(int argc, char **argv, const char *name, const char *def)
{
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], name) == 0) return argv[i + 1];
    return def;
}

static char *s_text(long n, const char *sample)
{
    char *s = xmalloc((size_t)n + 1);
    for (long i = 0; i < n; i++) s[i] = sample[i % (long)strlen(sample)];
    s[n] = '\0';
    return s;
}

int main(int argc, char **argv)
{
    log_init("record_fill", LOG_WARN);
    const char *url = s_arg(argc, argv, "--redis", NULL);
    long n = atol(s_arg(argc, argv, "--records", "1000"));
    long tenants = atol(s_arg(argc, argv, "--tenants", "100"));
    long code_bytes = atol(s_arg(argc, argv, "--code-bytes", "0"));
    long out_bytes = atol(s_arg(argc, argv, "--stdout-bytes", "0"));
    long pace_ms = atol(s_arg(argc, argv, "--pace-ms", "0"));
    redis_url_t u;
    char err[512];
    if (!url || redis_url_parse(url, &u, err, sizeof err) < 0) {
        fprintf(stderr, "record_fill: --redis URL: %s\n", url ? err : "missing");
        return 2;
    }
    fill_t f = {.loop = loop_new()};
    store_conf_t sc = {.timeout_ms = 30000, .buffer_commands = 16 * BATCH, .replay_ms = 0};
    store_t *store = store_new(f.loop, &u, &sc);
    records_conf_t rc = RECORDS_CONF_DEFAULTS; /* the front-end's */
    records_t *records = records_new(store, &rc, "vm:27867");
    uint64_t wait = loop_timer_add(f.loop, 10, 10, s_until_connected, store);
    loop_run(f.loop);
    loop_timer_cancel(f.loop, wait);

    const char *sample_code = "import math\nx = [math.sqrt(i) for i in range(10)]\nprint(sum(x))\n"
                              "len(x)";
    char *code = code_bytes ? s_text(code_bytes, sample_code) : xstrdup(sample_code);
    char *out =
        out_bytes ? s_text(out_bytes, "19.30600052603572\n") : xstrdup("19.30600052603572\n");
    jobspec_t spec;
    jobspec_init(&spec);
    spec.code = code;
    spec.code_len = strlen(code);
    spec.limits.wall_ms = 30000;
    spec.limits.memory_mb = 256;
    result_t res;
    result_init(&res);
    res.status = ST_OK;
    res.out = out;
    res.out_len = strlen(out);
    res.err = "";
    res.result = "10";
    /* the trailing expression's output, as the runner returns it (executor-node/python/rich.py) */
    result_output_t repr = {.kind = "result", .mime = "text/plain", .data = "10", .len = 2};
    res.outputs = &repr;
    res.n_outputs = 1;
    res.variables = NULL;
    res.queue_ms = 0.0, res.wall_ms = 1.281, res.cpu_ms = 3.551;
    res.max_rss_kb = 17492;
    res.exit.reason = "exit";
    res.executor = "vm-27866";

    uint64_t created = clock_wall_ms();
    uint64_t *rtt = pace_ms > 0 && n > 0 ? xcalloc((size_t)n, sizeof *rtt) : NULL;
    for (long done = 0; done < n;) {
        long batch = rtt ? 1 : n - done < BATCH ? n - done : BATCH;
        uint64_t t0 = clock_mono_us();
        for (long i = 0; i < batch; i++, done++) {
            uint8_t id[ID_BYTES];
            char hex[ID_STR_LEN + 1], tenant[32];
            id_new(id);
            id_format(id, hex);
            snprintf(tenant, sizeof tenant, "tenant%ld", done % tenants);
            record_about_t about = {.id = hex,
                                    .tenant = tenant,
                                    .profile = "python.basic",
                                    .tool = "execute_code",
                                    .created_ms = created + (uint64_t)done};
            /* a job that ends before --record-queued-after-ms: its one write */
            record_submit_t *sub = record_submit_new(records, &about, &spec);
            if (record_finished(records, &about, sub, &res, s_landed, &f)) f.sent++;
            record_submit_destroy(&sub);
        }
        if (f.landed < f.sent) loop_run(f.loop); /* until this batch is in */
        if (rtt) {
            rtt[done - 1] = clock_mono_us() - t0;
            uint64_t pause = loop_timer_add(f.loop, (uint64_t)pace_ms, 0, s_pause, NULL);
            loop_run(f.loop);
            loop_timer_cancel(f.loop, pause);
        }
    }
    store_destroy(&store);
    records_destroy(&records);
    loop_destroy(&f.loop);
    free(code);
    free(out);
    if (f.sent != n || f.failed) {
        fprintf(stderr, "record_fill: %ld of %ld records written, %ld failed\n", f.sent, n,
                f.failed);
        return 1;
    }
    if (rtt) {
        qsort(rtt, (size_t)n, sizeof *rtt, s_cmp_u64);
        printf("%ld %llu %llu\n", n, (unsigned long long)rtt[n / 2],
               (unsigned long long)rtt[n * 9 / 10]);
        free(rtt);
    } else
        printf("%ld\n", n);
    return 0;
}
