/* executor-node/node/zygotes.c — see zygotes.h. */
#define _GNU_SOURCE
#include <assert.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zmq.h>

#include "common/clock.h"
#include "common/log.h"
#include "proto/wire.h"
#include "executor-node/link/emsg.h"
#include "executor-node/link/layers.h"
#include "executor-node/link/zchan.h"
#include "executor-node/link/zmsg.h"
#include "spawn.h"
#include "zygotes.h"

#define ENV_ZYGOTES_MAX 16 /* dependency environments' zygotes (envs.h), --max-env-zygotes */
/* one per profile and per environment, plus one retiring each */
#define ZYGOTES_MAX    (2 * (WIRE_MAX_SERVICES + ENV_ZYGOTES_MAX))
#define HELLO_WAIT_S   60 /* numpy and pandas take seconds to import on a cold cache */
#define BACKOFF_MAX_MS 30000

typedef struct {
    const profile_t *profile; /* NULL: a free slot */
    pid_t pid;                /* 0 while down */
    int retiring;             /* recycling: serves what it has, gets nothing new once its
                                 successor is ready, and is closed when idle */
    long inflight;            /* jobs sent, not yet answered */
    long sessions;            /* sessions it keeps (ZM_SESSION up, not yet down) */
    zchan_t *chan;
    int ready;              /* HELLO received */
    zmsg_hello_t hello;     /* python, layers (its packages are kept below) */
    char packages[4096];    /* JSON {package: version} from HELLO; "" when none or too long */
    uint64_t restart_at_ms; /* monotonic; 0 = not scheduled */
    uint64_t backoff_ms;
    long restarts;
    /* a dependency environment's zygote (envs.h): never restarted, stopped when idle */
    char env_key[49];       /* "" for a profile's own zygote */
    char env_site[PATH_MAX];
    char env_modules[4096];
    uint64_t used_ms;       /* last job sent, monotonic */
    char fatal[512];        /* what its FATAL said, for the jobs that waited for it */
    /* network egress: the socket its listener comes over (its fd 4), the listener until the
     * egress link takes it, and the id the link gave it */
    int egress_sock;
    int listener_fd;
    uint32_t listener;
} zyg_t;

typedef struct { /* the loop's argument for one zygote's channel */
    zygotes_t *set;
    int zi;
} watch_t;

typedef struct { /* a profile asked for whose zygote could not start */
    const profile_t *profile;
    char reason[512];
} unserved_t;

struct zygotes {
    const node_conf_t *conf;
    const char *exe;         /* snakepit-zygote */
    unsigned layers;         /* LAYER_* in force */
    exec_metrics_t *metrics; /* restarts, recycles and the zygotes' STATS land here */
    loop_t *loop;            /* NULL until attached */
    zygotes_hooks_t hooks;
    int stopping;
    int egress; /* zygotes serve jobs with network egress (conf->egress, namespaces on) */
    zyg_t z[ZYGOTES_MAX];
    watch_t watch[ZYGOTES_MAX];
    int n; /* slots in use; a free one may sit below n */
    unserved_t unserved[WIRE_MAX_SERVICES];
    int n_unserved;
};

zygotes_t *zygotes_new(const node_conf_t *conf, const char *exe, unsigned layers,
                       exec_metrics_t *metrics)
{
    zygotes_t *self = xcalloc(1, sizeof *self);
    self->conf = conf;
    self->exe = exe;
    self->layers = layers;
    self->metrics = metrics;
    self->egress = conf->egress && (layers & LAYER_NAMESPACES);
    for (int i = 0; i < ZYGOTES_MAX; i++) {
        self->watch[i] = (watch_t){self, i};
        self->z[i].egress_sock = self->z[i].listener_fd = -1;
    }
    return self;
}

/* A slot made ready for a new zygote: nothing of the last one's, no descriptor (0 is one). */
static void s_slot_clear(zyg_t *z)
{
    memset(z, 0, sizeof *z);
    z->egress_sock = z->listener_fd = -1;
}

/* ---- network egress ------------------------------------------------------------------------ */

