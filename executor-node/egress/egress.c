/* executor-node/egress/egress.c — see egress.h: the loop, what the node says, the listeners. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/landlock.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "conn.h"
#include "egress.h"

#define CHAN_FD      3
#define FD_SOCK_FD   4
#define TICK_MS      200
#define STATS_MS     1000
#define ACCEPT_BURST 64 /* connections taken per wake of one listener */

/* ---- listeners ----------------------------------------------------------------------------- */

static void s_on_accept(loop_t *loop, short revents, void *arg);

typedef struct {
    egress_t *eg;
    listener_t *l;
} accept_arg_t;

static void s_listen(egress_t *eg, uint32_t id, int fd)
{
    for (listener_t *l = eg->listeners; l; l = l->next)
        if (l->id == id) { /* the node never reuses an id: a second socket is not believed */
            log_warn("event=listener_twice listener=%u", id);
            close(fd);
            return;
        }
    int type = 0, listening = 0;
    socklen_t len = sizeof type;
    getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len);
    len = sizeof listening;
    getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len);
    if (type != SOCK_STREAM || !listening) {
        log_warn("event=listener_refused listener=%u reason=\"not a listening stream socket\"", id);
        close(fd);
        return;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) { /* accepts are taken in bursts */
        log_warn("event=listener_refused listener=%u reason=\"%s\"", id, strerror(errno));
        close(fd);
        return;
    }
    listener_t *l = xcalloc(1, sizeof *l);
    l->id = id;
    l->fd = fd;
    l->next = eg->listeners;
    eg->listeners = l;
    loop_add_fd(eg->loop, fd, LOOP_IN, s_on_accept, eg);
    log_info("event=listener_added listener=%u", id);
}

/* Descriptors the node passed: registered before any message that names them is handled. */
static void s_drain_fds(egress_t *eg)
{
    uint32_t id;
    int fd;
    while (emsg_recv_fd(eg->fd_sock, &id, &fd) == 1) s_listen(eg, id, fd);
}

static void s_unlisten(egress_t *eg, uint32_t id)
{
    s_drain_fds(eg);
    for (listener_t **pp = &eg->listeners; *pp; pp = &(*pp)->next) {
        listener_t *l = *pp;
        if (l->id != id) continue;
        *pp = l->next;
        loop_remove_fd(eg->loop, l->fd);
        close(l->fd); /* the last reference to that zygote's network namespace goes with it */
        conn_close_all(eg, NULL, id);
        free(l);
        log_info("event=listener_removed listener=%u", id);
        return;
    }
}

static void s_on_accept(loop_t *loop, short revents, void *arg)
{
    (void)loop, (void)revents;
    egress_t *eg = arg;
    /* which listener: the one whose fd is readable; ask each without blocking */
    for (listener_t *l = eg->listeners; l; l = l->next)
        for (int i = 0; i < ACCEPT_BURST; i++) {
            int fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
            if (fd < 0) break;
            conn_accept(eg, l->id, fd);
        }
}

/* ---- the node ------------------------------------------------------------------------------ */

/* egress_t's over_cap hook (conn.c calls it). */
static void s_over_cap(egress_t *eg, grant_t *g)
{
    if (g->over_cap) return;
    g->over_cap = 1;
    eg->stats.over_cap++;
    char id[ID_STR_LEN + 1];
    id_format(g->job, id);
    log_warn("event=egress_over_cap job=%s tenant=%s bytes=%llu max_bytes=%llu", id, g->tenant,
             (unsigned long long)g->bytes, (unsigned long long)g->max_bytes);
    conn_stall(eg, g);
    emsg_t m = {.type = EM_OVER_CAP};
    memcpy(m.id, g->job, ID_BYTES);
    emsg_send(eg->chan, &m);
}

/* The job ended: its connections close, and its account goes back (for its Result). */
static void s_revoke(egress_t *eg, const uint8_t job[ID_BYTES])
{
    emsg_t m = {.type = EM_SUMMARY};
    memcpy(m.id, job, ID_BYTES);
    grant_t *g = grants_by_job(eg->grants, job);
    if (g) {
        conn_close_all(eg, g, 0);
        m.summary.over_cap = g->over_cap;
        grants_remove(eg->grants, g, &m.summary.dests);
    }
    emsg_send(eg->chan, &m);
    result_egress_clear(&m.summary.dests);
}

static void s_grant(egress_t *eg, const emsg_t *m)
{
    char err[256], id[ID_STR_LEN + 1];
    id_format(m->id, id);
    if (!grants_add(eg->grants, m->id, &m->grant, (uint64_t)eg->conf->max_bytes,
                    (uint64_t)eg->conf->max_conns, err, sizeof err))
        log_warn("event=grant_refused job=%s error=\"%s\"", id, err);
    else
        log_debug("event=granted job=%s tenant=%s rules=%zu", id, m->grant.tenant, m->grant.n_rules);
}

static void s_on_msg(void *arg, uint8_t type, const uint8_t id[ID_BYTES], const uint8_t *payload,
                     size_t len)
{
    egress_t *eg = arg;
    emsg_t m;
    char err[160];
    if (emsg_decode(type, id, payload, len, &m, err, sizeof err) < 0) {
        log_warn("event=bad_message error=\"%s\"", err);
        return;
    }
    switch (m.type) {
    case EM_LISTEN:
        s_drain_fds(eg);
        break;
    case EM_UNLISTEN:
        s_unlisten(eg, m.listener);
        break;
    case EM_GRANT:
        s_grant(eg, &m);
        break;
    case EM_REVOKE:
        s_revoke(eg, m.id);
        break;
    default:
        log_warn("event=unexpected_message type=%s", emsg_name(type));
        break;
    }
    emsg_clear(&m);
}

