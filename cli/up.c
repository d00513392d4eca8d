/* cli/up.c — `snakepit up`: the embedded default farm on one machine.
 *
 * Starts, in order, a private redis-server on a unix socket in the state directory (unless
 * --redis names one), the broker, one executor node, and the MCP front-end; proves the farm
 * works with a probe job through the broker; writes ready.json and prints how to connect.
 * Then it supervises: a component that dies is logged and restarted with backoff, and the
 * local tenant is put back whenever Redis lost it. SIGINT or SIGTERM stops everything,
 * front-end first and Redis last, so the last records land.
 *
 * What runs, and with which options, is up_plan.h's; running and restarting processes is
 * supervisor.h's; keeping their logs to a size is logpump.h's; knowing each part is up is
 * probe.h's. This file is the sequence.
 *
 * What `snakepit down` (down.h) finds in the state directory: up.lock, held for as long as this
 * process runs and holding its pid; up.pids, the components running now ("NAME PID" lines),
 * rewritten whenever one starts or dies. */
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

#include "common/clock.h"
#include "common/log.h"
#include "common/redis_check.h"
#include "common/sha256.h"
#include "banner.h"
#include "probe.h"
#include "tenant.h"
#include "up.h"
#include "up_plan.h"

#define KEEP_TENANT_MS 2000 /* how often the local tenant is checked for */

/* front-end first (no new work), Redis last (the last records land) */
static const int s_stop_order[UP_CHILDREN] = {UP_MCP, UP_EXECUTOR, UP_BROKER2, UP_BROKER,
                                              UP_REDIS};

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
    snprintf(path, sizeof path, "%s/%s", dir, FARM_LOCK_FILE);
    int lock = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (lock < 0 || flock(lock, LOCK_EX | LOCK_NB) < 0) {
        farm_info_t running;
        char err[512];
        if (farm_read_ready(dir, &running, err, sizeof err) == 0)
            fprintf(stderr,
                    "snakepit up: a farm is already running from %s, at %s (another farm: "
                    "--state-dir DIR)\n",
                    dir, running.url);
        else
            fprintf(stderr, "snakepit up: a farm is already starting from %s (another farm: "
                    "--state-dir DIR)\n", dir);
        return -1;
    }
    /* whose lock it is, for `snakepit down` */
    if (ftruncate(lock, 0) < 0 || dprintf(lock, "%ld\n", (long)getpid()) < 0)
        log_warn("event=lock_pid_not_written path=%s error=\"%s\"", path, strerror(errno));
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

/* ---- what `snakepit down` reads ----------------------------------------------------------- */

/* STATE_DIR/up.pids: "NAME PID" per running component, written (through a rename) whenever
 * the set changed since the last call. */
static void s_record_pids(const up_plan_t *p)
{
    static char last[UP_CHILDREN * 48];
    char now[sizeof last] = "", path[PATH_MAX + 32], tmp[PATH_MAX + 48];
    size_t n = 0;
    for (int i = 0; i < UP_CHILDREN; i++)
        if (p->child[i].name && p->child[i].pid)
            n += (size_t)snprintf(now + n, sizeof now - n, "%s %d\n", p->child[i].name,
                                  (int)p->child[i].pid);
    if (!strcmp(now, last)) return;
    snprintf(path, sizeof path, "%s/%s", p->conf.state_dir, FARM_PIDS_FILE);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f || fputs(now, f) < 0 || fclose(f) != 0 || rename(tmp, path) < 0) {
        log_warn("event=pids_not_written path=%s error=\"%s\"", path, strerror(errno));
        return;
    }
    snprintf(last, sizeof last, "%s", now);
}

/* Every component's stdout and stderr through one pump, into logs it keeps to a size. NULL
 * (said on stderr) when it cannot start. */
