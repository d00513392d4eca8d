/* bench/stub_executor.c — an executor node that runs nothing: it registers like
 * snakepit-executor (READY, CREDIT, heartbeats, re-registering on DISCONNECT or broker
 * silence) and answers every JOB with a canned `ok` Result, at once or after --delay-us.
 * With it the broker's routing throughput can be measured without Python in the way, and
 * broker tests can run with executors whose timing they control.
 *
 *   stub_executor --broker tcp://127.0.0.1:5556 --slots 256 [--delay-us 0] [--node-id stub-1]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/config.h"
#include "common/curve_cert.h"
#include "common/log.h"
#include "common/loop.h"
#include "common/profiles.h"
#include "proto/mpack.h"
#include "proto/result.h"
#include "proto/wire_zmq.h"

typedef struct {
    char broker[256];
    char node_id[65];
    char services[256];
    long slots;
    long delay_us;
    long heartbeat_ms;
    char curve_server_key[1024];
    char curve_secret_file[1024];
    char log_level[16];
} stub_conf_t;

static const cfg_opt_t s_opts[] = {
    CFG_OPT_STR(stub_conf_t, broker, "broker", "ENDPOINT", "broker executor endpoint"),
    CFG_OPT_STR(stub_conf_t, node_id, "node-id", "NAME", "node name"),
    CFG_OPT_LIST(stub_conf_t, services, "services", "LIST", "services to announce"),
    CFG_OPT_INT(stub_conf_t, slots, "slots", 1, 4096, "N", "slots (credit)"),
    CFG_OPT_INT(stub_conf_t, delay_us, "delay-us", 0, 600000000, "US",
                "answer each job after this long"),
    CFG_OPT_INT(stub_conf_t, heartbeat_ms, "heartbeat-ms", 50, 60000, "MS", "heartbeat interval"),
    CFG_OPT_STR(stub_conf_t, curve_server_key, "curve-server-key", "KEY|FILE", "broker public key"),
    CFG_OPT_STR(stub_conf_t, curve_secret_file, "curve-secret-file", "FILE", "own key pair"),
    CFG_OPT_STR(stub_conf_t, log_level, "log-level", "LEVEL", "log level"),
    CFG_OPT_END,
};

typedef struct {
    uint8_t id[ID_BYTES];
    uint64_t due_us;
} held_t;

typedef struct {
    stub_conf_t conf;
    loop_t *loop;
    void *ctx, *sock;
    buf_t ok_result; /* the canned answer */
    held_t *held;    /* FIFO ring of delayed jobs: every job has the same delay */
    size_t head, n;
    uint64_t seen_ms; /* last message from the broker */
    uint64_t jobs, cancels;
} stub_t;

static void s_send(stub_t *s, uint8_t cmd, const uint8_t *id, const void *body, size_t len)
{
    frame_t f[4] = {{(const uint8_t *)WIRE_WORKER_TAG, 4}, {&cmd, 1}, {id, ID_BYTES}, {body, len}};
    int n = id ? (body ? 4 : 3) : (body ? 3 : 2);
    if (!id && body) f[2] = f[3];
    if (wire_send(s->sock, NULL, f, n) < 0 && errno != EAGAIN)
        log_warn("event=send_failed error=\"%s\"", zmq_strerror(errno));
}

static void s_on_broker(loop_t *loop, short revents, void *arg);

