/* broker/metrics.c — see metrics.h. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "common/clock.h"
#include "common/prom.h"
#include "metrics.h"

/* Slots and free slots count what any job may take; the reserve (executors.h) apart. */
typedef struct {
    size_t executors, slots, free_slots, reserve; /* of those serving: draining ones apart */
    size_t idle, busy, full, draining;            /* executors by state */
} farm_t;

static void s_farm(const sched_t *s, farm_t *f)
{
    memset(f, 0, sizeof *f);
    const executors_t *reg = sched_executors(s);
    for (size_t i = 0; i < executors_count(reg); i++) {
        const executor_t *ex = executors_at(reg, i);
        if (ex->draining) { /* leaving: it serves nothing, its running jobs finish */
            f->draining++;
            continue;
        }
        f->executors++;
        f->slots += ex->slots - ex->reserve;
        f->free_slots += executor_open_credit(ex);
        f->reserve += ex->reserve;
        if (!ex->credit)
            f->full++;
        else if (ex->n_leases)
            f->busy++;
        else
            f->idle++;
    }
}

typedef uint64_t(service_count_fn)(const service_t *sv);

static void s_per_service(buf_t *out, const services_t *svs, const char *name, prom_type_t type,
                          const char *help, service_count_fn *fn)
{
    prom_family(out, name, type, help);
    for (size_t i = 0; i < services_count(svs); i++) {
        const service_t *sv = services_at(svs, i);
        prom_sample(out, name, (double)fn(sv), "service", sv->name, NULL);
    }
}

#define SERVICE_FN(field, expr)                                                                    \
    static uint64_t s_##field(const service_t *sv)                                                 \
    {                                                                                              \
        return (uint64_t)(expr);                                                                   \
    }
SERVICE_FN(depth, queue_depth(sv->queue))
SERVICE_FN(inflight, sv->inflight)
SERVICE_FN(executors, sv->executors)
SERVICE_FN(slots, sv->slots)
SERVICE_FN(submitted, sv->count.submitted)
SERVICE_FN(dispatched, sv->count.dispatched)
SERVICE_FN(completed, sv->count.completed)
SERVICE_FN(requeued, sv->count.requeued)
SERVICE_FN(lost, sv->count.lost)
SERVICE_FN(cancelled, sv->count.cancelled)
SERVICE_FN(abandoned, sv->count.abandoned)

static void s_render_services(buf_t *out, const services_t *svs)
{
    s_per_service(out, svs, "snakepit_broker_queue_depth", PROM_GAUGE,
                  "Jobs waiting in the service's queue.", s_depth);
    s_per_service(out, svs, "snakepit_broker_jobs_inflight", PROM_GAUGE,
                  "Jobs of the service leased to executors.", s_inflight);
    s_per_service(out, svs, "snakepit_broker_service_executors", PROM_GAUGE,
                  "Registered executors serving the service (draining ones apart).", s_executors);
    s_per_service(out, svs, "snakepit_broker_service_slots", PROM_GAUGE,
                  "Sandbox slots declared by the executors serving the service.", s_slots);
    s_per_service(out, svs, "snakepit_broker_jobs_submitted_total", PROM_COUNTER,
                  "Jobs admitted to the service's queue.", s_submitted);
    s_per_service(out, svs, "snakepit_broker_jobs_dispatched_total", PROM_COUNTER,
                  "JOB messages sent to executors (a retry counts again).", s_dispatched);
    s_per_service(out, svs, "snakepit_broker_jobs_completed_total", PROM_COUNTER,
                  "Executor RESULTs forwarded to clients.", s_completed);
    s_per_service(out, svs, "snakepit_broker_jobs_requeued_total", PROM_COUNTER,
                  "Jobs put back at the head of their queue after their executor was lost (a "
                  "draining executor's are not: they finish there).",
                  s_requeued);
    s_per_service(out, svs, "snakepit_broker_jobs_lost_total", PROM_COUNTER,
                  "Jobs answered `lost`: their executor was lost twice.", s_lost);
    s_per_service(out, svs, "snakepit_broker_jobs_cancelled_total", PROM_COUNTER,
                  "Jobs answered `cancelled` by the broker (removed from the queue).", s_cancelled);
    s_per_service(out, svs, "snakepit_broker_jobs_abandoned_total", PROM_COUNTER,
                  "Jobs dropped because their client stopped answering.", s_abandoned);
    const char *name = "snakepit_broker_jobs_expired_total";
    prom_family(out, name, PROM_COUNTER,
                "Jobs answered `timeout` by the broker: deadline passed while queued, or while "
                "leased plus the lease grace.");
    for (size_t i = 0; i < services_count(svs); i++) {
        const service_t *sv = services_at(svs, i);
        prom_sample(out, name, (double)sv->count.expired_queued, "service", sv->name, "where",
                    "queue", NULL);
        prom_sample(out, name, (double)sv->count.expired_leased, "service", sv->name, "where",
                    "lease", NULL);
    }
}

