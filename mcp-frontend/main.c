/* mcp-frontend/main.c — snakepit-mcp: the MCP front-end. Reads its options (defaults →
 * --config → SNAKEPIT_* → flags) into one slice per module, builds the parts on one loop —
 * Redis, tenants and limits, the broker link, executions and their records, the MCP surface,
 * the transports asked for — and runs until SIGINT/SIGTERM (or EOF on stdin with --stdio). */
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

#include "common/clock.h"
#include "common/config.h"
#include "common/log.h"
#include "common/metrics_pub.h"
#include "common/redis_url.h"
#include "proto/wire.h"
#include "mcp-frontend/cells/session_records.h"
#include "mcp-frontend/cells/snapshots.h"
#include "mcp-frontend/compat/compat.h"
#include "mcp-frontend/farm/execution.h"
#include "mcp-frontend/farm/jobs.h"
#include "mcp-frontend/farm/served.h"
#include "mcp-frontend/legacy/mcp_session_store.h"
#include "mcp-frontend/legacy/stream_log.h"
#include "mcp-frontend/console/console.h"
#include "mcp-frontend/mcp/fixtures.h"
#include "mcp-frontend/mcp/listen.h"
#include "mcp-frontend/mcp/mcp.h"
#include "mcp-frontend/mcp/prompts.h"
#include "mcp-frontend/mcp/resources.h"
#include "mcp-frontend/mcp/round_trip.h"
#include "mcp-frontend/mcp/tasks.h"
#include "mcp-frontend/mcp/tasks_extension.h"
#include "mcp-frontend/render/rich.h"
#include "mcp-frontend/rpc/call.h"
#include "mcp-frontend/rpc/fe.h"
#include "mcp-frontend/rpc/mcp_session.h"
#include "mcp-frontend/state/bus.h"
#include "mcp-frontend/state/filestore.h"
#include "mcp-frontend/state/holds.h"
#include "mcp-frontend/state/limiter.h"
#include "mcp-frontend/state/records.h"
#include "mcp-frontend/state/redis_upkeep.h"
#include "mcp-frontend/state/store.h"
#include "mcp-frontend/state/tenants.h"
#include "mcp-frontend/tools/sessiondefs.h"
#include "mcp-frontend/tools/tooldefs.h"
#include "mcp-frontend/tools/tools.h"
#include "mcp-frontend/transport/http.h"
#include "mcp-frontend/transport/stdio.h"
#include "metrics.h"

/* Every option, each in the slice of the module it configures. */
typedef struct {
    http_conf_t http;
    store_conf_t store;
    jobs_conf_t jobs;
    records_conf_t records;
    filestore_conf_t files;
    long file_link_bytes; /* rich.h: written files larger than this are links */
    executions_conf_t executions;
    mcp_sessions_conf_t sessions;
    tenants_conf_t tenants;
    limiter_conf_t limiter;
    holds_conf_t holds;
    mcp_conf_t mcp;
    listen_conf_t listen;
    stream_log_conf_t stream_log;
    console_conf_t console;
    int stdio;
    char tenant[65]; /* the stdio identity */
    char compat[64]; /* --stdio as this drop-in endpoint (compat.h) */
    long page_size;  /* tools/list, resources/list, tasks/list */
    int test_fixtures;
    char log_level[16];
    char local_key_file[4096]; /* the `local` tenant this front-end keeps in Redis */
} fe_conf_t;

#define OPT(type, field, ...) CFG_OPT_##type(fe_conf_t, field, __VA_ARGS__)

