/* executor-node/node/egress_link.c — see egress_link.h. The process is started with
 * posix_spawn (ZeroMQ's threads run in this process: no fork), its channel on fd 3 and the
 * descriptor channel on fd 4; its death shows as the channel's end, and zygotes_reap's
 * waitpid(-1) reaps it. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/log.h"
#include "proto/result_egress.h"
#include "executor-node/link/layers.h"
#include "egress_link.h"

#define EGRESS_BIN     "snakepit-egress"
#define TICK_MS        250
#define SUMMARY_WAIT_MS 2000  /* a Result waits this long for its account, then goes without */
#define BACKOFF_MAX_MS 30000

typedef struct kept {
    uint32_t id;
    int fd; /* our copy of a zygote's listener, passed again to a restarted process */
    struct kept *next;
} kept_t;

/* A granted job: from its grant to its account (or until it is forgotten). */
typedef struct held {
    uint8_t job[ID_BYTES];
    uint8_t *body; /* its Result, once it came, waiting for the account */
    size_t len;
    uint64_t since_ms; /* when the Result came */
    int forgotten;     /* ended without a Result to complete: the account is dropped */
    struct held *next;
} held_t;

struct egress_link {
    const node_conf_t *conf;
    loop_t *loop;
    exec_metrics_t *metrics;
    egress_link_hooks_t hooks;
    char exe[PATH_MAX];
    char deny[8192];
    pid_t pid;
    zchan_t *chan;
    int fd_sock;
    uint64_t restart_at_ms, backoff_ms;
    uint32_t next_id;
    kept_t *kept;
    held_t *held;
    uint64_t timer;
};

/* ---- the deny list ------------------------------------------------------------------------- */

/* "host:port" of an endpoint (tcp://host:port, redis://user@host:port/db, host:port) appended to
 * the list; "*" and empty hosts (every address) become 0.0.0.0. */
static void s_deny_endpoint(buf_t *b, const char *ep, int default_port)
{
    const char *p = strstr(ep, "://");
    p = p ? p + 3 : ep;
    const char *at = strchr(p, '@');
    if (at) p = at + 1;
    size_t n = strcspn(p, "/?");
    char hostport[300];
    snprintf(hostport, sizeof hostport, "%.*s", (int)(n < 299 ? n : 299), p);
    if (!hostport[0]) return;
    char *colon = strrchr(hostport, ':');
    int port = default_port;
    if (colon && (!strchr(hostport, ']') || colon > strchr(hostport, ']'))) {
        port = atoi(colon + 1);
        *colon = '\0';
    }
    if (port <= 0) return;
    const char *host = hostport;
    if (!strcmp(host, "*") || !host[0] || !strcmp(host, "[::]")) host = "0.0.0.0";
    buf_printf(b, "%s%s:%d", b->len ? "," : "", host, port);
}

static void s_deny(egress_link_t *self)
{
    const node_conf_t *c = self->conf;
    buf_t b;
    buf_init(&b);
    char list[sizeof c->broker];
    snprintf(list, sizeof list, "%s", c->broker);
    for (char *save = NULL, *ep = strtok_r(list, ",", &save); ep; ep = strtok_r(NULL, ",", &save))
        if (!strncmp(ep, "tcp://", 6)) s_deny_endpoint(&b, ep, 0);
    if (c->metrics[0] && strcmp(c->metrics, "off") != 0) s_deny_endpoint(&b, c->metrics, 0);
    if (!strncmp(c->redis, "redis://", 8)) s_deny_endpoint(&b, c->redis, 6379);
    if (!strncmp(c->redis, "redis-sentinel://", 17)) {
        char hosts[PATH_MAX];
        snprintf(hosts, sizeof hosts, "%.*s", (int)strcspn(c->redis + 17, "/"), c->redis + 17);
        for (char *save = NULL, *h = strtok_r(hosts, ",", &save); h; h = strtok_r(NULL, ",", &save))
            s_deny_endpoint(&b, h, 26379);
    }
    if (c->egress_deny[0]) buf_printf(&b, "%s%s", b.len ? "," : "", c->egress_deny);
    snprintf(self->deny, sizeof self->deny, "%.*s", (int)b.len, b.data ? (const char *)b.data : "");
    buf_free(&b);
}