static void s_on_chan(loop_t *loop, short revents, void *arg)
{
    egress_t *eg = arg;
    if (revents & LOOP_OUT) zchan_flush(eg->chan);
    if ((revents & (LOOP_IN | LOOP_ERR)) && zchan_read(eg->chan, s_on_msg, eg) < 0) {
        log_info("event=node_gone");
        loop_stop(loop);
        return;
    }
    loop_set_fd_events(loop, zchan_fd(eg->chan), LOOP_IN | (zchan_pending(eg->chan) ? LOOP_OUT : 0));
}

static void s_on_fd_sock(loop_t *loop, short revents, void *arg)
{
    (void)revents;
    egress_t *eg = arg;
    uint32_t id;
    int fd, rc;
    while ((rc = emsg_recv_fd(eg->fd_sock, &id, &fd)) == 1) s_listen(eg, id, fd);
    if (rc < 0) loop_stop(loop);
}

static void s_send_stats(egress_t *eg)
{
    static const emsg_stats_t zero;
    if (!memcmp(&eg->stats, &zero, sizeof zero)) return;
    emsg_t m = {.type = EM_STATS, .stats = eg->stats};
    emsg_send(eg->chan, &m);
    eg->stats = zero;
}

static void s_on_tick(loop_t *loop, void *arg)
{
    egress_t *eg = arg;
    static uint64_t last_stats;
    uint64_t now = clock_mono_ms();
    resolver_tick(eg->resolver);
    conn_tick(eg);
    for (grant_t *g; (g = grants_expired(eg->grants, now));) {
        char id[ID_STR_LEN + 1];
        id_format(g->job, id);
        log_warn("event=grant_lapsed job=%s tenant=%s", id, g->tenant);
        conn_close_all(eg, g, 0);
        grants_remove(eg->grants, g, NULL);
    }
    if (now - last_stats >= STATS_MS) {
        s_send_stats(eg);
        last_stats = now;
    }
    loop_set_fd_events(loop, zchan_fd(eg->chan), LOOP_IN | (zchan_pending(eg->chan) ? LOOP_OUT : 0));
}

/* No file system from here on (everything it reads — the deny list's names, the resolver's
 * address — is read by now): a Landlock ruleset that handles every file access and allows
 * none, when the kernel has Landlock. */
static int s_seal(const egress_conf_t *conf)
{
    /* a root node's egress process needs no privilege: it connects out and accepts on sockets
     * it is handed */
    if (getuid() == 0 && conf->run_uid > 0) {
        if (setgroups(0, NULL) < 0 || setresgid((gid_t)conf->run_gid, (gid_t)conf->run_gid,
                                                (gid_t)conf->run_gid) < 0 ||
            setresuid((uid_t)conf->run_uid, (uid_t)conf->run_uid, (uid_t)conf->run_uid) < 0) {
            log_error("event=egress_failed error=\"dropping privileges: %s\"", strerror(errno));
            return -1;
        }
    }
    struct landlock_ruleset_attr attr = {
        .handled_access_fs = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE |
                             LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR |
                             LANDLOCK_ACCESS_FS_REMOVE_DIR | LANDLOCK_ACCESS_FS_REMOVE_FILE |
                             LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_DIR |
                             LANDLOCK_ACCESS_FS_MAKE_REG | LANDLOCK_ACCESS_FS_MAKE_SOCK |
                             LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_BLOCK |
                             LANDLOCK_ACCESS_FS_MAKE_SYM};
    int fd = (int)syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0);
    if (fd < 0) {
        log_warn("event=landlock_unavailable error=\"%s\"", strerror(errno));
        return 0;
    }
    if (syscall(SYS_landlock_restrict_self, fd, 0) < 0)
        log_warn("event=landlock_failed error=\"%s\"", strerror(errno));
    close(fd);
    return 0;
}

int egress_main(const egress_conf_t *conf)
{
    egress_t eg = {.conf = conf, .fd_sock = FD_SOCK_FD, .over_cap = s_over_cap};
    char err[512];
    eg.loop = loop_new();
    eg.chan = zchan_new(CHAN_FD);
    eg.grants = grants_new();
    eg.deny = verdict_deny_new(conf->deny, err, sizeof err);
    if (eg.deny) eg.resolver = resolver_new(eg.loop, conf->resolver, err, sizeof err);
    if (!eg.deny || !eg.resolver) {
        log_error("event=egress_failed error=\"%s\"", err);
        return 1;
    }
    if (s_seal(conf) < 0) return 1;
    log_info("event=egress_ready resolver=%s deny_entries=%zu max_bytes=%ld max_conns=%ld "
             "idle_s=%ld",
             resolver_server(eg.resolver), verdict_deny_count(eg.deny), conf->max_bytes,
             conf->max_conns, conf->idle_s);
    loop_add_fd(eg.loop, CHAN_FD, LOOP_IN, s_on_chan, &eg);
    loop_add_fd(eg.loop, FD_SOCK_FD, LOOP_IN, s_on_fd_sock, &eg);
    loop_timer_add(eg.loop, TICK_MS, TICK_MS, s_on_tick, &eg);
    loop_run(eg.loop);
    return 0; /* the node is gone: every connection closes with this process */
}