static const cfg_opt_t s_opts[] = {
    OPT(STR, http.listen, "http", "HOST:PORT",
        "serve Streamable HTTP on /mcp here (default 127.0.0.1:8765; with --stdio only when "
        "given)"),
    OPT(BOOL, stdio, "stdio", "serve MCP on stdin/stdout as the --tenant identity"),
    OPT(LIST, jobs.broker, "broker", "ENDPOINT",
        "the broker's client endpoint; several (comma list or repeated) for failover: jobs go "
        "to the first connected one and are resubmitted to another when theirs is lost"),
    OPT(STR, store.url, "redis", "URL",
        "redis://[user:pass@]host:port[/db], unix:///path, or "
        "redis-sentinel://host:port,host:port/master[/db]"),
    OPT(STR, tenant, "tenant", "NAME", "tenant that --stdio runs as"),
    OPT(STR, local_key_file, "local-key-file", "FILE",
        "re-create the tenant `local` with the key in FILE whenever a Redis it connects to has "
        "lost it (snakepit up passes STATE_DIR/local.key)"),
    OPT(STR, compat, "compat", "NAME",
        "--stdio serves the drop-in endpoint NAME: python-sandbox, py-sandbox, secure-sandbox, "
        "exec-sandbox or code-sandbox (over HTTP they are /mcp/compat/NAME)"),
    OPT(STR, log_level, "log-level", "LEVEL", "debug, info, warn, error"),
    OPT(INT, http.max_body, "max-body", 1024, 64L << 20, "BYTES",
        "largest accepted HTTP request body or stdio line"),
    OPT(LIST, http.allow_origin, "allow-origin", "ORIGIN",
        "browser Origin allowed to call (repeatable; default: loopback origins only; * = any)"),
    OPT(LIST, http.allow_host, "allow-host", "HOST",
        "Host header value accepted besides loopback names (repeatable; for proxies)"),
    OPT(STR, http.tls_cert, "tls-cert", "FILE", "serve HTTPS with this PEM certificate chain"),
    OPT(STR, http.tls_key, "tls-key", "FILE", "the PEM private key for --tls-cert"),
    OPT(BOOL, http.allow_remote, "allow-remote",
        "allow plain HTTP on a non-loopback address (only behind a TLS-terminating proxy)"),
    OPT(STR, http.anonymous_tenant, "anonymous-tenant", "NAME",
        "HTTP requests without a key run as this tenant (loopback only; for local tests)"),
    OPT(BOOL, test_fixtures, "test-fixtures",
        "serve the MCP conformance suite's test_* tools, resources and prompts (tests only)"),
    OPT(INT, sessions.max_sessions, "max-sessions", 1, 10000000, "N",
        "legacy HTTP sessions held in this process's memory (idle ones are dropped; all live "
        "in Redis)"),
    OPT(INT, sessions.max_per_tenant, "max-sessions-per-tenant", 1, 10000000, "N",
        "legacy HTTP sessions a tenant keeps; a new one evicts the least recently used"),
    OPT(INT, sessions.idle_s, "session-idle-s", 10, 86400 * 7, "S",
        "legacy HTTP sessions unused for S expire"),
    OPT(INT, sessions.cache_ms, "session-cache-ms", 0, 3600000, "MS",
        "a legacy session read from Redis is trusted this long (deletions elsewhere arrive at "
        "once over pub/sub)"),
    OPT(INT, stream_log.replay_s, "stream-replay-s", 10, 86400, "S",
        "a legacy stream's events can be replayed (Last-Event-ID) this long after the last"),
    OPT(INT, tenants.auth_cache_ms, "auth-cache-ms", 0, 3600000, "MS",
        "cache key → tenant lookups this long"),
    OPT(INT, tenants.auth_stale_ms, "auth-stale-ms", 0, 86400000, "MS",
        "while Redis cannot be asked, keys it answered within this long still authenticate"),
    OPT(INT, console.idle_s, "console-idle-s", 60, 86400, "S",
        "a console sign-in unused for S ends (the web page at /console)"),
    OPT(INT, console.max_s, "console-max-s", 60, 86400 * 7, "S",
        "a console sign-in ends S after it was made, used or not"),
    OPT(INT, console.signin_per_min, "console-signins-per-min", 1, 10000, "N",
        "console sign-in attempts allowed per client address and minute, across front-ends"),
    OPT(INT, limiter.local_rate_pct, "local-rate-pct", 1, 100, "PCT",
        "share of a tenant's rate the local limiter allows while Redis is down"),
    OPT(INT, jobs.queue_allowance_ms, "queue-allowance-ms", 0, 3600000, "MS",
        "time a job may wait in queues on top of its timeout"),
    OPT(INT, store.timeout_ms, "redis-timeout-ms", 50, 60000, "MS",
        "a Redis command unanswered this long drops the connection"),
    OPT(INT, store.buffer_commands, "record-buffer", 0, 10000000, "N",
        "record writes kept while Redis is away (then dropped and counted)"),
    OPT(INT, store.replay_ms, "redis-replay-ms", 0, 600000, "MS",
        "acknowledged record writes are kept this long and sent again after a reconnect (what a "
        "failover or a Redis crash may have lost)"),
    OPT(INT, records.ttl_s, "record-ttl-s", 60, 86400 * 3650, "S",
        "execution records live this long (a tenant's record_ttl_s overrides it)"),
    OPT(INT, records.keep, "record-max", 1, 100000000, "N",
        "records kept per tenant; older ones are deleted (a tenant's record_max overrides it)"),
    OPT(INT, records.code_cap, "code-cap", 0, 1 << 20, "BYTES",
        "head of the code kept in a record (code_sha256 and code_bytes say the rest)"),
    OPT(INT, records.head_cap, "head-cap", 0, 1 << 20, "BYTES",
        "stdout/stderr heads kept in a record"),
    OPT(INT, records.result_cap, "result-cap", 1024, 16 << 20, "BYTES",
        "the job's Result kept whole in a record up to this size (else cut to the heads)"),
    OPT(INT, records.usage_days, "usage-days", 1, 3650, "DAYS",
        "per-tenant daily usage kept this long"),
    OPT(STR, records.export_stream, "export-stream", "KEY",
        "also add every finished record to this Redis Stream (for consumers that keep them all)"),
    OPT(INT, records.export_maxlen, "export-maxlen", 1000, 100000000, "N",
        "approximate length cap of --export-stream"),
    OPT(INT, file_link_bytes, "file-link-bytes", 0, 8 << 20, "BYTES",
        "a file an execution wrote larger than this comes back as a resource link, not inline"),
    OPT(INT, files.ttl_s, "file-ttl-s", 60, 86400 * 7, "S",
        "linked files stay readable this long (they are kept in Redis, within each tenant's "
        "max_linked_mb and max_linked_files)"),
    OPT(INT, files.share_pct, "file-share-pct", 1, 90, "PCT",
        "the linked files of all tenants together take at most this share of Redis's "
        "maxmemory (each counted at its size and a quarter), so they never evict records"),
    OPT(INT, page_size, "page-size", 1, 1000, "N",
        "items per page of tools/resources/prompts/tasks lists"),
    OPT(INT, mcp.max_inflight_session, "max-inflight-session", 1, 100000, "N",
        "requests in flight per session"),
    OPT(INT, http.sse_keepalive_s, "sse-keepalive-s", 1, 3600, "S",
        "comment lines on idle SSE streams"),
    OPT(STR, jobs.curve_server_key, "broker-curve-key", "Z85",
        "the broker's CURVE public key (enables CURVE)"),
    OPT(STR, jobs.curve_public_key, "curve-public-key", "Z85", "this front-end's CURVE public key"),
    OPT(STR, jobs.curve_secret_key, "curve-secret-key", "Z85", "this front-end's CURVE secret key"),
    OPT(INT, jobs.heartbeat_ms, "heartbeat-ms", 100, 60000, "MS", "broker heartbeat interval"),
    OPT(STR, jobs.broker_instance, "broker-instance", "NAME",
        "accepted and not used: get_sandbox_info no longer shows a broker's snapshot (a tenant "
        "sees its own view only)"),
    OPT(INT, jobs.broker_wait_ms, "broker-wait-ms", 0, 600000, "MS",
        "a job waits this long for a broker connection before it is answered rejected (lost, "
        "when the broker holding it was lost and none could take it again)"),
    OPT(INT, executions.task_after_ms, "task-after-ms", 0, 3600000, "MS",
        "an MCP 2026-07-28 call that declared the tasks extension and still runs after MS is "
        "answered with a task; 0: never"),
    OPT(INT, listen.max_streams, "max-listen-streams", 1, 1000000, "N",
        "open subscriptions/listen streams at most (per front-end; each tenant's own cap, "
        "max_listen_streams, counts across every front-end)"),
    OPT(INT, holds.lease_ms, "hold-lease-ms", 1000, 600000, "MS",
        "a listen stream, legacy GET stream or task counted against its tenant's cap stops "
        "counting this long after its front-end last renewed it (a front-end that dies)"),
    OPT(INT, executions.record_wait_ms, "record-wait-ms", 0, 60000, "MS",
        "an answer waits this long for its final record (or its sandbox session's) to reach "
        "Redis, then leaves without it (counted); 0: never waits"),
    OPT(INT, executions.record_queued_after_ms, "record-queued-after-ms", 0, 3600000, "MS",
        "a job still running after MS has its record written as queued, so that it can be "
        "looked up while it runs; one that ends sooner is recorded by one write at its end "
        "(0: every job at once)"),
    CFG_OPT_END,
};

