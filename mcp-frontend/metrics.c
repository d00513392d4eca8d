/* mcp-frontend/metrics.c — see metrics.h. Series with labels from an open set (methods,
 * tools, HTTP codes) appear the first time they count something; those from a fixed set of
 * words are always there. */
#define _GNU_SOURCE
#include <stdio.h>

#include "common/clock.h"
#include "common/profiles.h"
#include "common/prom.h"
#include "mcp-frontend/console/console.h"
#include "mcp-frontend/farm/execution.h"
#include "mcp-frontend/farm/jobs.h"
#include "mcp-frontend/farm/served.h"
#include "mcp-frontend/legacy/mcp_session_store.h"
#include "mcp-frontend/legacy/stream_log.h"
#include "mcp-frontend/mcp/listen.h"
#include "mcp-frontend/mcp/mcp.h"
#include "mcp-frontend/mcp/round_trip.h"
#include "mcp-frontend/rpc/fe.h"
#include "mcp-frontend/rpc/mcp_session.h"
#include "mcp-frontend/state/bus.h"
#include "mcp-frontend/state/filestore.h"
#include "mcp-frontend/state/holds.h"
#include "mcp-frontend/state/limiter.h"
#include "mcp-frontend/state/store.h"
#include "mcp-frontend/tools/tools.h"
#include "mcp-frontend/transport/http.h"
#include "metrics.h"

#define P "snakepit_mcp_"

static void s_requests(buf_t *out, const mcp_stats_t *m)
{
    prom_family(out, P "requests_total", PROM_COUNTER,
                "MCP messages handled, by JSON-RPC method and outcome.");
    for (size_t i = 0; i < m->n_labels; i++)
        for (int o = 0; o < OUTCOME__COUNT; o++)
            if (m->labels[i].outcomes[o])
                prom_sample(out, P "requests_total", (double)m->labels[i].outcomes[o], "method",
                            m->labels[i].label, "outcome", outcome_name((outcome_t)o), NULL);
    prom_family(out, P "request_duration_seconds", PROM_HISTOGRAM,
                "Time from a request's arrival to its final response.");
    for (size_t i = 0; i < m->n_labels; i++)
        if (m->labels[i].seconds.count)
            prom_hist_write(out, P "request_duration_seconds", &m->labels[i].seconds,
                            (const char *const[]){"method", m->labels[i].label, NULL});
    prom_family(out, P "overhead_seconds", PROM_HISTOGRAM,
                "The front-end's own time per job-backed request: its duration minus the job's "
                "time between submit and result.");
    for (size_t i = 0; i < m->n_labels; i++)
        if (m->labels[i].overhead.count)
            prom_hist_write(out, P "overhead_seconds", &m->labels[i].overhead,
                            (const char *const[]){"method", m->labels[i].label, NULL});
}

static void s_tool_calls(buf_t *out, const executions_stats_t *e, const tools_stats_t *t)
{
    prom_family(out, P "tool_calls_total", PROM_COUNTER, "Tool calls by tool and result status.");
    for (size_t i = 0; i < e->n_tools; i++)
        for (int st = 0; st < ST__COUNT; st++)
            if (e->tools[i].by_status[st])
                prom_sample(out, P "tool_calls_total", (double)e->tools[i].by_status[st], "tool",
                            e->tools[i].tool, "status", status_name((status_t)st), NULL);
    if (t->unknown_tools)
        prom_sample(out, P "tool_calls_total", (double)t->unknown_tools, "tool", "unknown",
                    "status", status_name(ST_REJECTED), NULL);
    prom_family(out, P "security_events_total", PROM_COUNTER,
                "Operations the sandbox refused, by the layer that refused them and whether the "
                "run ended as a security_violation (violation) or the code went on (caught).");
    for (int l = 0; l < REFUSAL__COUNT; l++)
        for (int ended = 0; ended < 2; ended++)
            prom_sample(out, P "security_events_total", (double)e->refusals[l][ended], "layer",
                        refusal_layer_name((refusal_layer_t)l), "outcome",
                        ended ? "violation" : "caught", NULL);
}

