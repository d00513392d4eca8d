/* executor-node/node/metrics.c — see metrics.h. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "metrics.h"

static const double s_rss_buckets[] = {16e6, 32e6, 64e6, 128e6, 256e6, 512e6, 1024e6, 2048e6, 4096e6};

void exec_metrics_init(exec_metrics_t *m, const char *node, const char *layers, long slots,
                       long reserve)
{
    memset(m, 0, sizeof *m);
    m->node = node;
    m->layers = layers;
    m->slots = slots;
    m->reserve = reserve;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    m->start_wall_s = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

profile_stats_t *exec_metrics_profile(exec_metrics_t *m, const char *profile)
{
    for (int i = 0; i < m->n_profiles; i++)
        if (strcmp(m->profiles[i].name, profile) == 0) return &m->profiles[i];
    if (m->n_profiles == METRICS_MAX_PROFILES) return &m->profiles[METRICS_MAX_PROFILES - 1];
    profile_stats_t *p = &m->profiles[m->n_profiles++];
    snprintf(p->name, sizeof p->name, "%s", profile);
    prom_hist_init(&p->wall, prom_seconds_buckets, prom_seconds_buckets_n);
    prom_hist_init(&p->cpu, prom_seconds_buckets, prom_seconds_buckets_n);
    prom_hist_init(&p->rss, s_rss_buckets, sizeof s_rss_buckets / sizeof s_rss_buckets[0]);
    return p;
}

static void s_kill(exec_metrics_t *m, const char *syscall, size_t len)
{
    /* an audit event carries its path ("open /etc/passwd"): count by event name only */
    size_t n = strcspn(syscall, " ");
    if (n > len) n = len;
    if (n >= sizeof m->kills[0].syscall) n = sizeof m->kills[0].syscall - 1;
    for (int i = 0; i < m->n_kills; i++)
        if (strlen(m->kills[i].syscall) == n && strncmp(m->kills[i].syscall, syscall, n) == 0) {
            m->kills[i].count++;
            return;
        }
    if (m->n_kills == METRICS_MAX_SYSCALLS) {
        m->kills_other++;
        return;
    }
    kill_stat_t *k = &m->kills[m->n_kills++];
    memcpy(k->syscall, syscall, n);
    k->syscall[n] = '\0';
    k->count = 1;
}

void exec_metrics_job(exec_metrics_t *m, const char *profile, const zmsg_stats_t *s)
{
    profile_stats_t *p = exec_metrics_profile(m, profile);
    p->forks += s->forks;
    p->pool = (long)s->pool;
    if (!s->job) return; /* pool news between jobs */
    p->jobs[s->status]++;
    if (s->kind == 1) p->validations++;
    if (s->session && s->kind == 0) p->cells++;
    if (s->lowered) p->lowered++;
    prom_hist_observe(&p->wall, s->wall_ms / 1000.0);
    prom_hist_observe(&p->cpu, s->cpu_ms / 1000.0);
    prom_hist_observe(&p->rss, (double)s->max_rss_kb * 1024.0);
    if (s->status == ST_SECURITY_VIOLATION && s->syscall[0]) s_kill(m, s->syscall, strlen(s->syscall));
}

/* The first word of a session's end reason, as a bounded label; "other" past the list. */
static const char *const s_end_kinds[METRICS_SESSION_ENDS] = {
    "closed", "expired", "evicted", "memory_limit", "timeout",
    "cancelled", "security_violation", "cpu_limit", "lost", "other"};

const char *exec_metrics_end_kind(int i)
{
    return i >= 0 && i < METRICS_SESSION_ENDS ? s_end_kinds[i] : "other";
}

void exec_metrics_session_end(exec_metrics_t *m, const char *reason)
{
    int k = METRICS_SESSION_ENDS - 1;
    if (!strncmp(reason, "closed", 6)) k = 0;
    else if (strstr(reason, "expired")) k = 1;
    else if (!strncmp(reason, "evicted", 7)) k = 2;
    for (int i = 3; i < METRICS_SESSION_ENDS - 1; i++)
        if (!strncmp(reason, s_end_kinds[i], strlen(s_end_kinds[i]))) k = i;
    m->sessions_ended[k]++;
}

