/* cli/supervisor.c — see supervisor.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/log.h"
#include "supervisor.h"

#define BACKOFF_FIRST_MS 1000
#define BACKOFF_MAX_MS   30000
#define BACKOFF_RESET_MS 60000 /* a run this long counts as healthy: the backoff starts over */
#define STOP_GRACE_MS    5000

void child_args(child_t *c, ...)
{
    va_list ap;
    va_start(ap, c);
    for (const char *arg; (arg = va_arg(ap, const char *));)
        if (c->argc < CHILD_MAX_ARGS - 1) c->argv[c->argc++] = xstrdup(arg);
    va_end(ap);
    c->argv[c->argc] = NULL;
}

void child_env(child_t *c, const char *fmt, ...)
{
    int e = 0;
    while (e < CHILD_MAX_ENV && c->env[e]) e++;
    if (e == CHILD_MAX_ENV) return;
    char tmp[PATH_MAX + 64];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    c->env[e] = xstrdup(tmp);
}

/* In the forked child: its own process group, death with its parent, its log, exec. */
static void s_exec(const child_t *c, int logfd)
{
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0);
    if (getppid() == 1) _exit(1); /* `up` died before PDEATHSIG was armed */
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    for (int e = 0; e < CHILD_MAX_ENV && c->env[e]; e++) putenv(c->env[e]);
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, 0);
    dup2(logfd, 1);
    dup2(logfd, 2);
    execvp(c->argv[0], c->argv);
    fprintf(stderr, "snakepit up: cannot run %s: %s\n", c->argv[0], strerror(errno));
    _exit(127);
}

int child_start(child_t *c)
{
    int logfd = c->out_fd > 0 ? c->out_fd
                              : open(c->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (logfd < 0) {
        log_error("event=log_open_failed path=%s error=\"%s\"", c->log, strerror(errno));
        return -1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        log_error("event=fork_failed component=%s error=\"%s\"", c->name, strerror(errno));
        if (logfd != c->out_fd) close(logfd);
        return -1;
    }
    if (pid == 0) s_exec(c, logfd);
    if (logfd != c->out_fd) close(logfd);
    c->pid = pid;
    c->started_ms = clock_mono_ms();
    log_info("event=component_started component=%s pid=%d log=%s", c->name, pid, c->log);
    return 0;
}

void child_tail(const child_t *c)
{
    logpump_sync(c->pump);
    FILE *f = fopen(c->log, "r");
    if (!f) return;
    char lines[8][512];
    size_t n = 0;
    while (fgets(lines[n % 8], sizeof lines[0], f)) n++;
    fclose(f);
    fprintf(stderr, "--- last lines of %s ---\n", c->log);
    for (size_t i = n > 8 ? n - 8 : 0; i < n; i++) fputs(lines[i % 8], stderr);
}

void child_free(child_t *c)
{
    for (int j = 0; j < c->argc; j++) free(c->argv[j]);
    for (int e = 0; e < CHILD_MAX_ENV; e++) free(c->env[e]);
    c->argc = 0;
    memset(c->argv, 0, sizeof c->argv);
    memset(c->env, 0, sizeof c->env);
}

/* ---- the set ------------------------------------------------------------------------------ */

static void s_died(child_t *c, int status, int starting)
{
    c->pid = 0;
    uint64_t ran = clock_mono_ms() - c->started_ms;
    c->backoff_ms = ran > BACKOFF_RESET_MS || !c->backoff_ms ? BACKOFF_FIRST_MS : c->backoff_ms * 2;
    if (c->backoff_ms > BACKOFF_MAX_MS) c->backoff_ms = BACKOFF_MAX_MS;
    c->restart_at_ms = clock_mono_ms() + c->backoff_ms;
    log_error("event=component_died component=%s %s=%d restart_in_ms=%llu", c->name,
              WIFSIGNALED(status) ? "signal" : "status",
              WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status),
              (unsigned long long)c->backoff_ms);
    if (starting) child_tail(c);
}

void supervisor_reap(child_t *children, size_t n, int starting)
{
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
        for (size_t i = 0; i < n; i++)
            if (children[i].pid == pid) s_died(&children[i], status, starting);
}

void supervisor_restart_due(child_t *children, size_t n)
{
    uint64_t now = clock_mono_ms();
    for (size_t i = 0; i < n; i++) {
        child_t *c = &children[i];
        if (c->name && !c->pid && c->restart_at_ms && now >= c->restart_at_ms) {
            c->restart_at_ms = 0;
            c->restarts++;
            child_start(c);
        }
    }
}

static void s_stop(child_t *c)
{
    kill(-c->pid, SIGTERM);
    uint64_t give_up = clock_mono_ms() + STOP_GRACE_MS;
    while (c->pid && clock_mono_ms() < give_up) {
        int status;
        if (waitpid(c->pid, &status, WNOHANG) == c->pid) {
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

void supervisor_stop(child_t *children, const int *order, size_t n)
{
    for (size_t k = 0; k < n; k++) {
        child_t *c = &children[order[k]];
        if (c->pid) s_stop(c);
    }
}