static void s_limits(buf_t *out, const limiter_stats_t *l, const http_stats_t *h)
{
    prom_family(out, P "rate_limit_rejections_total", PROM_COUNTER,
                "Calls refused by the per-tenant rate limit, by where it was decided.");
    prom_sample(out, P "rate_limit_rejections_total", (double)l->denied_redis, "source", "redis",
                NULL);
    prom_sample(out, P "rate_limit_rejections_total", (double)l->denied_local, "source", "local",
                NULL);
    prom_family(out, P "rate_limit_fallbacks_total", PROM_COUNTER,
                "Rate-limit decisions made by the local limiter because Redis was unreachable.");
    prom_sample(out, P "rate_limit_fallbacks_total", (double)l->fallbacks, NULL);
    prom_family(out, P "auth_failures_total", PROM_COUNTER,
                "HTTP requests refused by authentication, by reason.");
    for (int r = 0; r < AUTH_FAILED__COUNT; r++)
        prom_sample(out, P "auth_failures_total", h ? (double)h->auth_failures[r] : 0, "reason",
                    auth_failure_name((auth_failure_t)r), NULL);
}

static void s_sessions(buf_t *out, const fe_t *fe)
{
    const mcp_sessions_stats_t *s = mcp_sessions_stats(fe->mcp_sessions);
    const mcp_session_store_stats_t *d = mcp_session_store_stats(fe->mcp_session_store);
    const stream_log_stats_t *l = stream_log_stats(fe->stream_log);
    prom_family(out, P "sessions", PROM_GAUGE,
                "Legacy MCP sessions held in this process (HTTP ones live in Redis too).");
    for (int t = 0; t < TRANSPORT__COUNT; t++)
        prom_sample(out, P "sessions", (double)s->open[t], "transport",
                    transport_name((transport_t)t), NULL);
    prom_family(out, P "sessions_opened_total", PROM_COUNTER,
                "Legacy MCP sessions initialized here.");
    for (int t = 0; t < TRANSPORT__COUNT; t++)
        prom_sample(out, P "sessions_opened_total", (double)s->opened[t], "transport",
                    transport_name((transport_t)t), NULL);
    prom_family(
        out, P "sessions_evicted_total", PROM_COUNTER,
        "Legacy sessions evicted (least recently used) to make room for a tenant's new one.");
    prom_sample(out, P "sessions_evicted_total", (double)d->evicted, NULL);
    prom_family(
        out, P "session_lookups_total", PROM_COUNTER,
        "Legacy session lookups: from this process's copy (cache), from Redis, unknown ids.");
    prom_sample(out, P "session_lookups_total", (double)d->hits, "source", "cache", NULL);
    prom_sample(out, P "session_lookups_total", (double)d->misses, "source", "redis", NULL);
    prom_sample(out, P "session_lookups_total", (double)d->not_found, "source", "unknown", NULL);
    prom_family(out, P "stream_events_total", PROM_COUNTER,
                "Legacy SSE events logged for resumption, and replayed to reconnected clients.");
    prom_sample(out, P "stream_events_total", (double)l->appended, "op", "logged", NULL);
    prom_sample(out, P "stream_events_total", (double)l->replayed, "op", "replayed", NULL);
    prom_family(out, P "stream_resumptions_total", PROM_COUNTER,
                "GET requests with Last-Event-ID answered, and those naming no stream kept.");
    prom_sample(out, P "stream_resumptions_total", (double)l->resumed, "outcome", "resumed", NULL);
    prom_sample(out, P "stream_resumptions_total", (double)l->unknown, "outcome", "unknown", NULL);
}

static void s_redis(buf_t *out, const store_stats_t *s, const executions_stats_t *e)
{
    prom_family(out, P "redis_errors_total", PROM_COUNTER,
                "Redis commands that failed or could not be sent, by operation.");
    for (int op = 0; op < STORE_OP__COUNT; op++)
        prom_sample(out, P "redis_errors_total", (double)s->errors[op], "op",
                    store_op_name((store_op_t)op), NULL);
    prom_family(out, P "records_dropped_total", PROM_COUNTER,
                "Record and usage writes dropped because the bounded buffer was full.");
    prom_sample(out, P "records_dropped_total", (double)s->writes_dropped, NULL);
    prom_family(out, P "records_replayed_total", PROM_COUNTER,
                "Acknowledged record writes sent again after a reconnect (--redis-replay-ms).");
    prom_sample(out, P "records_replayed_total", (double)s->writes_replayed, NULL);
    prom_family(out, P "redis_connects_total", PROM_COUNTER,
                "Connections made to Redis (through Sentinel: to the master it named).");
    prom_sample(out, P "redis_connects_total", (double)s->connects, NULL);
    prom_family(out, P "records_unconfirmed_total", PROM_COUNTER,
                "Answers sent before Redis confirmed the execution's final record, by reason: "
                "buffered (Redis away or backed up), slow (no answer within --record-wait-ms), "
                "failed.");
    for (int r = 0; r < UNCONFIRMED__COUNT; r++)
        prom_sample(out, P "records_unconfirmed_total", (double)e->unconfirmed[r], "reason",
                    unconfirmed_name((unconfirmed_t)r), NULL);
}