/* Its listener, handed over before its HELLO, goes to the egress link (once one is attached). */
static void s_egress_take(zygotes_t *self, zyg_t *z)
{
    uint32_t unused;
    if (z->egress_sock >= 0 && z->listener_fd < 0 &&
        emsg_recv_fd(z->egress_sock, &unused, &z->listener_fd) != 1)
        z->listener_fd = -1;
    if (z->egress_sock >= 0) close(z->egress_sock);
    z->egress_sock = -1;
    if (z->listener_fd >= 0 && self->hooks.on_egress_listener) {
        z->listener = self->hooks.on_egress_listener(self->hooks.arg, z->listener_fd);
        z->listener_fd = -1;
    }
}

/* The zygote is gone: so is its listener, everywhere. */
static void s_egress_drop(zygotes_t *self, zyg_t *z)
{
    if (z->egress_sock >= 0) close(z->egress_sock);
    if (z->listener_fd >= 0) close(z->listener_fd);
    z->egress_sock = z->listener_fd = -1;
    if (z->listener && self->hooks.on_egress_gone)
        self->hooks.on_egress_gone(self->hooks.arg, z->listener);
    z->listener = 0;
}

void zygotes_destroy(zygotes_t **self_p)
{
    assert(self_p);
    zygotes_t *self = *self_p;
    if (!self) return;
    for (int i = 0; i < self->n; i++) {
        zyg_t *z = &self->z[i];
        if (z->chan) {
            if (self->loop) loop_remove_fd(self->loop, zchan_fd(z->chan));
            zchan_destroy(&z->chan);
        }
        if (z->pid > 0) {
            kill(z->pid, SIGKILL);
            waitpid(z->pid, NULL, 0);
        }
        if (z->egress_sock >= 0) close(z->egress_sock);
        if (z->listener_fd >= 0) close(z->listener_fd);
    }
    free(self);
    *self_p = NULL;
}

int zygotes_add(zygotes_t *self, const char *list, char *err, size_t errlen)
{
    const char *p = list;
    while (*p && self->n < ZYGOTES_MAX) {
        size_t l = strcspn(p, ",");
        char name[65];
        snprintf(name, sizeof name, "%.*s", (int)l, p);
        const profile_t *prof = profile_find(name);
        if (!prof) {
            snprintf(err, errlen, "unknown profile %s", name);
            return -1;
        }
        int dup = 0;
        for (int i = 0; i < self->n; i++) dup |= self->z[i].profile == prof;
        if (!dup) self->z[self->n++].profile = prof;
        p += l;
        if (*p == ',') p++;
    }
    if (!self->n) {
        snprintf(err, errlen, "no profile to serve");
        return -1;
    }
    return 0;
}

/* ---- one zygote's life --------------------------------------------------------------------- */

static int s_spawn(zygotes_t *self, zyg_t *z, char *err, size_t errlen)
{
    int fd;
    spawn_env_t env = {z->env_site, z->env_modules};
    s_egress_drop(self, z);
    if (spawn_zygote(self->conf, self->exe, self->layers, z->profile, z->env_key[0] ? &env : NULL,
                     &z->pid, &fd, self->egress ? &z->egress_sock : NULL, err, errlen) < 0)
        return -1;
    z->chan = zchan_new(fd);
    z->ready = 0;
    return 0;
}

static void s_on_channel(loop_t *loop, short revents, void *arg);

static void s_watch(zygotes_t *self, int zi)
{
    loop_add_fd(self->loop, zchan_fd(self->z[zi].chan), ZMQ_POLLIN, s_on_channel, &self->watch[zi]);
}

/* Waits for POLLOUT only while the channel holds what the zygote could not take yet. */
static void s_want_write(zygotes_t *self, const zyg_t *z)
{
    if (self->loop && z->chan)
        loop_set_fd_events(self->loop, zchan_fd(z->chan),
                           ZMQ_POLLIN | (zchan_pending(z->chan) ? ZMQ_POLLOUT : 0));
}

static void s_backoff(zyg_t *z, uint64_t now)
{
    z->backoff_ms = z->backoff_ms ? z->backoff_ms * 2 : 250;
    if (z->backoff_ms > BACKOFF_MAX_MS) z->backoff_ms = BACKOFF_MAX_MS;
    z->restart_at_ms = now + z->backoff_ms;
}