static const fe_conf_t s_defaults = {
    .http = {.max_body = 4L << 20, .sse_keepalive_s = 15},
    .store = {.url = "redis://127.0.0.1:6379",
              .timeout_ms = 2000,
              .buffer_commands = 20000,
              .replay_ms = 2000},
    .jobs = {.broker = "tcp://127.0.0.1:5555",
             .heartbeat_ms = 1000,
             .queue_allowance_ms = 30000,
             .broker_wait_ms = 5000},
    .records = RECORDS_CONF_DEFAULTS,
    .files = {.ttl_s = 3600, .share_pct = 25},
    .file_link_bytes = RICH_LINK_BYTES_DEFAULT,
    .executions = {.record_wait_ms = 500, .task_after_ms = 2000, .record_queued_after_ms = 100},
    .listen = {.max_streams = 10000},
    .sessions = {.max_sessions = 10000, .max_per_tenant = 1000, .idle_s = 3600, .cache_ms = 10000},
    .stream_log = {.replay_s = 600},
    .console = CONSOLE_CONF_DEFAULTS,
    .tenants = {.auth_cache_ms = 5000, .auth_stale_ms = 600000},
    .limiter = {.local_rate_pct = 50},
    .holds = {.lease_ms = 30000},
    .mcp = {.max_inflight_session = 256},
    .tenant = "local",
    .page_size = 50,
    .log_level = "info",
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
    if (!c->http.listen[0] && !c->stdio)
        snprintf(c->http.listen, sizeof c->http.listen, "127.0.0.1:8765");
    if (c->compat[0] && !c->stdio) {
        snprintf(err, errlen, "--compat goes with --stdio (over HTTP: /mcp/compat/%s)", c->compat);
        return -1;
    }
    if (!wire_name_ok(c->tenant, strlen(c->tenant))) {
        snprintf(err, errlen, "--tenant '%s': 1-64 of [A-Za-z0-9._-]", c->tenant);
        return -1;
    }
    const char *anon = c->http.anonymous_tenant;
    if (anon[0] && !wire_name_ok(anon, strlen(anon))) {
        snprintf(err, errlen, "--anonymous-tenant: 1-64 of [A-Za-z0-9._-]");
        return -1;
    }
    if (!c->http.tls_cert[0] != !c->http.tls_key[0]) {
        snprintf(err, errlen, "--tls-cert and --tls-key go together");
        return -1;
    }
    const jobs_conf_t *j = &c->jobs;
    if (j->curve_server_key[0] &&
        (strlen(j->curve_public_key) != 40 || strlen(j->curve_secret_key) != 40 ||
         strlen(j->curve_server_key) != 40)) {
        snprintf(err, errlen,
                 "CURVE keys are 40-character Z85 strings (--broker-curve-key, --curve-public-key, "
                 "--curve-secret-key)");
        return -1;
    }
    return 0;
}

