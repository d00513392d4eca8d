/* cli/up.c — `snakepit up`: the embedded default farm on one machine.
 *
 * Starts, in order, a private redis-server on a unix socket in the state directory (unless
 * --redis names one), the broker, one executor node, and the MCP front-end; proves the farm
 * works with a probe job through the broker; writes ready.json and prints how to connect.
 * Then it supervises: a component that dies is logged and restarted with backoff. SIGINT or
 * SIGTERM stops everything, front-end first and Redis last, so the last records land.
 *
 * Each component runs in its own process group (a Ctrl-C reaches only us, and we stop them in
 * order) with PR_SET_PDEATHSIG, so even a SIGKILL of `snakepit up` leaves no process behind. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "../common/buf.h"
#include "../common/clock.h"
#include "../common/config.h"
#include "../common/curve_cert.h"
#include "../common/ids.h"
#include "../common/log.h"
#include "../common/loop.h"
#include "../common/profiles.h"
#include "../proto/client.h"
#include "../proto/job.h"
#include "../proto/result.h"
#include "farm.h"
#include "tenant.h"
#include "up.h"

#define MAX_ARGS 40

typedef struct {
    char http[128];
    char state_dir[PATH_MAX];
    long slots;
    char redis[PATH_MAX + 16];
    char profiles[256];
    char executors[PATH_MAX + 16];
    long metrics_port;
    char disable_layer[128];
    char log_level[16];
    long ready_timeout_s;
} up_conf_t;

static const cfg_opt_t s_opts[] = {
    CFG_OPT_STR(up_conf_t, http, "http", "HOST:PORT", "where the MCP endpoint listens"),
    CFG_OPT_STR(up_conf_t, state_dir, "state-dir", "DIR", "state, sockets, logs (default ~/.local/state/snakepit)"),
    CFG_OPT_INT(up_conf_t, slots, "slots", 1, 1024, "N", "sandbox slots on this machine (default: one per core)"),
    CFG_OPT_STR(up_conf_t, redis, "redis", "URL", "use this Redis instead of a private one"),
    CFG_OPT_LIST(up_conf_t, profiles, "profiles", "LIST",
                 "profiles the local executor serves (default: every profile whose libraries are "
                 "installed)"),
    CFG_OPT_STR(up_conf_t, executors, "executors", "ENDPOINT",
                "broker endpoint for executors (default: ipc in the state dir; tcp://0.0.0.0:5556 "
                "to add executor nodes on other machines)"),
    CFG_OPT_INT(up_conf_t, metrics_port, "metrics-port", 0, 65535, "PORT",
                "first of the broker's and executor's /metrics ports (0: pick free ports)"),
    CFG_OPT_LIST(up_conf_t, disable_layer, "disable-layer", "LAYER", "sandbox layer to switch off (see snakepit-executor --help)"),
    CFG_OPT_STR(up_conf_t, log_level, "log-level", "LEVEL", "components' log level"),
    CFG_OPT_INT(up_conf_t, ready_timeout_s, "ready-timeout", 1, 3600, "S", "how long to wait for the farm to answer"),
    CFG_OPT_END,
};

typedef struct {
    const char *name;
    char       *argv[MAX_ARGS];
    int         argc;
    pid_t       pid;
    uint64_t    started_ms;
    uint64_t    restart_at_ms;
    uint64_t    backoff_ms;
    long        restarts;
    char        log[PATH_MAX + 32];
    char       *env[4];      /* NAME=VALUE set for this component only (secrets stay off argv) */
} comp_t;

enum { C_REDIS, C_BROKER, C_EXECUTOR, C_MCP, C_COUNT };

typedef struct {
    up_conf_t conf;
    char      bin[PATH_MAX];
    char      redis_url[PATH_MAX + 64];
    char      clients_ep[PATH_MAX + 64];
    char      executors_ep[PATH_MAX + 64];
    char      url[160];
    char      key[68];
    long      metrics[2];
    comp_t    comps[C_COUNT];
    int       private_redis;
    int       sig_fd;
    int       stopping;
    int       hub;           /* executors on other machines: CURVE on the broker */
    char      keys[PATH_MAX + 16];
    curve_cert_t broker_cert, mcp_cert, cli_cert;
} up_t;

