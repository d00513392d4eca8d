/* broker/broker.c — see broker.h: building the broker (ZAP handler before any socket binds),
 * its timers and signals, and stopping it so that every held job gets its answer. Messages
 * are the relay's (relay.h), decisions the scheduler's (sched.h), what it shows metrics.c's. */
#define _GNU_SOURCE
#include <assert.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/curve_cert.h"
#include "common/endpoint.h"
#include "common/log.h"
#include "common/loop.h"
#include "common/metrics_http.h"
#include "common/metrics_pub.h"
#include "proto/wire.h"
#include "broker.h"
#include "metrics.h"
#include "relay.h"

struct broker {
    broker_conf_t conf;
    loop_t *loop;
    void *ctx;
    void *clients;   /* ROUTER, client channel */
    void *executors; /* ROUTER, worker channel */
    relay_t *relay;  /* reads and writes both */
    sched_t *sched;
    zap_t *zap; /* NULL when CURVE is off */
    metrics_http_t *http;
    metrics_pub_t *pub;
    broker_metrics_t shown; /* what /metrics and the Redis snapshot read */
    int sig_fd;
    char curve_public[41]; /* Z85, logged so operators can copy it */
    char curve_secret[41];
};

void broker_conf_defaults(broker_conf_t *c)
{
    memset(c, 0, sizeof *c);
    snprintf(c->clients, sizeof c->clients, "tcp://127.0.0.1:5555");
    snprintf(c->executors, sizeof c->executors, "tcp://127.0.0.1:5556");
    snprintf(c->metrics, sizeof c->metrics, "127.0.0.1:9101");
    char host[64] = "broker";
    gethostname(host, sizeof host - 1);
    host[sizeof host - 1] = '\0';
    size_t j = 0;
    for (const char *p = host; *p && j + 1 < sizeof c->instance; p++)
        c->instance[j++] = wire_name_ok(p, 1) ? *p : '-';
    c->instance[j] = '\0';
    sched_conf_t s;
    sched_conf_defaults(&s);
    c->max_queue = (long)s.max_queue;
    c->max_queue_per_tenant = (long)s.max_queue_per_tenant;
    c->max_queue_mb = (long)(s.max_queue_bytes >> 20);
    c->max_executors = (long)s.max_executors;
    c->max_clients = (long)s.max_clients;
    c->heartbeat_ms = (long)s.heartbeat_ms;
    c->liveness = (long)s.liveness;
    c->service_grace_ms = (long)s.service_grace_ms;
    c->lease_grace_ms = (long)s.lease_grace_ms;
    c->quantum = (long)s.quantum;
    c->hwm = 10000;
    snprintf(c->log_level, sizeof c->log_level, "info");
}

/* ---- timers and signals ------------------------------------------------------------------ */

static void s_on_heartbeat(loop_t *loop, void *arg)
{
    (void)loop;
    broker_t *b = arg;
    relay_heartbeat(b->relay);
    sched_housekeep(b->sched);
    relay_flush_logs(b->relay);
}

/* Before each wait: answer what expired, send what can go, sleep until the next deadline. */
static long s_prepare(loop_t *loop, void *arg)
{
    (void)loop;
    broker_t *b = arg;
    sched_expire(b->sched);
    sched_dispatch(b->sched);
    return sched_next_deadline_ms(b->sched);
}

static void s_on_signal(loop_t *loop, short revents, void *arg)
{
    (void)revents;
    broker_t *b = arg;
    struct signalfd_siginfo si;
    while (read(b->sig_fd, &si, sizeof si) == (ssize_t)sizeof si) {
        if (si.ssi_signo == SIGHUP) {
            char err[512];
            if (b->zap && zap_reload(b->zap, err, sizeof err) < 0)
                log_error("event=allowlist_reload_failed error=\"%s\"", err);
            continue;
        }
        log_info("event=stopping signal=%u", si.ssi_signo);
        loop_stop(loop);
    }
}

/* ---- sockets ----------------------------------------------------------------------------- */

