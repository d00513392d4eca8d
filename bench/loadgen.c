/* bench/loadgen.c — a load generator on proto/client.c, the submitter library the front-end
 * uses: it keeps --window jobs pending, spread round-robin over --tenants, until --jobs have
 * been answered, then prints one JSON line: answers by status, by error type (broker-made
 * answers name theirs: QueueFull, ExecutorLost, ...; client-made ones are BrokerLost and
 * Timeout), throughput, and latency percentiles from submit to final answer.
 *
 *   loadgen --broker tcp://127.0.0.1:5555 --jobs 200000 --window 2000 --tenants a,b
 *
 * Used by the throughput measurement (bench/broker_bench.sh) and the cluster test. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/config.h"
#include "common/curve_cert.h"
#include "common/ids.h"
#include "common/log.h"
#include "common/loop.h"
#include "common/profiles.h"
#include "proto/client.h"
#include "proto/job.h"
#include "proto/mpack.h"
#include "proto/status.h"

typedef struct {
    char broker[256];
    long jobs;
    long window;
    char tenants[512];
    char service[65];
    char code[1024];
    long deadline_ms; /* relative; 0 = none */
    long max_inflight;
    long connect_wait_ms; /* give up when not connected by then */
    long timeout_s;       /* whole run */
    char curve_server_key[1024];
    char curve_secret_file[1024];
    char log_level[16];
} lg_conf_t;

static const cfg_opt_t s_opts[] = {
    CFG_OPT_STR(lg_conf_t, broker, "broker", "ENDPOINT", "broker client endpoint"),
    CFG_OPT_INT(lg_conf_t, jobs, "jobs", 1, 100000000, "N", "jobs to run"),
    CFG_OPT_INT(lg_conf_t, window, "window", 1, 1000000, "N", "jobs pending at once"),
    CFG_OPT_LIST(lg_conf_t, tenants, "tenants", "LIST", "tenants, served round-robin"),
    CFG_OPT_STR(lg_conf_t, service, "service", "NAME", "service (profile)"),
    CFG_OPT_STR(lg_conf_t, code, "code", "PYTHON", "code to run"),
    CFG_OPT_INT(lg_conf_t, deadline_ms, "deadline-ms", 0, 86400000, "MS",
                "job deadline from submit"),
    CFG_OPT_INT(lg_conf_t, max_inflight, "max-inflight", 0, 1000000, "N",
                "tenant quota in the route"),
    CFG_OPT_INT(lg_conf_t, connect_wait_ms, "connect-wait-ms", 0, 600000, "MS",
                "wait for the broker"),
    CFG_OPT_INT(lg_conf_t, timeout_s, "timeout-s", 1, 86400, "S", "give up after"),
    CFG_OPT_STR(lg_conf_t, curve_server_key, "curve-server-key", "KEY|FILE", "broker public key"),
    CFG_OPT_STR(lg_conf_t, curve_secret_file, "curve-secret-file", "FILE", "own key pair"),
    CFG_OPT_STR(lg_conf_t, log_level, "log-level", "LEVEL", "log level"),
    CFG_OPT_END,
};

#define MAX_TENANTS 16
#define MAX_TYPES   32

typedef struct {
    lg_conf_t conf;
    loop_t *loop;
    client_t *client;
    char tenants[MAX_TENANTS][65];
    buf_t specs[MAX_TENANTS];
    int n_tenants;
    uint64_t *sent_us; /* per job number; 0 once answered */
    uint32_t *latency_us;
    long submitted, answered, accepted, pending;
    long by_status[ST__COUNT];
    char types[MAX_TYPES][48];
    long type_count[MAX_TYPES];
    int n_types;
    long unknown_answers; /* answers for job numbers not pending: would be duplicates */
    uint64_t start_us, end_us;
    uint64_t wait_start_ms; /* when we began waiting for the broker */
    int connected_once;
} lg_t;

static long s_num(const uint8_t id[ID_BYTES])
{
    uint32_t n;
    memcpy(&n, id + 12, sizeof n);
    return (long)n;
}

/* status and error.type from a Result body, without decoding the rest */
static void s_peek(const uint8_t *body, size_t len, status_t *st, char *type, size_t cap)
{
    mpr_t r;
    uint32_t n;
    *st = ST_INTERNAL_ERROR;
    type[0] = '\0';
    mpr_init(&r, body, len);
    if (mpr_map(&r, &n) < 0) return;
    for (uint32_t i = 0; i < n && !r.err; i++) {
        const char *k, *v;
        uint32_t kl, vl, m;
        if (mpr_str(&r, &k, &kl) < 0) return;
        if (mpr_key_is(k, kl, "status") && mpr_str(&r, &v, &vl) == 0) {
            status_parse_n(v, vl, st);
        } else if (mpr_key_is(k, kl, "error") && !mpr_nil(&r) && mpr_map(&r, &m) == 0) {
            for (uint32_t j = 0; j < m && !r.err; j++) {
                if (mpr_str(&r, &k, &kl) < 0) return;
                if (mpr_key_is(k, kl, "type") && mpr_peek(&r) == MP_STR &&
                    mpr_str(&r, &v, &vl) == 0)
                    snprintf(type, cap, "%.*s", (int)vl, v);
                else
                    mpr_skip(&r);
            }
        } else {
            mpr_skip(&r);
        }
    }
}