/* This process's name (host:pid), and the broker's when none was given: the host name. */
static void s_instance(fe_t *fe, fe_conf_t *conf)
{
    char host[64] = "host";
    gethostname(host, sizeof host);
    host[sizeof host - 1] = '\0';
    if (!conf->jobs.broker_instance[0])
        snprintf(conf->jobs.broker_instance, sizeof conf->jobs.broker_instance, "%s", host);
    snprintf(fe->instance, sizeof fe->instance, "%s:%d", host, (int)getpid());
}

/* The parts, in the order they use each other; each gets its own slice of the options. */
static void s_build(fe_t *fe, const fe_conf_t *conf, const redis_url_t *redis, void *zmq_ctx)
{
    fe->store = store_new(fe->loop, redis, &conf->store);
    fe->bus = bus_new(fe->loop, redis, conf->store.timeout_ms, &fe->store, fe->instance);
    fe->fixtures = conf->test_fixtures;
    fe->round_trip = round_trip_new(fe->loop, &fe->store);
    fe->mcp_sessions = mcp_sessions_new(fe->loop, &conf->sessions, calls_cancel_all);
    fe->mcp_session_store = mcp_session_store_new(&fe->store, fe->bus, fe->mcp_sessions);
    fe->stream_log =
        stream_log_new(fe->loop, &fe->store, fe->bus, fe->mcp_sessions, &conf->stream_log);
    mcp_session_store_join(fe->mcp_session_store, fe->stream_log); /* the legacy era, joined */
    fe->tenants = tenants_new(fe->loop, fe->store, &conf->tenants);
    fe->limiter = limiter_new(fe->store, &conf->limiter);
    fe->holds = holds_new(fe->loop, &fe->store, &conf->holds, fe->instance);
    fe->jobs = jobs_new(fe->loop, zmq_ctx, &conf->jobs);
    fe->served = served_new(fe->loop, fe->store, &(served_conf_t)SERVED_CONF_DEFAULTS);
    fe->records = records_new(fe->store, &conf->records, fe->instance);
    rich_set_link_bytes((size_t)conf->file_link_bytes);
    fe->files = filestore_new(fe->store, &conf->files);
    fe->executions =
        executions_new(fe->loop, fe->jobs, fe->records, fe->files, fe->holds, &conf->executions);
    fe->resources = resources_new(fe, &(resources_conf_t){conf->page_size, conf->test_fixtures});
    fe->tasks = tasks_new(fe->executions, fe->bus, &(tasks_conf_t){conf->page_size});
    fe->tasks_extension = tasks_extension_new(fe->executions, fe->bus);
    fe->listeners = listeners_new(fe->bus, &fe->store, &conf->listen, conf->test_fixtures);
    fe->prompts = prompts_new(&(prompts_conf_t){conf->test_fixtures});
    fe->session_records = session_records_new(fe->loop, fe->store, conf->executions.record_wait_ms);
    fe->snapshots = snapshots_new(fe->store);
    fe->tools = tools_new(conf->page_size);
    if (conf->test_fixtures) { /* first: the suite calls the first tool listed with no arguments */
        tools_add(fe->tools, fixtures_tools);
        tools_add(fe->tools, fixtures_modern_tools);
    }
    tools_add(fe->tools, tooldefs);
    tools_add(fe->tools, sessiondefs);
    fe->compat = compat_new(conf->page_size);
    fe->mcp = mcp_new(fe, &conf->mcp);
}