static void *s_router(broker_t *b, const char *endpoint, const char *what, char *err, size_t errlen)
{
    void *sock = zmq_socket(b->ctx, ZMQ_ROUTER);
    int one = 1, linger = 0, hwm = (int)b->conf.hwm;
    /* Frames beyond twice the body cap drop the connection inside ZeroMQ before they cost us
     * memory; between the cap and that, the parser counts and refuses them. */
    int64_t max = 2 * (int64_t)WIRE_MAX_BODY;
    zmq_setsockopt(sock, ZMQ_ROUTER_MANDATORY, &one, sizeof one);
    zmq_setsockopt(sock, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(sock, ZMQ_SNDHWM, &hwm, sizeof hwm);
    zmq_setsockopt(sock, ZMQ_RCVHWM, &hwm, sizeof hwm);
    zmq_setsockopt(sock, ZMQ_MAXMSGSIZE, &max, sizeof max);
    if (b->zap) {
        zmq_setsockopt(sock, ZMQ_CURVE_SERVER, &one, sizeof one);
        zmq_setsockopt(sock, ZMQ_CURVE_SECRETKEY, b->curve_secret, CURVE_Z85_LEN + 1);
        zmq_setsockopt(sock, ZMQ_ZAP_DOMAIN, ZAP_DOMAIN, strlen(ZAP_DOMAIN));
    } else if (!endpoint_is_local(endpoint) && !b->conf.allow_plain_remote) {
        snprintf(err, errlen,
                 "%s endpoint %s is not loopback or ipc, and CURVE is off: give "
                 "--curve-secret-file and --curve-allow-dir (see `snakepit keygen`), or "
                 "--allow-plain-remote on a network you trust",
                 what, endpoint);
        zmq_close(sock);
        return NULL;
    }
    if (zmq_bind(sock, endpoint) < 0) {
        snprintf(err, errlen, "%s endpoint %s: bind: %s", what, endpoint, zmq_strerror(errno));
        zmq_close(sock);
        return NULL;
    }
    return sock;
}

static int s_curve(broker_t *b, char *err, size_t errlen)
{
    const broker_conf_t *c = &b->conf;
    if (!c->curve_secret_file[0] && !c->curve_allow_dir[0]) return 0;
    if (!c->curve_secret_file[0] || !c->curve_allow_dir[0]) {
        snprintf(err, errlen, "CURVE needs both --curve-secret-file and --curve-allow-dir");
        return -1;
    }
    curve_cert_t cert;
    if (curve_cert_load(c->curve_secret_file, &cert, err, errlen) < 0) return -1;
    if (!cert.secret_key[0]) {
        snprintf(err, errlen,
                 "%s holds no secret-key (that is the public certificate; use the "
                 "_secret file)",
                 c->curve_secret_file);
        return -1;
    }
    snprintf(b->curve_public, sizeof b->curve_public, "%s", cert.public_key);
    snprintf(b->curve_secret, sizeof b->curve_secret, "%s", cert.secret_key);
    explicit_bzero(&cert, sizeof cert);
    /* The handler exists before any socket binds: without one, libzmq admits every key. */
    b->zap = zap_new(b->ctx, b->loop, c->curve_allow_dir, err, errlen);
    return b->zap ? 0 : -1;
}

static int s_signals(broker_t *b, char *err, size_t errlen)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    sigprocmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    b->sig_fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    if (b->sig_fd < 0) {
        snprintf(err, errlen, "signalfd: %s", strerror(errno));
        return -1;
    }
    loop_add_fd(b->loop, b->sig_fd, ZMQ_POLLIN, s_on_signal, b);
    return 0;
}

/* The scheduler's settings, from the broker's options. */
static void s_sched_conf(const broker_conf_t *conf, sched_conf_t *sc)
{
    sched_conf_defaults(sc);
    sc->max_queue = (size_t)conf->max_queue;
    sc->max_queue_per_tenant = (size_t)conf->max_queue_per_tenant;
    sc->max_queue_bytes = (size_t)conf->max_queue_mb << 20;
    sc->max_executors = (size_t)conf->max_executors;
    sc->max_clients = (size_t)conf->max_clients;
    sc->heartbeat_ms = (uint64_t)conf->heartbeat_ms;
    sc->liveness = (unsigned)conf->liveness;
    sc->service_grace_ms = (uint64_t)conf->service_grace_ms;
    sc->lease_grace_ms = (uint64_t)conf->lease_grace_ms;
    sc->quantum = (unsigned)conf->quantum;
}