static void s_arg(comp_t *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void s_arg(comp_t *c, const char *fmt, ...)
{
    if (c->argc >= MAX_ARGS - 1) return;
    char    tmp[PATH_MAX + 64];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    c->argv[c->argc++] = xstrdup(tmp);
    c->argv[c->argc] = NULL;
}

static long s_free_port(void)
{
    int                fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t          len = sizeof a;
    long               port = -1;
    if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    if (fd >= 0) close(fd);
    return port;
}

/* An executor endpoint other machines can reach makes this farm a hub: ZeroMQ off loopback is
 * CURVE only (broker/README.md). Key pairs for the broker and for each local peer live in
 * STATE_DIR/keys; the peers' public halves in keys/allowed/, the broker's allowlist, where
 * executors on other machines are added. */
static int s_loopback(const char *endpoint)
{
    return strncmp(endpoint, "ipc://", 6) == 0 || strncmp(endpoint, "inproc://", 9) == 0 ||
           strncmp(endpoint, "tcp://127.", 10) == 0 || strncmp(endpoint, "tcp://localhost:", 16) == 0 ||
           strncmp(endpoint, "tcp://[::1]:", 12) == 0;
}

static int s_keypair(up_t *u, const char *name, curve_cert_t *cert, int allow, char *err, size_t errlen)
{
    char sec[PATH_MAX + 80], pub[PATH_MAX + 80];
    snprintf(sec, sizeof sec, "%s/%s.key_secret", u->keys, name);
    snprintf(pub, sizeof pub, "%s/%s.key", u->keys, name);
    if (curve_cert_load(sec, cert, err, errlen) < 0 || !cert->secret_key[0]) {
        memset(cert, 0, sizeof *cert);
        snprintf(cert->name, sizeof cert->name, "%s", name);
        if (zmq_curve_keypair(cert->public_key, cert->secret_key) < 0 ||
            curve_cert_save(sec, cert, 1, 1, err, errlen) < 0 || curve_cert_save(pub, cert, 0, 1, err, errlen) < 0)
            return -1;
    }
    if (allow) {
        snprintf(pub, sizeof pub, "%s/allowed/%s.key", u->keys, name);
        if (curve_cert_save(pub, cert, 0, 1, err, errlen) < 0) return -1;
    }
    return 0;
}

static int s_hub_keys(up_t *u, char *err, size_t errlen)
{
    snprintf(u->keys, sizeof u->keys, "%s/keys", u->conf.state_dir);
    char allowed[PATH_MAX + 32];
    snprintf(allowed, sizeof allowed, "%s/allowed", u->keys);
    if ((mkdir(u->keys, 0700) < 0 && errno != EEXIST) || (mkdir(allowed, 0700) < 0 && errno != EEXIST)) {
        snprintf(err, errlen, "cannot create %.200s: %s", allowed, strerror(errno));
        return -1;
    }
    curve_cert_t exec_cert;
    int rc = s_keypair(u, "broker", &u->broker_cert, 0, err, errlen) == 0 &&
                     s_keypair(u, "local-executor", &exec_cert, 1, err, errlen) == 0 &&
                     s_keypair(u, "local-mcp", &u->mcp_cert, 1, err, errlen) == 0 &&
                     s_keypair(u, "local-cli", &u->cli_cert, 1, err, errlen) == 0
                 ? 0
                 : -1;
    explicit_bzero(&exec_cert, sizeof exec_cert);
    return rc;
}

/* Every profile this machine can serve: all of them when the data-science libraries are
 * installed (make run installs them), the others otherwise, said once. A profile whose
 * modules are missing would make the executor refuse to start, which is right for an operator's
 * explicit --profiles but not for a developer's first `make run`. */
static void s_default_profiles(up_t *u)
{
    snprintf(u->conf.profiles, sizeof u->conf.profiles, "python.basic");
    for (size_t i = 0; i < n_profiles; i++) {
        const profile_t *p = &profiles[i];
        if (strcmp(p->name, "python.basic") == 0) continue;
        buf_t probe;
        buf_init(&probe);
        buf_puts(&probe, "/usr/bin/python3 -I -c 'import ");
        int first = 1;
        for (const char *const *m = p->modules; *m; m++) {
            if (strchr(*m, '.')) continue; /* packages are enough */
            buf_printf(&probe, "%s%s", first ? "" : ",", *m);
            first = 0;
        }
        buf_puts(&probe, "' >/dev/null 2>&1");
        int rc = system((const char *)probe.data);
        buf_free(&probe);
        if (rc == 0) {
            size_t n = strlen(u->conf.profiles);
            snprintf(u->conf.profiles + n, sizeof u->conf.profiles - n, ",%s", p->name);
        } else {
            log_warn("event=profile_unavailable profile=%s reason=\"its libraries are not "
                     "installed (deploy/install-deps.sh run)\"", p->name);
        }
    }
}

static void s_plan(up_t *u)
{
    const char *dir = u->conf.state_dir;
    comp_t     *c;
    if (u->private_redis) {
        c = &u->comps[C_REDIS];
        c->name = "redis";
        s_arg(c, "redis-server");
        s_arg(c, "--port");
        s_arg(c, "0");
        s_arg(c, "--unixsocket");
        s_arg(c, "%s/redis.sock", dir);
        s_arg(c, "--unixsocketperm");
        s_arg(c, "700");
        s_arg(c, "--dir");
        s_arg(c, "%s", dir);
        s_arg(c, "--dbfilename");
        s_arg(c, "redis.rdb");
        s_arg(c, "--save"); /* records survive a restart of the farm */
        s_arg(c, "60 100");
        s_arg(c, "--daemonize");
        s_arg(c, "no");
        snprintf(u->redis_url, sizeof u->redis_url, "unix://%s/redis.sock", dir);
    } else {
        snprintf(u->redis_url, sizeof u->redis_url, "%s", u->conf.redis);
    }
    for (int i = 0; i < 2; i++)
        u->metrics[i] = u->conf.metrics_port ? u->conf.metrics_port + i : s_free_port();

    c = &u->comps[C_BROKER];
    c->name = "broker";
    s_arg(c, "%s/snakepit-broker", u->bin);
    s_arg(c, "--clients");
    s_arg(c, "%s", u->clients_ep);
    s_arg(c, "--executors");
    s_arg(c, "%s", u->executors_ep);
    s_arg(c, "--metrics");
    s_arg(c, "127.0.0.1:%ld", u->metrics[0]);
    s_arg(c, "--redis");
    s_arg(c, "%s", u->redis_url);
    s_arg(c, "--log-level");
    s_arg(c, "%s", u->conf.log_level);
    if (u->hub) {
        s_arg(c, "--curve-secret-file");
        s_arg(c, "%s/broker.key_secret", u->keys);
        s_arg(c, "--curve-allow-dir");
        s_arg(c, "%s/allowed", u->keys);
    }

    c = &u->comps[C_EXECUTOR];
    c->name = "executor";
    s_arg(c, "%s/snakepit-executor", u->bin);
    s_arg(c, "--broker");
    s_arg(c, "%s", u->executors_ep);
    s_arg(c, "--slots");
    s_arg(c, "%ld", u->conf.slots);
    s_arg(c, "--profiles");
    s_arg(c, "%s", u->conf.profiles);
    s_arg(c, "--metrics");
    s_arg(c, "127.0.0.1:%ld", u->metrics[1]);
    s_arg(c, "--redis");
    s_arg(c, "%s", u->redis_url);
    if (u->hub) {
        s_arg(c, "--curve-server-key");
        s_arg(c, "%s/broker.key", u->keys);
        s_arg(c, "--curve-secret-file");
        s_arg(c, "%s/local-executor.key_secret", u->keys);
    }
    if (u->conf.disable_layer[0]) {
        s_arg(c, "--disable-layer");
        s_arg(c, "%s", u->conf.disable_layer);
    }
    s_arg(c, "--log-level");
    s_arg(c, "%s", u->conf.log_level);

    c = &u->comps[C_MCP];
    c->name = "mcp";
    s_arg(c, "%s/snakepit-mcp", u->bin);
    s_arg(c, "--http");
    s_arg(c, "%s", u->conf.http);
    s_arg(c, "--broker");
    s_arg(c, "%s", u->clients_ep);
    s_arg(c, "--redis");
    s_arg(c, "%s", u->redis_url);
    s_arg(c, "--log-level");
    s_arg(c, "%s", u->conf.log_level);
    if (u->hub) {
        char tmp[128];
        snprintf(tmp, sizeof tmp, "SNAKEPIT_BROKER_CURVE_KEY=%s", u->broker_cert.public_key);
        c->env[0] = xstrdup(tmp);
        snprintf(tmp, sizeof tmp, "SNAKEPIT_CURVE_PUBLIC_KEY=%s", u->mcp_cert.public_key);
        c->env[1] = xstrdup(tmp);
        snprintf(tmp, sizeof tmp, "SNAKEPIT_CURVE_SECRET_KEY=%s", u->mcp_cert.secret_key);
        c->env[2] = xstrdup(tmp);
    }
    for (int i = 0; i < C_COUNT; i++)
        if (u->comps[i].name)
            snprintf(u->comps[i].log, sizeof u->comps[i].log, "%s/logs/%s.log", dir, u->comps[i].name);
}

static int s_start(up_t *u, comp_t *c)
{
    int logfd = open(c->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (logfd < 0) {
        log_error("event=log_open_failed path=%s error=\"%s\"", c->log, strerror(errno));
        return -1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        log_error("event=fork_failed component=%s error=\"%s\"", c->name, strerror(errno));
        close(logfd);
        return -1;
    }
    if (pid == 0) {
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0);
        if (getppid() == 1) _exit(1); /* `up` died before PDEATHSIG was armed */
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        for (int e = 0; e < 4 && c->env[e]; e++) putenv(c->env[e]);
        int devnull = open("/dev/null", O_RDONLY);
        if (devnull >= 0) dup2(devnull, 0);
        dup2(logfd, 1);
        dup2(logfd, 2);
        execvp(c->argv[0], c->argv);
        fprintf(stderr, "snakepit up: cannot run %s: %s\n", c->argv[0], strerror(errno));
        _exit(127);
    }
    close(logfd);
    c->pid = pid;
    c->started_ms = clock_mono_ms();
    log_info("event=component_started component=%s pid=%d log=%s", c->name, pid, c->log);
    (void)u;
    return 0;
}

static void s_tail(const comp_t *c)
{
    FILE *f = fopen(c->log, "r");
    if (!f) return;
    char   lines[8][512];
    size_t n = 0;
    while (fgets(lines[n % 8], sizeof lines[0], f)) n++;
    fclose(f);
    fprintf(stderr, "--- last lines of %s ---\n", c->log);
    for (size_t i = n > 8 ? n - 8 : 0; i < n; i++) fputs(lines[i % 8], stderr);
}

/* ---- readiness ------------------------------------------------------------------------ */

static int s_redis_ready(up_t *u)
{
    char          err[256];
    redisContext *c = farm_redis(u->redis_url, err, sizeof err);
    if (!c) return 0;
    redisReply *r = redisCommand(c, "PING");
    int         ok = r && r->type == REDIS_REPLY_STATUS;
    if (r) freeReplyObject(r);
    redisFree(c);
    return ok;
}

static int s_http_ready(up_t *u)
{
    char host[128];
    snprintf(host, sizeof host, "%s", u->conf.http);
    char *colon = strrchr(host, ':');
    if (!colon) return 0;
    *colon = '\0';
    int port = atoi(colon + 1);
    if (!strcmp(host, "0.0.0.0") || !host[0]) snprintf(host, sizeof host, "127.0.0.1");
    int                fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, host, &a.sin_addr);
    int ok = 0;
    if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) == 0) {
        const char *req = "GET /healthz HTTP/1.0\r\nHost: localhost\r\n\r\n";
        char        buf[64] = "";
        struct pollfd p = {fd, POLLIN, 0};
        if (write(fd, req, strlen(req)) == (ssize_t)strlen(req) && poll(&p, 1, 1000) == 1 &&
            read(fd, buf, sizeof buf - 1) > 12)
            ok = strncmp(buf + 9, "200", 3) == 0;
    }
    if (fd >= 0) close(fd);
    return ok;
}