/* Stopping: what this front-end wrote and Redis has not acknowledged yet (the record of a
 * call answered just before a stdio client hung up, or while Redis was slow) gets up to
 * max_ms more of the loop to land, instead of being lost with the process. The loop is turned
 * in 10 ms steps until then: a step that something else stops early (a transport winding
 * down) is simply followed by the next. */
static void s_step_done(loop_t *loop, void *arg)
{
    (void)arg;
    loop_stop(loop);
}

static void s_drain_store(fe_t *fe, long max_ms)
{
    long left = store_unacked(fe->store);
    if (left == 0) return;
    uint64_t give_up = clock_mono_ms() + (uint64_t)max_ms;
    while (store_unacked(fe->store) && clock_mono_ms() < give_up) {
        uint64_t step = loop_timer_add(fe->loop, 10, 0, s_step_done, NULL);
        loop_run(fe->loop);
        loop_timer_cancel(fe->loop, step);
    }
    long lost = store_unacked(fe->store);
    if (lost)
        log_warn("event=stop_writes_unacknowledged writes=%ld of=%ld", lost, left);
    else
        log_info("event=stop_writes_flushed writes=%ld", left);
}

/* Order matters: answer everything that waits, then take the transports down, then the parts
 * their callbacks might still reach. */
static void s_teardown(fe_t *fe)
{
    listeners_destroy(&fe->listeners); /* their streams end with a result, while they can */
    stdio_stop(fe);
    store_destroy(&fe->store); /* pending Redis callbacks run now, with NULL replies */
    served_destroy(&fe->served);
    executions_destroy(&fe->executions);
    jobs_destroy(&fe->jobs);
    tasks_destroy(&fe->tasks);
    tasks_extension_destroy(&fe->tasks_extension);
    http_stop(fe);
    stream_log_destroy(&fe->stream_log);
    mcp_sessions_destroy(&fe->mcp_sessions);
    mcp_session_store_destroy(&fe->mcp_session_store);
    mcp_destroy(&fe->mcp);
    tools_destroy(&fe->tools);
    compat_destroy(&fe->compat);
    prompts_destroy(&fe->prompts);
    resources_destroy(&fe->resources);
    records_destroy(&fe->records);
    filestore_destroy(&fe->files);
    session_records_destroy(&fe->session_records);
    snapshots_destroy(&fe->snapshots);
    limiter_destroy(&fe->limiter);
    tenants_destroy(&fe->tenants);
    round_trip_destroy(&fe->round_trip);
    bus_destroy(&fe->bus);
    holds_destroy(&fe->holds); /* last: whatever held one has let it go */
}