/* /metrics and the Redis snapshot, each when the options ask for it. */
static int s_shows(broker_t *b, char *err, size_t errlen)
{
    const broker_conf_t *conf = &b->conf;
    b->shown.sched = b->sched;
    b->shown.relay = b->relay;
    b->shown.zap = b->zap;
    if (conf->metrics[0] && strcmp(conf->metrics, "off") != 0) {
        b->http =
            metrics_http_new(b->loop, conf->metrics, broker_metrics_render, &b->shown, err, errlen);
        if (!b->http) return -1;
    }
    if (conf->redis[0]) {
        char key[128];
        snprintf(key, sizeof key, "sp:metrics:broker:%s", conf->instance);
        b->pub = metrics_pub_new(b->loop, conf->redis, key, 1000, 10, broker_metrics_snapshot,
                                 &b->shown, err, errlen);
        if (!b->pub) return -1;
        b->shown.pub = b->pub;
    }
    return 0;
}

broker_t *broker_new(const broker_conf_t *conf, char *err, size_t errlen)
{
    broker_t *b = xcalloc(1, sizeof *b);
    b->conf = *conf;
    b->sig_fd = -1;
    b->shown.started = (double)clock_wall_ms() / 1000.0;
    b->loop = loop_new();
    b->ctx = zmq_ctx_new();
    if (s_signals(b, err, errlen) < 0 || s_curve(b, err, errlen) < 0) goto fail;
    b->clients = s_router(b, conf->clients, "client", err, errlen);
    if (!b->clients) goto fail;
    b->executors = s_router(b, conf->executors, "executor", err, errlen);
    if (!b->executors) goto fail;
    b->relay = relay_new(b->clients, b->executors, b->zap != NULL);
    sched_conf_t sc;
    s_sched_conf(conf, &sc);
    sched_io_t io = relay_io(b->relay);
    b->sched = sched_new(&sc, &io);
    relay_serve(b->relay, b->sched);
    loop_add_socket(b->loop, b->clients, ZMQ_POLLIN, relay_on_clients, b->relay);
    loop_add_socket(b->loop, b->executors, ZMQ_POLLIN, relay_on_executors, b->relay);
    loop_timer_add(b->loop, (uint64_t)conf->heartbeat_ms, (uint64_t)conf->heartbeat_ms,
                   s_on_heartbeat, b);
    loop_on_prepare(b->loop, s_prepare, b);
    if (s_shows(b, err, errlen) < 0) goto fail;
    log_info("event=listening clients=%s executors=%s curve=%s%s%s metrics=%s redis=%s version=%s",
             conf->clients, conf->executors, b->zap ? "on" : "off", b->zap ? " public_key=" : "",
             b->zap ? b->curve_public : "", b->http ? conf->metrics : "off", b->pub ? "on" : "off",
             SNAKEPIT_VERSION);
    return b;
fail:
    broker_destroy(&b);
    return NULL;
}

int broker_run(broker_t *b)
{
    int rc = loop_run(b->loop);
    /* Stopping: every held job is answered now rather than left to the clients' liveness
     * timers, and executors are told to re-register with whoever comes next. */
    sched_shutdown(b->sched, "the broker is shutting down; the job may or may not have run");
    relay_disconnect_all(b->relay);
    /* a moment for those last messages to leave */
    int linger = 500;
    zmq_setsockopt(b->clients, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(b->executors, ZMQ_LINGER, &linger, sizeof linger);
    log_info("event=stopped");
    return rc < 0 ? 1 : 0;
}

void broker_stop(broker_t *b)
{
    loop_stop(b->loop);
}

void broker_destroy(broker_t **self_p)
{
    assert(self_p);
    broker_t *b = *self_p;
    if (!b) return;
    metrics_pub_destroy(&b->pub);
    metrics_http_destroy(&b->http);
    sched_destroy(&b->sched);
    relay_destroy(&b->relay);
    if (b->clients) zmq_close(b->clients);
    if (b->executors) zmq_close(b->executors);
    zap_destroy(&b->zap);
    zmq_ctx_term(b->ctx);
    if (b->sig_fd >= 0) close(b->sig_fd);
    loop_destroy(&b->loop);
    explicit_bzero(b->curve_secret, sizeof b->curve_secret);
    free(b);
    *self_p = NULL;
}
