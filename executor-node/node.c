/* executor-node/node.c — see node.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zmq.h>

#include "../common/buf.h"
#include "../common/clock.h"
#include "../common/curve_cert.h"
#include "../common/log.h"
#include "../common/loop.h"
#include "../common/profiles.h"
#include "../proto/mpack.h"
#include "../proto/result.h"
#include "../proto/wire.h"
#include "../proto/wire_zmq.h"
#include "../common/metrics_http.h"
#include "../common/metrics_pub.h"
#include "metrics.h"
#include "node.h"
#include "sandbox.h"
#include "zchan.h"
#include "zmsg.h"

#define MAX_ZYGOTES  (2 * WIRE_MAX_SERVICES) /* one per profile, plus one retiring each */
#define RUN_UID_NS   1000 /* the uid children drop to inside the user namespace */
#define HELLO_WAIT_S 60   /* numpy and pandas take seconds to import on a cold cache */

typedef struct {
    const profile_t *profile;      /* NULL: a free slot */
    pid_t            pid;          /* 0 while down */
    int              retiring;     /* recycling: serves what it has, gets nothing new once its
                                      successor is ready, and is closed when idle */
    long             inflight;
    zchan_t         *chan;
    int              ready;        /* HELLO received */
    zmsg_hello_t     hello;        /* python, layers, packages */
    uint64_t         restart_at_ms; /* monotonic; 0 = not scheduled */
    uint64_t         backoff_ms;
    long             restarts;
} zyg_t;

typedef struct {
    uint8_t id[ID_BYTES];
    int     zygote; /* index, -1 when the slot is free */
} inflight_t;

typedef struct {
    const node_conf_t *conf;
    loop_t            *loop;
    void              *ctx;
    void              *sock;
    zyg_t              zygotes[MAX_ZYGOTES];
    int                n_zygotes;
    inflight_t        *inflight;
    long               n_inflight;
    unsigned           layers;
    char               exe[PATH_MAX];
    char               layers_str[128];
    uint64_t           broker_seen_ms; /* last message from the broker, monotonic */
    int                sig_fd;
    int                stopping;
    int                registered;     /* READY sent at least once */
    exec_metrics_t     metrics;
    metrics_http_t    *http;
    metrics_pub_t     *pub;
    metrics_pub_t     *profiles_pub; /* sp:profiles: what each served profile has installed */
} node_t;

void node_conf_defaults(node_conf_t *c)
{
    memset(c, 0, sizeof *c);
    snprintf(c->broker, sizeof c->broker, "tcp://127.0.0.1:5556");
    snprintf(c->profiles, sizeof c->profiles, "python.basic");
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    c->slots = cpus > 0 ? cpus : 1;
    c->pool = 0; /* auto: slots + 1 */
    c->heartbeat_ms = 1000;
    c->liveness = 3;
    c->run_uid_host = 65534;
    c->run_gid_host = 65534;
    snprintf(c->python, sizeof c->python, "/usr/bin/python3.11");
    c->output_max = 8 << 20;
    c->recycle_jobs = 10000;
    c->recycle_s = 1800;
    snprintf(c->log_level, sizeof c->log_level, "info");
    snprintf(c->metrics, sizeof c->metrics, "127.0.0.1:9102");
}

/* ---- zygote processes ------------------------------------------------------------------- */

static int s_write_file(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = write(fd, text, strlen(text));
    int     e = errno;
    close(fd);
    errno = e;
    return n == (ssize_t)strlen(text) ? 0 : -1;
}

/* Maps the zygote's user namespace. As root: the zygote is root inside (it must read our
 * binary and the stdlib wherever they are) and children drop to uid 1000 inside, which is
 * the unprivileged run_uid_host outside. Unprivileged: one uid maps, children keep it. */
static int s_map_ids(node_t *n, pid_t pid, char *err, size_t errlen)
{
    char path[64], map[128];
    if (getuid() == 0) {
        snprintf(map, sizeof map, "0 0 1\n%d %ld 1\n", RUN_UID_NS, n->conf->run_uid_host);
        snprintf(path, sizeof path, "/proc/%d/uid_map", pid);
        if (s_write_file(path, map) < 0) goto fail;
        snprintf(map, sizeof map, "0 0 1\n%d %ld 1\n", RUN_UID_NS, n->conf->run_gid_host);
        snprintf(path, sizeof path, "/proc/%d/gid_map", pid);
        if (s_write_file(path, map) < 0) goto fail;
        return 0;
    }
    snprintf(path, sizeof path, "/proc/%d/setgroups", pid);
    if (s_write_file(path, "deny") < 0) goto fail;
    snprintf(map, sizeof map, "0 %d 1\n", (int)getuid());
    snprintf(path, sizeof path, "/proc/%d/uid_map", pid);
    if (s_write_file(path, map) < 0) goto fail;
    snprintf(map, sizeof map, "0 %d 1\n", (int)getgid());
    snprintf(path, sizeof path, "/proc/%d/gid_map", pid);
    if (s_write_file(path, map) < 0) goto fail;
    return 0;
fail:
    snprintf(err, errlen, "writing %s: %s", path, strerror(errno));
    return -1;
}