static void s_down(zygotes_t *self, int zi, const char *why)
{
    zyg_t *z = &self->z[zi];
    if (!z->profile) { /* retired on purpose: just reaped */
        z->pid = 0;
        return;
    }
    log_error("event=zygote_down profile=%s pid=%d reason=\"%s\" restarts=%ld", z->profile->name,
              z->pid, why, z->restarts);
    if (z->chan) {
        if (self->loop) loop_remove_fd(self->loop, zchan_fd(z->chan));
        zchan_destroy(&z->chan);
    }
    if (z->pid > 0) kill(z->pid, SIGKILL); /* reaped by the SIGCHLD handler */
    z->pid = 0;
    z->ready = 0;
    s_egress_drop(self, z);
    if (self->hooks.on_down) self->hooks.on_down(self->hooks.arg, zi); /* its jobs' answers */
    z->inflight = 0;
    z->sessions = 0;
    if (z->retiring) { /* its successor already exists */
        z->profile = NULL;
        return;
    }
    if (z->env_key[0]) { /* an environment's: the next job for it starts another */
        if (self->hooks.on_env_down)
            self->hooks.on_env_down(self->hooks.arg, z->env_key, z->fatal[0] ? z->fatal : why);
        z->profile = NULL;
        return;
    }
    s_backoff(z, clock_mono_ms());
}

/* A zygote asked to be recycled: its successor starts now; it keeps serving until the
 * successor is ready. */
static void s_recycle(zygotes_t *self, zyg_t *z)
{
    if (z->retiring) return;
    int free_slot = -1;
    for (int i = 0; i < ZYGOTES_MAX && free_slot < 0; i++)
        if (!self->z[i].profile) free_slot = i;
    if (free_slot < 0) {
        log_warn("event=recycle_deferred profile=%s reason=\"no free zygote slot\"",
                 z->profile->name);
        return;
    }
    zyg_t *succ = &self->z[free_slot];
    s_slot_clear(succ);
    succ->profile = z->profile;
    memcpy(succ->env_key, z->env_key, sizeof succ->env_key);
    memcpy(succ->env_site, z->env_site, sizeof succ->env_site);
    memcpy(succ->env_modules, z->env_modules, sizeof succ->env_modules);
    succ->used_ms = clock_mono_ms();
    char err[512];
    if (s_spawn(self, succ, err, sizeof err) < 0) {
        log_error("event=recycle_failed profile=%s error=\"%s\"", z->profile->name, err);
        succ->profile = NULL;
        return;
    }
    if (free_slot >= self->n) self->n = free_slot + 1;
    z->retiring = 1;
    exec_metrics_profile(self->metrics, z->profile->name)->zygote_recycles++;
    s_watch(self, free_slot);
    log_info("event=zygote_recycling profile=%s old_pid=%d new_pid=%d", z->profile->name, z->pid,
             succ->pid);
}

static int s_successor_ready(const zygotes_t *self, int zi)
{
    for (int k = 0; k < self->n; k++)
        if (k != zi && self->z[k].profile == self->z[zi].profile && self->z[k].ready &&
            !self->z[k].retiring && !strcmp(self->z[k].env_key, self->z[zi].env_key))
            return 1;
    return 0;
}

/* Closes retiring zygotes that have nothing in flight once a successor is ready; closing the
 * channel ends the zygote (and its idle children, by PDEATHSIG). Called from the periodic tick
 * only: never from a channel's message callback, which may be reading that very channel. */
static void s_retire_idle(zygotes_t *self)
{
    for (int i = 0; i < self->n; i++) {
        zyg_t *z = &self->z[i];
        if (!z->profile || !z->retiring || z->inflight > 0 || z->sessions > 0 || !z->chan ||
            !s_successor_ready(self, i))
            continue;
        log_info("event=zygote_retired profile=%s pid=%d", z->profile->name, z->pid);
        loop_remove_fd(self->loop, zchan_fd(z->chan));
        zchan_destroy(&z->chan); /* its SIGCHLD finds the slot already free */
        s_egress_drop(self, z);
        z->profile = NULL;
        z->ready = 0;
    }
}

