/* mcp-frontend/main.c — snakepit-mcp: the MCP front-end. Reads its options (defaults →
 * --config → SNAKEPIT_* → flags), builds the one loop with the broker client, Redis, and the
 * transports asked for, and runs until SIGINT/SIGTERM (or EOF on stdin with --stdio). */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>
#include <zmq.h>

#include "../common/config.h"
#include "../common/clock.h"
#include "../common/log.h"
#include "../common/metrics_pub.h"
#include "../proto/wire.h"
#include "fe.h"
#include "http.h"
#include "execution.h"
#include "fixtures.h"
#include "jobs.h"
#include "limiter.h"
#include "mcp.h"
#include "metrics.h"
#include "resources.h"
#include "stdio.h"
#include "tasks.h"
#include "tenants.h"
#include "tooldefs.h"
#include "tools.h"

static const cfg_opt_t s_opts[] = {
    CFG_OPT_STR(fe_conf_t, http, "http", "HOST:PORT",
                "serve Streamable HTTP on /mcp here (default 127.0.0.1:8765; with --stdio only "
                "when given)"),
    CFG_OPT_BOOL(fe_conf_t, stdio, "stdio", "serve MCP on stdin/stdout as the --tenant identity"),
    CFG_OPT_STR(fe_conf_t, broker, "broker", "ENDPOINT", "the broker's client endpoint"),
    CFG_OPT_STR(fe_conf_t, redis, "redis", "URL",
                "redis://[user:pass@]host:port[/db] or unix:///path"),
    CFG_OPT_STR(fe_conf_t, tenant, "tenant", "NAME", "tenant that --stdio runs as"),
    CFG_OPT_STR(fe_conf_t, log_level, "log-level", "LEVEL", "debug, info, warn, error"),
    CFG_OPT_INT(fe_conf_t, max_body, "max-body", 1024, 64L << 20, "BYTES",
                "largest accepted HTTP request body or stdio line"),
    CFG_OPT_LIST(
        fe_conf_t, allow_origin, "allow-origin", "ORIGIN",
        "browser Origin allowed to call (repeatable; default: loopback origins only; * = any)"),
    CFG_OPT_LIST(fe_conf_t, allow_host, "allow-host", "HOST",
                 "Host header value accepted besides loopback names (repeatable; for proxies)"),
    CFG_OPT_STR(fe_conf_t, tls_cert, "tls-cert", "FILE",
                "serve HTTPS with this PEM certificate chain"),
    CFG_OPT_STR(fe_conf_t, tls_key, "tls-key", "FILE", "the PEM private key for --tls-cert"),
    CFG_OPT_BOOL(
        fe_conf_t, allow_remote, "allow-remote",
        "allow plain HTTP on a non-loopback address (only behind a TLS-terminating proxy)"),
    CFG_OPT_STR(fe_conf_t, anonymous_tenant, "anonymous-tenant", "NAME",
                "HTTP requests without a key run as this tenant (loopback only; for local tests)"),
    CFG_OPT_BOOL(
        fe_conf_t, test_fixtures, "test-fixtures",
        "serve the MCP conformance suite's test_* tools, resources and prompts (tests only)"),
    CFG_OPT_INT(fe_conf_t, max_sessions, "max-sessions", 1, 10000000, "N",
                "open HTTP sessions at most"),
    CFG_OPT_INT(fe_conf_t, max_sessions_tenant, "max-sessions-per-tenant", 1, 10000000, "N",
                "open HTTP sessions at most per tenant"),
    CFG_OPT_INT(fe_conf_t, session_idle_s, "session-idle-s", 10, 86400 * 7, "S",
                "close idle HTTP sessions after S"),
    CFG_OPT_INT(fe_conf_t, auth_cache_ms, "auth-cache-ms", 0, 3600000, "MS",
                "cache key → tenant lookups this long"),
    CFG_OPT_INT(fe_conf_t, local_rate_pct, "local-rate-pct", 1, 100, "PCT",
                "share of a tenant's rate the local limiter allows while Redis is down"),
    CFG_OPT_INT(fe_conf_t, queue_allowance_ms, "queue-allowance-ms", 0, 3600000, "MS",
                "time a job may wait in queues on top of its timeout"),
    CFG_OPT_INT(fe_conf_t, redis_timeout_ms, "redis-timeout-ms", 50, 60000, "MS",
                "a Redis command unanswered this long drops the connection"),
    CFG_OPT_INT(fe_conf_t, record_buffer, "record-buffer", 0, 10000000, "N",
                "record writes kept while Redis is away (then dropped and counted)"),
    CFG_OPT_INT(fe_conf_t, record_ttl_s, "record-ttl-s", 60, 86400 * 365, "S",
                "execution records live this long"),
    CFG_OPT_INT(fe_conf_t, code_cap, "code-cap", 0, 1 << 20, "BYTES",
                "code kept in a record (else its sha256)"),
    CFG_OPT_INT(fe_conf_t, head_cap, "head-cap", 0, 1 << 20, "BYTES",
                "stdout/stderr kept in a record"),
    CFG_OPT_INT(fe_conf_t, result_cap, "result-cap", 1024, 16 << 20, "BYTES",
                "structured result kept in a record"),
    CFG_OPT_INT(fe_conf_t, page_size, "page-size", 1, 1000, "N",
                "items per page of tools/resources/prompts/tasks lists"),
    CFG_OPT_INT(fe_conf_t, max_inflight_session, "max-inflight-session", 1, 100000, "N",
                "requests in flight per session"),
    CFG_OPT_INT(fe_conf_t, sse_keepalive_s, "sse-keepalive-s", 1, 3600, "S",
                "comment lines on idle SSE streams"),
    CFG_OPT_STR(fe_conf_t, curve_server_key, "broker-curve-key", "Z85",
                "the broker's CURVE public key (enables CURVE)"),
    CFG_OPT_STR(fe_conf_t, curve_public_key, "curve-public-key", "Z85",
                "this front-end's CURVE public key"),
    CFG_OPT_STR(fe_conf_t, curve_secret_key, "curve-secret-key", "Z85",
                "this front-end's CURVE secret key"),
    CFG_OPT_INT(fe_conf_t, heartbeat_ms, "heartbeat-ms", 100, 60000, "MS",
                "broker heartbeat interval"),
    CFG_OPT_STR(fe_conf_t, broker_instance, "broker-instance", "NAME",
                "the broker's --instance, whose Redis snapshot get_sandbox_info reports (default: "
                "host name)"),
    CFG_OPT_INT(fe_conf_t, broker_wait_ms, "broker-wait-ms", 0, 600000, "MS",
                "a job waits this long for a broker connection before it is answered rejected"),
    CFG_OPT_INT(fe_conf_t, record_wait_ms, "record-wait-ms", 0, 60000, "MS",
                "an answer waits this long for its final record to reach Redis, then leaves "
                "without it (counted); 0: never waits"),
    CFG_OPT_END,
};