typedef struct {
    int      done;
    status_t status;
    char     detail[256];
} probe_t;

static void s_probe_event(void *arg, const uint8_t id[ID_BYTES], client_event_t ev,
                          const uint8_t *body, size_t len)
{
    (void)id;
    probe_t *p = arg;
    if (ev != CLIENT_RESULT) return;
    result_t res;
    char     err[128];
    p->done = 1;
    if (result_decode(body, len, &res, err, sizeof err) < 0) {
        p->status = ST_INTERNAL_ERROR;
        snprintf(p->detail, sizeof p->detail, "%s", err);
        return;
    }
    p->status = res.status;
    snprintf(p->detail, sizeof p->detail, "%s", res.error.message ? res.error.message : "");
    result_clear(&res);
}

static void s_probe_tick(loop_t *loop, void *arg)
{
    (void)arg;
    loop_stop(loop);
}

/* One real job through broker, executor and sandbox: the farm is ready when it runs. */
static int s_probe(up_t *u, char *detail, size_t cap)
{
    void   *ctx = zmq_ctx_new();
    loop_t *loop = loop_new();
    probe_t p = {0};
    client_conf_t cc = {.endpoint = u->clients_ep, .heartbeat_ms = 500, .grace_ms = 2000};
    if (u->hub) {
        cc.curve_server_key = u->broker_cert.public_key;
        cc.curve_public_key = u->cli_cert.public_key;
        cc.curve_secret_key = u->cli_cert.secret_key;
    }
    client_t *cl = client_new(ctx, loop, &cc, s_probe_event, &p);
    jobspec_t job;
    jobspec_init(&job);
    char service[65];
    snprintf(service, sizeof service, "%.*s", (int)strcspn(u->conf.profiles, ","), u->conf.profiles);
    job.tenant = "local";
    job.service = service;
    job.code = "print('ready')";
    job.code_len = strlen(job.code);
    job.submitted_ms = clock_wall_ms();
    buf_t body;
    buf_init(&body);
    jobspec_encode(&job, &body);
    uint8_t id[ID_BYTES];
    id_new(id);
    route_t route = {.deadline_ms = clock_wall_ms() + 20000};
    snprintf(route.tenant, sizeof route.tenant, "local");
    uint64_t give_up = clock_mono_ms() + 3000;
    int      sent = 0;
    while (!p.done && clock_mono_ms() < give_up) {
        if (!sent) sent = client_submit(cl, job.service, id, &route, body.data, body.len) == 0;
        loop_timer_add(loop, 50, 0, s_probe_tick, NULL);
        loop_run(loop);
    }
    if (sent && !p.done) { /* keep waiting for the answer we asked for */
        give_up = clock_mono_ms() + 25000;
        while (!p.done && clock_mono_ms() < give_up) {
            loop_timer_add(loop, 50, 0, s_probe_tick, NULL);
            loop_run(loop);
        }
    }
    snprintf(detail, cap, "%s%s%s", p.done ? status_name(p.status) : "no answer",
             p.detail[0] ? ": " : "", p.detail);
    buf_free(&body);
    client_destroy(&cl);
    loop_destroy(&loop);
    zmq_ctx_term(ctx);
    return p.done && p.status == ST_OK ? 0 : -1;
}