/* Closes one zygote now (its channel; it and its idle children go), from the tick only. */
static void s_close(zygotes_t *self, zyg_t *z, const char *why)
{
    log_info("event=zygote_stopped profile=%s env=%s pid=%d reason=%s", z->profile->name,
             z->env_key[0] ? z->env_key : "-", z->pid, why);
    if (z->chan) {
        loop_remove_fd(self->loop, zchan_fd(z->chan));
        zchan_destroy(&z->chan);
    }
    s_egress_drop(self, z);
    z->profile = NULL;
    z->ready = 0;
}

/* Environments' zygotes idle past --env-idle-s go: each holds a warm interpreter's memory. */
static void s_stop_idle_envs(zygotes_t *self, uint64_t now)
{
    for (int i = 0; i < self->n; i++) {
        zyg_t *z = &self->z[i];
        if (z->profile && z->env_key[0] && z->chan && z->inflight <= 0 && !z->retiring &&
            now - z->used_ms > (uint64_t)self->conf->env_idle_s * 1000u)
            s_close(self, z, "idle");
    }
}

static void s_on_tick(loop_t *loop, void *arg)
{
    (void)loop;
    zygotes_t *self = arg;
    uint64_t now = clock_mono_ms();
    s_retire_idle(self);
    s_stop_idle_envs(self, now);
    for (int i = 0; i < self->n; i++) {
        zyg_t *z = &self->z[i];
        if (!z->profile || z->chan || !z->restart_at_ms || now < z->restart_at_ms || self->stopping)
            continue;
        char err[512];
        z->restart_at_ms = 0;
        z->restarts++;
        exec_metrics_profile(self->metrics, z->profile->name)->zygote_restarts++;
        if (s_spawn(self, z, err, sizeof err) < 0) {
            log_error("event=zygote_restart_failed profile=%s error=\"%s\"", z->profile->name, err);
            s_backoff(z, now);
            continue;
        }
        s_watch(self, i);
    }
}

/* ---- what zygotes say ---------------------------------------------------------------------- */

/* HELLO's package list into z's own storage (the message's is a view into its payload). JSON
 * made from importlib.metadata: cut short it would not parse, so it is kept whole or not at
 * all. */
static void s_keep_packages(zyg_t *z, const zmsg_hello_t *hello)
{
    size_t n = hello->packages_len < sizeof z->packages ? hello->packages_len : 0;
    if (n) memcpy(z->packages, hello->packages, n);
    z->packages[n] = '\0';
    z->hello.packages = NULL;
    z->hello.packages_len = 0;
}

static void s_on_msg(void *arg, const zmsg_t *msg)
{
    watch_t *w = arg;
    zygotes_t *self = w->set;
    zyg_t *z = &self->z[w->zi];
    switch (msg->type) {
    case ZM_RESULT:
        if (self->hooks.on_result &&
            self->hooks.on_result(self->hooks.arg, msg->id, msg->payload, msg->len))
            z->inflight--;
        break;
    case ZM_PROGRESS:
        if (self->hooks.on_progress)
            self->hooks.on_progress(self->hooks.arg, msg->id, msg->payload, msg->len);
        break;
    case ZM_HELLO:
        z->hello = msg->hello;
        s_keep_packages(z, &msg->hello);
        s_egress_take(self, z);
        z->ready = 1;
        z->backoff_ms = 0;
        log_info("event=zygote_ready profile=%s pid=%d python=%s layers=%s", z->profile->name,
                 z->pid, z->hello.python, z->hello.layers);
        break;
    case ZM_STATS:
        exec_metrics_job(self->metrics, z->profile->name, &msg->stats);
        break;
    case ZM_RETIRE:
        s_recycle(self, z);
        break;
    case ZM_SESSION:
        if (msg->session.event == ZS_UP) z->sessions++;
        if (msg->session.event == ZS_DOWN && z->sessions > 0) z->sessions--;
        if (self->hooks.on_session) self->hooks.on_session(self->hooks.arg, w->zi, msg);
        break;
    case ZM_FATAL:
        log_error("event=zygote_fatal profile=%s error=\"%.*s\"", z->profile->name, (int)msg->len,
                  msg->payload);
        snprintf(z->fatal, sizeof z->fatal, "%.*s", (int)msg->len, (const char *)msg->payload);
        break;
    default:
        log_warn("event=unexpected_message type=%s", zmsg_name(msg->type));
        break;
    }
}