static void s_render_io(buf_t *out, const broker_metrics_t *m)
{
    const relay_stats_t *io = relay_stats(m->relay);
    const sched_stats_t *st = sched_stats(m->sched);
    static const char *channels[2] = {"client", "worker"};

    prom_family(out, "snakepit_broker_jobs_rejected_total", PROM_COUNTER,
                "SUBMITs answered REJECT (or `timeout` for a deadline already passed), by reason.");
    for (int r = 0; r < REFUSE__COUNT; r++) {
        uint64_t n =
            io->refused[r] + st->rejected[r] + (r == REFUSE_MALFORMED ? io->rejected_malformed : 0);
        prom_sample(out, "snakepit_broker_jobs_rejected_total", (double)n, "reason",
                    refusal_name((refusal_t)r), NULL);
    }
    prom_family(out, "snakepit_broker_messages_received_total", PROM_COUNTER,
                "Messages read from each channel.");
    for (int c = 0; c < 2; c++)
        prom_sample(out, "snakepit_broker_messages_received_total", (double)io->received[c],
                    "channel", channels[c], NULL);
    prom_family(out, "snakepit_broker_messages_malformed_total", PROM_COUNTER,
                "Messages dropped as malformed, by channel and reason.");
    for (int c = 0; c < 2; c++)
        for (int r = 0; r < BAD__COUNT; r++)
            prom_sample(out, "snakepit_broker_messages_malformed_total",
                        (double)io->malformed[c][r], "channel", channels[c], "reason",
                        relay_bad_reason_name((bad_reason_t)r), NULL);
    prom_family(out, "snakepit_broker_send_failures_total", PROM_COUNTER,
                "Messages the broker could not send: peer gone, or its queue full.");
    for (int c = 0; c < 2; c++) {
        prom_sample(out, "snakepit_broker_send_failures_total",
                    (double)io->send_failed[c][SEND_UNREACHABLE], "channel", channels[c], "reason",
                    "unreachable", NULL);
        prom_sample(out, "snakepit_broker_send_failures_total",
                    (double)io->send_failed[c][SEND_WOULD_BLOCK], "channel", channels[c], "reason",
                    "queue_full", NULL);
    }
    prom_family(out, "snakepit_broker_unregistered_messages_total", PROM_COUNTER,
                "Worker messages from connections without READY (answered DISCONNECT).");
    prom_sample(out, "snakepit_broker_unregistered_messages_total",
                (double)io->unregistered[CH_WORKER], NULL);
    prom_family(out, "snakepit_broker_cancel_requests_total", PROM_COUNTER,
                "CANCEL messages from clients.");
    prom_sample(out, "snakepit_broker_cancel_requests_total", (double)io->cancels, NULL);
    prom_family(
        out, "snakepit_broker_stale_results_total", PROM_COUNTER,
        "RESULTs for jobs the broker no longer held (late, duplicate, or from before a restart).");
    prom_sample(out, "snakepit_broker_stale_results_total", (double)st->stale_results, NULL);
    prom_family(out, "snakepit_broker_executor_registrations_total", PROM_COUNTER,
                "READY messages accepted.");
    prom_sample(out, "snakepit_broker_executor_registrations_total",
                (double)st->executors_registered, NULL);
    prom_family(out, "snakepit_broker_executor_losses_total", PROM_COUNTER,
                "Executors dropped: heartbeat expired, DISCONNECT, unreachable, or re-registered.");
    prom_sample(out, "snakepit_broker_executor_losses_total", (double)st->executors_lost, NULL);
    prom_family(out, "snakepit_broker_executor_drains_total", PROM_COUNTER,
                "Executors that said LEAVING: they drained (no new job; their running ones "
                "finished within their grace) before they went.");
    prom_sample(out, "snakepit_broker_executor_drains_total", (double)st->executors_drained, NULL);
    prom_family(out, "snakepit_broker_resubmitted_total", PROM_COUNTER,
                "SUBMITs marked resubmit (their first broker was lost), by what the executors' "
                "HELD found: running (attached to that run), done (answered lost), none (queued).");
    prom_sample(out, "snakepit_broker_resubmitted_total", (double)st->probe_running, "found",
                "running", NULL);
    prom_sample(out, "snakepit_broker_resubmitted_total", (double)st->probe_done, "found", "done",
                NULL);
    prom_sample(out, "snakepit_broker_resubmitted_total",
                (double)(st->resubmitted - st->probe_running - st->probe_done), "found",
                "none_or_waiting", NULL);
    prom_family(out, "snakepit_broker_credit_messages_total", PROM_COUNTER,
                "Credit traffic with executors serving several brokers: WANT sent, RECLAIM "
                "answered.");
    prom_sample(out, "snakepit_broker_credit_messages_total", (double)st->wants, "kind", "want",
                NULL);
    prom_sample(out, "snakepit_broker_credit_messages_total", (double)st->releases, "kind",
                "release", NULL);
}

