/* executor-node/node/broker_link.c — see broker_link.h. */
#define _GNU_SOURCE
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/curve_cert.h"
#include "common/log.h"
#include "proto/monitor.h"
#include "proto/mpack.h"
#include "proto/result.h"
#include "proto/wire_zmq.h"
#include "broker_link.h"

struct broker_link {
    const node_conf_t *conf;
    char *endpoint;
    int index; /* this link's number, handed to every hook */
    loop_t *loop;
    exec_metrics_t *metrics;
    broker_link_hooks_t hooks;
    void *ctx;
    void *sock;
    void *monitor;           /* PAIR fed by zmq_socket_monitor: handshakes and drops */
    uint64_t broker_seen_ms; /* last message from the broker, monotonic */
    int registered;          /* READY sent at least once */
    int up;                  /* the connection is made: the broker has (or will have) our READY */
    uint64_t heartbeat;      /* its timer */
};

static void s_connect(broker_link_t *self);

static void s_send(broker_link_t *self, const frame_t *frames, int count)
{
    if (!self->sock) return;
    if (wire_send(self->sock, NULL, frames, count) < 0 && errno != EAGAIN)
        log_warn("event=send_failed broker=%s error=\"%s\"", self->endpoint, zmq_strerror(errno));
}

static void s_send_cmd(broker_link_t *self, uint8_t cmd, const void *body, size_t len)
{
    frame_t f[3] = {{(const uint8_t *)WIRE_WORKER_TAG, 4}, {&cmd, 1}, {body, len}};
    s_send(self, f, body ? 3 : 2);
}

/* [tag, cmd, job id, body]: RESULT, ANSWER, PROGRESS, HELD */
static void s_send_job_cmd(broker_link_t *self, uint8_t cmd, const uint8_t id[ID_BYTES],
                           const void *body, size_t len)
{
    frame_t f[4] = {{(const uint8_t *)WIRE_WORKER_TAG, 4}, {&cmd, 1}, {id, ID_BYTES}, {body, len}};
    s_send(self, f, 4);
}

/* [tag, cmd, uint n]: CREDIT, RECLAIM */
static void s_send_count(broker_link_t *self, uint8_t cmd, uint64_t n)
{
    buf_t b;
    buf_init(&b);
    mpw_t w;
    mpw_init(&w, &b);
    mpw_uint(&w, n);
    s_send_cmd(self, cmd, b.data, b.len);
    buf_free(&b);
}

static void s_send_ready(broker_link_t *self)
{
    ready_t r = {0};
    const uint8_t(*ids)[ID_BYTES] = NULL;
    size_t n = 0;
    self->hooks.fill_ready(self->hooks.arg, &r, &ids, &n);
    buf_t b;
    buf_init(&b);
    ready_encode(&r, &b, ids, n);
    s_send_cmd(self, W_READY, b.data, b.len);
    buf_free(&b);
    char services[WIRE_MAX_SERVICES * 66] = "";
    size_t used = 0;
    for (int i = 0; i < r.n_services; i++) /* what READY says: the profiles it serves */
        used += (size_t)snprintf(services + used, sizeof services - used, "%s%s", i ? "," : "",
                                 r.services[i]);
    log_info("event=registered broker=%s slots=%ld reserve=%ld services=%s", self->endpoint,
             self->conf->slots, self->conf->reserve_slots, services);
}

void broker_link_send_result(broker_link_t *self, const uint8_t id[ID_BYTES], const void *body,
                             size_t len, int credit)
{
    s_send_job_cmd(self, credit ? W_RESULT : W_ANSWER, id, body, len);
}

void broker_link_send_simple(broker_link_t *self, const uint8_t id[ID_BYTES], status_t status,
                             const char *type, const char *message)
{
    buf_t b;
    buf_init(&b);
    result_encode_simple(&b, status, type, message);
    s_send_job_cmd(self, W_RESULT, id, b.data, b.len);
    buf_free(&b);
}

void broker_link_send_progress(broker_link_t *self, const uint8_t id[ID_BYTES], const void *chunk,
                               size_t len)
{
    s_send_job_cmd(self, W_PROGRESS, id, chunk, len);
}

void broker_link_send_sessions(broker_link_t *self, const void *body, size_t len)
{
    s_send_cmd(self, W_SESSIONS, body, len);
}

void broker_link_send_credit(broker_link_t *self, uint32_t n)
{
    s_send_count(self, W_CREDIT, n);
}

void broker_link_send_reclaim(broker_link_t *self, uint32_t n)
{
    s_send_count(self, W_RECLAIM, n);
}