/* ---- the process --------------------------------------------------------------------------- */

static void s_on_chan(loop_t *loop, short revents, void *arg);

static void s_send(egress_link_t *self, const emsg_t *m);

static void s_pass_listener(egress_link_t *self, const kept_t *k)
{
    if (emsg_send_fd(self->fd_sock, k->id, k->fd) < 0) {
        log_warn("event=egress_listener_not_passed listener=%u error=\"%s\"", k->id, strerror(errno));
        return;
    }
    emsg_t m = {.type = EM_LISTEN, .listener = k->id};
    s_send(self, &m);
}

static int s_spawn(egress_link_t *self)
{
    int chan[2] = {-1, -1}, fds[2] = {-1, -1};
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, chan) < 0 ||
        socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) < 0) {
        log_error("event=egress_start_failed error=\"socketpair: %s\"", strerror(errno));
        if (chan[0] >= 0) close(chan[0]), close(chan[1]);
        return -1;
    }
    const node_conf_t *c = self->conf;
    char idle[24], bytes[24], conns[24], open[24], uid[24], gid[24];
    snprintf(idle, sizeof idle, "%ld", c->egress_idle_s);
    snprintf(bytes, sizeof bytes, "%ld", c->egress_max_bytes);
    snprintf(conns, sizeof conns, "%ld", c->egress_max_conns);
    snprintf(open, sizeof open, "%ld", c->egress_tenant_open);
    /* a root node's egress runs as the jobs' unprivileged uid: it needs no privilege at all */
    snprintf(uid, sizeof uid, "%ld", getuid() == 0 ? c->run_uid_host : 0L);
    snprintf(gid, sizeof gid, "%ld", getuid() == 0 ? c->run_gid_host : 0L);
    char *argv[] = {EGRESS_BIN, "--resolver", (char *)c->egress_resolver, "--deny", self->deny,
                    "--idle-s", idle, "--max-bytes", bytes, "--max-conns", conns,
                    "--tenant-open", open, "--run-uid", uid, "--run-gid", gid, "--node",
                    (char *)c->node_id, "--log-level", (char *)c->log_level, NULL};
    char asan[512] = "ASAN_OPTIONS=";
    const char *a = getenv("ASAN_OPTIONS");
    if (a) strncat(asan, a, sizeof asan - strlen(asan) - 1);
    char *envp[] = {"PATH=/usr/bin:/bin", "LANG=C.UTF-8", asan, NULL};
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    sigset_t none;
    sigemptyset(&none);
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, chan[1], 3);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 4);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addclosefrom_np(&fa, 5);
    posix_spawnattr_init(&at);
    /* a group of its own: a terminal's Ctrl-C or `up` stopping the node's group reaches the node,
     * and the egress process follows it (PDEATHSIG) without being reported as a crash */
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
                                      POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setsigmask(&at, &none);
    sigset_t all;
    sigfillset(&all);
    posix_spawnattr_setsigdefault(&at, &all);
    int rc = posix_spawn(&self->pid, self->exe, &fa, &at, argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    close(chan[1]);
    close(fds[1]);
    if (rc != 0) {
        log_error("event=egress_start_failed error=\"%s: %s\"", self->exe, strerror(rc));
        close(chan[0]);
        close(fds[0]);
        self->pid = 0;
        return -1;
    }
    self->chan = zchan_new(chan[0]);
    self->fd_sock = fds[0];
    loop_add_fd(self->loop, chan[0], LOOP_IN, s_on_chan, self);
    self->metrics->egress_up = 1;
    log_info("event=egress_started pid=%d deny=\"%s\"", (int)self->pid, self->deny);
    for (kept_t *k = self->kept; k; k = k->next) s_pass_listener(self, k);
    return 0;
}

