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
#include "broker_link.h"
#include "layers.h"
#include "metrics.h"
#include "node.h"
#include "snapshot.h"
#include "spawn.h"
#include "zygotes.h"

typedef struct {
    uint8_t id[ID_BYTES];
    int zygote; /* index, -1 when the slot is free */
} inflight_t;

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
} node_t;

/* ---- slots --------------------------------------------------------------------------------- */

static inflight_t *s_slot_of(node_t *n, const uint8_t *id)
{
    for (long i = 0; i < n->conf->slots; i++)
        if (n->inflight[i].zygote >= 0 && memcmp(n->inflight[i].id, id, ID_BYTES) == 0)
            return &n->inflight[i];
    return NULL;
}

static inflight_t *s_slot_free(node_t *n)
{
    for (long i = 0; i < n->conf->slots; i++)
        if (n->inflight[i].zygote < 0) return &n->inflight[i];
    return NULL;
}

static void s_slot_release(node_t *n, inflight_t *slot)
{
    slot->zygote = -1;
    n->n_inflight--;
    n->metrics.busy = n->n_inflight;
}

/* ---- from the broker ----------------------------------------------------------------------- */

static void s_fill_ready(void *arg, ready_t *r, uint64_t *credit)
{
    node_t *n = arg;
    snprintf(r->node, sizeof r->node, "%s", n->conf->node_id);
    r->n_services = zygotes_services(n->zygotes, 1, r->services, WIRE_MAX_SERVICES);
    r->slots = (uint32_t)n->conf->slots;
    snprintf(r->python, sizeof r->python, "%s", zygotes_python(n->zygotes));
    snprintf(r->layers, sizeof r->layers, "%s", n->layers_str);
    *credit = (uint64_t)(n->conf->slots - n->n_inflight);
}

static void s_on_job(void *arg, const worker_msg_t *m)
{
    node_t *n = arg;
    int ready;
    int zi = zygotes_pick(n->zygotes, m->service, &ready);
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
    memcpy(slot->id, m->job_id, ID_BYTES);
    slot->zygote = zi;
    n->n_inflight++;
    n->metrics.busy = n->n_inflight;
    zygotes_send_job(n->zygotes, zi, m->job_id, m->body.data, m->body.len);
}

static void s_on_cancel(void *arg, const uint8_t id[ID_BYTES])
{
    node_t *n = arg;
    inflight_t *slot = s_slot_of(n, id);
    if (slot) zygotes_cancel(n->zygotes, slot->zygote, id);
}

/* ---- from the zygotes ---------------------------------------------------------------------- */

static int s_on_result(void *arg, const uint8_t id[ID_BYTES], const uint8_t *body, size_t len)
{
    node_t *n = arg;
    inflight_t *slot = s_slot_of(n, id);
    if (!slot) return 0; /* answered already (its zygote was given up on), or unknown */
    s_slot_release(n, slot);
    broker_link_send_result(n->link, id, body, len); /* returns the slot's credit */
    return 1;
}

static void s_on_progress(void *arg, const uint8_t id[ID_BYTES], const uint8_t *chunk, size_t len)
{
    node_t *n = arg;
    if (s_slot_of(n, id)) broker_link_send_progress(n->link, id, chunk, len);
}

/* Every job the zygote held gets its one answer now. */
static void s_on_zygote_down(void *arg, int zi)
{
    node_t *n = arg;
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
    for (long i = 0; i < conf->slots; i++) n->inflight[i].zygote = -1;
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
    broker_link_hooks_t link = {s_fill_ready, s_on_job, s_on_cancel, n};
    n->link = broker_link_new(n->loop, conf, &n->metrics, &link);
    zygotes_hooks_t zygotes = {s_on_result, s_on_progress, s_on_zygote_down, n};
    zygotes_attach(n->zygotes, n->loop, &zygotes);
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
    broker_link_destroy(&n.link);
    snapshot_destroy(&n.snapshot);
    metrics_http_destroy(&n.http);
    loop_destroy(&n.loop);
    free(n.inflight);
    if (n.sig_fd >= 0) close(n.sig_fd);
    if (rc == 0) log_info("event=stopped");
    return rc;
}