void broker_metrics_render(void *shown, buf_t *out)
{
    const broker_metrics_t *m = shown;
    const sched_t *s = m->sched;
    farm_t f;
    s_farm(s, &f);
    prom_write_process(out, "broker", SNAKEPIT_VERSION, m->started);
    s_render_services(out, sched_services(s));

    prom_family(out, "snakepit_broker_executors", PROM_GAUGE,
                "Registered executors by state: idle (no jobs), busy (jobs and free slots), full, "
                "draining (leaving: no new job, its running ones finish).");
    prom_sample(out, "snakepit_broker_executors", (double)f.idle, "state", "idle", NULL);
    prom_sample(out, "snakepit_broker_executors", (double)f.busy, "state", "busy", NULL);
    prom_sample(out, "snakepit_broker_executors", (double)f.full, "state", "full", NULL);
    prom_sample(out, "snakepit_broker_executors", (double)f.draining, "state", "draining", NULL);
    prom_family(out, "snakepit_broker_slots", PROM_GAUGE, "Sandbox slots of registered executors.");
    prom_sample(out, "snakepit_broker_slots", (double)f.slots, NULL);
    prom_family(out, "snakepit_broker_slots_free", PROM_GAUGE,
                "Credit: slots ready for a job now.");
    prom_sample(out, "snakepit_broker_slots_free", (double)f.free_slots, NULL);
    prom_family(out, "snakepit_broker_reserve_slots", PROM_GAUGE,
                "Slots executors keep for jobs of tenants with nothing running (--reserve-slots), "
                "on top of snakepit_broker_slots.");
    prom_sample(out, "snakepit_broker_reserve_slots", (double)f.reserve, NULL);
    prom_family(out, "snakepit_broker_reserve_dispatched_total", PROM_COUNTER,
                "Jobs dispatched on an executor's reserve: their tenant had nothing running and "
                "every other slot was taken.");
    prom_sample(out, "snakepit_broker_reserve_dispatched_total",
                (double)sched_stats(s)->reserve_dispatched, NULL);
    prom_family(out, "snakepit_broker_queued_bytes", PROM_GAUGE, "JobSpec bytes held in queues.");
    prom_sample(out, "snakepit_broker_queued_bytes", (double)sched_queued_bytes(s), NULL);
    prom_family(out, "snakepit_broker_tenants", PROM_GAUGE, "Tenants with jobs queued or running.");
    prom_sample(out, "snakepit_broker_tenants", (double)sched_tenants(s), NULL);
    prom_family(out, "snakepit_broker_sessions", PROM_GAUGE,
                "Sessions the broker routes to their executors (affinity).");
    prom_sample(out, "snakepit_broker_sessions", (double)sched_sessions(s), NULL);
    prom_family(out, "snakepit_broker_clients", PROM_GAUGE,
                "Client connections the broker tracks.");
    prom_sample(out, "snakepit_broker_clients", (double)sched_clients(s), NULL);

    prom_family(out, "snakepit_broker_queue_wait_seconds", PROM_HISTOGRAM,
                "Time from admission to the first dispatch.");
    prom_hist_write(out, "snakepit_broker_queue_wait_seconds", &sched_stats(s)->queue_wait, NULL);

    s_render_io(out, m);
    const zap_t *zap = m->zap;
    if (zap) {
        prom_family(out, "snakepit_broker_auth_total", PROM_COUNTER,
                    "CURVE handshakes judged by ZAP.");
        prom_sample(out, "snakepit_broker_auth_total", (double)zap_allowed(zap), "result",
                    "allowed", NULL);
        prom_sample(out, "snakepit_broker_auth_total", (double)zap_denied(zap), "result", "denied",
                    NULL);
        prom_family(out, "snakepit_broker_allowlist_keys", PROM_GAUGE,
                    "Public keys in the allowlist.");
        prom_sample(out, "snakepit_broker_allowlist_keys", (double)zap_keys(zap), NULL);
    }
    if (m->pub) {
        prom_family(out, "snakepit_broker_redis_publish_errors_total", PROM_COUNTER,
                    "Metrics snapshots that did not reach Redis.");
        prom_sample(out, "snakepit_broker_redis_publish_errors_total",
                    (double)metrics_pub_errors(m->pub), NULL);
    }
}