/* Malformed or refused input, whoever refused it. */
static void s_rejections(buf_t *out, const fe_t *fe)
{
    const char *name = P "rejections_total";
    const mcp_stats_t *m = mcp_stats(fe->mcp);
    const http_stats_t *h = http_stats(fe->http);
    prom_family(out, name, PROM_COUNTER, "Malformed or refused input, by reason.");
    prom_sample(out, name, (double)m->parse_errors, "reason", "parse_error", NULL);
    prom_sample(out, name, (double)m->invalid_requests, "reason", "invalid_request", NULL);
    for (int r = 0; r < REFUSED__COUNT; r++)
        prom_sample(out, name, (double)m->admit.refused[r], "reason",
                    admit_refusal_name((admit_refusal_t)r), NULL);
    prom_sample(out, name, (double)tools_stats(fe->tools)->invalid_args, "reason", "invalid_params",
                NULL);
    prom_sample(out, name, (double)executions_stats(fe->executions)->bad_results, "reason",
                "bad_result", NULL);
    for (int r = 0; h && r < HTTP_REFUSED__COUNT; r++)
        prom_sample(out, name, (double)h->refused[r], "reason",
                    http_refusal_name((http_refusal_t)r), NULL);
    prom_family(out, P "http_responses_total", PROM_COUNTER, "HTTP responses by status code.");
    for (unsigned code = 0; h && code < HTTP_STATUS_MAX; code++)
        if (h->responses[code]) {
            char label[8];
            snprintf(label, sizeof label, "%u", code);
            prom_sample(out, P "http_responses_total", (double)h->responses[code], "code", label,
                        NULL);
        }
}

/* The two eras side by side, and what 2026-07-28 brought: listen streams, round trips, and
 * the events front-ends exchange. */
static void s_eras(buf_t *out, const fe_t *fe)
{
    const admit_stats_t *a = &mcp_stats(fe->mcp)->admit;
    prom_family(out, P "messages_total", PROM_COUNTER,
                "Messages admitted, by protocol era (legacy: sessions; modern: 2026-07-28).");
    prom_sample(out, P "messages_total", (double)a->legacy, "era", "legacy", NULL);
    prom_sample(out, P "messages_total", (double)a->modern, "era", "modern", NULL);
    const listen_stats_t *l = listeners_stats(fe->listeners);
    prom_family(out, P "listen_streams", PROM_GAUGE, "Open subscriptions/listen streams.");
    prom_sample(out, P "listen_streams", (double)l->open, NULL);
    prom_family(out, P "listen_notifications_total", PROM_COUNTER,
                "Notifications written to subscriptions/listen streams.");
    prom_sample(out, P "listen_notifications_total", (double)l->delivered, NULL);
    const round_trip_stats_t *m = round_trip_stats(fe->round_trip);
    prom_family(out, P "request_states_total", PROM_COUNTER,
                "Multi round-trip requestStates sealed, opened, and refused (tampered, expired, "
                "another caller's).");
    prom_sample(out, P "request_states_total", (double)m->sealed, "outcome", "sealed", NULL);
    prom_sample(out, P "request_states_total", (double)m->opened, "outcome", "opened", NULL);
    prom_sample(out, P "request_states_total", (double)m->refused, "outcome", "refused", NULL);
    const bus_stats_t *b = bus_stats(fe->bus);
    prom_family(out, P "bus_events_total", PROM_COUNTER,
                "Events exchanged with the other front-ends over Redis pub/sub.");
    prom_sample(out, P "bus_events_total", (double)b->published, "direction", "published", NULL);
    prom_sample(out, P "bus_events_total", (double)b->received, "direction", "received", NULL);
    prom_family(out, P "bus_reconnects_total", PROM_COUNTER,
                "Times the pub/sub connection came back after an outage.");
    prom_sample(out, P "bus_reconnects_total", (double)b->reconnects, NULL);
}

/* What tenants hold across the farm (holds.h) and the linked files kept in Redis
 * (filestore.h): each refusal by the cap that refused it, never by tenant. */