static const fe_conf_t s_defaults = {
    .http = "",
    .broker = "tcp://127.0.0.1:5555",
    .redis = "redis://127.0.0.1:6379",
    .tenant = "local",
    .log_level = "info",
    .max_body = 4L << 20,
    .max_sessions = 10000,
    .max_sessions_tenant = 1000,
    .session_idle_s = 3600,
    .auth_cache_ms = 5000,
    .local_rate_pct = 50,
    .queue_allowance_ms = 30000,
    .redis_timeout_ms = 2000,
    .record_buffer = 20000,
    .record_ttl_s = 7 * 86400,
    .code_cap = 64 << 10,
    .head_cap = 8 << 10,
    .result_cap = 1 << 20,
    .page_size = 50,
    .max_inflight_session = 256,
    .sse_keepalive_s = 15,
    .heartbeat_ms = 1000,
    .broker_wait_ms = 5000,
    .record_wait_ms = 500,
};

static void s_on_signal(loop_t *loop, short revents, void *arg)
{
    (void)revents;
    int fd = *(int *)arg;
    struct signalfd_siginfo si;
    if (read(fd, &si, sizeof si) == (ssize_t)sizeof si)
        log_info("event=signal signal=%s", strsignal((int)si.ssi_signo));
    loop_stop(loop);
}

