/* cli/up.c — `snakepit up`: the embedded default farm on one machine.
 *
 * Starts, in order, a private redis-server on a unix socket in the state directory (unless
 * --redis names one), the broker, one executor node, and the MCP front-end; proves the farm
 * works with a probe job through the broker; writes ready.json and prints how to connect.
 * Then it supervises: a component that dies is logged and restarted with backoff. SIGINT or
 * SIGTERM stops everything, front-end first and Redis last, so the last records land.
 *
 * What runs, and with which options, is up_plan.h's; running and restarting processes is
 * supervisor.h's; knowing each part is up is probe.h's. This file is the sequence. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sysexits.h>
#include <unistd.h>

#include "../common/clock.h"
#include "../common/log.h"
#include "banner.h"
#include "probe.h"
#include "tenant.h"
#include "up.h"
#include "up_plan.h"

/* front-end first (no new work), Redis last (the last records land) */
static const int s_stop_order[UP_CHILDREN] = {UP_MCP, UP_EXECUTOR, UP_BROKER, UP_REDIS};

/* Creates the state directory (and its parents) and logs/, and takes its lock: one farm per
 * state directory. The lock is held until the process exits. 0, or -1 (said on stderr) with
 * *rc the exit status. */
static int s_take_state_dir(const char *dir, int *rc)
{
    char path[PATH_MAX + 32];
    *rc = 1;
    if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
        snprintf(path, sizeof path, "%s", dir);
        for (char *p = path; (p = strchr(p + 1, '/'));) {
            *p = '\0';
            mkdir(path, 0700);
            *p = '/';
        }
        if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
            fprintf(stderr, "snakepit up: cannot create %s: %s\n", dir, strerror(errno));
            return -1;
        }
    }
    snprintf(path, sizeof path, "%s/logs", dir);
    mkdir(path, 0700);
    snprintf(path, sizeof path, "%s/up.lock", dir);
    int lock = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (lock < 0 || flock(lock, LOCK_EX | LOCK_NB) < 0) {
        fprintf(stderr, "snakepit up: a farm is already running from %s (see %s/ready.json)\n", dir,
                dir);
        return -1;
    }
    snprintf(path, sizeof path, "%s/ready.json", dir);
    unlink(path);
    if (strlen(dir) > 80) {
        fprintf(stderr, "snakepit up: state directory path too long for unix sockets: %s\n", dir);
        *rc = EX_USAGE;
        return -1;
    }
    return 0;
}

/* SIGCHLD, SIGINT, SIGTERM and SIGHUP arrive on a descriptor, read between steps. */
static int s_signals(void)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    sigprocmask(SIG_BLOCK, &set, NULL);
    return signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
}

/* 1 when a signal other than SIGCHLD is waiting: stop. */
static int s_stop_asked(int sig_fd)
{
    struct signalfd_siginfo si;
    int stop = 0;
    while (read(sig_fd, &si, sizeof si) == sizeof si)
        if (si.ssi_signo != SIGCHLD) stop = 1;
    return stop;
}

/* ---- bringing it up ----------------------------------------------------------------------- */

typedef int(ready_fn)(const char *where);

/* Waits for ready(where) while c keeps running, up to --ready-timeout. */
static int s_wait_ready(up_plan_t *p, int sig_fd, ready_fn *ready, const char *where,
                        const child_t *c, const char *what)
{
    uint64_t give_up = clock_mono_ms() + (uint64_t)p->conf.ready_timeout_s * 1000u;
    while (clock_mono_ms() < give_up) {
        if (ready(where)) return 0;
        supervisor_reap(p->child, UP_CHILDREN, 1);
        if (!c->pid) {
            fprintf(stderr, "snakepit up: %s exited during start-up (log: %s)\n", c->name, c->log);
            return -1;
        }
        struct signalfd_siginfo si;
        if (read(sig_fd, &si, sizeof si) == sizeof si && si.ssi_signo != SIGCHLD) return -1;
        usleep(50000);
    }
    fprintf(stderr, "snakepit up: %s did not become ready in %ld s (log: %s)\n", what,
            p->conf.ready_timeout_s, c->log);
    child_tail(c);
    return -1;
}

static int s_start_redis(up_plan_t *p, int sig_fd)
{
    if (!p->private_redis) {
        if (probe_redis(p->farm.redis)) return 0;
        fprintf(stderr, "snakepit up: cannot reach Redis at %s\n", p->farm.redis);
        return -1;
    }
    child_t *c = &p->child[UP_REDIS];
    if (child_start(c) < 0) return -1;
    return s_wait_ready(p, sig_fd, probe_redis, p->farm.redis, c, "redis");
}