static void s_tenant_bounds(buf_t *out, const fe_t *fe)
{
    const holds_stats_t *h = holds_stats(fe->holds);
    const filestore_stats_t *f = filestore_stats(fe->files);
    static const char *const caps[HOLD__COUNT] = {[HOLD_LISTEN] = "max_listen_streams",
                                                  [HOLD_SSE] = "max_sse_streams",
                                                  [HOLD_TASK] = "max_tasks"};
    prom_family(out, P "tenant_cap_refusals_total", PROM_COUNTER,
                "Requests and linked files refused because their tenant held its cap (counted "
                "across every front-end), by cap.");
    for (int k = 0; k < HOLD__COUNT; k++)
        prom_sample(out, P "tenant_cap_refusals_total", (double)h->refused[k], "cap", caps[k],
                    NULL);
    prom_sample(out, P "tenant_cap_refusals_total", (double)f->files[FILE_OVER_TENANT_MB], "cap",
                "max_linked_mb", NULL);
    prom_sample(out, P "tenant_cap_refusals_total", (double)f->files[FILE_OVER_TENANT_FILES], "cap",
                "max_linked_files", NULL);
    prom_family(out, P "held", PROM_GAUGE,
                "Listen streams, legacy GET streams and running tasks this front-end holds for "
                "their tenants' caps, by kind.");
    for (int k = 0; k < HOLD__COUNT; k++)
        prom_sample(out, P "held", (double)h->held[k], "kind", hold_kind_name((hold_kind_t)k),
                    NULL);
    prom_family(out, P "hold_fallbacks_total", PROM_COUNTER,
                "Tenant caps decided by this front-end alone because Redis could not be asked, by "
                "kind.");
    for (int k = 0; k < HOLD__COUNT; k++)
        prom_sample(out, P "hold_fallbacks_total", (double)h->fallbacks[k], "kind",
                    hold_kind_name((hold_kind_t)k), NULL);
    prom_family(out, P "linked_files_total", PROM_COUNTER,
                "Files too large to return inline, by what became of them: kept in Redis, or "
                "not kept (the tenant's max_linked_mb or max_linked_files, the farm's "
                "--file-share-pct of maxmemory, Redis unavailable).");
    for (int w = 0; w < FILE__COUNT; w++)
        prom_sample(out, P "linked_files_total", (double)f->files[w], "outcome",
                    filestore_outcome_name((file_outcome_t)w), NULL);
    prom_family(out, P "linked_bytes_total", PROM_COUNTER, "Bytes of the linked files kept.");
    prom_sample(out, P "linked_bytes_total", (double)f->kept_bytes, NULL);
}

/* Which profiles the farm serves, as this front-end reads it (farm/served.h). */
static void s_served(buf_t *out, const fe_t *fe)
{
    prom_family(out, P "profile_served", PROM_GAUGE,
                "1 for each profile the farm serves as far as this front-end knows (all 1 while "
                "it does not know).");
    for (size_t i = 0; i < n_profiles; i++)
        prom_sample(out, P "profile_served", served_has(fe->served, &profiles[i]) ? 1 : 0,
                    "profile", profiles[i].name, NULL);
    prom_family(out, P "served_profiles_changes_total", PROM_COUNTER,
                "Times the set of profiles served changed.");
    prom_sample(out, P "served_profiles_changes_total", (double)served_stats(fe->served)->changes,
                NULL);
}

/* The console: sign-ins by outcome (a brute force shows as invalid_key and rate_limited),
 * refusals by reason, and what the pages did. */
static void s_console(buf_t *out, const console_stats_t *c)
{
    prom_family(out, P "console_signins_total", PROM_COUNTER,
                "Console sign-in attempts by outcome (rate_limited: over the per-address rate).");
    for (int o = 0; o < CONSOLE_SIGNIN__COUNT; o++)
        prom_sample(out, P "console_signins_total", (double)c->signins[o], "outcome",
                    console_signin_name(o), NULL);
    prom_family(out, P "console_refusals_total", PROM_COUNTER,
                "Console requests refused, by reason (csrf, signed_out, bad_origin, ...).");
    for (int r = 0; r < CONSOLE_REFUSED__COUNT; r++)
        prom_sample(out, P "console_refusals_total", (double)c->refused[r], "reason",
                    console_refusal_name(r), NULL);
    prom_family(out, P "console_events_total", PROM_COUNTER,
                "Console sign-outs, key rotations, tool calls made for pages, files served.");
    prom_sample(out, P "console_events_total", (double)c->signouts, "event", "signout", NULL);
    prom_sample(out, P "console_events_total", (double)c->key_rotations, "event", "key_rotation",
                NULL);
    prom_sample(out, P "console_events_total", (double)c->calls, "event", "call", NULL);
    prom_sample(out, P "console_events_total", (double)c->assets, "event", "asset", NULL);
}