static int s_spawn(node_t *n, zyg_t *z, char *err, size_t errlen)
{
    int sv[2], sync[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0 || pipe2(sync, O_CLOEXEC) < 0) {
        snprintf(err, errlen, "socketpair/pipe: %s", strerror(errno));
        return -1;
    }
    /* Everything the child needs is built before clone: between clone and execve it may only
     * make async-signal-safe calls (ZeroMQ's threads may hold locks we would inherit). */
    char layers[16], slots[24], pool[24], uid[16], drop[4], cap[24], rj[24], rs[24];
    snprintf(layers, sizeof layers, "%u", n->layers);
    snprintf(slots, sizeof slots, "%ld", n->conf->slots);
    /* auto: enough warm children for every slot plus one, so a burst never waits on a fork */
    snprintf(pool, sizeof pool, "%ld", n->conf->pool ? n->conf->pool : n->conf->slots + 1);
    snprintf(uid, sizeof uid, "%d", RUN_UID_NS);
    int drop_uid = getuid() == 0 && (n->layers & LAYER_NAMESPACES);
    snprintf(drop, sizeof drop, "%d", drop_uid);
    snprintf(cap, sizeof cap, "%ld", n->conf->output_max);
    snprintf(rj, sizeof rj, "%ld", n->conf->recycle_jobs);
    snprintf(rs, sizeof rs, "%ld", n->conf->recycle_s);
    char *argv[] = {"snakepit-zygote", "--zygote", (char *)z->profile->name, "--layers", layers,
                    "--slots", slots, "--pool", pool, "--run-uid", uid, "--run-gid", uid,
                    "--drop-uid", drop, "--stream-cap", cap, "--recycle-jobs", rj,
                    "--recycle-s", rs, "--python", (char *)n->conf->python, "--node",
                    (char *)n->conf->node_id, "--log-level",
                    (char *)n->conf->log_level, NULL};
    /* A scrubbed environment: nothing of the host's (tokens, paths, proxies) reaches a job.
     * BLAS and OpenMP are pinned to one thread before any of them is imported. */
    char  asan[512] = "ASAN_OPTIONS=";
    char *asan_env = getenv("ASAN_OPTIONS");
    if (asan_env) strncat(asan, asan_env, sizeof asan - strlen(asan) - 1);
#if defined(__SANITIZE_ADDRESS__)
    /* A job past its memory limit must see MemoryError, as in a normal build, not an ASan
     * out-of-memory report. */
    strncat(asan, asan_env ? ":allocator_may_return_null=1" : "allocator_may_return_null=1",
            sizeof asan - strlen(asan) - 1);
    asan_env = asan;
#endif
    char *envp[] = {"PATH=/usr/bin:/bin", "LANG=C.UTF-8", "LC_ALL=C.UTF-8", "TZ=UTC",
                    "HOME=/nonexistent", "OPENBLAS_NUM_THREADS=1", "OMP_NUM_THREADS=1",
                    "MKL_NUM_THREADS=1", "NUMEXPR_NUM_THREADS=1", "MPLBACKEND=Agg",
                    /* resolve every symbol in the zygote, once: lazy binding would write each
                     * child's GOT on first call (a copy-on-write fault and a symbol lookup) */
                    "LD_BIND_NOW=1",
                    asan_env ? asan : NULL, NULL};
    long flags = SIGCHLD;
    if (n->layers & LAYER_NAMESPACES)
        flags |= CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWNS;
    pid_t pid = (pid_t)syscall(SYS_clone, flags, NULL, NULL, NULL, NULL);
    if (pid < 0) {
        snprintf(err, errlen, "layer namespaces: clone into new namespaces failed: %s "
                 "(user namespaces disabled? --disable-layer namespaces to run without them)",
                 strerror(errno));
        close(sv[0]), close(sv[1]), close(sync[0]), close(sync[1]);
        return -1;
    }
    if (pid == 0) {
        char b;
        close(sync[1]);
        if (read(sync[0], &b, 1) != 1) _exit(127); /* the node failed to map our ids */
        if (dup2(sv[1], 3) < 0) _exit(127);        /* dup2 clears FD_CLOEXEC on fd 3 */
        execve(n->exe, argv, envp);
        _exit(127);
    }
    close(sv[1]);
    close(sync[0]);
    int rc = 0;
    if ((n->layers & LAYER_NAMESPACES) && s_map_ids(n, pid, err, errlen) < 0) rc = -1;
    if (rc == 0 && write(sync[1], "g", 1) != 1) {
        snprintf(err, errlen, "starting zygote: %s", strerror(errno));
        rc = -1;
    }
    close(sync[1]);
    if (rc < 0) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        close(sv[0]);
        return -1;
    }
    z->pid = pid;
    z->chan = zchan_new(sv[0]);
    z->ready = 0;
    return 0;
}

/* ---- broker side ---------------------------------------------------------------------- */