static void s_submit_more(lg_t *g);

static void s_on_event(void *arg, const uint8_t id[ID_BYTES], client_event_t ev,
                       const uint8_t *body, size_t len)
{
    lg_t *g = arg;
    long n = s_num(id);
    if (ev == CLIENT_ACCEPTED) {
        g->accepted++;
        return;
    }
    if (ev != CLIENT_RESULT) return;
    if (n < 0 || n >= g->conf.jobs || !g->sent_us[n]) {
        g->unknown_answers++;
        return;
    }
    uint64_t now = clock_mono_us();
    g->latency_us[g->answered] =
        (uint32_t)(now - g->sent_us[n] > UINT32_MAX ? UINT32_MAX : now - g->sent_us[n]);
    g->sent_us[n] = 0;
    g->answered++;
    g->pending--;
    status_t st;
    char type[48];
    s_peek(body, len, &st, type, sizeof type);
    g->by_status[st]++;
    if (st != ST_OK) {
        int i = 0;
        while (i < g->n_types && strcmp(g->types[i], type[0] ? type : "-")) i++;
        if (i == g->n_types && g->n_types < MAX_TYPES)
            snprintf(g->types[g->n_types++], sizeof g->types[0], "%s", type[0] ? type : "-");
        if (i < MAX_TYPES) g->type_count[i]++;
    }
    if (g->answered == g->conf.jobs) {
        g->end_us = now;
        loop_stop(g->loop);
        return;
    }
    s_submit_more(g);
}

static void s_submit_more(lg_t *g)
{
    if (!client_connected(g->client) && !g->connected_once) return;
    while (g->submitted < g->conf.jobs && g->pending < g->conf.window) {
        long n = g->submitted;
        int t = (int)(n % g->n_tenants);
        uint8_t id[ID_BYTES];
        id_new(id);
        uint32_t n32 = (uint32_t)n;
        memcpy(id + 12, &n32, sizeof n32);
        route_t r = {0};
        snprintf(r.tenant, sizeof r.tenant, "%s", g->tenants[t]);
        if (g->conf.deadline_ms) r.deadline_ms = clock_wall_ms() + (uint64_t)g->conf.deadline_ms;
        r.max_inflight = (uint32_t)g->conf.max_inflight;
        if (client_submit(g->client, g->conf.service, id, &r, g->specs[t].data, g->specs[t].len) <
            0)
            return; /* not connected or pipe full: try again on the next event */
        if (!g->start_us) g->start_us = clock_mono_us();
        g->sent_us[n] = clock_mono_us();
        g->submitted++;
        g->pending++;
    }
}

static void s_on_tick(loop_t *loop, void *arg)
{
    lg_t *g = arg;
    uint64_t now = clock_mono_us();
    if (client_connected(g->client)) g->connected_once = 1;
    s_submit_more(g);
    if (!g->connected_once && g->conf.connect_wait_ms &&
        now / 1000 - g->wait_start_ms > (uint64_t)g->conf.connect_wait_ms) {
        log_error("event=not_connected broker=%s", g->conf.broker);
        loop_stop(loop);
    }
}

static void s_on_timeout(loop_t *loop, void *arg)
{
    (void)arg;
    log_error("event=run_timeout");
    loop_stop(loop);
}