/* The front-end's one-second snapshot in Redis (sp:metrics:mcp:{instance}), which `snakepit
 * status` shows beside the broker's and the executors'. A second connection of its own, so a
 * slow snapshot never delays records or the rate limiter. */
static metrics_pub_t *s_snapshot_start(fe_t *fe, const char *redis)
{
    char key[160], err[256];
    snprintf(key, sizeof key, "sp:metrics:mcp:%s", fe->instance);
    metrics_pub_t *pub =
        metrics_pub_new(fe->loop, redis, key, 1000, 10, fe_metrics_snapshot, fe, err, sizeof err);
    if (!pub) log_warn("event=snapshot_disabled error=\"%s\"", err);
    return pub;
}

/* The options, checked: 0, or the exit status (2: usage, help printed: -1 → exit 0). */
static int s_configure(fe_conf_t *conf, redis_url_t *redis, int argc, char **argv)
{
    char err[512];
    *conf = s_defaults;
    switch (config_load(conf, s_opts, argc, argv, NULL, NULL, err, sizeof err)) {
    case CONFIG_HELP:
        config_usage(
            stdout,
            "snakepit-mcp [--http HOST:PORT] [--stdio] --broker ENDPOINT --redis URL [options]",
            "The snakepit MCP front-end: MCP 2026-07-28 (stateless) and 2025-11-25 (and older, "
            "in sessions) over Streamable HTTP (/mcp) and stdio, backed by the broker and Redis.",
            s_opts, &s_defaults);
        return -1;
    case CONFIG_ERROR:
        fprintf(stderr, "snakepit-mcp: %s\n", err);
        return 2;
    case CONFIG_OK:
        break;
    }
    log_level_t level = LOG_INFO;
    if (log_level_parse(conf->log_level, &level) < 0) {
        fprintf(stderr, "snakepit-mcp: --log-level: unknown level '%s'\n", conf->log_level);
        return 2;
    }
    log_init("mcp", level);
    if (s_validate(conf, err, sizeof err) < 0 ||
        redis_url_parse(conf->store.url, redis, err, sizeof err) < 0) {
        fprintf(stderr, "snakepit-mcp: %s\n", err);
        return 2;
    }
    return 0;
}

