/* executor-node/node.c — see node.h. The node's own state is the slot table: which job runs
 * in which zygote. Everything else it wires together: broker_link hands jobs down, zygotes hand
 * answers up, and the node keeps exactly one answer per job. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>
#include <zmq.h>

#include "../common/log.h"
#include "../common/loop.h"
#include "../common/metrics_http.h"
#include "../common/pep440.h"
#include "../proto/job.h"
#include "broker_link.h"
#include "envs.h"
#include "layers.h"
#include "../common/clock.h"
#include "../proto/result.h"
#include "metrics.h"
#include "node.h"
#include "node_sessions.h"
#include "sessions_text.h"
#include "snapshot.h"
#include "spawn.h"
#include "zygotes.h"

#define SLOT_FREE    (-1)
#define SLOT_WAITING (-2) /* its dependencies' environment is being built or started (envs.h) */

typedef struct {
    uint8_t id[ID_BYTES];
    int zygote; /* index, SLOT_FREE or SLOT_WAITING */
    int has_session;
    uint8_t session[ID_BYTES]; /* the session the job acts on (busy until its answer) */
    /* a waiting job: its environment and its JobSpec, kept until it can be sent */
    int env;
    char env_key[49];
    uint8_t *body;
    size_t body_len;
    char service[65];
} inflight_t;

#define SESSION_TICK_MS 500 /* expiry, eviction, and the broker's SESSIONS with free memory */

typedef struct {
    const node_conf_t *conf;
    unsigned layers; /* LAYER_* in force */
    char layers_str[128];
    char exe[PATH_MAX]; /* snakepit-zygote */
    int sig_fd;
    zygotes_t *zygotes;
    inflight_t *inflight; /* one per slot */
    long n_inflight;
    exec_metrics_t metrics;
    loop_t *loop;
    broker_link_t *link;
    metrics_http_t *http;
    snapshot_t *snapshot;
    node_sessions_t *sessions;      /* NULL when the node keeps none */
    uint8_t (*ready_ids)[ID_BYTES]; /* READY's session list, filled at each READY */
    long mem_free_mb;               /* the machine's available memory, at the last tick */
    uint64_t sessions_sent_ms;      /* the last SESSIONS to the broker */
    envs_t *envs; /* dependency environments; NULL without --packages */
    long n_waiting;
} node_t;

/* ---- slots --------------------------------------------------------------------------------- */

static inflight_t *s_slot_of(node_t *n, const uint8_t *id)
{
    for (long i = 0; i < n->conf->slots; i++)
        if (n->inflight[i].zygote != SLOT_FREE && memcmp(n->inflight[i].id, id, ID_BYTES) == 0)
            return &n->inflight[i];
    return NULL;
}

static inflight_t *s_slot_free(node_t *n)
{
    for (long i = 0; i < n->conf->slots; i++)
        if (n->inflight[i].zygote == SLOT_FREE) return &n->inflight[i];
    return NULL;
}

/* A waiting job's JobSpec copy goes: zeroed first (tenant data, scrub.h's rule). */
static void s_slot_drop_body(node_t *n, inflight_t *slot)
{
    if (slot->body) {
        explicit_bzero(slot->body, slot->body_len);
        free(slot->body);
        n->n_waiting--;
    }
    slot->body = NULL;
    slot->body_len = 0;
}

static void s_slot_release(node_t *n, inflight_t *slot)
{
    if (slot->has_session) node_sessions_busy(n->sessions, slot->session, 0, clock_mono_ms());
    slot->has_session = 0;
    s_slot_drop_body(n, slot);
    slot->zygote = SLOT_FREE;
    n->n_inflight--;
    n->metrics.busy = n->n_inflight;
}

/* ---- from the broker ----------------------------------------------------------------------- */

/* MemAvailable from /proc/meminfo, in MB; -1 when it cannot be read. */
static long s_mem_available_mb(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    char line[128];
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %ld kB", &kb) == 1) break;
    if (f) fclose(f);
    return kb < 0 ? -1 : kb / 1024;
}

