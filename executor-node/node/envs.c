/* executor-node/node/envs.c — see envs.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/sha256.h"
#include "envs.h"
#include "spawn.h"

#define ENVS_MAX       64      /* requested sets remembered (the disk remembers the rest) */
#define BUILDS_MAX     4       /* at once */
#define FAILED_KEEP_MS 60000   /* an unresolvable set is answered from memory this long */
#define OUTPUT_MAX     (64u << 10)

typedef struct {
    int used;
    char key[49];
    const profile_t *profile;
    env_state_t state;
    pid_t builder; /* its process group too, while building */
    int out_fd;    /* the builder's stdout, -1 once read to the end */
    buf_t out;
    uint64_t started_ms, done_ms;
    char site[PATH_MAX];
    char modules[4096];
    char error[2048];
} env_t;

typedef struct {
    envs_t *set;
    int ei;
} watch_t;

struct envs {
    loop_t *loop;
    const node_conf_t *conf;
    envs_hooks_t hooks;
    env_t e[ENVS_MAX];
    watch_t watch[ENVS_MAX];
    uint64_t timer;
    char box[PATH_MAX]; /* snakepit-zygote, which runs a build in its jail (buildbox.h) */
};

static void s_on_tick(loop_t *loop, void *arg);

envs_t *envs_new(loop_t *loop, const node_conf_t *conf, const envs_hooks_t *hooks)
{
    envs_t *self = xcalloc(1, sizeof *self);
    self->loop = loop;
    self->conf = conf;
    self->hooks = *hooks;
    for (int i = 0; i < ENVS_MAX; i++) self->watch[i] = (watch_t){self, i}, self->e[i].out_fd = -1;
    self->timer = loop_timer_add(loop, 1000, 1000, s_on_tick, self);
    char err[256];
    if (conf->packages[0] && spawn_find_zygote(self->box, sizeof self->box, err, sizeof err) < 0)
        log_error("event=env_builds_unavailable error=\"%s\"", err); /* each build then fails */
    return self;
}

static void s_stop_build(envs_t *self, env_t *e)
{
    if (e->out_fd >= 0) {
        loop_remove_fd(self->loop, e->out_fd);
        close(e->out_fd);
        e->out_fd = -1;
    }
    if (e->builder > 0) kill(-e->builder, SIGKILL); /* its pip too; reaped by the node */
    e->builder = 0;
}

void envs_destroy(envs_t **self_p)
{
    envs_t *self = *self_p;
    if (!self) return;
    for (int i = 0; i < ENVS_MAX; i++) {
        s_stop_build(self, &self->e[i]);
        buf_free(&self->e[i].out);
    }
    loop_timer_cancel(self->loop, self->timer);
    free(self);
    *self_p = NULL;
}

int envs_enabled(const envs_t *self)
{
    return self && self->conf->packages[0];
}

/* ---- answers ------------------------------------------------------------------------------- */

static void s_fail(env_t *e, const char *why)
{
    e->state = ENV_FAILED;
    if (why != e->error) snprintf(e->error, sizeof e->error, "%s", why);
}

/* The builder's lines (envbuild.py's header says which). */
static void s_parse(env_t *e, const char *text)
{
    char status[16] = "";
    for (const char *line = text; *line;) {
        size_t n = strcspn(line, "\n");
        if (!strncmp(line, "STATUS ", 7)) snprintf(status, sizeof status, "%.*s", (int)(n - 7), line + 7);
        else if (!strncmp(line, "SITE ", 5)) snprintf(e->site, sizeof e->site, "%.*s", (int)(n - 5), line + 5);
        else if (!strncmp(line, "MODULES ", 8))
            snprintf(e->modules, sizeof e->modules, "%.*s", (int)(n - 8), line + 8);
        else if (!strncmp(line, "ERROR ", 6)) snprintf(e->error, sizeof e->error, "%.*s", (int)(n - 6), line + 6);
        line += n;
        if (*line) line++;
    }
    struct stat st;
    if (!strcmp(status, "ok") && e->site[0] == '/' && stat(e->site, &st) == 0 && S_ISDIR(st.st_mode))
        e->state = ENV_READY;
    else if (!strcmp(status, "base"))
        e->state = ENV_BASE;
    else
        s_fail(e, e->error[0] ? e->error : "the environment could not be built (its builder gave no answer)");
}