static void s_release(egress_link_t *self, held_t *h, int with_body)
{
    for (held_t **pp = &self->held; *pp; pp = &(*pp)->next)
        if (*pp == h) {
            *pp = h->next;
            break;
        }
    if (with_body && h->body && !h->forgotten)
        self->hooks.on_done(self->hooks.arg, h->job, h->body, h->len);
    if (h->body) explicit_bzero(h->body, h->len), free(h->body);
    free(h);
}

/* The process is gone (or must go): grants go with it; Results waiting for an account go on
 * without one; a restart follows. */
static void s_down(egress_link_t *self, const char *why)
{
    if (!self->chan) return;
    log_error("event=egress_down pid=%d reason=\"%s\"", (int)self->pid, why);
    loop_remove_fd(self->loop, zchan_fd(self->chan));
    zchan_destroy(&self->chan);
    close(self->fd_sock);
    self->fd_sock = -1;
    if (self->pid > 0) kill(self->pid, SIGKILL); /* reaped with the zygotes (zygotes_reap) */
    self->pid = 0;
    self->metrics->egress_up = 0;
    while (self->held) s_release(self, self->held, 1);
    self->backoff_ms = self->backoff_ms ? self->backoff_ms * 2 : 250;
    if (self->backoff_ms > BACKOFF_MAX_MS) self->backoff_ms = BACKOFF_MAX_MS;
    self->restart_at_ms = clock_mono_ms() + self->backoff_ms;
}

static void s_send(egress_link_t *self, const emsg_t *m)
{
    if (self->chan && emsg_send(self->chan, m) < 0) {
        s_down(self, "channel closed");
        return;
    }
    if (self->chan)
        loop_set_fd_events(self->loop, zchan_fd(self->chan),
                           LOOP_IN | (zchan_pending(self->chan) ? LOOP_OUT : 0));
}

static held_t *s_held(egress_link_t *self, const uint8_t job[ID_BYTES])
{
    for (held_t *h = self->held; h; h = h->next)
        if (!memcmp(h->job, job, ID_BYTES)) return h;
    return NULL;
}

/* A job's account: added to its Result, which goes on. */
static void s_on_summary(egress_link_t *self, const emsg_t *m)
{
    held_t *h = s_held(self, m->id);
    if (!h || !h->body) return; /* sent on without it already, or forgotten */
    buf_t out;
    buf_init(&out);
    if (!h->forgotten && !m->summary.dests.n) { /* it reached for nothing: as it came */
        self->hooks.on_done(self->hooks.arg, h->job, h->body, h->len);
        h->forgotten = 1;
    } else if (!h->forgotten &&
               result_egress_add(h->body, h->len, &m->summary.dests, &out) == 0) {
        self->hooks.on_done(self->hooks.arg, h->job, (const uint8_t *)out.data, out.len);
        h->forgotten = 1; /* answered: s_release must not answer again */
    }
    if (out.data) explicit_bzero(out.data, out.len);
    buf_free(&out);
    s_release(self, h, 1);
}

static void s_on_msg(void *arg, uint8_t type, const uint8_t id[ID_BYTES], const uint8_t *payload,
                     size_t len)
{
    egress_link_t *self = arg;
    emsg_t m;
    char err[160];
    if (emsg_decode(type, id, payload, len, &m, err, sizeof err) < 0) {
        log_warn("event=bad_egress_message type=%s error=\"%s\"", emsg_name(type), err);
        return;
    }
    switch (m.type) {
    case EM_SUMMARY:
        s_on_summary(self, &m);
        break;
    case EM_OVER_CAP:
        if (s_held(self, m.id)) self->hooks.on_over_cap(self->hooks.arg, m.id);
        break;
    case EM_STATS:
        exec_metrics_egress(self->metrics, &m.stats);
        self->backoff_ms = 0; /* it has run for a while: the next restart starts from scratch */
        break;
    default:
        log_warn("event=unexpected_egress_message type=%s", emsg_name(type));
        break;
    }
    emsg_clear(&m);
}