static void s_send(node_t *n, const frame_t *frames, int count)
{
    if (!n->sock) return;
    if (wire_send(n->sock, NULL, frames, count) < 0 && errno != EAGAIN)
        log_warn("event=send_failed error=\"%s\"", zmq_strerror(errno));
}

static void s_send_cmd(node_t *n, uint8_t cmd, const void *body, size_t len)
{
    frame_t f[3] = {{(const uint8_t *)WIRE_WORKER_TAG, 4}, {&cmd, 1}, {body, len}};
    s_send(n, f, body ? 3 : 2);
}

static void s_send_credit(node_t *n, uint64_t credit)
{
    buf_t b;
    buf_init(&b);
    mpw_t w;
    mpw_init(&w, &b);
    mpw_uint(&w, credit);
    s_send_cmd(n, W_CREDIT, b.data, b.len);
    buf_free(&b);
}

static void s_send_result(node_t *n, const uint8_t id[ID_BYTES], const void *body, size_t len)
{
    uint8_t cmd = W_RESULT;
    frame_t f[4] = {{(const uint8_t *)WIRE_WORKER_TAG, 4}, {&cmd, 1}, {id, ID_BYTES}, {body, len}};
    s_send(n, f, 4);
}

static void s_send_simple(node_t *n, const uint8_t id[ID_BYTES], status_t st, const char *type,
                          const char *msg)
{
    buf_t b;
    buf_init(&b);
    result_encode_simple(&b, st, type, msg);
    s_send_result(n, id, b.data, b.len);
    buf_free(&b);
}

static void s_send_ready(node_t *n)
{
    ready_t r = {0};
    snprintf(r.node, sizeof r.node, "%s", n->conf->node_id);
    for (int i = 0; i < n->n_zygotes; i++) {
        const profile_t *p = n->zygotes[i].profile;
        int              dup = !p;
        for (int k = 0; k < r.n_services && !dup; k++) dup = !strcmp(r.services[k], p->name);
        if (!dup && r.n_services < WIRE_MAX_SERVICES)
            snprintf(r.services[r.n_services++], sizeof r.services[0], "%s", p->name);
    }
    r.slots = (uint32_t)n->conf->slots;
    snprintf(r.python, sizeof r.python, "%s", n->zygotes[0].hello.python);
    snprintf(r.layers, sizeof r.layers, "%s", n->layers_str);
    buf_t b;
    buf_init(&b);
    ready_encode(&r, &b);
    s_send_cmd(n, W_READY, b.data, b.len);
    buf_free(&b);
    s_send_credit(n, (uint64_t)(n->conf->slots - n->n_inflight));
}

static inflight_t *s_inflight_find(node_t *n, const uint8_t *id)
{
    for (long i = 0; i < n->conf->slots; i++)
        if (n->inflight[i].zygote >= 0 && memcmp(n->inflight[i].id, id, ID_BYTES) == 0)
            return &n->inflight[i];
    return NULL;
}

static void s_on_job(node_t *n, const worker_msg_t *m)
{
    /* the profile's ready zygote; a retiring one only until its successor is ready */
    zyg_t *z = NULL;
    int    zi = -1;
    for (int i = 0; i < n->n_zygotes; i++) {
        zyg_t *k = &n->zygotes[i];
        if (!k->profile || strcmp(k->profile->name, m->service) != 0) continue;
        int better = !z || (k->ready && !z->ready) || (k->ready && z->retiring && !k->retiring);
        if (better) z = k, zi = i;
    }
    inflight_t *slot = NULL;
    for (long i = 0; i < n->conf->slots && !slot; i++)
        if (n->inflight[i].zygote < 0) slot = &n->inflight[i];
    if (!z || !slot || !z->ready || !z->chan) {
        const char *why = !z ? "this executor does not serve the service"
                          : !slot ? "no free slot (the broker sent more jobs than credits)"
                                  : "the profile's sandbox is restarting";
        log_warn("event=job_refused service=%s reason=\"%s\"", m->service, why);
        n->metrics.refused++;
        /* the RESULT hands the credit back (PROTOCOL.md §3) */
        s_send_simple(n, m->job_id, z && slot ? ST_INTERNAL_ERROR : ST_REJECTED, "ExecutorRefused", why);
        return;
    }
    memcpy(slot->id, m->job_id, ID_BYTES);
    slot->zygote = zi;
    n->n_inflight++;
    n->metrics.busy = n->n_inflight;
    z->inflight++;
    zmsg_t job = {.type = ZM_JOB, .id = m->job_id, .payload = m->body.data, .len = m->body.len};
    if (zmsg_send(z->chan, &job) < 0)
        log_warn("event=zygote_send_failed profile=%s", z->profile->name);
    loop_set_fd_events(n->loop, zchan_fd(z->chan), ZMQ_POLLIN | (zchan_pending(z->chan) ? ZMQ_POLLOUT : 0));
}