static void s_done(envs_t *self, env_t *e)
{
    buf_append(&e->out, "", 1);
    e->out.len--;
    s_parse(e, (const char *)e->out.data);
    buf_reset(&e->out);
    s_stop_build(self, e);
    e->done_ms = clock_mono_ms();
    log_info("event=env_built profile=%s key=%s state=%s ms=%llu%s%s", e->profile->name, e->key,
             e->state == ENV_READY ? "ready" : e->state == ENV_BASE ? "base" : "failed",
             (unsigned long long)(e->done_ms - e->started_ms), e->state == ENV_READY ? " modules=" : "",
             e->state == ENV_READY ? e->modules : "");
    if (self->hooks.on_built) self->hooks.on_built(self->hooks.arg, (int)(e - self->e));
}

static void s_on_output(loop_t *loop, short revents, void *arg)
{
    (void)loop, (void)revents;
    watch_t *w = arg;
    env_t *e = &w->set->e[w->ei];
    char chunk[4096];
    for (;;) {
        ssize_t n = read(e->out_fd, chunk, sizeof chunk);
        if (n > 0) {
            if (e->out.len + (size_t)n <= OUTPUT_MAX) buf_append(&e->out, chunk, (size_t)n);
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
        s_done(w->set, e); /* EOF (or an error): the builder has said what it will say */
        return;
    }
}

/* The builder ran out of time, or has not been heard of: give up on it. */
static void s_on_tick(loop_t *loop, void *arg)
{
    (void)loop;
    envs_t *self = arg;
    uint64_t now = clock_mono_ms();
    for (int i = 0; i < ENVS_MAX; i++) {
        env_t *e = &self->e[i];
        if (!e->used || e->state != ENV_BUILDING || !e->builder) continue;
        if (now - e->started_ms > (uint64_t)self->conf->build_timeout_s * 1000u + 5000u) {
            kill(-e->builder, SIGKILL);
            buf_reset(&e->out);
            buf_puts(&e->out, "STATUS error\nERROR building the environment took too long\n");
            s_done(self, e);
        }
    }
}

/* ---- the builder --------------------------------------------------------------------------- */

/* `snakepit-zygote --build-env` (buildbox.h: envbuild.py in a jail of its own), in its own
 * process group (a timeout kills the build too), with default signals, a minimal environment
 * and no descriptor of the node's but its stdout (a pipe) and its stderr (the node's log):
 * posix_spawn, since ZeroMQ's threads run in this process. */
static int s_spawn(envs_t *self, env_t *e, char *const *reqs, size_t n, char *err, size_t errlen)
{
    int out[2];
    if (pipe2(out, O_CLOEXEC) < 0) return snprintf(err, errlen, "pipe: %s", strerror(errno)), -1;
    const node_conf_t *c = self->conf;
    char timeout[24], uid[24], gid[24];
    snprintf(timeout, sizeof timeout, "%ld", c->build_timeout_s);
    snprintf(uid, sizeof uid, "%ld", c->run_uid_host);
    snprintf(gid, sizeof gid, "%ld", c->run_gid_host);
    const char **argv = xcalloc(n + 24, sizeof *argv);
    size_t a = 0;
    const char *fixed[] = {"snakepit-zygote", "--build-env", e->profile->name, "--source", c->packages,
                           "--envs", c->envs_dir, "--key", e->key, "--timeout", timeout,
                           "--uid", uid, "--gid", gid, c->build_from_source ? "--from-source=1" : "--from-source=0",
                           "--log-level", c->log_level, "--"};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) argv[a++] = fixed[i];
    for (size_t i = 0; i < n; i++) argv[a++] = reqs[i];
    char *envp[] = {"PATH=/usr/bin:/bin", "LANG=C.UTF-8", "HOME=/nonexistent", NULL};
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    sigset_t none, dfl;
    sigemptyset(&none);
    sigemptyset(&dfl);
    sigaddset(&dfl, SIGPIPE);
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addclosefrom_np(&fa, 3);
    posix_spawnattr_init(&at);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &dfl);
    posix_spawnattr_setpgroup(&at, 0);
    pid_t pid;
    int rc = posix_spawn(&pid, self->box, &fa, &at, (char *const *)argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    free(argv);
    close(out[1]);
    if (rc != 0) {
        close(out[0]);
        log_error("event=env_build_spawn_failed exe=%s error=\"%s\"", self->box, strerror(rc));
        return snprintf(err, errlen, "the dependency build could not be started (the executor's log has why)"), -1;
    }
    fcntl(out[0], F_SETFL, fcntl(out[0], F_GETFL) | O_NONBLOCK);
    e->builder = pid;
    e->out_fd = out[0];
    loop_add_fd(self->loop, out[0], ZMQ_POLLIN, s_on_output, &self->watch[e - self->e]);
    return 0;
}