static void s_on_chan(loop_t *loop, short revents, void *arg)
{
    egress_link_t *self = arg;
    if (!self->chan) return;
    if (revents & LOOP_OUT) zchan_flush(self->chan);
    if ((revents & (LOOP_IN | LOOP_ERR)) && zchan_read(self->chan, s_on_msg, self) < 0) {
        s_down(self, "channel closed");
        return;
    }
    if (self->chan)
        loop_set_fd_events(loop, zchan_fd(self->chan),
                           LOOP_IN | (zchan_pending(self->chan) ? LOOP_OUT : 0));
}

static void s_on_tick(loop_t *loop, void *arg)
{
    (void)loop;
    egress_link_t *self = arg;
    uint64_t now = clock_mono_ms();
    for (held_t *h = self->held, *next; h; h = next) {
        next = h->next;
        if (h->body && now - h->since_ms > SUMMARY_WAIT_MS) {
            log_warn("event=egress_account_missing");
            s_release(self, h, 1);
        }
    }
    if (!self->chan && self->restart_at_ms && now >= self->restart_at_ms) {
        self->restart_at_ms = 0;
        self->metrics->egress_restarts++;
        if (s_spawn(self) < 0) {
            self->backoff_ms = self->backoff_ms ? self->backoff_ms * 2 : 250;
            if (self->backoff_ms > BACKOFF_MAX_MS) self->backoff_ms = BACKOFF_MAX_MS;
            self->restart_at_ms = now + self->backoff_ms;
        }
    }
}

/* ---- the node's verbs ---------------------------------------------------------------------- */

static int s_find_exe(egress_link_t *self)
{
    ssize_t len = readlink("/proc/self/exe", self->exe, sizeof self->exe - sizeof EGRESS_BIN - 1);
    if (len <= 0) return -1;
    self->exe[len] = '\0';
    char *slash = strrchr(self->exe, '/');
    size_t dir = slash ? (size_t)(slash - self->exe) + 1 : 0;
    memcpy(self->exe + dir, EGRESS_BIN, sizeof EGRESS_BIN);
    return access(self->exe, X_OK);
}

egress_link_t *egress_link_new(const node_conf_t *conf, unsigned layers, loop_t *loop,
                               exec_metrics_t *metrics, const egress_link_hooks_t *hooks)
{
    if (!conf->egress) return NULL;
    if (!(layers & LAYER_NAMESPACES)) {
        log_warn("event=egress_off reason=\"network egress needs the namespaces layer\"");
        return NULL;
    }
    egress_link_t *self = xcalloc(1, sizeof *self);
    self->conf = conf;
    self->loop = loop;
    self->metrics = metrics;
    self->hooks = *hooks;
    self->fd_sock = -1;
    if (s_find_exe(self) < 0) {
        log_warn("event=egress_off reason=\"%s not found next to snakepit-executor\"", EGRESS_BIN);
        free(self);
        return NULL;
    }
    s_deny(self);
    if (s_spawn(self) < 0) self->restart_at_ms = clock_mono_ms() + 1000;
    self->timer = loop_timer_add(loop, TICK_MS, TICK_MS, s_on_tick, self);
    return self;
}

void egress_link_destroy(egress_link_t **self_p)
{
    egress_link_t *self = *self_p;
    if (!self) return;
    if (self->chan) {
        loop_remove_fd(self->loop, zchan_fd(self->chan));
        zchan_destroy(&self->chan);
    }
    if (self->fd_sock >= 0) close(self->fd_sock);
    if (self->pid > 0) kill(self->pid, SIGKILL);
    loop_timer_cancel(self->loop, self->timer);
    while (self->kept) {
        kept_t *k = self->kept;
        self->kept = k->next;
        close(k->fd);
        free(k);
    }
    while (self->held) s_release(self, self->held, 0);
    free(self);
    *self_p = NULL;
}