void exec_metrics_served(exec_metrics_t *m, const char *profile, int served, const char *reason)
{
    if (m->n_asked == METRICS_MAX_PROFILES) return;
    profile_served_t *p = &m->asked[m->n_asked++];
    snprintf(p->name, sizeof p->name, "%s", profile);
    p->served = served;
    snprintf(p->reason, sizeof p->reason, "%s", served ? "" : reason);
}

/* The profiles asked for (1: served; 0: not, with why in the reason label), and the drain. */
static void s_render_service(const exec_metrics_t *m, buf_t *out)
{
    prom_family(out, "snakepit_executor_profile_served", PROM_GAUGE,
                "Profiles this node was asked to serve: 1 served, 0 not (its sandbox could not "
                "start: the reason label says why, e.g. a library that is not installed).");
    for (int i = 0; i < m->n_asked; i++)
        prom_sample(out, "snakepit_executor_profile_served", m->asked[i].served ? 1.0 : 0.0,
                    "profile", m->asked[i].name, "reason", m->asked[i].reason, NULL);
    prom_family(out, "snakepit_executor_draining", PROM_GAUGE,
                "1 while the node drains: it takes no new job and stops once its running ones are "
                "done or its grace is over.");
    prom_sample(out, "snakepit_executor_draining", m->drain_since_s > 0 ? 1.0 : 0.0, NULL);
    prom_family(out, "snakepit_executor_drain_grace_seconds", PROM_GAUGE,
                "How long running jobs may take once the node drains (--drain-grace-s).");
    prom_sample(out, "snakepit_executor_drain_grace_seconds", (double)m->drain_grace_s, NULL);
}

static void s_render_sessions(const exec_metrics_t *m, buf_t *out)
{
    prom_family(out, "snakepit_executor_sessions", PROM_GAUGE, "Sessions kept on this node.");
    prom_sample(out, "snakepit_executor_sessions", (double)m->sessions, NULL);
    prom_family(out, "snakepit_executor_session_memory_bytes", PROM_GAUGE,
                "Memory the sessions hold together (their proportional share, as last measured).");
    prom_sample(out, "snakepit_executor_session_memory_bytes", (double)m->session_memory_kb * 1024.0,
                NULL);
    prom_family(out, "snakepit_executor_sessions_started_total", PROM_COUNTER,
                "Sessions started here (new, restored or forked).");
    prom_sample(out, "snakepit_executor_sessions_started_total", (double)m->sessions_started, NULL);
    prom_family(out, "snakepit_executor_sessions_ended_total", PROM_COUNTER,
                "Sessions ended, by why.");
    for (int i = 0; i < METRICS_SESSION_ENDS; i++)
        prom_sample(out, "snakepit_executor_sessions_ended_total", (double)m->sessions_ended[i],
                    "reason", s_end_kinds[i], NULL);
    prom_family(out, "snakepit_executor_session_cells_total", PROM_COUNTER,
                "Cells run in sessions, by profile.");
    for (int i = 0; i < m->n_profiles; i++)
        prom_sample(out, "snakepit_executor_session_cells_total", (double)m->profiles[i].cells,
                    "profile", m->profiles[i].name, NULL);
}

void exec_metrics_egress(exec_metrics_t *m, const emsg_stats_t *d)
{
    emsg_stats_t *e = &m->egress;
    e->allowed += d->allowed;
    e->refused += d->refused;
    e->failed += d->failed;
    e->unauthenticated += d->unauthenticated;
    e->malformed += d->malformed;
    e->capped += d->capped;
    e->bytes_out += d->bytes_out;
    e->bytes_in += d->bytes_in;
    e->over_cap += d->over_cap;
}

/* Network egress: connections by what became of them, bytes by direction. A refusal is a
 * security event (the job asked for what its tenant may not reach), counted by its kind. */