/* ---- requests ------------------------------------------------------------------------------ */

static int s_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* profile, source and the sorted requirements, hashed. */
static void s_key(const envs_t *self, const profile_t *p, char *const *reqs, size_t n, char key[49])
{
    char **sorted = xcalloc(n ? n : 1, sizeof *sorted);
    memcpy(sorted, reqs, n * sizeof *sorted);
    qsort(sorted, n, sizeof *sorted, s_cmp);
    buf_t b;
    buf_init(&b);
    buf_printf(&b, "%s\n%s\n", p->name, self->conf->packages);
    for (size_t i = 0; i < n; i++) buf_printf(&b, "%s\n", sorted[i]);
    char hex[65];
    sha256_hex(b.data, b.len, hex);
    snprintf(key, 49, "%.48s", hex);
    buf_free(&b);
    free(sorted);
}

/* A slot for a new entry: a free one, else the oldest that is not building. */
static env_t *s_slot(envs_t *self)
{
    env_t *best = NULL;
    for (int i = 0; i < ENVS_MAX; i++) {
        env_t *e = &self->e[i];
        if (!e->used) return e;
        if (e->state != ENV_BUILDING && (!best || e->done_ms < best->done_ms)) best = e;
    }
    return best;
}

/* A build an earlier run (or another node on this disk) finished: its answer file. */
static int s_from_disk(envs_t *self, env_t *e)
{
    char path[PATH_MAX + 128], text[8192];
    snprintf(path, sizeof path, "%s/%s/requests/%s", self->conf->envs_dir, e->profile->name, e->key);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    s_parse(e, text);
    return e->state == ENV_READY;
}

int envs_request(envs_t *self, const profile_t *profile, char *const *reqs, size_t n)
{
    char key[49];
    s_key(self, profile, reqs, n, key);
    uint64_t now = clock_mono_ms();
    for (int i = 0; i < ENVS_MAX; i++) {
        env_t *e = &self->e[i];
        if (!e->used || strcmp(e->key, key) != 0) continue;
        if (e->state != ENV_FAILED || now - e->done_ms < FAILED_KEEP_MS) return i;
        e->used = 0; /* failed a while ago: try again */
    }
    int building = 0;
    for (int i = 0; i < ENVS_MAX; i++) building += self->e[i].used && self->e[i].state == ENV_BUILDING;
    env_t *e = s_slot(self);
    if (!e) return -1;
    buf_free(&e->out);
    memset(e, 0, sizeof *e);
    e->used = 1;
    e->out_fd = -1;
    e->profile = profile;
    snprintf(e->key, sizeof e->key, "%s", key);
    e->started_ms = e->done_ms = now;
    buf_init(&e->out);
    if (s_from_disk(self, e)) return (int)(e - self->e);
    e->state = ENV_BUILDING;
    e->site[0] = e->modules[0] = e->error[0] = '\0';
    char err[256];
    if (building >= BUILDS_MAX) {
        s_fail(e, "too many dependency environments are being built on this executor right now");
        e->done_ms = now - FAILED_KEEP_MS; /* not remembered */
    } else if (s_spawn(self, e, reqs, n, err, sizeof err) < 0) {
        s_fail(e, err);
    } else {
        log_info("event=env_build profile=%s key=%s requirements=%zu", profile->name, key, n);
    }
    return (int)(e - self->e);
}

env_state_t envs_state(const envs_t *self, int env)
{
    return self->e[env].state;
}

const char *envs_key(const envs_t *self, int env)
{
    return self->e[env].key;
}

const char *envs_site(const envs_t *self, int env)
{
    return self->e[env].site;
}

const char *envs_modules(const envs_t *self, int env)
{
    return self->e[env].modules;
}

const char *envs_error(const envs_t *self, int env)
{
    return self->e[env].error;
}

const profile_t *envs_profile(const envs_t *self, int env)
{
    return self->e[env].profile;
}