static int s_validate(fe_conf_t *c, char *err, size_t errlen)
{
    if (!c->http[0] && !c->stdio) snprintf(c->http, sizeof c->http, "127.0.0.1:8765");
    if (!wire_name_ok(c->tenant, strlen(c->tenant))) {
        snprintf(err, errlen, "--tenant '%s': 1-64 of [A-Za-z0-9._-]", c->tenant);
        return -1;
    }
    if (c->anonymous_tenant[0] && !wire_name_ok(c->anonymous_tenant, strlen(c->anonymous_tenant))) {
        snprintf(err, errlen, "--anonymous-tenant: 1-64 of [A-Za-z0-9._-]");
        return -1;
    }
    if (!c->tls_cert[0] != !c->tls_key[0]) {
        snprintf(err, errlen, "--tls-cert and --tls-key go together");
        return -1;
    }
    if (c->curve_server_key[0] &&
        (strlen(c->curve_public_key) != 40 || strlen(c->curve_secret_key) != 40 ||
         strlen(c->curve_server_key) != 40)) {
        snprintf(err, errlen,
                 "CURVE keys are 40-character Z85 strings (--broker-curve-key, --curve-public-key, "
                 "--curve-secret-key)");
        return -1;
    }
    return 0;
}

static void s_instance(fe_t *fe)
{
    char host[64] = "host";
    gethostname(host, sizeof host);
    host[sizeof host - 1] = '\0';
    if (!fe->conf.broker_instance[0])
        snprintf(fe->conf.broker_instance, sizeof fe->conf.broker_instance, "%s", host);
    snprintf(fe->instance, sizeof fe->instance, "%s:%d", host, (int)getpid());
}

/* The front-end's one-second snapshot in Redis (sp:metrics:mcp:{instance}), which `snakepit
 * status` shows beside the broker's and the executors'. A second connection of its own, so a
 * slow snapshot never delays records or the rate limiter. */
static void s_snapshot_fill(void *arg, metrics_pub_t *pub)
{
    fe_t *fe = arg;
    metrics_pub_field(pub, "instance", "%s", fe->instance);
    metrics_pub_field(pub, "http", "%s", fe->conf.http[0] ? fe->conf.http : "off");
    metrics_pub_field(pub, "sessions", "%zu", sessions_count(fe->sessions));
    metrics_pub_field(pub, "jobs_inflight", "%zu", jobs_count(fe->jobs));
    metrics_pub_field(pub, "requests", "%.0f", metric_total(M.requests));
    metrics_pub_field(pub, "tool_calls", "%.0f", metric_total(M.tool_calls));
    metrics_pub_field(pub, "auth_failures", "%.0f", metric_total(M.auth_failures));
    metrics_pub_field(pub, "rate_limited", "%.0f", metric_total(M.rate_limited));
    metrics_pub_field(pub, "records_dropped", "%.0f", metric_total(M.records_dropped));
    metrics_pub_field(pub, "broker_connected", "%d", jobs_broker_connected(fe->jobs));
    metrics_pub_field(pub, "redis_connected", "%d", store_connected(fe->store));
    metrics_pub_field(pub, "ts_ms", "%llu", (unsigned long long)clock_wall_ms());
}

static void s_snapshot_start(fe_t *fe)
{
    char key[160], err[256];
    snprintf(key, sizeof key, "sp:metrics:mcp:%s", fe->instance);
    fe->snapshot = metrics_pub_new(fe->loop, fe->conf.redis, key, 1000, 10, s_snapshot_fill, fe, err, sizeof err);
    if (!fe->snapshot) log_warn("event=snapshot_disabled error=\"%s\"", err);
}