static void s_fill_ready(void *arg, ready_t *r, uint64_t *credit, const uint8_t (**ids)[ID_BYTES],
                         size_t *n_ids)
{
    node_t *n = arg;
    snprintf(r->node, sizeof r->node, "%s", n->conf->node_id);
    r->n_services = zygotes_services(n->zygotes, 1, r->services, WIRE_MAX_SERVICES);
    r->slots = (uint32_t)n->conf->slots;
    snprintf(r->python, sizeof r->python, "%s", zygotes_python(n->zygotes));
    snprintf(r->layers, sizeof r->layers, "%s", n->layers_str);
    *credit = (uint64_t)(n->conf->slots - n->n_inflight);
    long free_mb = s_mem_available_mb();
    r->mem_free_mb = free_mb > 0 ? (uint32_t)free_mb : 0;
    r->max_sessions = (uint32_t)n->conf->max_sessions;
    /* a broker that restarted learns here where every session is */
    *n_ids = n->sessions
                 ? node_sessions_ids(n->sessions, n->ready_ids, (size_t)n->conf->max_sessions)
                 : 0;
    *ids = (const uint8_t(*)[ID_BYTES])n->ready_ids;
}

/* SESSIONS to the broker: what changed, with the free memory new sessions are placed by. Sent
 * at once on a change (before the answer of the job that made it), else once a second. */
static void s_send_sessions(node_t *n, int always)
{
    node_sessions_changes_t ch;
    if (!n->sessions || !n->link) return;
    int changed = node_sessions_changes(n->sessions, &ch);
    if (!changed && !always) return;
    buf_t b;
    buf_init(&b);
    sessions_encode(n->mem_free_mb > 0 ? (uint32_t)n->mem_free_mb : 0,
                    (uint32_t)node_sessions_count(n->sessions), (const uint8_t(*)[ID_BYTES])ch.up,
                    ch.n_up, (const uint8_t(*)[ID_BYTES])ch.down, ch.reasons, ch.n_down, &b);
    broker_link_send_sessions(n->link, b.data, b.len);
    buf_free(&b);
    n->sessions_sent_ms = clock_mono_ms();
}

/* A job on a session this node does not hold: answered at once, with why it ended when that is
 * remembered. */
static void s_answer_no_session(node_t *n, const uint8_t job[ID_BYTES], const route_t *r)
{
    const uint8_t *sid = r->session;
    const char *ended = n->sessions ? node_sessions_ended(n->sessions, sid, r->tenant) : NULL;
    char idstr[ID_STR_LEN + 1], msg[WIRE_MAX_REASON + 80];
    id_format(sid, idstr);
    if (ended)
        snprintf(msg, sizeof msg, SESSION_ENDED_FMT, idstr, ended);
    else
        snprintf(msg, sizeof msg, SESSION_UNKNOWN_FMT, idstr);
    result_t res;
    result_init(&res);
    res.status = ST_REJECTED;
    res.error.present = 1;
    res.error.type = ended ? "SessionEnded" : "SessionUnknown";
    res.error.message = msg;
    res.exit.reason = "rejected";
    res.session.present = 1;
    memcpy(res.session.id, sid, ID_BYTES);
    res.session.end_reason = (char *)(ended ? ended : "unknown session");
    buf_t b;
    buf_init(&b);
    result_encode(&res, &b);
    broker_link_send_result(n->link, job, b.data, b.len);
    buf_free(&b);
}

/* The zygote for a job: the one holding its session, or the profile's; -1 when the job is
 * answered here already. */
static int s_zygote_for(node_t *n, const worker_msg_t *m, int *ready)
{
    const route_t *r = &m->route;
    if (r->has_session) {
        /* another tenant's session is answered like one that does not exist */
        nsession_t *ns = n->sessions ? node_sessions_of(n->sessions, r->session, r->tenant) : NULL;
        if (!ns || ns->ending) {
            s_answer_no_session(n, m->job_id, r);
            return -2;
        }
        *ready = 1;
        return ns->zygote; /* also a zygote being recycled: the session lives there */
    }
    if (r->has_new_session && (!n->sessions || node_sessions_full(n->sessions))) {
        char why[96];
        snprintf(why, sizeof why, "this executor holds its maximum of %ld sessions",
                 n->conf->max_sessions);
        broker_link_send_simple(n->link, m->job_id, ST_REJECTED, "SessionLimit", why);
        return -2;
    }
    return zygotes_pick(n->zygotes, m->service, ready);
}