uint32_t egress_link_listen(egress_link_t *self, int fd)
{
    if (!self) {
        close(fd);
        return 0;
    }
    kept_t *k = xcalloc(1, sizeof *k);
    k->id = ++self->next_id;
    k->fd = fd;
    k->next = self->kept;
    self->kept = k;
    if (self->chan) s_pass_listener(self, k);
    return k->id;
}

void egress_link_unlisten(egress_link_t *self, uint32_t listener)
{
    if (!self || !listener) return;
    for (kept_t **pp = &self->kept; *pp; pp = &(*pp)->next) {
        kept_t *k = *pp;
        if (k->id != listener) continue;
        *pp = k->next;
        close(k->fd); /* with the egress process's copy, the zygote's namespace can go */
        free(k);
        break;
    }
    emsg_t m = {.type = EM_UNLISTEN, .listener = listener};
    s_send(self, &m);
}

int egress_link_grant(egress_link_t *self, const uint8_t job[ID_BYTES], uint32_t listener,
                      const char *tenant, const job_egress_t *e, long wall_ms,
                      char secret[EMSG_SECRET_LEN + 1])
{
    if (!self || !self->chan || !listener || !e->n_rules) return -1;
    uint8_t raw[EMSG_SECRET_LEN / 2];
    if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw) return -1;
    for (size_t i = 0; i < sizeof raw; i++) snprintf(secret + 2 * i, 3, "%02x", raw[i]);
    explicit_bzero(raw, sizeof raw);
    emsg_t m = {.type = EM_GRANT};
    memcpy(m.id, job, ID_BYTES);
    snprintf(m.grant.secret, sizeof m.grant.secret, "%s", secret);
    snprintf(m.grant.tenant, sizeof m.grant.tenant, "%s", tenant);
    m.grant.listener = listener;
    m.grant.rules = e->rules;
    m.grant.n_rules = e->n_rules;
    m.grant.max_bytes = e->max_bytes;
    m.grant.max_conns = e->max_conns;
    m.grant.wall_ms = wall_ms > 0 ? (uint64_t)wall_ms : 0;
    s_send(self, &m);
    explicit_bzero(m.grant.secret, sizeof m.grant.secret);
    if (!self->chan) return -1;
    held_t *h = xcalloc(1, sizeof *h);
    memcpy(h->job, job, ID_BYTES);
    h->next = self->held;
    self->held = h;
    return 0;
}

void egress_link_finish(egress_link_t *self, const uint8_t job[ID_BYTES], const uint8_t *body,
                        size_t len)
{
    held_t *h = s_held(self, job);
    if (!h || !self->chan) {
        if (h) s_release(self, h, 0);
        self->hooks.on_done(self->hooks.arg, job, body, len);
        return;
    }
    h->body = xmalloc(len ? len : 1);
    memcpy(h->body, body, len);
    h->len = len;
    h->since_ms = clock_mono_ms();
    emsg_t m = {.type = EM_REVOKE};
    memcpy(m.id, job, ID_BYTES);
    s_send(self, &m); /* its SUMMARY completes the Result (s_down sends it on without) */
}

void egress_link_forget(egress_link_t *self, const uint8_t job[ID_BYTES])
{
    held_t *h = self ? s_held(self, job) : NULL;
    if (!h) return;
    emsg_t m = {.type = EM_REVOKE};
    memcpy(m.id, job, ID_BYTES);
    h->forgotten = 1;
    if (!h->body) { /* nothing waits for the account: the grant goes, the answer is dropped */
        s_release(self, h, 0);
    }
    s_send(self, &m);
}