/* ---- supervision -------------------------------------------------------------------------- */

static void s_reap(up_t *u, int during_start)
{
    int   st;
    pid_t pid;
    while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
        for (int i = 0; i < C_COUNT; i++) {
            comp_t *c = &u->comps[i];
            if (c->pid != pid) continue;
            c->pid = 0;
            if (u->stopping) break;
            uint64_t ran = clock_mono_ms() - c->started_ms;
            c->backoff_ms = ran > 60000 || !c->backoff_ms ? 1000 : c->backoff_ms * 2;
            if (c->backoff_ms > 30000) c->backoff_ms = 30000;
            c->restart_at_ms = clock_mono_ms() + c->backoff_ms;
            log_error("event=component_died component=%s %s=%d restart_in_ms=%llu", c->name,
                      WIFSIGNALED(st) ? "signal" : "status", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st),
                      (unsigned long long)c->backoff_ms);
            if (during_start) s_tail(c);
        }
    }
}

static void s_stop_all(up_t *u)
{
    u->stopping = 1;
    /* front-end first (no new work), Redis last (the last records land) */
    int order[C_COUNT] = {C_MCP, C_EXECUTOR, C_BROKER, C_REDIS};
    for (int k = 0; k < C_COUNT; k++) {
        comp_t *c = &u->comps[order[k]];
        if (!c->pid) continue;
        kill(-c->pid, SIGTERM);
        uint64_t give_up = clock_mono_ms() + 5000;
        while (c->pid && clock_mono_ms() < give_up) {
            int st;
            if (waitpid(c->pid, &st, WNOHANG) == c->pid) {
                c->pid = 0;
                break;
            }
            usleep(20000);
        }
        if (c->pid) {
            log_warn("event=component_killed component=%s reason=\"did not stop in 5 s\"", c->name);
            kill(-c->pid, SIGKILL);
            waitpid(c->pid, NULL, 0);
            c->pid = 0;
        }
        log_info("event=component_stopped component=%s", c->name);
    }
}