/* ---- dependency environments (envs.h) ------------------------------------------------------- */

static void s_send(node_t *n, inflight_t *slot, int zi)
{
    slot->zygote = zi;
    zygotes_send_job(n->zygotes, zi, slot->id, slot->body, slot->body_len);
    s_slot_drop_body(n, slot);
}

/* A waiting job can go once its environment is built (or the profile has it all) and the
 * zygote serving it is up; it is answered when the environment cannot be had. */
static void s_dispatch_one(node_t *n, inflight_t *slot)
{
    int ei = slot->env, ready, zi;
    if (strcmp(envs_key(n->envs, ei), slot->env_key) != 0) { /* forgotten meanwhile: ask again */
        broker_link_send_simple(n->link, slot->id, ST_REJECTED, "ExecutorRefused",
                                "this executor lost track of the job's dependency environment");
        s_slot_release(n, slot);
        return;
    }
    switch (envs_state(n->envs, ei)) {
    case ENV_BUILDING:
        return;
    case ENV_FAILED:
        broker_link_send_simple(n->link, slot->id, ST_ERROR, "DependencyError", envs_error(n->envs, ei));
        s_slot_release(n, slot);
        return;
    case ENV_BASE:
        zi = zygotes_pick(n->zygotes, slot->service, &ready);
        if (zi >= 0 && ready) s_send(n, slot, zi);
        return;
    case ENV_READY:
        zi = zygotes_env_pick(n->zygotes, slot->env_key, &ready);
        if (zi < 0)
            zi = zygotes_env_start(n->zygotes, envs_profile(n->envs, ei), slot->env_key,
                                   envs_site(n->envs, ei), envs_modules(n->envs, ei));
        if (zi == -2) {
            broker_link_send_simple(n->link, slot->id, ST_INTERNAL_ERROR, "SandboxError",
                                    "the sandbox for the job's dependencies could not be started");
            s_slot_release(n, slot);
        } else if (zi >= 0 && ready) {
            s_send(n, slot, zi);
        }
        return;
    }
}

static void s_dispatch_waiting(node_t *n)
{
    for (long i = 0; i < n->conf->slots && n->n_waiting; i++)
        if (n->inflight[i].zygote == SLOT_WAITING) s_dispatch_one(n, &n->inflight[i]);
}

static void s_on_env_built(void *arg, int env)
{
    (void)env;
    s_dispatch_waiting(arg);
}

static void s_on_wait_tick(loop_t *loop, void *arg)
{
    (void)loop;
    node_t *n = arg;
    if (n->n_waiting) s_dispatch_waiting(n);
}

/* An environment's zygote is gone for good: what waited for it is answered with why. */
static void s_on_env_down(void *arg, const char *key, const char *why)
{
    node_t *n = arg;
    char msg[700];
    snprintf(msg, sizeof msg, "the job's dependency environment could not be loaded: %s", why);
    for (long i = 0; i < n->conf->slots; i++)
        if (n->inflight[i].zygote == SLOT_WAITING && !strcmp(n->inflight[i].env_key, key)) {
            broker_link_send_simple(n->link, n->inflight[i].id, ST_ERROR, "DependencyError", msg);
            s_slot_release(n, &n->inflight[i]);
        }
}

/* Whether the job needs an environment (its dependencies go beyond its profile's packages, and
 * this node has a package source): then it waits in its slot. 1 when it was taken care of. */
