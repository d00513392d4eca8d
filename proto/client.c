/* proto/client.c — see client.h. */
#define _GNU_SOURCE
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/idmap.h"
#include "common/log.h"
#include "client.h"
#include "monitor.h"
#include "result.h"
#include "wire_zmq.h"

typedef struct {
    uint8_t  id[ID_BYTES];
    char     service[65];
    uint64_t expires_ms; /* monotonic; 0 = no deadline */
} pending_t;

struct client {
    void            *ctx;
    void            *sock;
    void            *monitor;  /* PAIR fed by zmq_socket_monitor: connection drops */
    loop_t          *loop;
    client_conf_t    conf;
    char            *endpoint;
    char            *curve_server, *curve_public, *curve_secret;
    client_event_fn *fn;
    void            *arg;
    idmap_t         *pending;
    uint64_t         last_seen_ms;
    uint64_t         timer;
    int              connected;
};

static void s_on_socket(loop_t *loop, short revents, void *arg);
static void s_on_monitor(loop_t *loop, short revents, void *arg);

/* Watches the connection itself: when it drops, whatever the broker held for us is gone
 * with it (a crashed or restarted broker forgets its jobs; after a reconnect the ROUTER
 * knows us under a new identity, so answers to the old one are lost). Heartbeats alone
 * would not tell: a broker restarted within three intervals answers PING again at once. */
static void s_open_monitor(client_t *self)
{
    self->monitor = monitor_open(self->ctx, self->sock, ZMQ_EVENT_DISCONNECTED);
    if (self->monitor) loop_add_socket(self->loop, self->monitor, ZMQ_POLLIN, s_on_monitor, self);
}