static void s_on_channel(loop_t *loop, short revents, void *arg)
{
    (void)loop;
    watch_t *w = arg;
    zyg_t *z = &w->set->z[w->zi];
    if (!z->chan) return;
    if (revents & ZMQ_POLLOUT) zchan_flush(z->chan);
    if ((revents & (ZMQ_POLLIN | ZMQ_POLLERR)) && zmsg_read(z->chan, s_on_msg, w) < 0) {
        s_down(w->set, w->zi, "channel closed");
        return;
    }
    s_want_write(w->set, z);
}

/* ---- the node's verbs ---------------------------------------------------------------------- */

/* Zygote zi could not start: its profile is not served (start-up only, before the loop). */
static void s_unserved(zygotes_t *self, int zi, const char *why)
{
    zyg_t *z = &self->z[zi];
    if (self->n_unserved < WIRE_MAX_SERVICES) {
        unserved_t *u = &self->unserved[self->n_unserved++];
        u->profile = z->profile;
        snprintf(u->reason, sizeof u->reason, "%s", why);
    }
    char q[600];
    log_error("event=profile_unserved profile=%s reason=%s", z->profile->name,
              log_quote(q, sizeof q, why));
    if (z->chan) zchan_destroy(&z->chan);
    if (z->pid > 0) kill(z->pid, SIGKILL); /* reaped by the SIGCHLD handler: the slot is free */
    z->profile = NULL;
    z->ready = 0;
}

/* Waits (before the loop exists) until every zygote has said HELLO or failed: FATAL (its
 * warm-up failed: a library missing), its channel closed, or no HELLO within HELLO_WAIT_S. */
static void s_wait_ready(zygotes_t *self)
{
    uint64_t give_up = clock_mono_ms() + HELLO_WAIT_S * 1000u;
    for (;;) {
        int pending = 0;
        for (int i = 0; i < self->n; i++) {
            zyg_t *z = &self->z[i];
            if (!z->profile || !z->chan || z->ready) continue;
            pending++;
            struct pollfd p = {zchan_fd(z->chan), POLLIN, 0};
            if (poll(&p, 1, 100) > 0 && zmsg_read(z->chan, s_on_msg, &self->watch[i]) < 0 &&
                !z->ready)
                s_unserved(self, i,
                           z->fatal[0] ? z->fatal : "its sandbox exited before it was ready");
        }
        if (!pending) return;
        if (clock_mono_ms() > give_up) {
            log_error("event=zygote_timeout seconds=%d", HELLO_WAIT_S);
            for (int i = 0; i < self->n; i++)
                if (self->z[i].profile && !self->z[i].ready)
                    s_unserved(self, i, "its sandbox was not ready in time");
            return;
        }
    }
}

int zygotes_start(zygotes_t *self, char *err, size_t errlen)
{
    for (int i = 0; i < self->n; i++) {
        char why[512];
        if (s_spawn(self, &self->z[i], why, sizeof why) < 0) s_unserved(self, i, why);
    }
    s_wait_ready(self);
    int served = 0;
    for (int i = 0; i < self->n; i++) served += self->z[i].profile && self->z[i].ready;
    if (!served) {
        snprintf(err, errlen, "no profile could be served (see profile_unserved above)%s%s",
                 self->n_unserved ? ": " : "", self->n_unserved ? self->unserved[0].reason : "");
        return -1;
    }
    return 0;
}

int zygotes_unserved(const zygotes_t *self, int i, const char **profile, const char **reason)
{
    if (i < 0 || i >= self->n_unserved) return -1;
    *profile = self->unserved[i].profile->name;
    *reason = self->unserved[i].reason;
    return 0;
}