void broker_link_send_held(broker_link_t *self, const uint8_t id[ID_BYTES], unsigned state)
{
    buf_t b;
    buf_init(&b);
    mpw_t w;
    mpw_init(&w, &b);
    mpw_uint(&w, state);
    s_send_job_cmd(self, W_HELD, id, b.data, b.len);
    buf_free(&b);
}

/* ---- up and down ---------------------------------------------------------------------------- */

static void s_set_up(broker_link_t *self, int up)
{
    if (self->up == up) return;
    self->up = up;
    self->metrics->broker_connected += up ? 1 : -1;
    log_info("event=%s broker=%s", up ? "broker_up" : "broker_down", self->endpoint);
    if (up)
        self->hooks.on_up(self->hooks.arg, self->index);
    else
        self->hooks.on_down(self->hooks.arg, self->index);
}

/* The link starts again: down (its credit is void), then a fresh socket and READY. */
static void s_restart(broker_link_t *self, const char *why)
{
    log_warn("event=broker_reconnect broker=%s reason=\"%s\"", self->endpoint, why);
    s_set_up(self, 0);
    s_connect(self);
}

static void s_on_monitor(loop_t *loop, short revents, void *arg)
{
    (void)loop, (void)revents;
    broker_link_t *self = arg;
    int seen = self->monitor ? monitor_read(self->monitor) : 0;
    if ((seen & ZMQ_EVENT_DISCONNECTED) && self->up) {
        s_restart(self, "the connection dropped");
        return;
    }
    if (seen & ZMQ_EVENT_HANDSHAKE_SUCCEEDED) {
        self->broker_seen_ms = clock_mono_ms();
        s_set_up(self, 1);
    }
}

static void s_open_monitor(broker_link_t *self)
{
    self->monitor =
        monitor_open(self->ctx, self->sock, ZMQ_EVENT_DISCONNECTED | ZMQ_EVENT_HANDSHAKE_SUCCEEDED);
    if (self->monitor) loop_add_socket(self->loop, self->monitor, ZMQ_POLLIN, s_on_monitor, self);
}

/* ---- from the broker ------------------------------------------------------------------------ */

/* One parsed message; 1 when the link restarted (stop reading the old socket). */
static int s_dispatch(broker_link_t *self, const worker_msg_t *m)
{
    void *arg = self->hooks.arg;
    switch (m->cmd) {
    case W_JOB:
        self->hooks.on_job(arg, self->index, m);
        break;
    case W_CANCEL:
        self->hooks.on_cancel(arg, self->index, m->job_id);
        break;
    case W_WANT:
        self->hooks.on_want(arg, self->index, (uint32_t)m->credit);
        break;
    case W_RELEASE:
        self->hooks.on_release(arg, self->index, (uint32_t)m->credit);
        break;
    case W_PROBE:
        self->hooks.on_probe(arg, self->index, m);
        break;
    case W_DISCONNECT:
        s_restart(self, "the broker said DISCONNECT");
        return 1;
    }
    return 0;
}

static void s_on_broker(loop_t *loop, short revents, void *arg)
{
    (void)loop, (void)revents;
    broker_link_t *self = arg;
    wire_msg_t msg;
    for (int budget = 0; budget < 1000 && self->sock; budget++) {
        int rc = wire_recv(self->sock, &msg, 0);
        if (rc <= 0) break;
        worker_msg_t m;
        char err[128];
        int restarted = 0;
        self->broker_seen_ms = clock_mono_ms();
        if (msg.overflow || wire_parse_worker(&msg.frames, &m, err, sizeof err) < 0) {
            log_warn("event=bad_broker_message broker=%s error=\"%s\"", self->endpoint,
                     msg.overflow ? "too many frames" : err);
            self->metrics->malformed++;
        } else {
            restarted = s_dispatch(self, &m);
        }
        wire_msg_close(&msg);
        if (restarted) return;
    }
}

/* CURVE to the broker when configured (broker/README.md): the broker's public key and this
 * node's key pair, read at each (re)connect so replaced key files take effect. 0 when off or
 * set; -1 (logged) when configured but unusable: then the node does not connect at all rather
 * than fall back to plain text. */