static void s_on_cancel(node_t *n, const uint8_t *id)
{
    inflight_t *slot = s_inflight_find(n, id);
    if (!slot) return;
    zyg_t *z = &n->zygotes[slot->zygote];
    zmsg_t cancel = {.type = ZM_CANCEL, .id = id};
    if (z->chan) zmsg_send(z->chan, &cancel);
}

static void s_connect(node_t *n);

static void s_on_broker(loop_t *loop, short revents, void *arg)
{
    (void)loop, (void)revents;
    node_t    *n = arg;
    wire_msg_t msg;
    for (int budget = 0; budget < 1000 && n->sock; budget++) {
        int rc = wire_recv(n->sock, &msg, 0);
        if (rc <= 0) break;
        worker_msg_t m;
        char         err[128];
        n->broker_seen_ms = clock_mono_ms();
        n->metrics.broker_connected = 1;
        if (msg.overflow || wire_parse_worker(&msg.frames, &m, err, sizeof err) < 0) {
            log_warn("event=bad_broker_message error=\"%s\"", msg.overflow ? "too many frames" : err);
            n->metrics.malformed++;
        } else if (m.cmd == W_JOB) {
            s_on_job(n, &m);
        } else if (m.cmd == W_CANCEL) {
            s_on_cancel(n, m.job_id);
        } else if (m.cmd == W_DISCONNECT) {
            log_info("event=broker_disconnect");
            wire_msg_close(&msg);
            s_connect(n);
            return;
        }
        wire_msg_close(&msg);
    }
}

/* CURVE to the broker when configured (broker/README.md): the broker's public key and this
 * node's key pair, read at each (re)connect so replaced key files take effect. 0 when off or
 * set; -1 (logged) when configured but unusable: then the node does not connect at all rather
 * than fall back to plain text. */
static int s_curve(node_t *n)
{
    const node_conf_t *c = n->conf;
    if (!c->curve_server_key[0] && !c->curve_secret_file[0]) return 0;
    char         server[CURVE_Z85_LEN + 1], err[1200] = "--curve-server-key and --curve-secret-file "
                                                        "go together";
    curve_cert_t cert = {0};
    int          ok = c->curve_server_key[0] && c->curve_secret_file[0] &&
             curve_key_resolve(c->curve_server_key, server, err, sizeof err) == 0 &&
             curve_cert_load(c->curve_secret_file, &cert, err, sizeof err) == 0;
    if (ok && !cert.secret_key[0]) {
        snprintf(err, sizeof err, "%s holds no secret-key (use the _secret file)", c->curve_secret_file);
        ok = 0;
    }
    if (!ok) {
        log_error("event=curve_config_failed error=\"%s\"", err);
        return -1;
    }
    zmq_setsockopt(n->sock, ZMQ_CURVE_SERVERKEY, server, CURVE_Z85_LEN + 1);
    zmq_setsockopt(n->sock, ZMQ_CURVE_PUBLICKEY, cert.public_key, CURVE_Z85_LEN + 1);
    zmq_setsockopt(n->sock, ZMQ_CURVE_SECRETKEY, cert.secret_key, CURVE_Z85_LEN + 1);
    explicit_bzero(&cert, sizeof cert);
    return 0;
}