static int s_needs_env(node_t *n, const worker_msg_t *m, int base, inflight_t *slot)
{
    char **deps;
    size_t n_deps;
    if (!envs_enabled(n->envs) ||
        jobspec_peek_dependencies(m->body.data, m->body.len, &deps, &n_deps) < 0 || !n_deps)
        return 0;
    int needs = !pep440_all_met(zygotes_packages(n->zygotes, base), deps, n_deps);
    int in_session = m->route.has_session || m->route.has_new_session;
    int ei = needs && !in_session ? envs_request(n->envs, profile_find(m->service), deps, n_deps)
                                  : -1;
    jobspec_free_names(deps, n_deps);
    if (!needs) return 0;
    if (in_session) { /* the session's process is its profile's zygote's child: no other site */
        broker_link_send_simple(n->link, m->job_id, ST_REJECTED, "DependencyError",
                                SESSION_DEPENDENCIES_MSG);
        return 1;
    }
    memcpy(slot->id, m->job_id, ID_BYTES);
    n->n_inflight++;
    n->metrics.busy = n->n_inflight;
    if (ei < 0) {
        broker_link_send_simple(n->link, m->job_id, ST_REJECTED, "ExecutorRefused",
                                "too many dependency environments on this executor");
        slot->zygote = SLOT_WAITING; /* for release */
        s_slot_release(n, slot);
        return 1;
    }
    slot->zygote = SLOT_WAITING;
    slot->env = ei;
    snprintf(slot->env_key, sizeof slot->env_key, "%s", envs_key(n->envs, ei));
    snprintf(slot->service, sizeof slot->service, "%s", m->service);
    slot->body = xmalloc(m->body.len ? m->body.len : 1);
    memcpy(slot->body, m->body.data, m->body.len);
    slot->body_len = m->body.len;
    n->n_waiting++;
    s_dispatch_one(n, slot);
    return 1;
}

static void s_on_job(void *arg, const worker_msg_t *m)
{
    node_t *n = arg;
    int ready = 0;
    int zi = s_zygote_for(n, m, &ready);
    if (zi == -2) return;
    inflight_t *slot = s_slot_free(n);
    if (zi < 0 || !slot || !ready) {
        const char *why = zi < 0  ? "this executor does not serve the service"
                          : !slot ? "no free slot (the broker sent more jobs than credits)"
                                  : "the profile's sandbox is restarting";
        log_warn("event=job_refused service=%s reason=\"%s\"", m->service, why);
        n->metrics.refused++;
        /* the RESULT hands the credit back (PROTOCOL.md §3) */
        broker_link_send_simple(n->link, m->job_id,
                                zi >= 0 && slot ? ST_INTERNAL_ERROR : ST_REJECTED,
                                "ExecutorRefused", why);
        return;
    }
    if (s_needs_env(n, m, zi, slot)) return;
    memcpy(slot->id, m->job_id, ID_BYTES);
    slot->zygote = zi;
    slot->has_session = m->route.has_session;
    if (slot->has_session) {
        memcpy(slot->session, m->route.session, ID_BYTES);
        node_sessions_busy(n->sessions, slot->session, 1, clock_mono_ms());
    }
    n->n_inflight++;
    n->metrics.busy = n->n_inflight;
    zygotes_send_job(n->zygotes, zi, m->job_id, m->body.data, m->body.len);
}

static void s_on_cancel(void *arg, const uint8_t id[ID_BYTES])
{
    node_t *n = arg;
    inflight_t *slot = s_slot_of(n, id);
    if (slot && slot->zygote == SLOT_WAITING) { /* never reached a zygote: answered here */
        broker_link_send_simple(n->link, id, ST_CANCELLED, "Cancelled", "execution was cancelled");
        s_slot_release(n, slot);
    } else if (slot) {
        zygotes_cancel(n->zygotes, slot->zygote, id);
    }
}

/* ---- from the zygotes ---------------------------------------------------------------------- */

static int s_on_result(void *arg, const uint8_t id[ID_BYTES], const uint8_t *body, size_t len)
{
    node_t *n = arg;
    inflight_t *slot = s_slot_of(n, id);
    if (!slot || slot->zygote == SLOT_WAITING) return 0; /* answered already (its zygote was given up on), or unknown */
    s_slot_release(n, slot);
    broker_link_send_result(n->link, id, body, len); /* returns the slot's credit */
    return 1;
}

static void s_on_progress(void *arg, const uint8_t id[ID_BYTES], const uint8_t *chunk, size_t len)
{
    node_t *n = arg;
    inflight_t *slot = s_slot_of(n, id);
    if (slot && slot->zygote >= 0) broker_link_send_progress(n->link, id, chunk, len);
}