static void s_open(client_t *self)
{
    self->sock = zmq_socket(self->ctx, ZMQ_DEALER);
    int linger = 0, hwm = 200000, immediate = 1;
    zmq_setsockopt(self->sock, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(self->sock, ZMQ_SNDHWM, &hwm, sizeof hwm);
    zmq_setsockopt(self->sock, ZMQ_RCVHWM, &hwm, sizeof hwm);
    /* Queue only on a live connection: with the broker down, a submit fails at once and
     * the caller can say so, instead of the job waiting to be declared lost. */
    zmq_setsockopt(self->sock, ZMQ_IMMEDIATE, &immediate, sizeof immediate);
    if (self->curve_server) {
        zmq_setsockopt(self->sock, ZMQ_CURVE_SERVERKEY, self->curve_server, 41);
        zmq_setsockopt(self->sock, ZMQ_CURVE_PUBLICKEY, self->curve_public, 41);
        zmq_setsockopt(self->sock, ZMQ_CURVE_SECRETKEY, self->curve_secret, 41);
    }
    s_open_monitor(self);
    if (zmq_connect(self->sock, self->endpoint) < 0)
        log_error("event=broker_connect_failed endpoint=%s error=\"%s\"", self->endpoint,
                  zmq_strerror(errno));
    loop_add_socket(self->loop, self->sock, ZMQ_POLLIN, s_on_socket, self);
    self->last_seen_ms = clock_mono_ms();
}

static void s_close(client_t *self)
{
    if (self->monitor) {
        loop_remove_socket(self->loop, self->monitor);
        monitor_close(self->sock, &self->monitor);
    }
    if (!self->sock) return;
    loop_remove_socket(self->loop, self->sock);
    zmq_close(self->sock);
    self->sock = NULL;
}

static void s_answer(client_t *self, pending_t *p, status_t st, const char *type, const char *msg)
{
    buf_t b;
    buf_init(&b);
    result_encode_simple(&b, st, type, msg);
    uint8_t id[ID_BYTES];
    memcpy(id, p->id, ID_BYTES);
    idmap_del(self->pending, id);
    free(p);
    client_event_t ev = st == ST_LOST && self->conf.hand_back_lost ? CLIENT_LOST : CLIENT_RESULT;
    self->fn(self->arg, id, ev, b.data, b.len);
    buf_free(&b);
}

typedef struct {
    pending_t **list;
    size_t      n;
    uint64_t    now; /* 0: collect all */
} collect_t;

static void s_collect(void *arg, const uint8_t *id, void *value)
{
    (void)id;
    collect_t *c = arg;
    pending_t *p = value;
    if (!c->now || (p->expires_ms && p->expires_ms <= c->now)) c->list[c->n++] = p;
}

/* Answers pending jobs (all, or those past their deadline) without touching the map while
 * iterating it. */
static void s_fail_pending(client_t *self, uint64_t now, status_t st, const char *type, const char *msg)
{
    size_t n = idmap_size(self->pending);
    if (!n) return;
    collect_t c = {xcalloc(n, sizeof(pending_t *)), 0, now};
    idmap_each(self->pending, s_collect, &c);
    for (size_t i = 0; i < c.n; i++) s_answer(self, c.list[i], st, type, msg);
    free(c.list);
}

static void s_send_ping(client_t *self)
{
    uint8_t cmd = CMD_PING;
    frame_t f[2] = {{(const uint8_t *)WIRE_CLIENT_TAG, 4}, {&cmd, 1}};
    wire_send(self->sock, NULL, f, 2);
}

static void s_on_timer(loop_t *loop, void *arg)
{
    (void)loop;
    client_t *self = arg;
    uint64_t  now = clock_mono_ms();
    s_send_ping(self);
    if (now - self->last_seen_ms > (uint64_t)self->conf.heartbeat_ms * 3) {
        if (self->connected) log_warn("event=broker_lost endpoint=%s pending=%zu", self->endpoint,
                                      idmap_size(self->pending));
        self->connected = 0;
        /* A fresh socket first, so that jobs the callbacks below submit again go to it and
         * not into the connection being thrown away. */
        s_close(self);
        s_open(self);
        self->last_seen_ms = now; /* give the new connection its full liveness window */
        /* The broker may have restarted and forgotten them: each gets its one answer now. */
        s_fail_pending(self, 0, ST_LOST, "BrokerLost", "the connection to the broker was lost "
                       "while the job was pending; it may or may not have run");
    }
    s_fail_pending(self, now, ST_TIMEOUT, "Timeout", "no answer from the farm before the "
                   "job's deadline");
}

static void s_on_monitor(loop_t *loop, short revents, void *arg)
{
    (void)loop, (void)revents;
    client_t *self = arg;
    int       dropped = self->monitor && (monitor_read(self->monitor) & ZMQ_EVENT_DISCONNECTED);
    /* A connection that never carried anything (a refused CURVE key, say) is left to
     * ZeroMQ's own reconnect backoff. */
    if (!dropped || (!self->connected && !idmap_size(self->pending))) return;
    log_warn("event=broker_disconnected endpoint=%s pending=%zu", self->endpoint,
             idmap_size(self->pending));
    self->connected = 0;
    /* A new socket before the answers: what the callbacks submit again must not land in the
     * dying connection's pipe, which ZeroMQ may still accept messages into. (Closing the
     * monitor from its own callback is allowed: the loop only marks the watcher.) */
    s_close(self);
    s_open(self);
    self->last_seen_ms = clock_mono_ms();
    s_fail_pending(self, 0, ST_LOST, "BrokerLost", "the connection to the broker dropped "
                   "while the job was pending; it may or may not have run");
}

static void s_on_socket(loop_t *loop, short revents, void *arg)
{
    (void)loop, (void)revents;
    client_t  *self = arg;
    wire_msg_t msg;
    for (int budget = 0; budget < 1000 && self->sock; budget++) {
        if (wire_recv(self->sock, &msg, 0) <= 0) break;
        client_msg_t m;
        char         err[128];
        self->last_seen_ms = clock_mono_ms();
        if (!self->connected) log_info("event=broker_connected endpoint=%s", self->endpoint);
        self->connected = 1;
        if (msg.overflow || wire_parse_client(&msg.frames, &m, err, sizeof err) < 0) {
            log_warn("event=bad_broker_message error=\"%s\"", msg.overflow ? "too many frames" : err);
            wire_msg_close(&msg);
            continue;
        }
        pending_t *p = m.job_id ? idmap_get(self->pending, m.job_id) : NULL;
        if (p) {
            uint8_t id[ID_BYTES];
            memcpy(id, m.job_id, ID_BYTES);
            if (m.cmd == CMD_RESULT || m.cmd == CMD_REJECT) {
                idmap_del(self->pending, id);
                free(p);
                self->fn(self->arg, id, CLIENT_RESULT, m.body.data, m.body.len);
            } else if (m.cmd == CMD_ACCEPTED) {
                self->fn(self->arg, id, CLIENT_ACCEPTED, NULL, 0);
            } else if (m.cmd == CMD_PROGRESS) {
                self->fn(self->arg, id, CLIENT_PROGRESS, m.body.data, m.body.len);
            }
        }
        wire_msg_close(&msg);
    }
}

client_t *client_new(void *zmq_ctx, loop_t *loop, const client_conf_t *conf, client_event_fn *fn,
                     void *arg)
{
    client_t *self = xcalloc(1, sizeof *self);
    self->ctx = zmq_ctx;
    self->loop = loop;
    self->conf = *conf;
    if (self->conf.heartbeat_ms <= 0) self->conf.heartbeat_ms = 1000;
    if (self->conf.grace_ms <= 0) self->conf.grace_ms = 5000;
    self->endpoint = xstrdup(conf->endpoint);
    if (conf->curve_server_key) {
        self->curve_server = xstrdup(conf->curve_server_key);
        self->curve_public = xstrdup(conf->curve_public_key);
        self->curve_secret = xstrdup(conf->curve_secret_key);
    }
    self->fn = fn;
    self->arg = arg;
    self->pending = idmap_new();
    s_open(self);
    s_send_ping(self);
    self->timer = loop_timer_add(loop, (uint64_t)self->conf.heartbeat_ms,
                                 (uint64_t)self->conf.heartbeat_ms, s_on_timer, self);
    return self;
}

static void s_free_pending(void *arg, const uint8_t *id, void *value)
{
    (void)arg, (void)id;
    free(value);
}

void client_destroy(client_t **self_p)
{
    assert(self_p);
    client_t *self = *self_p;
    if (!self) return;
    loop_timer_cancel(self->loop, self->timer);
    s_close(self);
    idmap_each(self->pending, s_free_pending, NULL);
    idmap_destroy(&self->pending);
    free(self->endpoint);
    free(self->curve_server);
    free(self->curve_public);
    free(self->curve_secret);
    free(self);
    *self_p = NULL;
}

int client_submit(client_t *self, const char *service, const uint8_t id[ID_BYTES],
                  const route_t *route, const void *jobspec, size_t len)
{
    if (idmap_get(self->pending, id)) return -1;
    buf_t rb;
    buf_init(&rb);
    route_encode(route, &rb);
    uint8_t cmd = CMD_SUBMIT;
    frame_t f[6] = {{(const uint8_t *)WIRE_CLIENT_TAG, 4}, {&cmd, 1},
                    {(const uint8_t *)service, strlen(service)}, {id, ID_BYTES},
                    {rb.data, rb.len}, {jobspec, len}};
    int rc = wire_send(self->sock, NULL, f, 6);
    buf_free(&rb);
    if (rc < 0) return -1;
    pending_t *p = xcalloc(1, sizeof *p);
    memcpy(p->id, id, ID_BYTES);
    snprintf(p->service, sizeof p->service, "%s", service);
    if (route->deadline_ms) {
        uint64_t wall = clock_wall_ms();
        uint64_t left = route->deadline_ms > wall ? route->deadline_ms - wall : 0;
        p->expires_ms = clock_mono_ms() + left + (uint64_t)self->conf.grace_ms;
    }
    idmap_put(self->pending, id, p);
    return 0;
}

int client_cancel(client_t *self, const char *service, const uint8_t id[ID_BYTES])
{
    uint8_t cmd = CMD_CANCEL;
    frame_t f[4] = {{(const uint8_t *)WIRE_CLIENT_TAG, 4}, {&cmd, 1},
                    {(const uint8_t *)service, strlen(service)}, {id, ID_BYTES}};
    return wire_send(self->sock, NULL, f, 4);
}

size_t client_pending(const client_t *self)
{
    return idmap_size(self->pending);
}

int client_connected(const client_t *self)
{
    return self->connected;
}