static void s_connect(stub_t *s)
{
    if (s->sock) {
        loop_remove_socket(s->loop, s->sock);
        zmq_close(s->sock);
    }
    s->sock = zmq_socket(s->ctx, ZMQ_DEALER);
    int linger = 0, hwm = 100000;
    zmq_setsockopt(s->sock, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(s->sock, ZMQ_SNDHWM, &hwm, sizeof hwm);
    zmq_setsockopt(s->sock, ZMQ_RCVHWM, &hwm, sizeof hwm);
    if (s->conf.curve_server_key[0]) {
        char server[CURVE_Z85_LEN + 1], err[512];
        curve_cert_t cert;
        if (curve_key_resolve(s->conf.curve_server_key, server, err, sizeof err) < 0 ||
            curve_cert_load(s->conf.curve_secret_file, &cert, err, sizeof err) < 0) {
            log_error("event=curve_failed error=\"%s\"", err);
            exit(2);
        }
        zmq_setsockopt(s->sock, ZMQ_CURVE_SERVERKEY, server, CURVE_Z85_LEN + 1);
        zmq_setsockopt(s->sock, ZMQ_CURVE_PUBLICKEY, cert.public_key, CURVE_Z85_LEN + 1);
        zmq_setsockopt(s->sock, ZMQ_CURVE_SECRETKEY, cert.secret_key, CURVE_Z85_LEN + 1);
    }
    zmq_connect(s->sock, s->conf.broker);
    loop_add_socket(s->loop, s->sock, ZMQ_POLLIN, s_on_broker, s);
    s->seen_ms = clock_mono_ms();
    s->n = s->head = 0; /* whatever was held belonged to the old registration */

    ready_t r = {0};
    snprintf(r.node, sizeof r.node, "%s", s->conf.node_id);
    for (char *p = s->conf.services; *p && r.n_services < WIRE_MAX_SERVICES;) {
        size_t l = strcspn(p, ",");
        snprintf(r.services[r.n_services++], sizeof r.services[0], "%.*s", (int)l, p);
        p += l + (p[l] == ',');
    }
    r.slots = (uint32_t)s->conf.slots;
    snprintf(r.python, sizeof r.python, "none");
    snprintf(r.layers, sizeof r.layers, "stub");
    buf_t b;
    buf_init(&b);
    ready_encode(&r, &b, NULL, 0);
    s_send(s, W_READY, NULL, b.data, b.len);
    buf_reset(&b);
    mpw_t w;
    mpw_init(&w, &b);
    mpw_uint(&w, (uint64_t)s->conf.slots);
    s_send(s, W_CREDIT, NULL, b.data, b.len);
    buf_free(&b);
    log_info("event=registered node=%s slots=%ld", s->conf.node_id, s->conf.slots);
}

static void s_answer_due(stub_t *s)
{
    uint64_t now = clock_mono_us();
    while (s->n && s->held[s->head].due_us <= now) {
        s_send(s, W_RESULT, s->held[s->head].id, s->ok_result.data, s->ok_result.len);
        s->head = (s->head + 1) % (size_t)s->conf.slots;
        s->n--;
    }
}

static void s_on_job(stub_t *s, const uint8_t *id)
{
    s->jobs++;
    if (!s->conf.delay_us) {
        s_send(s, W_RESULT, id, s->ok_result.data, s->ok_result.len);
        return;
    }
    if (s->n == (size_t)s->conf.slots) { /* more jobs than credit: refuse, returning the credit */
        buf_t b;
        buf_init(&b);
        result_encode_simple(&b, ST_INTERNAL_ERROR, "ExecutorRefused", "no free slot");
        s_send(s, W_RESULT, id, b.data, b.len);
        buf_free(&b);
        return;
    }
    held_t *h = &s->held[(s->head + s->n++) % (size_t)s->conf.slots];
    memcpy(h->id, id, ID_BYTES);
    h->due_us = clock_mono_us() + (uint64_t)s->conf.delay_us;
}

static void s_on_broker(loop_t *loop, short revents, void *arg)
{
    (void)loop, (void)revents;
    stub_t *s = arg;
    wire_msg_t msg;
    for (int i = 0; i < 4096; i++) {
        if (wire_recv(s->sock, &msg, 0) <= 0) break;
        s->seen_ms = clock_mono_ms();
        worker_msg_t m;
        char err[128];
        if (msg.overflow || wire_parse_worker(&msg.frames, &m, err, sizeof err) < 0) {
            log_warn("event=bad_message error=\"%s\"", err);
        } else if (m.cmd == W_JOB) {
            s_on_job(s, m.job_id);
        } else if (m.cmd == W_CANCEL) {
            s->cancels++;
        } else if (m.cmd == W_DISCONNECT) {
            wire_msg_close(&msg);
            s_connect(s);
            return;
        }
        wire_msg_close(&msg);
    }
}

static void s_on_heartbeat(loop_t *loop, void *arg)
{
    (void)loop;
    stub_t *s = arg;
    s_send(s, W_HEARTBEAT, NULL, NULL, 0);
    if (clock_mono_ms() - s->seen_ms > (uint64_t)s->conf.heartbeat_ms * 3) {
        log_warn("event=broker_silent action=reconnect");
        s_connect(s);
    }
}

static long s_prepare(loop_t *loop, void *arg)
{
    (void)loop;
    stub_t *s = arg;
    s_answer_due(s);
    if (!s->n) return -1;
    uint64_t now = clock_mono_us(), due = s->held[s->head].due_us;
    return due > now ? (long)((due - now + 999) / 1000) : 0;
}

static volatile sig_atomic_t s_stop;
static void s_on_sig(int sig)
{
    (void)sig;
    s_stop = 1;
}

static void s_check_stop(loop_t *loop, void *arg)
{
    (void)arg;
    if (s_stop) loop_stop(loop);
}

int main(int argc, char **argv)
{
    stub_t s = {0};
    snprintf(s.conf.broker, sizeof s.conf.broker, "tcp://127.0.0.1:5556");
    snprintf(s.conf.node_id, sizeof s.conf.node_id, "stub-%d", (int)getpid());
    snprintf(s.conf.services, sizeof s.conf.services, "%s", profile_default()->name);
    snprintf(s.conf.log_level, sizeof s.conf.log_level, "info");
    s.conf.slots = 64;
    s.conf.heartbeat_ms = 1000;
    stub_conf_t defaults = s.conf;
    char err[256];
    switch (config_load(&s.conf, s_opts, argc, argv, NULL, NULL, err, sizeof err)) {
    case CONFIG_HELP:
        config_usage(stdout, "stub_executor [options]",
                     "An executor that answers every job at once.", s_opts, &defaults);
        return 0;
    case CONFIG_ERROR:
        fprintf(stderr, "stub_executor: %s\n", err);
        return 2;
    case CONFIG_OK:
        break;
    }
    log_level_t level = LOG_INFO;
    log_level_parse(s.conf.log_level, &level);
    log_init("stub", level);
    signal(SIGTERM, s_on_sig);
    signal(SIGINT, s_on_sig);
    buf_init(&s.ok_result);
    result_t res;
    result_init(&res);
    res.status = ST_OK;
    res.out = "stub\n";
    res.out_len = 5;
    res.executor = s.conf.node_id;
    result_encode(&res, &s.ok_result);
    s.held = xcalloc((size_t)s.conf.slots, sizeof *s.held);
    s.ctx = zmq_ctx_new();
    s.loop = loop_new();
    s_connect(&s);
    loop_timer_add(s.loop, (uint64_t)s.conf.heartbeat_ms, (uint64_t)s.conf.heartbeat_ms,
                   s_on_heartbeat, &s);
    loop_timer_add(s.loop, 100, 100, s_check_stop, NULL);
    loop_on_prepare(s.loop, s_prepare, &s);
    loop_run(s.loop);
    s_send(&s, W_DISCONNECT, NULL, NULL, 0);
    log_info("event=stopped jobs=%llu cancels=%llu", (unsigned long long)s.jobs,
             (unsigned long long)s.cancels);
    zmq_close(s.sock);
    zmq_ctx_term(s.ctx);
    loop_destroy(&s.loop);
    free(s.held);
    buf_free(&s.ok_result);
    return 0;
}