/* A zygote's news of a session: the book, the metrics, and the broker at once. */
static void s_on_session(void *arg, int zi, const zmsg_t *msg)
{
    node_t *n = arg;
    const zmsg_session_t *z = &msg->session;
    if (!n->sessions) return;
    switch (z->event) {
    case ZS_UP:
        node_sessions_up(n->sessions, msg->id, zi, z->tenant, (long)z->idle_timeout_s,
                         (long)z->memory_mb, clock_mono_ms());
        n->metrics.sessions_started++;
        break;
    case ZS_DOWN:
        if (node_sessions_get(n->sessions, msg->id))
            exec_metrics_session_end(&n->metrics, z->reason);
        node_sessions_down(n->sessions, msg->id, z->reason);
        break;
    case ZS_MEMORY:
        node_sessions_memory(n->sessions, msg->id, z->memory_kb);
        break;
    }
    n->metrics.sessions = (long)node_sessions_count(n->sessions);
    n->metrics.session_memory_kb = node_sessions_memory_kb(n->sessions);
    s_send_sessions(n, 0);
}

/* Idle timeouts and memory pressure (node_sessions.h decides), and SESSIONS once a second. */
static void s_on_session_tick(loop_t *loop, void *arg)
{
    (void)loop;
    node_t *n = arg;
    node_sessions_end_t due[64];
    n->mem_free_mb = s_mem_available_mb();
    size_t k = node_sessions_due(n->sessions, clock_mono_ms(), n->mem_free_mb, due, 64);
    for (size_t i = 0; i < k; i++) {
        char idstr[ID_STR_LEN + 1];
        id_format(due[i].id, idstr);
        log_info("event=session_ending session=%s reason=\"%s\"", idstr, due[i].reason);
        zygotes_end_session(n->zygotes, due[i].zygote, due[i].id, due[i].reason);
    }
    s_send_sessions(n, clock_mono_ms() - n->sessions_sent_ms >= 1000);
}

/* Every job the zygote held gets its one answer now. */
static void s_on_zygote_down(void *arg, int zi)
{
    node_t *n = arg;
    if (n->sessions) { /* its sessions died with it */
        node_sessions_zygote_down(n->sessions, zi,
                                  "lost: the executor's sandbox process holding it died");
        n->metrics.sessions = (long)node_sessions_count(n->sessions);
        s_send_sessions(n, 0);
    }
    for (long i = 0; i < n->conf->slots; i++) {
        if (n->inflight[i].zygote != zi) continue;
        broker_link_send_simple(n->link, n->inflight[i].id, ST_INTERNAL_ERROR, "SandboxCrashed",
                                "the executor's sandbox process died while running this job");
        s_slot_release(n, &n->inflight[i]);
    }
}

static void s_on_signal(loop_t *loop, short revents, void *arg)
{
    (void)revents;
    node_t *n = arg;
    struct signalfd_siginfo si;
    while (read(n->sig_fd, &si, sizeof si) == sizeof si) {
        if (si.ssi_signo == SIGCHLD) {
            zygotes_reap(n->zygotes);
        } else {
            log_info("event=stopping signal=%u", si.ssi_signo);
            zygotes_stop(n->zygotes);
            loop_stop(loop);
        }
    }
}

/* ---- start and stop ------------------------------------------------------------------------ */

/* Layers, profiles and signals: what must be settled before any process starts. 0, or the
 * exit status. */