void zygotes_attach(zygotes_t *self, loop_t *loop, const zygotes_hooks_t *hooks)
{
    self->loop = loop;
    self->hooks = *hooks;
    for (int i = 0; i < self->n; i++) {
        if (self->z[i].chan) s_watch(self, i);
        if (self->z[i].listener_fd >= 0) s_egress_take(self, &self->z[i]); /* came before */
    }
    loop_timer_add(loop, 100, 100, s_on_tick, self);
}

void zygotes_reap(zygotes_t *self)
{
    int st;
    pid_t pid;
    while ((pid = waitpid(-1, &st, WNOHANG)) > 0)
        for (int i = 0; i < self->n; i++)
            if (self->z[i].pid == pid) s_down(self, i, "process exited");
}

void zygotes_stop(zygotes_t *self)
{
    self->stopping = 1;
}

int zygotes_pick(const zygotes_t *self, const char *service, int *ready)
{
    const zyg_t *best = NULL;
    int bi = -1;
    for (int i = 0; i < self->n; i++) {
        const zyg_t *k = &self->z[i];
        if (!k->profile || k->env_key[0] || strcmp(k->profile->name, service) != 0) continue;
        if (!best || (k->ready && !best->ready) || (k->ready && best->retiring && !k->retiring))
            best = k, bi = i;
    }
    *ready = best && best->ready && best->chan;
    return bi;
}

int zygotes_env_pick(const zygotes_t *self, const char *key, int *ready)
{
    int bi = -1;
    for (int i = 0; i < self->n; i++) {
        const zyg_t *k = &self->z[i];
        if (!k->profile || strcmp(k->env_key, key) != 0) continue;
        if (bi < 0 || (k->ready && !self->z[bi].ready) ||
            (k->ready && self->z[bi].retiring && !k->retiring))
            bi = i;
    }
    *ready = bi >= 0 && self->z[bi].ready && self->z[bi].chan;
    return bi;
}

int zygotes_env_start(zygotes_t *self, const profile_t *profile, const char *key, const char *site,
                      const char *modules)
{
    int count = 0, free_slot = -1, lru = -1;
    for (int i = 0; i < ZYGOTES_MAX; i++) {
        zyg_t *z = &self->z[i];
        if (!z->profile) {
            if (free_slot < 0) free_slot = i;
            continue;
        }
        if (!z->env_key[0]) continue;
        count++;
        if (z->chan && z->inflight <= 0 && (lru < 0 || z->used_ms < self->z[lru].used_ms)) lru = i;
    }
    if (count >= self->conf->max_env_zygotes || count >= ENV_ZYGOTES_MAX) {
        if (lru < 0) return -1; /* all busy: the job waits for one to be idle */
        s_close(self, &self->z[lru], "room for another environment");
        free_slot = lru;
    }
    if (free_slot < 0) return -1;
    zyg_t *z = &self->z[free_slot];
    s_slot_clear(z);
    z->profile = profile;
    snprintf(z->env_key, sizeof z->env_key, "%s", key);
    snprintf(z->env_site, sizeof z->env_site, "%s", site);
    snprintf(z->env_modules, sizeof z->env_modules, "%s", modules);
    z->used_ms = clock_mono_ms();
    char err[512];
    if (s_spawn(self, z, err, sizeof err) < 0) {
        log_error("event=env_zygote_failed profile=%s env=%s error=\"%s\"", profile->name, key, err);
        z->profile = NULL;
        return -2;
    }
    if (free_slot >= self->n) self->n = free_slot + 1;
    s_watch(self, free_slot);
    log_info("event=env_zygote_started profile=%s env=%s pid=%d", profile->name, key, z->pid);
    return free_slot;
}

int zygotes_send_job(zygotes_t *self, int zi, const uint8_t id[ID_BYTES], const uint8_t *body,
                     size_t len)
{
    zyg_t *z = &self->z[zi];
    z->used_ms = clock_mono_ms();
    zmsg_t job = {.type = ZM_JOB, .id = id, .payload = body, .len = len};
    z->inflight++;
    int rc = z->chan ? zmsg_send(z->chan, &job) : -1;
    if (rc < 0) log_warn("event=zygote_send_failed profile=%s", z->profile->name);
    s_want_write(self, z);
    return rc;
}