static void s_render_egress(const exec_metrics_t *m, buf_t *out)
{
    const emsg_stats_t *e = &m->egress;
    prom_family(out, "snakepit_executor_egress_up", PROM_GAUGE,
                "1 while the egress process runs (jobs with egress rules can reach the network).");
    prom_sample(out, "snakepit_executor_egress_up", m->egress_up, NULL);
    prom_family(out, "snakepit_executor_egress_restarts_total", PROM_COUNTER,
                "Egress processes restarted after dying.");
    prom_sample(out, "snakepit_executor_egress_restarts_total", (double)m->egress_restarts, NULL);
    prom_family(out, "snakepit_executor_egress_connections_total", PROM_COUNTER,
                "Connections jobs asked the egress proxy for, by result: allowed (made), refused "
                "(by a rule or the farm's deny list), failed (allowed, not reached), capped (over "
                "a job's or tenant's connection cap), unauthenticated (no job's credentials), "
                "malformed (a request that did not parse).");
    const struct {
        const char *result;
        uint64_t n;
    } rows[] = {{"allowed", e->allowed},     {"refused", e->refused},
                {"failed", e->failed},       {"capped", e->capped},
                {"unauthenticated", e->unauthenticated}, {"malformed", e->malformed}};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        prom_sample(out, "snakepit_executor_egress_connections_total", (double)rows[i].n, "result",
                    rows[i].result, NULL);
    prom_family(out, "snakepit_executor_egress_bytes_total", PROM_COUNTER,
                "Bytes through the egress proxy: out (from jobs) and in (to jobs).");
    prom_sample(out, "snakepit_executor_egress_bytes_total", (double)e->bytes_out, "direction",
                "out", NULL);
    prom_sample(out, "snakepit_executor_egress_bytes_total", (double)e->bytes_in, "direction",
                "in", NULL);
    prom_family(out, "snakepit_executor_egress_over_cap_total", PROM_COUNTER,
                "Jobs stopped for going past their network byte cap (status egress_limit).");
    prom_sample(out, "snakepit_executor_egress_over_cap_total", (double)e->over_cap, NULL);
}

