/* executor-node/node/node.c — see node.h. The process: start-up order, signals, /metrics, the
 * snapshot, one link per broker; the jobs between the links and the zygotes are slots.h's. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>
#include <zmq.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/loop.h"
#include "common/metrics_http.h"
#include "executor-node/link/layers.h"
#include "broker_link.h"
#include "checkpoint_store.h"
#include "egress_link.h"
#include "envs.h"
#include "hibernate.h"
#include "metrics.h"
#include "node.h"
#include "node_sessions.h"
#include "slots.h"
#include "snapshot.h"
#include "spawn.h"
#include "zygotes.h"

typedef struct {
    const node_conf_t *conf;
    unsigned layers; /* LAYER_* in force */
    char layers_str[128];
    char exe[PATH_MAX]; /* snakepit-zygote */
    int sig_fd;
    zygotes_t *zygotes;
    slots_t *slots;
    exec_metrics_t metrics;
    loop_t *loop;
    void *zmq_ctx;
    broker_link_t *links[NODE_MAX_BROKERS]; /* one per --broker endpoint */
    int n_links;
    uint64_t tick;
    metrics_http_t *http;
    snapshot_t *snapshot;
    checkpoint_store_t *checkpoints; /* NULL without --redis: freed sessions just end */
    hibernate_t *hibernate;
    envs_t *envs; /* dependency environments; NULL without --packages */
    egress_link_t *egress; /* the egress process; NULL when jobs get no network */
    uint64_t wait_tick;
    uint64_t session_tick; /* sessions' expiry, eviction and SESSIONS; 0 when it keeps none */
    /* draining (s_drain): since when, until when, and the timer that watches it */
    int draining;
    uint64_t drain_started_ms, drain_deadline_ms;
    uint64_t drain_tick;
} node_t;

#define SESSION_TICK_MS 500 /* expiry, eviction, and the brokers' SESSIONS with free memory */

static void s_stop(node_t *n)
{
    zygotes_stop(n->zygotes);
    loop_stop(n->loop);
}

#define DRAIN_TICK_MS 50 /* how often a draining node looks whether it is done */

static void s_on_drain_tick(loop_t *loop, void *arg)
{
    (void)loop;
    node_t *n = arg;
    uint64_t now = clock_mono_ms();
    if (slots_drained(n->slots)) {
        log_info("event=drained waited_ms=%llu", (unsigned long long)(now - n->drain_started_ms));
        s_stop(n);
    } else if (now >= n->drain_deadline_ms) {
        log_warn("event=drain_grace_over running=%ld grace_s=%ld reason=\"the brokers requeue "
                 "what still runs\"",
                 slots_running(n->slots), n->conf->drain_grace_s);
        s_stop(n);
    }
}

/* The node drains (slots.h): LEAVING to the brokers, no new job, and the running ones get
 * --drain-grace-s to finish; then it stops. again: what a second signal does while it drains
 * (stop at once) — a repeated POST /drain does nothing. With no grace it stops at once. */
static void s_drain(node_t *n, const char *why, int again)
{
    if (n->draining && !again) return;
    if (n->draining || n->conf->drain_grace_s <= 0) {
        log_info("event=stopping reason=%s%s", why, n->draining ? " draining=1" : "");
        s_stop(n);
        return;
    }
    n->draining = 1;
    n->drain_started_ms = clock_mono_ms();
    n->drain_deadline_ms = n->drain_started_ms + (uint64_t)n->conf->drain_grace_s * 1000u;
    n->metrics.drain_since_s = (double)clock_wall_ms() / 1000.0;
    log_info("event=draining reason=\"%s\" grace_s=%ld running=%ld", why, n->conf->drain_grace_s,
             slots_running(n->slots));
    slots_drain(n->slots, why, (uint32_t)(n->conf->drain_grace_s * 1000));
    n->drain_tick = loop_timer_add(n->loop, DRAIN_TICK_MS, DRAIN_TICK_MS, s_on_drain_tick, n);
}

static void s_on_signal(loop_t *loop, short revents, void *arg)
{
    (void)loop, (void)revents;
    node_t *n = arg;
    struct signalfd_siginfo si;
    while (read(n->sig_fd, &si, sizeof si) == sizeof si) {
        if (si.ssi_signo == SIGCHLD)
            zygotes_reap(n->zygotes);
        else
            s_drain(n, si.ssi_signo == SIGINT ? "SIGINT" : "SIGTERM", 1);
    }
}