int main(int argc, char **argv)
{
    fe_t *fe = xcalloc(1, sizeof *fe);
    fe->conf = s_defaults;
    char err[512];
    switch (config_load(&fe->conf, s_opts, argc, argv, NULL, NULL, err, sizeof err)) {
    case CONFIG_HELP:
        config_usage(
            stdout,
            "snakepit-mcp [--http HOST:PORT] [--stdio] --broker ENDPOINT --redis URL [options]",
            "The snakepit MCP front-end: MCP 2025-11-25 over Streamable HTTP (/mcp) and stdio, "
            "backed by the broker and Redis.",
            s_opts, &s_defaults);
        free(fe);
        return 0;
    case CONFIG_ERROR:
        fprintf(stderr, "snakepit-mcp: %s\n", err);
        free(fe);
        return 2;
    case CONFIG_OK:
        break;
    }
    log_level_t level = LOG_INFO;
    if (log_level_parse(fe->conf.log_level, &level) < 0) {
        fprintf(stderr, "snakepit-mcp: --log-level: unknown level '%s'\n", fe->conf.log_level);
        free(fe);
        return 2;
    }
    log_init("mcp", level);
    if (s_validate(&fe->conf, err, sizeof err) < 0 ||
        redis_url_parse(fe->conf.redis, &fe->redis_url, err, sizeof err) < 0) {
        fprintf(stderr, "snakepit-mcp: %s\n", err);
        free(fe);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    sigprocmask(SIG_BLOCK, &sigs, NULL);
    int sfd = signalfd(-1, &sigs, SFD_NONBLOCK | SFD_CLOEXEC);
    if (sfd < 0) {
        fprintf(stderr, "snakepit-mcp: signalfd: %s\n", strerror(errno));
        free(fe);
        return 1;
    }

    s_instance(fe);
    fe_metrics_init(FE_VERSION);
    fe->loop = loop_new();
    fe->zmq_ctx = zmq_ctx_new();
    if (!fe->zmq_ctx) {
        log_error("event=start_failed error=\"zmq_ctx_new: %s\"", zmq_strerror(errno));
        return 1;
    }
    loop_add_fd(fe->loop, sfd, ZMQ_POLLIN, s_on_signal, &sfd);
    store_conf_t sc = {.timeout_ms = fe->conf.redis_timeout_ms,
                       .buffer_commands = fe->conf.record_buffer,
                       .buffer_bytes = fe->conf.record_buffer * 4096};
    fe->store = store_new(fe->loop, &fe->redis_url, &sc);
    sessions_conf_t sesc = {.max_sessions = fe->conf.max_sessions,
                            .max_per_tenant = fe->conf.max_sessions_tenant,
                            .idle_s = fe->conf.session_idle_s};
    fe->sessions = sessions_new(fe->loop, &sesc, calls_cancel_all);
    fe->tenants = tenants_new(fe);
    fe->limiter = limiter_new(fe);
    jobs_conf_t jc = {.heartbeat_ms = fe->conf.heartbeat_ms,
                      .queue_allowance_ms = fe->conf.queue_allowance_ms,
                      .broker_wait_ms = fe->conf.broker_wait_ms};
    snprintf(jc.broker, sizeof jc.broker, "%s", fe->conf.broker);
    snprintf(jc.curve_server_key, sizeof jc.curve_server_key, "%s", fe->conf.curve_server_key);
    snprintf(jc.curve_public_key, sizeof jc.curve_public_key, "%s", fe->conf.curve_public_key);
    snprintf(jc.curve_secret_key, sizeof jc.curve_secret_key, "%s", fe->conf.curve_secret_key);
    fe->jobs = jobs_new(fe->loop, fe->zmq_ctx, &jc);
    fe->executions = executions_new(fe);
    fe->tasks = tasks_new(fe);
    fe->tools = tools_new(fe->conf.page_size);
    tools_add(fe->tools, tooldefs);
    if (fe->conf.test_fixtures) tools_add(fe->tools, fixtures_tools);
    resources_init(fe);
    s_snapshot_start(fe);
    int rc = 0;
    if (fe->conf.http[0] && http_start(fe, err, sizeof err) < 0) {
        log_error("event=start_failed error=\"%s\"", err);
        fprintf(stderr, "snakepit-mcp: %s\n", err);
        rc = 1;
    }
    if (!rc && fe->conf.stdio && stdio_start(fe) < 0) rc = 1;
    if (!rc) {
        char where[300];
        redis_url_describe(&fe->redis_url, where, sizeof where);
        log_info("event=started version=%s http=%s stdio=%d broker=%s redis=%s instance=%s",
                 FE_VERSION, fe->conf.http[0] ? fe->conf.http : "off", fe->conf.stdio,
                 fe->conf.broker, where, fe->instance);
        if (loop_run(fe->loop) < 0) rc = 1;
    }
    metrics_pub_destroy(&fe->snapshot);
    log_info("event=stopping sessions=%zu jobs_in_flight=%zu", sessions_count(fe->sessions),
             fe->jobs ? jobs_count(fe->jobs) : 0);
    /* order matters: answer everything that waits, then take the transports down, then the
     * stores their callbacks might still reach */
    stdio_stop(fe);
    store_destroy(&fe->store); /* pending Redis callbacks run now, with NULL replies */
    executions_destroy(&fe->executions);
    jobs_destroy(&fe->jobs);
    tasks_destroy(&fe->tasks);
    http_stop(fe);
    sessions_destroy(&fe->sessions);
    resources_shutdown(fe);
    limiter_destroy(&fe->limiter);
    tenants_destroy(&fe->tenants);
    tools_destroy(&fe->tools);
    metrics_free();
    zmq_ctx_term(fe->zmq_ctx);
    loop_destroy(&fe->loop);
    close(sfd);
    free(fe);
    return rc;
}