static int s_wait_start(up_t *u, int (*ready)(up_t *), comp_t *c, const char *what)
{
    uint64_t give_up = clock_mono_ms() + (uint64_t)u->conf.ready_timeout_s * 1000u;
    while (clock_mono_ms() < give_up) {
        if (ready(u)) return 0;
        s_reap(u, 1);
        if (!c->pid) {
            fprintf(stderr, "snakepit up: %s exited during start-up (log: %s)\n", c->name, c->log);
            return -1;
        }
        struct signalfd_siginfo si;
        if (read(u->sig_fd, &si, sizeof si) == sizeof si && si.ssi_signo != SIGCHLD) return -1;
        usleep(50000);
    }
    fprintf(stderr, "snakepit up: %s did not become ready in %ld s (log: %s)\n", what,
            u->conf.ready_timeout_s, c->log);
    s_tail(c);
    return -1;
}

static int s_write_ready(up_t *u)
{
    char mcp_cfg[PATH_MAX * 2];
    snprintf(mcp_cfg, sizeof mcp_cfg, "%s/snakepit", u->bin);
    json_t *metrics = json_array();
    char    m[64];
    for (int i = 0; i < 2; i++) {
        snprintf(m, sizeof m, "http://127.0.0.1:%ld/metrics", u->metrics[i]);
        json_array_append_new(metrics, json_string(m));
    }
    char http_metrics[200];
    snprintf(http_metrics, sizeof http_metrics, "%.*s/metrics", (int)(strlen(u->url) - 4), u->url);
    json_array_append_new(metrics, json_string(http_metrics));
    json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:I, s:o, s:[s,s,s,s,s]}", "url", u->url,
                          "api_key", u->key, "redis", u->redis_url, "broker", u->clients_ep,
                          "executors", u->executors_ep, "state_dir", u->conf.state_dir, "pid",
                          (json_int_t)getpid(), "metrics", metrics, "stdio_command", mcp_cfg, "mcp",
                          "--stdio", "--state-dir", u->conf.state_dir);
    if (u->hub) {
        char p1[PATH_MAX + 64], p2[PATH_MAX + 64];
        snprintf(p1, sizeof p1, "%s/broker.key", u->keys);
        snprintf(p2, sizeof p2, "%s/local-cli.key_secret", u->keys);
        json_object_set_new(o, "curve", json_pack("{s:s, s:s}", "broker_key", p1, "client_cert", p2));
    }
    char path[PATH_MAX + 32], tmp[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/ready.json", u->conf.state_dir);
    snprintf(tmp, sizeof tmp, "%s/ready.json.tmp", u->conf.state_dir);
    int rc = json_dump_file(o, tmp, JSON_INDENT(2)) == 0 && chmod(tmp, 0600) == 0 && rename(tmp, path) == 0 ? 0 : -1;
    json_decref(o);
    return rc;
}