/* POST /drain on the metrics listener (from this machine only: metrics_http.h). */
static unsigned s_on_drain_post(void *arg, buf_t *out)
{
    node_t *n = arg;
    s_drain(n, "POST /drain", 0);
    buf_printf(out, "{\"state\":\"%s\",\"running\":%ld,\"grace_s\":%ld}\n",
               n->draining ? "draining" : "stopping", slots_running(n->slots),
               n->conf->drain_grace_s);
    return 202;
}

/* What is served of what was asked (--profiles): /metrics and the log say it, with why not. */
static void s_served(node_t *n)
{
    char names[WIRE_MAX_SERVICES][65], served[600] = "", unserved[600] = "";
    int k = zygotes_services(n->zygotes, 1, names, WIRE_MAX_SERVICES);
    size_t a = 0, b = 0;
    for (int i = 0; i < k; i++) {
        exec_metrics_profile(&n->metrics, names[i]);
        exec_metrics_served(&n->metrics, names[i], 1, "");
        a += (size_t)snprintf(served + a, a < sizeof served ? sizeof served - a : 0, "%s%s",
                              a ? "," : "", names[i]);
    }
    const char *prof, *why;
    for (int i = 0; zygotes_unserved(n->zygotes, i, &prof, &why) == 0; i++) {
        exec_metrics_served(&n->metrics, prof, 0, why);
        b += (size_t)snprintf(unserved + b, b < sizeof unserved ? sizeof unserved - b : 0, "%s%s",
                              b ? "," : "", prof);
    }
    if (b)
        log_warn("event=serving profiles=%s unserved=%s", served, unserved);
    else
        log_info("event=serving profiles=%s", served);
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

static void s_on_tick(loop_t *loop, void *arg)
{
    (void)loop;
    slots_tick(((node_t *)arg)->slots);
}

static void s_on_session_tick(loop_t *loop, void *arg)
{
    (void)loop;
    slots_session_tick(((node_t *)arg)->slots);
}

static void s_on_wait_tick(loop_t *loop, void *arg)
{
    (void)loop;
    slots_dispatch_waiting(((node_t *)arg)->slots);
}

static void s_on_env_built(void *arg, int env)
{
    (void)env;
    slots_dispatch_waiting(((node_t *)arg)->slots);
}

/* One link per --broker endpoint (a comma list), on one ZeroMQ context: its threads start
 * here, after the zygotes. 0, or -1 (logged). */
static int s_links(node_t *n)
{
    n->zmq_ctx = zmq_ctx_new();
    char list[sizeof n->conf->broker];
    snprintf(list, sizeof list, "%s", n->conf->broker);
    broker_link_hooks_t hooks = slots_link_hooks(n->slots);
    char *save = NULL;
    for (char *ep = strtok_r(list, ",", &save); ep; ep = strtok_r(NULL, ",", &save)) {
        while (*ep == ' ') ep++;
        if (!*ep) continue;
        if (n->n_links == NODE_MAX_BROKERS) {
            log_error("event=startup_failed error=\"more than %d brokers in --broker\"",
                      NODE_MAX_BROKERS);
            return -1;
        }
        n->links[n->n_links] =
            broker_link_new(n->loop, n->zmq_ctx, n->conf, ep, n->n_links, &n->metrics, &hooks);
        n->n_links++;
    }
    if (!n->n_links) {
        log_error("event=startup_failed error=\"--broker names no endpoint\"");
        return -1;
    }
    slots_set_links(n->slots, n->links, n->n_links);
    return 0;
}

/* The loop and everything on it: /metrics, the snapshot, the broker links (whose ZeroMQ context
 * starts threads: the zygotes are already running). 0, or the exit status. */
static int s_serve(node_t *n)
{
    const node_conf_t *conf = n->conf;
    char err[512];
    exec_metrics_init(&n->metrics, conf->node_id, n->layers_str, conf->slots, conf->reserve_slots);
    n->metrics.drain_grace_s = conf->drain_grace_s;
    s_served(n);
    n->loop = loop_new();
    if (conf->metrics[0] && strcmp(conf->metrics, "off") != 0) {
        n->http = metrics_http_new(n->loop, conf->metrics, exec_metrics_render, &n->metrics, err,
                                   sizeof err);
        if (!n->http) {
            log_error("event=startup_failed error=\"metrics: %s\"", err);
            return 2;
        }
        metrics_http_post(n->http, "/drain", s_on_drain_post, n);
        log_info("event=metrics_listening port=%d", metrics_http_port(n->http));
    }
    if (conf->redis[0]) n->snapshot = snapshot_new(n->loop, conf, n->zygotes, &n->metrics);
    loop_add_fd(n->loop, n->sig_fd, ZMQ_POLLIN, s_on_signal, n);
    n->slots = slots_new(conf, n->zygotes, &n->metrics, n->layers_str);
    egress_link_hooks_t egress = slots_egress_hooks(n->slots);
    n->egress = egress_link_new(conf, n->layers, n->loop, &n->metrics, &egress);
    slots_set_egress(n->slots, n->egress);
    if (conf->max_sessions > 0) {
        /* with Redis, freed sessions are hibernated there (hibernate.h) */
        if (conf->redis[0] && !(n->checkpoints = checkpoint_store_new(n->loop, conf->redis, err,
                                                                        sizeof err)))
            log_warn("event=checkpoints_unavailable error=\"%s\"", err);
        node_sessions_conf_t sc = {.max_sessions = conf->max_sessions,
                                   .hibernate = n->checkpoints != NULL,
                                   .checkpoint_idle_ms = conf->session_checkpoint_s * 1000,
                                   .evict_free_mb = conf->session_evict_free_mb,
                                   .memory_budget_mb = conf->session_memory_mb};
        node_sessions_t *book = node_sessions_new(&sc);
        slots_set_sessions(n->slots, book);
        if (n->checkpoints) {
            hibernate_io_t io;
            slots_hibernate_io(n->slots, &io);
            n->hibernate = hibernate_new(n->checkpoints, book, conf->node_id, &io);
            slots_set_hibernate(n->slots, n->hibernate);
        }
        n->session_tick =
            loop_timer_add(n->loop, SESSION_TICK_MS, SESSION_TICK_MS, s_on_session_tick, n);
    }
    if (s_links(n) < 0) return 2;
    zygotes_hooks_t zygotes = slots_zygote_hooks(n->slots);
    zygotes_attach(n->zygotes, n->loop, &zygotes);
    n->tick = loop_timer_add(n->loop, 1000, 1000, s_on_tick, n);
    if (conf->packages[0]) {
        envs_hooks_t envs = {s_on_env_built, n};
        n->envs = envs_new(n->loop, conf, &envs);
        slots_set_envs(n->slots, n->envs);
        n->wait_tick = loop_timer_add(n->loop, 50, 50, s_on_wait_tick, n);
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
    /* Shutting down (drained, or its grace over, or at once): the brokers hear it first, so they
     * requeue at once what still ran here; the zygotes (and with them every child) die with
     * their channel. */
    for (int i = 0; i < n.n_links; i++) broker_link_disconnect(n.links[i]);
    zygotes_destroy(&n.zygotes);
    egress_link_destroy(&n.egress);
    envs_destroy(&n.envs);
    for (int i = 0; i < n.n_links; i++) broker_link_destroy(&n.links[i]);
    if (n.zmq_ctx) zmq_ctx_term(n.zmq_ctx);
    if (n.tick) loop_timer_cancel(n.loop, n.tick);
    if (n.wait_tick) loop_timer_cancel(n.loop, n.wait_tick);
    if (n.session_tick) loop_timer_cancel(n.loop, n.session_tick);
    checkpoint_store_destroy(&n.checkpoints); /* its last answers settle in hibernate */
    hibernate_destroy(&n.hibernate);
    if (n.drain_tick) loop_timer_cancel(n.loop, n.drain_tick);
    slots_destroy(&n.slots);
    snapshot_destroy(&n.snapshot);
    metrics_http_destroy(&n.http);
    loop_destroy(&n.loop);
    if (n.sig_fd >= 0) close(n.sig_fd);
    if (rc == 0) log_info("event=stopped");
    return rc;
}