void fe_metrics_render(void *arg, buf_t *out)
{
    const fe_t *fe = arg;
    prom_write_process(out, "mcp", FE_VERSION, fe->started_s);
    s_requests(out, mcp_stats(fe->mcp));
    s_tool_calls(out, executions_stats(fe->executions), tools_stats(fe->tools));
    s_limits(out, limiter_stats(fe->limiter), http_stats(fe->http));
    s_sessions(out, fe);
    s_redis(out, store_stats(fe->store), executions_stats(fe->executions));
    s_rejections(out, fe);
    prom_family(out, P "auth_stale_total", PROM_COUNTER,
                "Requests let in on a cached key answer older than --auth-cache-ms because Redis "
                "could not be asked (--auth-stale-ms).");
    prom_sample(out, P "auth_stale_total", (double)tenants_stale_auths(fe->tenants), NULL);
    s_eras(out, fe);
    s_tenant_bounds(out, fe);
    prom_family(out, P "jobs_inflight", PROM_GAUGE, "Jobs submitted and not yet answered.");
    prom_sample(out, P "jobs_inflight", (double)jobs_count(fe->jobs), NULL);
    prom_family(out, P "broker_unavailable_total", PROM_COUNTER,
                "Jobs refused at once because no broker was connected.");
    prom_sample(out, P "broker_unavailable_total", (double)jobs_stats(fe->jobs)->broker_unavailable,
                NULL);
    prom_family(out, P "jobs_resubmitted_total", PROM_COUNTER,
                "Jobs sent again, marked resubmit, after the broker holding them was lost.");
    prom_sample(out, P "jobs_resubmitted_total", (double)jobs_stats(fe->jobs)->resubmitted, NULL);
    prom_family(out, P "jobs_lost_total", PROM_COUNTER,
                "Jobs answered lost here: their broker was lost twice, or none could take them "
                "again within --broker-wait-ms.");
    prom_sample(out, P "jobs_lost_total", (double)jobs_stats(fe->jobs)->lost, NULL);
    s_served(out, fe);
    if (fe->console) s_console(out, console_stats(fe->console));
}

/* Sums for the snapshot, which `snakepit status` shows per front-end. */
static uint64_t s_requests_total(const mcp_stats_t *m)
{
    uint64_t n = 0;
    for (size_t i = 0; i < m->n_labels; i++)
        for (int o = 0; o < OUTCOME__COUNT; o++) n += m->labels[i].outcomes[o];
    return n;
}

static uint64_t s_tool_calls_total(const executions_stats_t *e, const tools_stats_t *t)
{
    uint64_t n = t->unknown_tools;
    for (size_t i = 0; i < e->n_tools; i++)
        for (int st = 0; st < ST__COUNT; st++) n += e->tools[i].by_status[st];
    return n;
}

void fe_metrics_snapshot(void *arg, metrics_pub_t *pub)
{
    const fe_t *fe = arg;
    const http_stats_t *h = http_stats(fe->http);
    const limiter_stats_t *l = limiter_stats(fe->limiter);
    uint64_t auth_failures = 0;
    for (int r = 0; h && r < AUTH_FAILED__COUNT; r++) auth_failures += h->auth_failures[r];
    metrics_pub_field(pub, "instance", "%s", fe->instance);
    metrics_pub_field(pub, "http", "%s", fe->http_listen);
    metrics_pub_field(pub, "sessions", "%zu", mcp_sessions_count(fe->mcp_sessions));
    metrics_pub_field(pub, "jobs_inflight", "%zu", jobs_count(fe->jobs));
    metrics_pub_field(pub, "requests", "%llu",
                      (unsigned long long)s_requests_total(mcp_stats(fe->mcp)));
    metrics_pub_field(pub, "tool_calls", "%llu",
                      (unsigned long long)s_tool_calls_total(executions_stats(fe->executions),
                                                             tools_stats(fe->tools)));
    metrics_pub_field(pub, "auth_failures", "%llu", (unsigned long long)auth_failures);
    metrics_pub_field(pub, "rate_limited", "%llu",
                      (unsigned long long)(l->denied_redis + l->denied_local));
    metrics_pub_field(pub, "records_dropped", "%llu",
                      (unsigned long long)store_stats(fe->store)->writes_dropped);
    metrics_pub_field(pub, "broker_connected", "%d", jobs_broker_connected(fe->jobs));
    metrics_pub_field(pub, "redis_connected", "%d", store_connected(fe->store));
    metrics_pub_field(pub, "ts_ms", "%llu", (unsigned long long)clock_wall_ms());
}