static void s_print_banner(up_t *u)
{
    printf("\nsnakepit is up.\n\n"
           "  MCP endpoint   %s\n"
           "  API key        %s\n"
           "  state & logs   %s\n"
           "  metrics        http://127.0.0.1:%ld/metrics (broker), http://127.0.0.1:%ld/metrics "
           "(executor), %.*s/metrics (front-end)\n\n",
           u->url, u->key, u->conf.state_dir, u->metrics[0], u->metrics[1],
           (int)(strlen(u->url) - 4), u->url);
    printf("MCP client configuration (Streamable HTTP):\n"
           "  {\"mcpServers\": {\"snakepit\": {\"type\": \"http\", \"url\": \"%s\",\n"
           "    \"headers\": {\"Authorization\": \"Bearer %s\"}}}}\n\n",
           u->url, u->key);
    printf("MCP client configuration (stdio, e.g. Claude Desktop):\n"
           "  {\"mcpServers\": {\"snakepit\": {\"command\": \"%s/snakepit\",\n"
           "    \"args\": [\"mcp\", \"--stdio\", \"--state-dir\", \"%s\"]}}}\n\n",
           u->bin, u->conf.state_dir);
    char reach[PATH_MAX + 64];
    snprintf(reach, sizeof reach, "%s", u->executors_ep);
    char *any = strstr(reach, "://0.0.0.0:");
    if (any) { /* a bind address: show one the other machines can use */
        char host[256] = "THIS-HOST";
        gethostname(host, sizeof host - 1);
        char tail[64];
        snprintf(tail, sizeof tail, "%s", any + 10);
        snprintf(any + 3, sizeof reach - (size_t)(any + 3 - reach), "%s%s", host, tail);
    }
    if (u->hub)
        printf("Executors on other machines (CURVE; this broker admits the keys in %s/allowed/):\n"
               "  on each machine:  snakepit keygen --dir /etc/snakepit/keys exec-NAME\n"
               "  copy its exec-NAME.key here into %s/allowed/, then:  kill -HUP %d  (the broker reloads)\n"
               "  copy %s/broker.key there, and run:\n"
               "  snakepit-executor --broker %s --curve-server-key broker.key \\\n"
               "      --curve-secret-file /etc/snakepit/keys/exec-NAME.key_secret\n\n",
               u->keys, u->keys, (int)u->comps[C_BROKER].pid, u->keys, reach);
    printf("Try it:  %s/snakepit run 'print(1+1)'\n\nCtrl-C stops the farm.\n", u->bin);
    fflush(stdout);
}