static void s_connect(node_t *n)
{
    if (n->sock) {
        loop_remove_socket(n->loop, n->sock);
        zmq_close(n->sock);
    }
    n->sock = zmq_socket(n->ctx, ZMQ_DEALER);
    int linger = 0, hwm = 100000;
    zmq_setsockopt(n->sock, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(n->sock, ZMQ_SNDHWM, &hwm, sizeof hwm);
    zmq_setsockopt(n->sock, ZMQ_RCVHWM, &hwm, sizeof hwm);
    /* with CURVE misconfigured (logged) it stays unconnected; the heartbeat tries again */
    if (s_curve(n) == 0 && zmq_connect(n->sock, n->conf->broker) < 0)
        log_error("event=connect_failed broker=%s error=\"%s\"", n->conf->broker, zmq_strerror(errno));
    loop_add_socket(n->loop, n->sock, ZMQ_POLLIN, s_on_broker, n);
    n->broker_seen_ms = clock_mono_ms();
    if (n->registered) n->metrics.reconnects++;
    n->registered = 1;
    n->metrics.broker_connected = 0; /* until the broker speaks */
    s_send_ready(n);
    log_info("event=registered broker=%s slots=%ld services=%s", n->conf->broker, n->conf->slots,
             n->conf->profiles);
}

static void s_on_heartbeat(loop_t *loop, void *arg)
{
    (void)loop;
    node_t *n = arg;
    s_send_cmd(n, W_HEARTBEAT, NULL, 0);
    uint64_t silent = clock_mono_ms() - n->broker_seen_ms;
    if (silent > (uint64_t)(n->conf->heartbeat_ms * n->conf->liveness)) {
        log_warn("event=broker_silent ms=%llu action=reconnect", (unsigned long long)silent);
        s_connect(n); /* a fresh socket re-registers; the broker requeues what it had leased */
    }
}

/* ---- zygote channel --------------------------------------------------------------------- */

static void s_zygote_down(node_t *n, zyg_t *z, const char *why);

typedef struct {
    node_t *n;
    zyg_t  *z;
} zctx_t;

static void s_watch(node_t *n, int i);

/* A zygote asked to be recycled (after --recycle-jobs jobs or --recycle-s seconds: its
 * children share its address-space layout and hash secret, so it must not live forever).
 * Its successor starts now; it keeps serving until the successor is ready. */
static void s_recycle(node_t *n, zyg_t *z)
{
    if (z->retiring) return;
    int free_slot = -1;
    for (int i = 0; i < MAX_ZYGOTES && free_slot < 0; i++)
        if (!n->zygotes[i].profile) free_slot = i;
    if (free_slot < 0) {
        log_warn("event=recycle_deferred profile=%s reason=\"no free zygote slot\"", z->profile->name);
        return;
    }
    zyg_t *succ = &n->zygotes[free_slot];
    memset(succ, 0, sizeof *succ);
    succ->profile = z->profile;
    char err[512];
    if (s_spawn(n, succ, err, sizeof err) < 0) {
        log_error("event=recycle_failed profile=%s error=\"%s\"", z->profile->name, err);
        succ->profile = NULL;
        return;
    }
    if (free_slot >= n->n_zygotes) n->n_zygotes = free_slot + 1;
    z->retiring = 1;
    exec_metrics_profile(&n->metrics, z->profile->name)->zygote_recycles++;
    s_watch(n, free_slot);
    log_info("event=zygote_recycling profile=%s old_pid=%d new_pid=%d", z->profile->name, z->pid, succ->pid);
}

/* Closes retiring zygotes that have nothing in flight once a successor is ready; closing the
 * channel ends the zygote (and its idle children, by PDEATHSIG). Called from the periodic tick
 * only: never from a channel's message callback, which may be reading that very channel. */
static void s_retire_idle(node_t *n)
{
    for (int i = 0; i < n->n_zygotes; i++) {
        zyg_t *z = &n->zygotes[i];
        if (!z->profile || !z->retiring || z->inflight > 0 || !z->chan) continue;
        int succ_ready = 0;
        for (int k = 0; k < n->n_zygotes; k++)
            succ_ready |= k != i && n->zygotes[k].profile == z->profile && n->zygotes[k].ready &&
                          !n->zygotes[k].retiring;
        if (!succ_ready) continue;
        log_info("event=zygote_retired profile=%s pid=%d", z->profile->name, z->pid);
        loop_remove_fd(n->loop, zchan_fd(z->chan));
        zchan_destroy(&z->chan); /* its SIGCHLD finds the slot already free */
        z->profile = NULL;
        z->ready = 0;
    }
}

static void s_on_zmsg(void *arg, const zmsg_t *msg)
{
    zctx_t *c = arg;
    node_t *n = c->n;
    zyg_t  *z = c->z;
    switch (msg->type) {
    case ZM_RESULT: {
        inflight_t *slot = s_inflight_find(n, msg->id);
        if (!slot) return; /* cancelled and answered already, or from before a reconnect */
        slot->zygote = -1;
        n->n_inflight--;
        n->metrics.busy = n->n_inflight;
        z->inflight--;
        s_send_result(n, msg->id, msg->payload, msg->len); /* returns the slot's credit */
        break;
    }
    case ZM_HELLO:
        z->hello = msg->hello;
        z->ready = 1;
        z->backoff_ms = 0;
        log_info("event=zygote_ready profile=%s pid=%d python=%s layers=%s", z->profile->name,
                 z->pid, z->hello.python, z->hello.layers);
        break;
    case ZM_PROGRESS:
        if (s_inflight_find(n, msg->id)) {
            uint8_t cmd = W_PROGRESS;
            frame_t f[4] = {{(const uint8_t *)WIRE_WORKER_TAG, 4}, {&cmd, 1}, {msg->id, ID_BYTES},
                            {msg->payload, msg->len}};
            s_send(n, f, 4);
        }
        break;
    case ZM_STATS: exec_metrics_job(&n->metrics, z->profile->name, &msg->stats); break;
    case ZM_RETIRE: s_recycle(n, z); break;
    case ZM_FATAL:
        log_error("event=zygote_fatal profile=%s error=\"%.*s\"", z->profile->name, (int)msg->len,
                  msg->payload);
        break;
    default: log_warn("event=unexpected_message type=%s", zmsg_name(msg->type)); break;
    }
}

static void s_on_zygote(loop_t *loop, short revents, void *arg)
{
    zctx_t *c = arg;
    if (!c->z->chan) return;
    if (revents & ZMQ_POLLOUT) zchan_flush(c->z->chan);
    if ((revents & (ZMQ_POLLIN | ZMQ_POLLERR)) && zmsg_read(c->z->chan, s_on_zmsg, c) < 0) {
        s_zygote_down(c->n, c->z, "channel closed");
        return;
    }
    loop_set_fd_events(loop, zchan_fd(c->z->chan),
                       ZMQ_POLLIN | (zchan_pending(c->z->chan) ? ZMQ_POLLOUT : 0));
}

static zctx_t s_zctx[MAX_ZYGOTES];

static void s_watch(node_t *n, int i)
{
    s_zctx[i] = (zctx_t){n, &n->zygotes[i]};
    loop_add_fd(n->loop, zchan_fd(n->zygotes[i].chan), ZMQ_POLLIN, s_on_zygote, &s_zctx[i]);
}

static void s_zygote_down(node_t *n, zyg_t *z, const char *why)
{
    int zi = (int)(z - n->zygotes);
    if (!z->profile) { /* retired on purpose: just reaped */
        z->pid = 0;
        return;
    }
    log_error("event=zygote_down profile=%s pid=%d reason=\"%s\" restarts=%ld", z->profile->name,
              z->pid, why, z->restarts);
    if (z->chan) {
        loop_remove_fd(n->loop, zchan_fd(z->chan));
        zchan_destroy(&z->chan);
    }
    if (z->pid > 0) kill(z->pid, SIGKILL); /* reaped by the SIGCHLD handler */
    z->pid = 0;
    z->ready = 0;
    /* Every job it held gets its one answer now. */
    for (long i = 0; i < n->conf->slots; i++) {
        if (n->inflight[i].zygote != zi) continue;
        s_send_simple(n, n->inflight[i].id, ST_INTERNAL_ERROR, "SandboxCrashed",
                      "the executor's sandbox process died while running this job");
        n->inflight[i].zygote = -1;
        n->n_inflight--;
        n->metrics.busy = n->n_inflight;
    }
    z->inflight = 0;
    if (z->retiring) { /* its successor already exists */
        z->profile = NULL;
        return;
    }
    z->backoff_ms = z->backoff_ms ? z->backoff_ms * 2 : 250;
    if (z->backoff_ms > 30000) z->backoff_ms = 30000;
    z->restart_at_ms = clock_mono_ms() + z->backoff_ms;
}

static void s_on_tick(loop_t *loop, void *arg)
{
    (void)loop;
    node_t  *n = arg;
    uint64_t now = clock_mono_ms();
    s_retire_idle(n);
    for (int i = 0; i < n->n_zygotes; i++) {
        zyg_t *z = &n->zygotes[i];
        if (!z->profile || z->chan || !z->restart_at_ms || now < z->restart_at_ms || n->stopping) continue;
        char err[512];
        z->restart_at_ms = 0;
        z->restarts++;
        exec_metrics_profile(&n->metrics, z->profile->name)->zygote_restarts++;
        if (s_spawn(n, z, err, sizeof err) < 0) {
            log_error("event=zygote_restart_failed profile=%s error=\"%s\"", z->profile->name, err);
            z->backoff_ms = z->backoff_ms ? z->backoff_ms * 2 : 250;
            if (z->backoff_ms > 30000) z->backoff_ms = 30000;
            z->restart_at_ms = now + z->backoff_ms;
            continue;
        }
        s_watch(n, i);
    }
}

static void s_on_signal(loop_t *loop, short revents, void *arg)
{
    (void)revents;
    node_t                 *n = arg;
    struct signalfd_siginfo si;
    while (read(n->sig_fd, &si, sizeof si) == sizeof si) {
        if (si.ssi_signo == SIGCHLD) {
            int   st;
            pid_t pid;
            while ((pid = waitpid(-1, &st, WNOHANG)) > 0)
                for (int i = 0; i < n->n_zygotes; i++)
                    if (n->zygotes[i].pid == pid) {
                        if (!n->zygotes[i].profile) n->zygotes[i].pid = 0; /* retired */
                        else s_zygote_down(n, &n->zygotes[i], "process exited");
                    }
        } else {
            log_info("event=stopping signal=%u", si.ssi_signo);
            n->stopping = 1;
            loop_stop(loop);
        }
    }
}

static void s_profiles_json(const node_t *n, const zyg_t *only, buf_t *out);

/* The node's hash in Redis, for `snakepit status` and get_sandbox_info. */
static void s_fill_snapshot(void *arg, metrics_pub_t *pub)
{
    node_t *n = arg;
    uint64_t jobs = 0, violations = 0, forks = 0, restarts = 0;
    char     services[256] = "";
    size_t   used = 0;
    for (int i = 0; i < n->metrics.n_profiles; i++) {
        const profile_stats_t *p = &n->metrics.profiles[i];
        for (int s = 0; s < ST__COUNT; s++) jobs += p->jobs[s];
        violations += p->jobs[ST_SECURITY_VIOLATION];
        forks += p->forks;
        restarts += p->zygote_restarts;
    }
    for (int i = 0; i < n->n_zygotes; i++)
        if (n->zygotes[i].profile && !n->zygotes[i].retiring)
            used += (size_t)snprintf(services + used, used < sizeof services ? sizeof services - used : 0,
                                     "%s%s", used ? "," : "", n->zygotes[i].profile->name);
    metrics_pub_field(pub, "node", "%s", n->conf->node_id);
    metrics_pub_field(pub, "services", "%s", services);
    metrics_pub_field(pub, "slots", "%ld", n->conf->slots);
    metrics_pub_field(pub, "busy", "%ld", n->n_inflight);
    metrics_pub_field(pub, "free", "%ld", n->conf->slots - n->n_inflight);
    metrics_pub_field(pub, "python", "%s", n->n_zygotes ? n->zygotes[0].hello.python : "");
    metrics_pub_field(pub, "layers", "%s", n->layers_str);
    buf_t packages;
    buf_init(&packages);
    s_profiles_json(n, NULL, &packages);
    metrics_pub_field(pub, "profiles", "%s", (const char *)packages.data);
    buf_free(&packages);
    metrics_pub_field(pub, "jobs", "%llu", (unsigned long long)jobs);
    metrics_pub_field(pub, "violations", "%llu", (unsigned long long)violations);
    metrics_pub_field(pub, "forks", "%llu", (unsigned long long)forks);
    metrics_pub_field(pub, "zygote_restarts", "%llu", (unsigned long long)restarts);
    metrics_pub_field(pub, "broker_connected", "%d", n->metrics.broker_connected);
    metrics_pub_field(pub, "ts_ms", "%llu", (unsigned long long)clock_wall_ms()); /* as the broker's */
}

/* {"profile": {"python": "3.11.2", "packages": {...}}, ...} of the ready zygotes. Profile
 * names are [A-Za-z0-9._-] and the versions came as JSON from the zygote: no escaping. */
static void s_profiles_json(const node_t *n, const zyg_t *only, buf_t *out)
{
    int first = 1;
    if (!only) buf_puts(out, "{");
    for (int i = 0; i < n->n_zygotes; i++) {
        const zyg_t *z = &n->zygotes[i];
        if (!z->profile || !z->ready || z->retiring || (only && z != only)) continue;
        if (!only) buf_printf(out, "%s\"%s\":", first ? "" : ",", z->profile->name);
        buf_printf(out, "{\"python\":\"%s\",\"packages\":%s,\"node\":\"%s\",\"updated_ms\":%llu}",
                   z->hello.python, z->hello.packages[0] ? z->hello.packages : "{}", n->conf->node_id,
                   (unsigned long long)clock_wall_ms());
        first = 0;
    }
    if (!only) buf_puts(out, "}");
}

/* sp:profiles, one field per profile, shared by every node: get_sandbox_info reads one key to
 * show each profile's packages and versions (nodes of one install agree; the freshest wins). */
static void s_fill_profiles(void *arg, metrics_pub_t *pub)
{
    node_t *n = arg;
    for (int i = 0; i < n->n_zygotes; i++) {
        const zyg_t *z = &n->zygotes[i];
        if (!z->profile || !z->ready || z->retiring) continue;
        buf_t b;
        buf_init(&b);
        s_profiles_json(n, z, &b);
        metrics_pub_field(pub, z->profile->name, "%s", (const char *)b.data);
        buf_free(&b);
    }
}

/* Waits (before the loop exists) for every zygote's HELLO, or the first FATAL. */
static int s_wait_ready(node_t *n)
{
    uint64_t give_up = clock_mono_ms() + HELLO_WAIT_S * 1000u;
    for (;;) {
        int pending = 0;
        for (int i = 0; i < n->n_zygotes; i++) {
            zyg_t *z = &n->zygotes[i];
            if (!z->chan) return -1;
            if (z->ready) continue;
            pending++;
            struct pollfd p = {zchan_fd(z->chan), POLLIN, 0};
            if (poll(&p, 1, 100) > 0) {
                zctx_t c = {n, z};
                int    rc = zmsg_read(z->chan, s_on_zmsg, &c);
                if (!z->ready && rc < 0) return -1;
            }
        }
        if (!pending) return 0;
        if (clock_mono_ms() > give_up) {
            log_error("event=zygote_timeout seconds=%d", HELLO_WAIT_S);
            return -1;
        }
    }
}

int node_main(const node_conf_t *conf)
{
    node_t n = {0};
    char   err[512];
    n.conf = conf;
    ssize_t len = readlink("/proc/self/exe", n.exe, sizeof n.exe - 1);
    if (len <= 0) {
        log_error("event=startup_failed error=\"cannot find own executable\"");
        return 1;
    }
    n.exe[len] = '\0';
    /* the zygote binary sits next to ours (build/bin/, /usr/local/bin/...) */
    char *slash = strrchr(n.exe, '/');
    size_t dir_len = slash ? (size_t)(slash - n.exe) + 1 : 0;
    if (dir_len + sizeof "snakepit-zygote" > sizeof n.exe) {
        log_error("event=startup_failed error=\"executable path too long\"");
        return 1;
    }
    memcpy(n.exe + dir_len, "snakepit-zygote", sizeof "snakepit-zygote");
    if (access(n.exe, X_OK) < 0) {
        log_error("event=startup_failed error=\"cannot run %s: %s\"", n.exe, strerror(errno));
        return 1;
    }
    unsigned off = 0;
    if (sandbox_layers_parse(conf->disable_layer, &off, err, sizeof err) < 0) {
        log_error("event=startup_failed error=\"%s\"", err);
        return 2;
    }
    n.layers = LAYER_ALL & ~off;
    sandbox_layers_format(n.layers, n.layers_str, sizeof n.layers_str);
    if (off) {
        char disabled[128];
        sandbox_layers_format(off, disabled, sizeof disabled);
        log_warn("event=layers_disabled layers=%s", disabled);
    }
    /* profiles */
    const char *p = conf->profiles;
    while (*p && n.n_zygotes < MAX_ZYGOTES) {
        size_t l = strcspn(p, ",");
        char   name[65];
        snprintf(name, sizeof name, "%.*s", (int)l, p);
        const profile_t *prof = profile_find(name);
        if (!prof) {
            log_error("event=startup_failed error=\"unknown profile %s\"", name);
            return 2;
        }
        int dup = 0;
        for (int i = 0; i < n.n_zygotes; i++) dup |= n.zygotes[i].profile == prof;
        if (!dup) n.zygotes[n.n_zygotes++].profile = prof;
        p += l;
        if (*p == ',') p++;
    }
    if (!n.n_zygotes) {
        log_error("event=startup_failed error=\"no profile to serve\"");
        return 2;
    }
    /* Signals go through a signalfd; zygotes get their own mask reset by execve. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigprocmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    n.sig_fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);

    /* Zygotes first: no ZeroMQ thread exists yet. */
    for (int i = 0; i < n.n_zygotes; i++)
        if (s_spawn(&n, &n.zygotes[i], err, sizeof err) < 0) {
            log_error("event=startup_failed profile=%s error=\"%s\"", n.zygotes[i].profile->name, err);
            return 3;
        }
    if (s_wait_ready(&n) < 0) {
        log_error("event=startup_failed error=\"a sandbox could not start (see zygote_fatal above)\"");
        for (int i = 0; i < n.n_zygotes; i++)
            if (n.zygotes[i].pid > 0) kill(n.zygotes[i].pid, SIGKILL);
        return 3;
    }
    n.inflight = xcalloc((size_t)conf->slots, sizeof *n.inflight);
    for (long i = 0; i < conf->slots; i++) n.inflight[i].zygote = -1;

    exec_metrics_init(&n.metrics, conf->node_id, n.layers_str, conf->slots);
    for (int i = 0; i < n.n_zygotes; i++) exec_metrics_profile(&n.metrics, n.zygotes[i].profile->name);
    n.ctx = zmq_ctx_new();
    n.loop = loop_new();
    if (conf->metrics[0] && strcmp(conf->metrics, "off") != 0) {
        n.http = metrics_http_new(n.loop, conf->metrics, exec_metrics_render, &n.metrics, err, sizeof err);
        if (!n.http) {
            log_error("event=startup_failed error=\"metrics: %s\"", err);
            return 2;
        }
        log_info("event=metrics_listening port=%d", metrics_http_port(n.http));
    }
    if (conf->redis[0]) {
        char key[160];
        snprintf(key, sizeof key, "sp:metrics:executor:%s", conf->node_id);
        n.pub = metrics_pub_new(n.loop, conf->redis, key, 1000, 10, s_fill_snapshot, &n, err, sizeof err);
        if (!n.pub) log_warn("event=snapshot_disabled error=\"%s\"", err);
        n.profiles_pub = metrics_pub_new(n.loop, conf->redis, "sp:profiles", 5000, 60, s_fill_profiles,
                                         &n, err, sizeof err);
        if (!n.profiles_pub) log_warn("event=profiles_snapshot_disabled error=\"%s\"", err);
    }
    loop_add_fd(n.loop, n.sig_fd, ZMQ_POLLIN, s_on_signal, &n);
    for (int i = 0; i < n.n_zygotes; i++) s_watch(&n, i);
    s_connect(&n);
    loop_timer_add(n.loop, (uint64_t)conf->heartbeat_ms, (uint64_t)conf->heartbeat_ms, s_on_heartbeat, &n);
    loop_timer_add(n.loop, 100, 100, s_on_tick, &n);
    loop_run(n.loop);

    /* Shutting down: say so, so the broker requeues at once instead of waiting out the
     * heartbeat; the zygotes (and with them every child) die with their channel. */
    s_send_cmd(&n, W_DISCONNECT, NULL, 0);
    for (int i = 0; i < n.n_zygotes; i++) {
        if (n.zygotes[i].chan) zchan_destroy(&n.zygotes[i].chan);
        if (n.zygotes[i].pid > 0) {
            kill(n.zygotes[i].pid, SIGKILL);
            waitpid(n.zygotes[i].pid, NULL, 0);
        }
    }
    zmq_close(n.sock);
    metrics_pub_destroy(&n.pub);
    metrics_pub_destroy(&n.profiles_pub);
    metrics_http_destroy(&n.http);
    zmq_ctx_term(n.ctx);
    loop_destroy(&n.loop);
    free(n.inflight);
    log_info("event=stopped");
    return 0;
}