void exec_metrics_render(void *arg, buf_t *out)
{
    const exec_metrics_t *m = arg;
    prom_write_process(out, "executor", SNAKEPIT_VERSION, m->start_wall_s);

    prom_family(out, "snakepit_executor_slots", PROM_GAUGE,
                "Sandbox slots of this node, by state (busy includes jobs on the reserve).");
    prom_sample(out, "snakepit_executor_slots", (double)m->busy, "state", "busy", NULL);
    prom_sample(out, "snakepit_executor_slots", (double)(m->busy < m->slots ? m->slots - m->busy : 0),
                "state", "free", NULL);
    prom_family(out, "snakepit_executor_reserve_slots", PROM_GAUGE,
                "Slots on top of those, kept for jobs of tenants with nothing running.");
    prom_sample(out, "snakepit_executor_reserve_slots", (double)m->reserve, NULL);

    prom_family(out, "snakepit_executor_broker_connected", PROM_GAUGE,
                "Brokers this node is connected to (1 with one broker).");
    prom_sample(out, "snakepit_executor_broker_connected", m->broker_connected, NULL);
    prom_family(out, "snakepit_executor_broker_reconnects_total", PROM_COUNTER,
                "Times the node re-registered with the broker.");
    prom_sample(out, "snakepit_executor_broker_reconnects_total", (double)m->reconnects, NULL);
    prom_family(out, "snakepit_executor_malformed_messages_total", PROM_COUNTER,
                "Messages from the broker dropped as malformed.");
    prom_sample(out, "snakepit_executor_malformed_messages_total", (double)m->malformed, NULL);
    prom_family(out, "snakepit_executor_jobs_refused_total", PROM_COUNTER,
                "Jobs answered without running (no free slot, service not served, sandbox restarting).");
    prom_sample(out, "snakepit_executor_jobs_refused_total", (double)m->refused, NULL);
    prom_family(out, "snakepit_executor_duplicate_jobs_total", PROM_COUNTER,
                "JOBs for a job that runs or ran here already, or belongs to another broker: not run "
                "again.");
    prom_sample(out, "snakepit_executor_duplicate_jobs_total", (double)m->duplicates, NULL);
    prom_family(out, "snakepit_executor_probes_total", PROM_COUNTER,
                "PROBEs answered: a resubmitted job looked for by a broker.");
    prom_sample(out, "snakepit_executor_probes_total", (double)m->probes, NULL);

    prom_family(out, "snakepit_executor_jobs_total", PROM_COUNTER, "Finished jobs, by profile and status.");
    for (int i = 0; i < m->n_profiles; i++)
        for (int s = 0; s < ST__COUNT; s++)
            /* every status from the start: rate() and increase() need the zero before the first */
            prom_sample(out, "snakepit_executor_jobs_total", (double)m->profiles[i].jobs[s],
                            "profile", m->profiles[i].name, "status", status_name((status_t)s), NULL);
    prom_family(out, "snakepit_executor_jobs_lowered_total", PROM_COUNTER,
                "Jobs started at a lower CPU priority because their tenant had another job running.");
    for (int i = 0; i < m->n_profiles; i++)
        prom_sample(out, "snakepit_executor_jobs_lowered_total", (double)m->profiles[i].lowered,
                    "profile", m->profiles[i].name, NULL);
    prom_family(out, "snakepit_executor_pool_children", PROM_GAUGE,
                "Pre-forked children ready for a job, by profile.");
    for (int i = 0; i < m->n_profiles; i++)
        prom_sample(out, "snakepit_executor_pool_children", (double)m->profiles[i].pool, "profile",
                    m->profiles[i].name, NULL);
    prom_family(out, "snakepit_executor_forks_total", PROM_COUNTER, "Children forked by zygotes.");
    for (int i = 0; i < m->n_profiles; i++)
        prom_sample(out, "snakepit_executor_forks_total",
                    (double)m->profiles[i].forks, "profile",
                    m->profiles[i].name, NULL);
    prom_family(out, "snakepit_executor_zygote_restarts_total", PROM_COUNTER,
                "Zygotes restarted after dying.");
    for (int i = 0; i < m->n_profiles; i++)
        prom_sample(out, "snakepit_executor_zygote_restarts_total", (double)m->profiles[i].zygote_restarts,
                    "profile", m->profiles[i].name, NULL);
    prom_family(out, "snakepit_executor_zygote_recycles_total", PROM_COUNTER,
                "Zygotes replaced on schedule (fresh address-space layout and hash secret).");
    for (int i = 0; i < m->n_profiles; i++)
        prom_sample(out, "snakepit_executor_zygote_recycles_total", (double)m->profiles[i].zygote_recycles,
                    "profile", m->profiles[i].name, NULL);

    prom_family(out, "snakepit_executor_sandbox_kills_total", PROM_COUNTER,
                "Security violations, by the syscall (seccomp) or audit event that was stopped.");
    for (int i = 0; i < m->n_kills; i++)
        prom_sample(out, "snakepit_executor_sandbox_kills_total", (double)m->kills[i].count, "syscall",
                    m->kills[i].syscall, NULL);
    if (m->kills_other)
        prom_sample(out, "snakepit_executor_sandbox_kills_total", (double)m->kills_other, "syscall",
                    "other", NULL);

    prom_family(out, "snakepit_executor_job_wall_seconds", PROM_HISTOGRAM,
                "Wall-clock time of a job, dispatch to answer.");
    for (int i = 0; i < m->n_profiles; i++) {
        const char *const labels[] = {"profile", m->profiles[i].name, NULL};
        prom_hist_write(out, "snakepit_executor_job_wall_seconds", &m->profiles[i].wall, labels);
    }
    prom_family(out, "snakepit_executor_job_cpu_seconds", PROM_HISTOGRAM, "CPU time of a job's process.");
    for (int i = 0; i < m->n_profiles; i++) {
        const char *const labels[] = {"profile", m->profiles[i].name, NULL};
        prom_hist_write(out, "snakepit_executor_job_cpu_seconds", &m->profiles[i].cpu, labels);
    }
    prom_family(out, "snakepit_executor_job_max_rss_bytes", PROM_HISTOGRAM,
                "Peak resident memory of a job's process (includes pages shared with the zygote).");
    for (int i = 0; i < m->n_profiles; i++) {
        const char *const labels[] = {"profile", m->profiles[i].name, NULL};
        prom_hist_write(out, "snakepit_executor_job_max_rss_bytes", &m->profiles[i].rss, labels);
    }
    s_render_sessions(m, out);
    s_render_egress(m, out);
    s_render_service(m, out);
}