int up_main(int argc, char **argv)
{
    up_t      u = {0};
    up_conf_t defaults = {0};
    snprintf(defaults.http, sizeof defaults.http, "127.0.0.1:8765");
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    defaults.slots = cpus > 0 ? cpus : 1;
    defaults.profiles[0] = '\0'; /* chosen after parsing: what this machine can serve */
    defaults.metrics_port = 9101;
    snprintf(defaults.log_level, sizeof defaults.log_level, "info");
    defaults.ready_timeout_s = 60;
    u.conf = defaults;
    char err[512];
    switch (config_load(&u.conf, s_opts, argc, argv, NULL, NULL, err, sizeof err)) {
    case CONFIG_HELP:
        config_usage(stdout, "snakepit up [options]",
                     "Start a whole farm on this machine: a private Redis, the broker, an executor\n"
                     "node and the MCP endpoint. Prints how to connect; Ctrl-C stops it all.",
                     s_opts, &defaults);
        return 0;
    case CONFIG_ERROR: fprintf(stderr, "snakepit up: %s\n", err); return 2;
    case CONFIG_OK: break;
    }
    log_level_t lvl = LOG_INFO;
    log_level_parse(u.conf.log_level, &lvl);
    log_init("up", lvl);
    char dir[PATH_MAX];
    farm_state_dir(u.conf.state_dir, dir, sizeof dir);
    snprintf(u.conf.state_dir, sizeof u.conf.state_dir, "%s", dir);
    farm_bin_dir(u.bin, sizeof u.bin);
    u.private_redis = !u.conf.redis[0];
    if (!u.conf.profiles[0]) s_default_profiles(&u);

    char path[PATH_MAX + 32];
    if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
        /* parents too */
        char *p = dir;
        while ((p = strchr(p + 1, '/'))) {
            *p = '\0';
            mkdir(dir, 0700);
            *p = '/';
        }
        if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
            fprintf(stderr, "snakepit up: cannot create %s: %s\n", dir, strerror(errno));
            return 1;
        }
    }
    snprintf(path, sizeof path, "%s/logs", dir);
    mkdir(path, 0700);
    /* One farm per state directory. */
    snprintf(path, sizeof path, "%s/up.lock", dir);
    int lock = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (lock < 0 || flock(lock, LOCK_EX | LOCK_NB) < 0) {
        fprintf(stderr, "snakepit up: a farm is already running from %s (see %s/ready.json)\n", dir, dir);
        return 1;
    }
    snprintf(path, sizeof path, "%s/ready.json", dir);
    unlink(path);

    if (strlen(dir) > 80) {
        fprintf(stderr, "snakepit up: state directory path too long for unix sockets: %s\n", dir);
        return 2;
    }
    snprintf(u.clients_ep, sizeof u.clients_ep, "ipc://%s/clients.sock", dir);
    if (u.conf.executors[0])
        snprintf(u.executors_ep, sizeof u.executors_ep, "%s", u.conf.executors);
    else
        snprintf(u.executors_ep, sizeof u.executors_ep, "ipc://%s/executors.sock", dir);
    /* port 0: pick a free one here, so that the URL printed and the readiness check know it */
    size_t hl = strlen(u.conf.http);
    if (hl > 2 && strcmp(u.conf.http + hl - 2, ":0") == 0) {
        long port = s_free_port();
        if (port > 0) snprintf(u.conf.http + hl - 1, sizeof u.conf.http - (hl - 1), "%ld", port);
    }
    snprintf(u.url, sizeof u.url, "http://%s/mcp", u.conf.http);
    u.hub = !s_loopback(u.executors_ep);
    if (u.hub && s_hub_keys(&u, err, sizeof err) < 0) {
        fprintf(stderr, "snakepit up: CURVE keys for a multi-machine farm: %s\n", err);
        return 1;
    }
    s_plan(&u);

    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    sigprocmask(SIG_BLOCK, &set, NULL);
    u.sig_fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);

    int rc = 1;
    if (u.private_redis) {
        if (s_start(&u, &u.comps[C_REDIS]) < 0 ||
            s_wait_start(&u, s_redis_ready, &u.comps[C_REDIS], "redis") < 0)
            goto out;
    } else if (!s_redis_ready(&u)) {
        fprintf(stderr, "snakepit up: cannot reach Redis at %s\n", u.redis_url);
        goto out;
    }
    {
        redisContext *c = farm_redis(u.redis_url, err, sizeof err);
        snprintf(path, sizeof path, "%s/local.key", dir);
        if (!c || tenant_ensure_local(c, path, u.key, err, sizeof err) < 0) {
            fprintf(stderr, "snakepit up: setting up the local tenant: %s\n", err);
            if (c) redisFree(c);
            goto out;
        }
        redisFree(c);
    }
    if (s_start(&u, &u.comps[C_BROKER]) < 0 || s_start(&u, &u.comps[C_EXECUTOR]) < 0 ||
        s_start(&u, &u.comps[C_MCP]) < 0)
        goto out;
    if (s_wait_start(&u, s_http_ready, &u.comps[C_MCP], "the MCP endpoint") < 0) goto out;
    char detail[300];
    if (s_probe(&u, detail, sizeof detail) < 0) {
        s_reap(&u, 1);
        fprintf(stderr, "snakepit up: a probe job did not run (%s)\n", detail);
        for (int i = C_BROKER; i < C_COUNT; i++) s_tail(&u.comps[i]);
        goto out;
    }
    if (s_write_ready(&u) < 0) {
        fprintf(stderr, "snakepit up: cannot write %s/ready.json: %s\n", dir, strerror(errno));
        goto out;
    }
    s_print_banner(&u);
    log_info("event=ready url=%s state_dir=%s", u.url, dir);

    for (;;) {
        struct pollfd p = {u.sig_fd, POLLIN, 0};
        poll(&p, 1, 200);
        struct signalfd_siginfo si;
        int                     stop = 0;
        while (read(u.sig_fd, &si, sizeof si) == sizeof si)
            if (si.ssi_signo != SIGCHLD) stop = 1;
        if (stop) break;
        s_reap(&u, 0);
        uint64_t now = clock_mono_ms();
        for (int i = 0; i < C_COUNT; i++) {
            comp_t *c = &u.comps[i];
            if (c->name && !c->pid && c->restart_at_ms && now >= c->restart_at_ms) {
                c->restart_at_ms = 0;
                c->restarts++;
                s_start(&u, c);
            }
        }
    }
    rc = 0;
out:
    log_info("event=stopping");
    s_stop_all(&u);
    snprintf(path, sizeof path, "%s/ready.json", dir);
    unlink(path);
    for (int i = 0; i < C_COUNT; i++) {
        for (int j = 0; j < u.comps[i].argc; j++) free(u.comps[i].argv[j]);
        for (int e = 0; e < 4; e++) free(u.comps[i].env[e]);
    }
    explicit_bzero(&u.broker_cert, sizeof u.broker_cert);
    explicit_bzero(&u.mcp_cert, sizeof u.mcp_cert);
    explicit_bzero(&u.cli_cert, sizeof u.cli_cert);
    return rc;
}