static int s_signalfd(void)
{
    signal(SIGPIPE, SIG_IGN);
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    sigprocmask(SIG_BLOCK, &sigs, NULL);
    int sfd = signalfd(-1, &sigs, SFD_NONBLOCK | SFD_CLOEXEC);
    if (sfd < 0) fprintf(stderr, "snakepit-mcp: signalfd: %s\n", strerror(errno));
    return sfd;
}

int main(int argc, char **argv)
{
    static fe_conf_t conf; /* ~5 KiB of option text: not on the stack */
    redis_url_t redis;
    int rc = s_configure(&conf, &redis, argc, argv);
    if (rc) return rc < 0 ? 0 : rc;
    int sfd = s_signalfd();
    if (sfd < 0) return 1;
    fe_t *fe = xcalloc(1, sizeof *fe);
    s_instance(fe, &conf);
    fe->http_listen = conf.http.listen[0] ? conf.http.listen : "off";
    fe->started_s = (double)clock_wall_ms() / 1000.0;
    fe->loop = loop_new();
    void *zmq_ctx = zmq_ctx_new();
    if (!zmq_ctx) {
        log_error("event=start_failed error=\"zmq_ctx_new: %s\"", zmq_strerror(errno));
        return 1;
    }
    loop_add_fd(fe->loop, sfd, ZMQ_POLLIN, s_on_signal, &sfd);
    s_build(fe, &conf, &redis, zmq_ctx);
    metrics_pub_t *snapshot = s_snapshot_start(fe, conf.store.url);
    char err[512];
    redis_upkeep_t *upkeep = redis_upkeep_new(fe->store, conf.local_key_file, err, sizeof err);
    if (!upkeep) {
        log_error("event=start_failed error=\"%s\"", err);
        fprintf(stderr, "snakepit-mcp: %s\n", err);
        rc = 1;
    }
    if (!rc && conf.http.listen[0] &&
        http_start(fe, &conf.http, fe_metrics_render, fe, err, sizeof err) < 0) {
        log_error("event=start_failed error=\"%s\"", err);
        fprintf(stderr, "snakepit-mcp: %s\n", err);
        rc = 1;
    }
    fe->console = console_new(fe, &conf.console);
    if (!rc) console_serve(fe->console, fe->http); /* /console beside /mcp */
    const endpoint_t *ep = conf.compat[0] ? compat_find(fe->compat, conf.compat) : NULL;
    if (!rc && conf.compat[0] && !ep) {
        fprintf(stderr, "snakepit-mcp: --compat %s: no such endpoint (%s)\n", conf.compat,
                compat_names(fe->compat));
        rc = 2;
    }
    if (!rc && conf.stdio && stdio_start(fe, conf.tenant, conf.http.max_body, ep) < 0) rc = 1;
    if (!rc) {
        char where[300];
        redis_url_describe(&redis, where, sizeof where);
        log_info("event=started version=%s http=%s stdio=%d broker=%s redis=%s instance=%s",
                 FE_VERSION, fe->http_listen, conf.stdio, conf.jobs.broker, where, fe->instance);
        if (loop_run(fe->loop) < 0) rc = 1;
        s_drain_store(fe, conf.store.timeout_ms);
    }
    metrics_pub_destroy(&snapshot);
    log_info("event=stopping sessions=%zu jobs_in_flight=%zu", mcp_sessions_count(fe->mcp_sessions),
             jobs_count(fe->jobs));
    s_teardown(fe);
    console_destroy(&fe->console);
    redis_upkeep_destroy(&upkeep); /* after the store, whose last callbacks may reach it */
    zmq_ctx_term(zmq_ctx);
    loop_destroy(&fe->loop);
    close(sfd);
    free(fe);
    return rc;
}