/* The tenant `local`, with the key kept in STATE_DIR/local.key. */
static int s_local_tenant(up_plan_t *p)
{
    char err[512], path[PATH_MAX + 32];
    redisContext *c = farm_redis(p->farm.redis, err, sizeof err);
    snprintf(path, sizeof path, "%s/local.key", p->conf.state_dir);
    int rc = c ? tenant_ensure_local(c, path, p->farm.api_key, err, sizeof err) : -1;
    if (rc < 0) fprintf(stderr, "snakepit up: setting up the local tenant: %s\n", err);
    if (c) redisFree(c);
    return rc;
}

/* One real job, in the first profile served: the farm is ready when it runs. The executor
 * registers with the broker once every zygote is warm (python.data_science imports for
 * seconds, far longer on a loaded machine or under ASan), and the broker refuses jobs for a
 * service nobody serves after its grace: so a refusal is asked again while the executor runs,
 * up to --ready-timeout. */
static int s_probe(up_plan_t *p, int sig_fd)
{
    char service[65], detail[300];
    snprintf(service, sizeof service, "%.*s", (int)strcspn(p->conf.profiles, ","),
             p->conf.profiles);
    uint64_t give_up = clock_mono_ms() + (uint64_t)p->conf.ready_timeout_s * 1000u;
    int said = 0;
    for (;;) {
        int rc = probe_job(p->farm.broker, p->hub ? &p->keys.broker : NULL, &p->keys.cli, service,
                           detail, sizeof detail);
        if (rc == 0) return 0;
        supervisor_reap(p->child, UP_CHILDREN, 1);
        if (rc != PROBE_NOT_SERVED || !p->child[UP_EXECUTOR].pid || clock_mono_ms() > give_up ||
            s_stop_asked(sig_fd))
            break;
        if (!said++)
            fprintf(stderr, "snakepit up: waiting for the executor's sandboxes to warm up (%s)\n",
                    detail);
        usleep(250000);
    }
    fprintf(stderr, "snakepit up: a probe job did not run (%s)\n", detail);
    for (int i = UP_BROKER; i < UP_CHILDREN; i++) child_tail(&p->child[i]);
    return -1;
}

static int s_bring_up(up_plan_t *p, int sig_fd)
{
    if (s_start_redis(p, sig_fd) < 0 || s_local_tenant(p) < 0) return -1;
    if (child_start(&p->child[UP_BROKER]) < 0 || child_start(&p->child[UP_EXECUTOR]) < 0 ||
        child_start(&p->child[UP_MCP]) < 0)
        return -1;
    if (s_wait_ready(p, sig_fd, probe_http, p->conf.http, &p->child[UP_MCP], "the MCP endpoint") <
            0 ||
        s_probe(p, sig_fd) < 0)
        return -1;
    if (farm_write_ready(&p->farm) < 0) {
        fprintf(stderr, "snakepit up: cannot write %s/ready.json: %s\n", p->conf.state_dir,
                strerror(errno));
        return -1;
    }
    banner_print(&p->farm, p->hub ? p->keys.dir : NULL, (long)p->child[UP_BROKER].pid);
    log_info("event=ready url=%s state_dir=%s", p->farm.url, p->conf.state_dir);
    return 0;
}

/* Until SIGINT or SIGTERM: restarts what dies. */
static void s_supervise(up_plan_t *p, int sig_fd)
{
    for (;;) {
        struct pollfd pfd = {sig_fd, POLLIN, 0};
        poll(&pfd, 1, 200);
        if (s_stop_asked(sig_fd)) return;
        supervisor_reap(p->child, UP_CHILDREN, 0);
        supervisor_restart_due(p->child, UP_CHILDREN);
    }
}

int up_main(int argc, char **argv)
{
    up_plan_t p = {0};
    char err[512];
    switch (up_options(&p.conf, argc, argv, err, sizeof err)) {
    case CONFIG_HELP:
        return 0;
    case CONFIG_ERROR:
        fprintf(stderr, "snakepit up: %s\n", err);
        return EX_USAGE;
    case CONFIG_OK:
        break;
    }
    log_level_t lvl = LOG_INFO;
    log_level_parse(p.conf.log_level, &lvl);
    log_init("up", lvl);
    int rc;
    if (s_take_state_dir(p.conf.state_dir, &rc) < 0) return rc;
    if (up_plan(&p, err, sizeof err) < 0) {
        fprintf(stderr, "snakepit up: %s\n", err);
        up_plan_free(&p);
        return 1;
    }
    int sig_fd = s_signals();
    rc = 1;
    if (s_bring_up(&p, sig_fd) == 0) {
        s_supervise(&p, sig_fd);
        rc = 0;
    }
    log_info("event=stopping");
    supervisor_stop(p.child, s_stop_order, UP_CHILDREN);
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/ready.json", p.conf.state_dir);
    unlink(path);
    up_plan_free(&p);
    return rc;
}