static int s_curve(broker_link_t *self)
{
    const node_conf_t *c = self->conf;
    if (!c->curve_server_key[0] && !c->curve_secret_file[0]) return 0;
    char server[CURVE_Z85_LEN + 1], err[1200] = "--curve-server-key and --curve-secret-file "
                                                "go together";
    curve_cert_t cert = {0};
    int ok = c->curve_server_key[0] && c->curve_secret_file[0] &&
             curve_key_resolve(c->curve_server_key, server, err, sizeof err) == 0 &&
             curve_cert_load(c->curve_secret_file, &cert, err, sizeof err) == 0;
    if (ok && !cert.secret_key[0]) {
        snprintf(err, sizeof err, "%s holds no secret-key (use the _secret file)",
                 c->curve_secret_file);
        ok = 0;
    }
    if (!ok) {
        log_error("event=curve_config_failed error=\"%s\"", err);
        return -1;
    }
    zmq_setsockopt(self->sock, ZMQ_CURVE_SERVERKEY, server, CURVE_Z85_LEN + 1);
    zmq_setsockopt(self->sock, ZMQ_CURVE_PUBLICKEY, cert.public_key, CURVE_Z85_LEN + 1);
    zmq_setsockopt(self->sock, ZMQ_CURVE_SECRETKEY, cert.secret_key, CURVE_Z85_LEN + 1);
    explicit_bzero(&cert, sizeof cert);
    return 0;
}

static void s_close(broker_link_t *self)
{
    if (self->monitor) {
        loop_remove_socket(self->loop, self->monitor);
        monitor_close(self->sock, &self->monitor);
    }
    if (self->sock) {
        loop_remove_socket(self->loop, self->sock);
        zmq_close(self->sock);
        self->sock = NULL;
    }
}

static void s_connect(broker_link_t *self)
{
    s_close(self);
    self->sock = zmq_socket(self->ctx, ZMQ_DEALER);
    int linger = 0, hwm = 100000;
    zmq_setsockopt(self->sock, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(self->sock, ZMQ_SNDHWM, &hwm, sizeof hwm);
    zmq_setsockopt(self->sock, ZMQ_RCVHWM, &hwm, sizeof hwm);
    s_open_monitor(self);
    /* with CURVE misconfigured (logged) it stays unconnected; the heartbeat tries again */
    if (s_curve(self) == 0 && zmq_connect(self->sock, self->endpoint) < 0)
        log_error("event=connect_failed broker=%s error=\"%s\"", self->endpoint,
                  zmq_strerror(errno));
    loop_add_socket(self->loop, self->sock, ZMQ_POLLIN, s_on_broker, self);
    self->broker_seen_ms = clock_mono_ms();
    if (self->registered) self->metrics->reconnects++;
    self->registered = 1;
    s_send_ready(self); /* queued until the connection is made; credit follows once it is up */
}

static void s_on_heartbeat(loop_t *loop, void *arg)
{
    (void)loop;
    broker_link_t *self = arg;
    s_send_cmd(self, W_HEARTBEAT, NULL, 0);
    uint64_t silent = clock_mono_ms() - self->broker_seen_ms;
    if (silent > (uint64_t)(self->conf->heartbeat_ms * self->conf->liveness)) {
        char why[80];
        snprintf(why, sizeof why, "silent for %llu ms", (unsigned long long)silent);
        s_restart(self, why); /* a fresh socket re-registers; the broker requeues its leases */
    }
}

broker_link_t *broker_link_new(loop_t *loop, void *ctx, const node_conf_t *conf,
                               const char *endpoint, int link, exec_metrics_t *metrics,
                               const broker_link_hooks_t *hooks)
{
    broker_link_t *self = xcalloc(1, sizeof *self);
    self->conf = conf;
    self->endpoint = xstrdup(endpoint);
    self->index = link;
    self->loop = loop;
    self->metrics = metrics;
    self->hooks = *hooks;
    self->ctx = ctx;
    s_connect(self);
    self->heartbeat = loop_timer_add(loop, (uint64_t)conf->heartbeat_ms,
                                     (uint64_t)conf->heartbeat_ms, s_on_heartbeat, self);
    return self;
}

void broker_link_disconnect(broker_link_t *self)
{
    s_send_cmd(self, W_DISCONNECT, NULL, 0);
    int linger = 500; /* the destroy, which comes next, lets this and what is queued go out */
    if (self->sock) zmq_setsockopt(self->sock, ZMQ_LINGER, &linger, sizeof linger);
}

void broker_link_send_leaving(broker_link_t *self, const leaving_t *m)
{
    buf_t b;
    buf_init(&b);
    leaving_encode(m, &b);
    s_send_cmd(self, W_LEAVING, b.data, b.len);
    buf_free(&b);
}

void broker_link_destroy(broker_link_t **self_p)
{
    assert(self_p);
    broker_link_t *self = *self_p;
    if (!self) return;
    loop_timer_cancel(self->loop, self->heartbeat);
    s_close(self);
    free(self->endpoint);
    free(self);
    *self_p = NULL;
}

int broker_link_up(const broker_link_t *self)
{
    return self->up;
}

const char *broker_link_endpoint(const broker_link_t *self)
{
    return self->endpoint;
}
