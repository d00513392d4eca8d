/* executor-node/broker_link.c — see broker_link.h. */
#define _GNU_SOURCE
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "../common/buf.h"
#include "../common/clock.h"
#include "../common/curve_cert.h"
#include "../common/log.h"
#include "../proto/mpack.h"
#include "../proto/result.h"
#include "../proto/wire_zmq.h"
#include "broker_link.h"

struct broker_link {
    const node_conf_t *conf;
    loop_t *loop;
    exec_metrics_t *metrics;
    broker_link_hooks_t hooks;
    void *ctx;
    void *sock;
    uint64_t broker_seen_ms; /* last message from the broker, monotonic */
    int registered;          /* READY sent at least once */
    uint64_t heartbeat;      /* its timer */
};

static void s_send(broker_link_t *self, const frame_t *frames, int count)
{
    if (!self->sock) return;
    if (wire_send(self->sock, NULL, frames, count) < 0 && errno != EAGAIN)
        log_warn("event=send_failed error=\"%s\"", zmq_strerror(errno));
}

static void s_send_cmd(broker_link_t *self, uint8_t cmd, const void *body, size_t len)
{
    frame_t f[3] = {{(const uint8_t *)WIRE_WORKER_TAG, 4}, {&cmd, 1}, {body, len}};
    s_send(self, f, body ? 3 : 2);
}

/* [tag, cmd, job id, body]: RESULT and PROGRESS */
static void s_send_job_cmd(broker_link_t *self, uint8_t cmd, const uint8_t id[ID_BYTES],
                           const void *body, size_t len)
{
    frame_t f[4] = {{(const uint8_t *)WIRE_WORKER_TAG, 4}, {&cmd, 1}, {id, ID_BYTES}, {body, len}};
    s_send(self, f, 4);
}

static void s_send_ready(broker_link_t *self)
{
    ready_t r = {0};
    uint64_t credit = 0;
    const uint8_t(*ids)[ID_BYTES] = NULL;
    size_t n = 0;
    self->hooks.fill_ready(self->hooks.arg, &r, &credit, &ids, &n);
    buf_t b;
    buf_init(&b);
    ready_encode(&r, &b, ids, n);
    s_send_cmd(self, W_READY, b.data, b.len);
    buf_reset(&b);
    mpw_t w;
    mpw_init(&w, &b);
    mpw_uint(&w, credit);
    s_send_cmd(self, W_CREDIT, b.data, b.len);
    buf_free(&b);
}

void broker_link_send_result(broker_link_t *self, const uint8_t id[ID_BYTES], const void *body,
                             size_t len)
{
    s_send_job_cmd(self, W_RESULT, id, body, len);
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

static void s_connect(broker_link_t *self);

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
        self->broker_seen_ms = clock_mono_ms();
        self->metrics->broker_connected = 1;
        if (msg.overflow || wire_parse_worker(&msg.frames, &m, err, sizeof err) < 0) {
            log_warn("event=bad_broker_message error=\"%s\"",
                     msg.overflow ? "too many frames" : err);
            self->metrics->malformed++;
        } else if (m.cmd == W_JOB) {
            self->hooks.on_job(self->hooks.arg, &m);
        } else if (m.cmd == W_CANCEL) {
            self->hooks.on_cancel(self->hooks.arg, m.job_id);
        } else if (m.cmd == W_DISCONNECT) {
            log_info("event=broker_disconnect");
            wire_msg_close(&msg);
            s_connect(self);
            return;
        }
        wire_msg_close(&msg);
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

static void s_connect(broker_link_t *self)
{
    if (self->sock) {
        loop_remove_socket(self->loop, self->sock);
        zmq_close(self->sock);
    }
    self->sock = zmq_socket(self->ctx, ZMQ_DEALER);
    int linger = 0, hwm = 100000;
    zmq_setsockopt(self->sock, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(self->sock, ZMQ_SNDHWM, &hwm, sizeof hwm);
    zmq_setsockopt(self->sock, ZMQ_RCVHWM, &hwm, sizeof hwm);
    /* with CURVE misconfigured (logged) it stays unconnected; the heartbeat tries again */
    if (s_curve(self) == 0 && zmq_connect(self->sock, self->conf->broker) < 0)
        log_error("event=connect_failed broker=%s error=\"%s\"", self->conf->broker,
                  zmq_strerror(errno));
    loop_add_socket(self->loop, self->sock, ZMQ_POLLIN, s_on_broker, self);
    self->broker_seen_ms = clock_mono_ms();
    if (self->registered) self->metrics->reconnects++;
    self->registered = 1;
    self->metrics->broker_connected = 0; /* until the broker speaks */
    s_send_ready(self);
    log_info("event=registered broker=%s slots=%ld services=%s", self->conf->broker,
             self->conf->slots, self->conf->profiles);
}

static void s_on_heartbeat(loop_t *loop, void *arg)
{
    (void)loop;
    broker_link_t *self = arg;
    s_send_cmd(self, W_HEARTBEAT, NULL, 0);
    uint64_t silent = clock_mono_ms() - self->broker_seen_ms;
    if (silent > (uint64_t)(self->conf->heartbeat_ms * self->conf->liveness)) {
        log_warn("event=broker_silent ms=%llu action=reconnect", (unsigned long long)silent);
        s_connect(self); /* a fresh socket re-registers; the broker requeues what it had leased */
    }
}

broker_link_t *broker_link_new(loop_t *loop, const node_conf_t *conf, exec_metrics_t *metrics,
                               const broker_link_hooks_t *hooks)
{
    broker_link_t *self = xcalloc(1, sizeof *self);
    self->conf = conf;
    self->loop = loop;
    self->metrics = metrics;
    self->hooks = *hooks;
    self->ctx = zmq_ctx_new();
    s_connect(self);
    self->heartbeat = loop_timer_add(loop, (uint64_t)conf->heartbeat_ms,
                                     (uint64_t)conf->heartbeat_ms, s_on_heartbeat, self);
    return self;
}

void broker_link_disconnect(broker_link_t *self)
{
    s_send_cmd(self, W_DISCONNECT, NULL, 0);
}

void broker_link_destroy(broker_link_t **self_p)
{
    assert(self_p);
    broker_link_t *self = *self_p;
    if (!self) return;
    loop_timer_cancel(self->loop, self->heartbeat);
    if (self->sock) {
        loop_remove_socket(self->loop, self->sock);
        zmq_close(self->sock);
    }
    zmq_ctx_term(self->ctx);
    free(self);
    *self_p = NULL;
}