static int s_prepare(node_t *n)
{
    char err[512];
    unsigned off = 0;
    if (spawn_find_zygote(n->exe, sizeof n->exe, err, sizeof err) < 0) {
        log_error("event=startup_failed error=\"%s\"", err);
        return 1;
    }
    if (sandbox_layers_parse(n->conf->disable_layer, &off, err, sizeof err) < 0) {
        log_error("event=startup_failed error=\"%s\"", err);
        return 2;
    }
    n->layers = LAYER_ALL & ~off;
    sandbox_layers_format(n->layers, n->layers_str, sizeof n->layers_str);
    if (off) {
        char disabled[128];
        sandbox_layers_format(off, disabled, sizeof disabled);
        log_warn("event=layers_disabled layers=%s", disabled);
    }
    n->zygotes = zygotes_new(n->conf, n->exe, n->layers, &n->metrics);
    if (zygotes_add(n->zygotes, n->conf->profiles, err, sizeof err) < 0) {
        log_error("event=startup_failed error=\"%s\"", err);
        return 2;
    }
    /* Signals go through a signalfd; zygotes get their own mask reset by execve. Blocked
     * before the first zygote starts, so its death cannot go unseen. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigprocmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    n->sig_fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    return 0;
}

/* The loop and everything on it: /metrics, the snapshot, the broker link (whose ZeroMQ context
 * starts threads: the zygotes are already running). 0, or the exit status. */
static int s_serve(node_t *n)
{
    const node_conf_t *conf = n->conf;
    char err[512];
    n->inflight = xcalloc((size_t)conf->slots, sizeof *n->inflight);
    for (long i = 0; i < conf->slots; i++) n->inflight[i].zygote = SLOT_FREE;
    exec_metrics_init(&n->metrics, conf->node_id, n->layers_str, conf->slots);
    char names[WIRE_MAX_SERVICES][65];
    int k = zygotes_services(n->zygotes, 1, names, WIRE_MAX_SERVICES);
    for (int i = 0; i < k; i++) exec_metrics_profile(&n->metrics, names[i]);
    n->loop = loop_new();
    if (conf->metrics[0] && strcmp(conf->metrics, "off") != 0) {
        n->http = metrics_http_new(n->loop, conf->metrics, exec_metrics_render, &n->metrics, err,
                                   sizeof err);
        if (!n->http) {
            log_error("event=startup_failed error=\"metrics: %s\"", err);
            return 2;
        }
        log_info("event=metrics_listening port=%d", metrics_http_port(n->http));
    }
    if (conf->redis[0]) n->snapshot = snapshot_new(n->loop, conf, n->zygotes, &n->metrics);
    loop_add_fd(n->loop, n->sig_fd, ZMQ_POLLIN, s_on_signal, n);
    if (conf->max_sessions > 0) {
        node_sessions_conf_t sc = {.max_sessions = conf->max_sessions,
                                   .evict_free_mb = conf->session_evict_free_mb,
                                   .memory_budget_mb = conf->session_memory_mb};
        n->sessions = node_sessions_new(&sc);
        n->ready_ids = xcalloc((size_t)conf->max_sessions, ID_BYTES);
        n->mem_free_mb = s_mem_available_mb();
        loop_timer_add(n->loop, SESSION_TICK_MS, SESSION_TICK_MS, s_on_session_tick, n);
    }
    broker_link_hooks_t link = {s_fill_ready, s_on_job, s_on_cancel, n};
    n->link = broker_link_new(n->loop, conf, &n->metrics, &link);
    zygotes_hooks_t zygotes = {s_on_result, s_on_progress, s_on_zygote_down, s_on_session,
                               s_on_env_down, n};
    zygotes_attach(n->zygotes, n->loop, &zygotes);
    if (conf->packages[0]) {
        envs_hooks_t envs = {s_on_env_built, n};
        n->envs = envs_new(n->loop, conf, &envs);
        loop_timer_add(n->loop, 50, 50, s_on_wait_tick, n);
        log_info("event=packages source=\"%s\" envs=%s", conf->packages, conf->envs_dir);
    }
    loop_run(n->loop);
    return 0;
}

int node_main(const node_conf_t *conf)
{
    node_t n = {.conf = conf, .sig_fd = -1};
    char err[512];
    int rc = s_prepare(&n);
    if (rc == 0 && zygotes_start(n.zygotes, err, sizeof err) < 0) {
        log_error("event=startup_failed error=\"%s\"", err);
        rc = 3;
    }
    if (rc == 0) rc = s_serve(&n);
    /* Shutting down: the broker hears it first, so it requeues at once; the zygotes (and with
     * them every child) die with their channel. */
    if (n.link) broker_link_disconnect(n.link);
    zygotes_destroy(&n.zygotes);
    envs_destroy(&n.envs);
    broker_link_destroy(&n.link);
    snapshot_destroy(&n.snapshot);
    metrics_http_destroy(&n.http);
    loop_destroy(&n.loop);
    node_sessions_destroy(&n.sessions);
    free(n.ready_ids);
    free(n.inflight);
    if (n.sig_fd >= 0) close(n.sig_fd);
    if (rc == 0) log_info("event=stopped");
    return rc;
}