static int s_cmp(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static void s_report(lg_t *g)
{
    double secs = g->end_us > g->start_us && g->answered == g->conf.jobs
                      ? (double)(g->end_us - g->start_us) / 1e6
                      : (double)(clock_mono_us() - g->start_us) / 1e6;
    qsort(g->latency_us, (size_t)g->answered, sizeof *g->latency_us, s_cmp);
    double p50 = g->answered ? g->latency_us[g->answered / 2] / 1000.0 : 0;
    double p99 = g->answered ? g->latency_us[(size_t)((double)g->answered * 0.99)] / 1000.0 : 0;
    printf("{\"jobs\":%ld,\"submitted\":%ld,\"answered\":%ld,\"accepted\":%ld,\"pending\":%ld,"
           "\"unknown_answers\":%ld,\"seconds\":%.3f,\"jobs_per_s\":%.0f,\"p50_ms\":%.3f,"
           "\"p99_ms\":%.3f,\"status\":{",
           g->conf.jobs, g->submitted, g->answered, g->accepted, g->pending, g->unknown_answers,
           secs, secs > 0 ? (double)g->answered / secs : 0, p50, p99);
    int first = 1;
    for (int s = 0; s < ST__COUNT; s++)
        if (g->by_status[s]) {
            printf("%s\"%s\":%ld", first ? "" : ",", status_name((status_t)s), g->by_status[s]);
            first = 0;
        }
    printf("},\"error_types\":{");
    for (int i = 0; i < g->n_types; i++)
        printf("%s\"%s\":%ld", i ? "," : "", g->types[i], g->type_count[i]);
    printf("}}\n");
    fflush(stdout);
}

int main(int argc, char **argv)
{
    lg_t g = {0};
    snprintf(g.conf.broker, sizeof g.conf.broker, "tcp://127.0.0.1:5555");
    snprintf(g.conf.service, sizeof g.conf.service, "%s", profile_default()->name);
    snprintf(g.conf.code, sizeof g.conf.code, "print(1)");
    snprintf(g.conf.log_level, sizeof g.conf.log_level, "warn");
    g.conf.jobs = 10000;
    g.conf.window = 1000;
    g.conf.connect_wait_ms = 10000;
    g.conf.timeout_s = 600;
    lg_conf_t defaults = g.conf;
    char err[256];
    switch (config_load(&g.conf, s_opts, argc, argv, NULL, NULL, err, sizeof err)) {
    case CONFIG_HELP:
        config_usage(stdout, "loadgen [options]",
                     "Submits jobs through proto/client.c and reports.", s_opts, &defaults);
        return 0;
    case CONFIG_ERROR:
        fprintf(stderr, "loadgen: %s\n", err);
        return 2;
    case CONFIG_OK:
        break;
    }
    log_level_t level = LOG_WARN;
    log_level_parse(g.conf.log_level, &level);
    log_init("loadgen", level);
    if (!g.conf.tenants[0]) snprintf(g.conf.tenants, sizeof g.conf.tenants, "bench");
    for (char *p = g.conf.tenants; *p && g.n_tenants < MAX_TENANTS;) {
        size_t l = strcspn(p, ",");
        snprintf(g.tenants[g.n_tenants], sizeof g.tenants[0], "%.*s", (int)l, p);
        jobspec_t js;
        jobspec_init(&js);
        js.kind = JOB_EXEC;
        js.tenant = g.tenants[g.n_tenants];
        js.service = g.conf.service;
        js.code = g.conf.code;
        js.code_len = strlen(g.conf.code);
        js.capture_output = 1;
        js.submitted_ms = clock_wall_ms();
        buf_init(&g.specs[g.n_tenants]);
        jobspec_encode(&js, &g.specs[g.n_tenants]);
        g.n_tenants++;
        p += l + (p[l] == ',');
    }
    char server[CURVE_Z85_LEN + 1];
    curve_cert_t cert = {0};
    client_conf_t cc = {.endpoint = g.conf.broker, .heartbeat_ms = 1000, .grace_ms = 5000};
    if (g.conf.curve_server_key[0]) {
        if (curve_key_resolve(g.conf.curve_server_key, server, err, sizeof err) < 0 ||
            curve_cert_load(g.conf.curve_secret_file, &cert, err, sizeof err) < 0) {
            fprintf(stderr, "loadgen: %s\n", err);
            return 2;
        }
        cc.curve_server_key = server;
        cc.curve_public_key = cert.public_key;
        cc.curve_secret_key = cert.secret_key;
    }
    g.sent_us = xcalloc((size_t)g.conf.jobs, sizeof *g.sent_us);
    g.latency_us = xcalloc((size_t)g.conf.jobs, sizeof *g.latency_us);
    void *ctx = zmq_ctx_new();
    g.loop = loop_new();
    g.client = client_new(ctx, g.loop, &cc, s_on_event, &g);
    g.wait_start_ms = clock_mono_ms();
    loop_timer_add(g.loop, 10, 10, s_on_tick, &g);
    loop_timer_add(g.loop, (uint64_t)g.conf.timeout_s * 1000, 0, s_on_timeout, &g);
    loop_run(g.loop);
    s_report(&g);
    client_destroy(&g.client);
    zmq_ctx_term(ctx);
    loop_destroy(&g.loop);
    for (int i = 0; i < g.n_tenants; i++) buf_free(&g.specs[i]);
    free(g.sent_us);
    free(g.latency_us);
    return g.answered == g.conf.jobs ? 0 : 1;
}