uint32_t zygotes_listener(const zygotes_t *self, int zi)
{
    return zi >= 0 ? self->z[zi].listener : 0;
}

void zygotes_send_egress(zygotes_t *self, int zi, const uint8_t id[ID_BYTES], const char *secret)
{
    zyg_t *z = &self->z[zi];
    zmsg_t m = {.type = ZM_EGRESS, .id = id, .payload = (const uint8_t *)secret,
                .len = strlen(secret)};
    if (z->chan) zmsg_send(z->chan, &m);
}

void zygotes_egress_stop(zygotes_t *self, int zi, const uint8_t id[ID_BYTES])
{
    zyg_t *z = &self->z[zi];
    zmsg_t m = {.type = ZM_EGRESS_STOP, .id = id};
    if (!z->chan) return;
    zmsg_send(z->chan, &m);
    s_want_write(self, z);
}

void zygotes_cancel(zygotes_t *self, int zi, const uint8_t id[ID_BYTES])
{
    zyg_t *z = &self->z[zi];
    zmsg_t cancel = {.type = ZM_CANCEL, .id = id};
    if (!z->chan) return;
    zmsg_send(z->chan, &cancel);
    s_want_write(self, z);
}

void zygotes_end_session(zygotes_t *self, int zi, const uint8_t id[ID_BYTES], const char *reason)
{
    zyg_t *z = &self->z[zi];
    zmsg_t end = {.type = ZM_SESSION_END,
                  .id = id,
                  .payload = (const uint8_t *)reason,
                  .len = strlen(reason)};
    if (!z->chan) return;
    zmsg_send(z->chan, &end);
    s_want_write(self, z);
}

/* ---- what the node publishes --------------------------------------------------------------- */

int zygotes_services(const zygotes_t *self, int with_retiring, char (*names)[65], int max)
{
    int n = 0;
    for (int i = 0; i < self->n; i++) {
        const profile_t *p = self->z[i].profile;
        int dup = !p || self->z[i].env_key[0] || (self->z[i].retiring && !with_retiring);
        for (int k = 0; k < n && !dup; k++) dup = !strcmp(names[k], p->name);
        if (!dup && n < max) snprintf(names[n++], 65, "%s", p->name);
    }
    return n;
}

const char *zygotes_profile(const zygotes_t *self, int zi)
{
    return zi >= 0 && zi < self->n && self->z[zi].profile ? self->z[zi].profile->name : "";
}

const char *zygotes_packages(const zygotes_t *self, int zi)
{
    return self->z[zi].packages;
}

const char *zygotes_python(const zygotes_t *self)
{
    for (int i = 0; i < self->n; i++) /* the first that said HELLO: an unserved one did not */
        if (self->z[i].hello.python[0]) return self->z[i].hello.python;
    return "";
}

/* Profile names are [A-Za-z0-9._-] and the versions came as JSON from the zygote: no
 * escaping. */
static void s_profile_json(const zygotes_t *self, const zyg_t *z, buf_t *out)
{
    buf_printf(out, "{\"python\":\"%s\",\"packages\":%s,\"node\":\"%s\",\"updated_ms\":%llu}",
               z->hello.python, z->packages[0] ? z->packages : "{}", self->conf->node_id,
               (unsigned long long)clock_wall_ms());
}

void zygotes_profiles_json(const zygotes_t *self, const profile_t *profile, buf_t *out)
{
    int first = 1;
    if (!profile) buf_puts(out, "{");
    for (int i = 0; i < self->n; i++) {
        const zyg_t *z = &self->z[i];
        if (!z->profile || !z->ready || z->retiring || z->env_key[0] || (profile && z->profile != profile))
            continue;
        if (!profile) buf_printf(out, "%s\"%s\":", first ? "" : ",", z->profile->name);
        s_profile_json(self, z, out);
        first = 0;
    }
    if (!profile) buf_puts(out, "}");
}