void broker_metrics_snapshot(void *shown, metrics_pub_t *pub)
{
    const broker_metrics_t *m = shown;
    const sched_t *s = m->sched;
    const services_t *svs = sched_services(s);
    farm_t f;
    s_farm(s, &f);
    metrics_pub_field(pub, "executors", "%zu", f.executors);
    metrics_pub_field(pub, "draining", "%zu", f.draining);
    metrics_pub_field(pub, "slots", "%zu", f.slots);
    metrics_pub_field(pub, "free_slots", "%zu", f.free_slots);
    metrics_pub_field(pub, "reserve_slots", "%zu", f.reserve);
    metrics_pub_field(pub, "queued", "%zu", sched_queued(s));
    metrics_pub_field(pub, "inflight", "%zu", sched_inflight(s));
    metrics_pub_field(pub, "tenants", "%zu", sched_tenants(s));
    metrics_pub_field(pub, "sessions", "%zu", sched_sessions(s));
    metrics_pub_field(pub, "clients", "%zu", sched_clients(s));
    metrics_pub_field(pub, "version", "%s", SNAKEPIT_VERSION);
    metrics_pub_field(pub, "started", "%.0f", m->started);
    metrics_pub_field(pub, "ts_ms", "%llu", (unsigned long long)clock_wall_ms());
    uint64_t dispatched = 0, completed = 0, lost = 0, rejected = 0, requeued = 0;
    /* Service names are [A-Za-z0-9._-] (wire_name_ok): they need no JSON escaping. */
    buf_t json;
    buf_init(&json);
    buf_puts(&json, "{");
    for (size_t i = 0; i < services_count(svs); i++) {
        const service_t *sv = services_at(svs, i);
        size_t free_slots = 0, draining = 0;
        const executors_t *reg = sched_executors(s);
        for (size_t k = 0; k < executors_count(reg); k++) {
            const executor_t *ex = executors_at(reg, k);
            if (!(ex->service_mask & (1ULL << sv->index))) continue;
            free_slots += executor_open_credit(ex);
            draining += (size_t)ex->draining;
        }
        /* executors: those serving it now (draining ones apart), as the front-ends count it */
        buf_printf(&json,
                   "%s\"%s\":{\"executors\":%zu,\"draining\":%zu,\"slots\":%zu,\"free\":%zu,"
                   "\"queued\":%zu,\"inflight\":%zu,\"requeued\":%llu}",
                   i ? "," : "", sv->name, sv->executors, draining, sv->slots, free_slots,
                   queue_depth(sv->queue), sv->inflight, (unsigned long long)sv->count.requeued);
        dispatched += sv->count.dispatched;
        completed += sv->count.completed;
        lost += sv->count.lost;
        requeued += sv->count.requeued;
    }
    buf_puts(&json, "}");
    for (int r = 0; r < REFUSE__COUNT; r++)
        rejected += relay_stats(m->relay)->refused[r] + sched_stats(s)->rejected[r];
    metrics_pub_field(pub, "services", "%s", (const char *)json.data);
    metrics_pub_field(pub, "dispatched_total", "%llu", (unsigned long long)dispatched);
    metrics_pub_field(pub, "completed_total", "%llu", (unsigned long long)completed);
    metrics_pub_field(pub, "lost_total", "%llu", (unsigned long long)lost);
    metrics_pub_field(pub, "requeued_total", "%llu", (unsigned long long)requeued);
    metrics_pub_field(pub, "rejected_total", "%llu", (unsigned long long)rejected);
    buf_free(&json);
}