static logpump_t *s_pump(up_plan_t *p)
{
    char err[PATH_MAX + 64] = "out of memory";
    logpump_t *pump = logpump_new(p->conf.log_max_kb * 1024, (int)p->conf.log_keep);
    int ok = pump != NULL;
    for (int i = 0; ok && i < UP_CHILDREN; i++)
        if (p->child[i].name) {
            p->child[i].out_fd = logpump_add(pump, p->child[i].log, err, sizeof err);
            ok = p->child[i].out_fd >= 0;
        }
    if (ok) ok = logpump_start(pump, err, sizeof err) == 0;
    for (int i = 0; i < UP_CHILDREN; i++) {
        p->child[i].pump = ok ? pump : NULL;
        if (!ok) p->child[i].out_fd = 0;
    }
    if (ok) return pump;
    fprintf(stderr, "snakepit up: logs: %s\n", err);
    logpump_destroy(&pump);
    return NULL;
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
        s_record_pids(p);
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

/* An operator's Redis: says loudly what in its set-up would lose the farm's state
 * (common/redis_check.h). The farm starts anyway: the operator may know better. */
static void s_check_external(const up_plan_t *p)
{
    char err[512], problems[REDIS_CHECK_MAX][240];
    redisContext *c = farm_redis(p->farm.redis, err, sizeof err);
    if (!c) return;
    redis_config_t cfg;
    redis_config_fetch(c, &cfg);
    redisFree(c);
    int n = redis_check(&cfg, problems, REDIS_CHECK_MAX);
    for (int i = 0; i < n; i++) {
        fprintf(stderr, "snakepit up: WARNING: the Redis at %s: %s\n", p->farm.redis, problems[i]);
        log_warn("event=redis_config_warning redis=%s problem=\"%s\"", p->farm.redis, problems[i]);
    }
}

static int s_start_redis(up_plan_t *p, int sig_fd)
{
    if (!p->private_redis) {
        if (probe_redis(p->farm.redis)) {
            s_check_external(p);
            return 0;
        }
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

/* One real job, in the first profile served, through each broker: the farm is ready when
 * they run. The executor registers with a broker once every zygote is warm (python.data_science
 * imports for seconds, far longer on a loaded machine or under ASan), and a broker refuses jobs
 * for a service nobody serves after its grace: so a refusal is asked again while the executor
 * runs, up to --ready-timeout (one deadline for all the brokers). */
static int s_probe(up_plan_t *p, int sig_fd)
{
    char service[65], detail[300], list[sizeof p->farm.brokers];
    snprintf(service, sizeof service, "%.*s", (int)strcspn(p->conf.profiles, ","),
             p->conf.profiles);
    snprintf(list, sizeof list, "%s", p->farm.brokers);
    uint64_t give_up = clock_mono_ms() + (uint64_t)p->conf.ready_timeout_s * 1000u;
    int said = 0;
    char *save = NULL;
    for (char *ep = strtok_r(list, ",", &save); ep; ep = strtok_r(NULL, ",", &save)) {
        for (;;) {
            int rc = probe_job(ep, p->hub ? &p->keys.broker : NULL, &p->keys.cli, service, detail,
                               sizeof detail);
            if (rc == 0) break;
            supervisor_reap(p->child, UP_CHILDREN, 1);
            if (rc != PROBE_NOT_SERVED || !p->child[UP_EXECUTOR].pid || clock_mono_ms() > give_up ||
                s_stop_asked(sig_fd)) {
                fprintf(stderr, "snakepit up: a probe job through %s did not run (%s)\n", ep,
                        detail);
                for (int i = UP_BROKER; i < UP_CHILDREN; i++) child_tail(&p->child[i]);
                return -1;
            }
            if (!said++)
                fprintf(stderr,
                        "snakepit up: waiting for the executor's sandboxes to warm up (%s)\n",
                        detail);
            usleep(250000);
        }
    }
    return 0;
}

/* The front-end learns which profiles are served from what the executors report every few
 * seconds (mcp-frontend/farm/served.h); until it knows, it offers every profile and places calls
 * as if all were served. A farm is said to be ready once it knows, so that the first call
 * already lands where it can run. Not a failure when it takes too long (an HTTPS endpoint is not
 * asked): the farm serves either way. */
#define SERVED_WAIT_MS 20000

static int s_wait_served(up_plan_t *p, int sig_fd)
{
    if (p->conf.tls_cert[0]) return 0;
    uint64_t give_up = clock_mono_ms() + SERVED_WAIT_MS;
    while (!probe_served(p->conf.http)) {
        if (s_stop_asked(sig_fd)) return -1;
        if (clock_mono_ms() > give_up) {
            log_warn("event=served_profiles_unknown waited_ms=%d", SERVED_WAIT_MS);
            return 0;
        }
        usleep(100000);
    }
    return 0;
}

static int s_bring_up(up_plan_t *p, int sig_fd)
{
    if (s_start_redis(p, sig_fd) < 0 || s_local_tenant(p) < 0) return -1;
    for (int i = UP_BROKER; i < UP_CHILDREN; i++)
        if (p->child[i].name && child_start(&p->child[i]) < 0) return -1;
    s_record_pids(p);
    /* an HTTPS endpoint's certificate may name another host than loopback: listening is
     * enough there, the probe job proves the rest */
    ready_fn *mcp_ready = p->conf.tls_cert[0] ? probe_listening : probe_http;
    if (s_wait_ready(p, sig_fd, mcp_ready, p->conf.http, &p->child[UP_MCP], "the MCP endpoint") <
            0 ||
        s_probe(p, sig_fd) < 0 || s_wait_served(p, sig_fd) < 0)
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

/* The local tenant is there whatever happened to Redis: re-created (with the same key) when
 * a Redis that restarted without its files, or was flushed, lost it. Cheap when all is in
 * place (the script writes nothing); a short timeout, so a Redis that is down does not hold
 * up restarting it. */
static void s_keep_local_tenant(up_plan_t *p)
{
    char err[512], digest[65];
    redisContext *c = farm_redis_ms(p->farm.redis, 300, err, sizeof err);
    if (!c) return;
    sha256_hex(p->farm.api_key, strlen(p->farm.api_key), digest);
    int rc = tenant_ensure_named(c, "local", digest, err, sizeof err);
    redisFree(c);
    if (rc > 0) log_warn("event=local_tenant_restored redis=%s", p->farm.redis);
}

/* Until SIGINT or SIGTERM: restarts what dies, and keeps what `up` owns in Redis. */
static void s_supervise(up_plan_t *p, int sig_fd)
{
    uint64_t next_check = clock_mono_ms() + KEEP_TENANT_MS;
    for (;;) {
        struct pollfd pfd = {sig_fd, POLLIN, 0};
        poll(&pfd, 1, 200);
        if (s_stop_asked(sig_fd)) return;
        supervisor_reap(p->child, UP_CHILDREN, 0);
        supervisor_restart_due(p->child, UP_CHILDREN);
        s_record_pids(p);
        if (clock_mono_ms() >= next_check) {
            s_keep_local_tenant(p);
            next_check = clock_mono_ms() + KEEP_TENANT_MS;
        }
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
    logpump_t *pump = s_pump(&p);
    rc = 1;
    if (pump && s_bring_up(&p, sig_fd) == 0) {
        s_supervise(&p, sig_fd);
        rc = 0;
    }
    log_info("event=stopping");
    supervisor_stop(p.child, s_stop_order, UP_CHILDREN);
    logpump_destroy(&pump);
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/ready.json", p.conf.state_dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/%s", p.conf.state_dir, FARM_PIDS_FILE);
    unlink(path);
    up_plan_free(&p);
    return rc;
}
