/* cli/supervisor.h — the processes `snakepit up` runs (redis-server, broker, executor node,
 * front-end), and keeping them running.
 *
 * Each child runs in its own process group, so a Ctrl-C reaches only `snakepit up`, which then
 * stops them in its own order; and with PR_SET_PDEATHSIG, so even a SIGKILL of `snakepit up`
 * leaves no process behind. Its stdout and stderr go to its log file, or to the pipe of a log
 * pump that keeps the file to a size (logpump.h). A child that dies is
 * logged and restarted with backoff: 1 s, doubling up to 30 s, and 1 s again after a run of
 * more than a minute. */
#ifndef SP_SUPERVISOR_H
#define SP_SUPERVISOR_H
#include <linux/limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "logpump.h"

#define CHILD_MAX_ARGS 40
#define CHILD_MAX_ENV  4

typedef struct {
    const char *name;           /* "broker": in logs and the log file's name; NULL: not run */
    char *argv[CHILD_MAX_ARGS]; /* NULL-terminated; argv[0] is looked up in PATH */
    int argc;
    char *env[CHILD_MAX_ENV]; /* NAME=VALUE for this child only (secrets stay off argv) */
    char log[PATH_MAX + 32];  /* its stdout and stderr, appended */
    int out_fd;               /* > 0: stdout and stderr go here instead (a log pump's pipe) */
    logpump_t *pump;          /* that pump, synced before the log's last lines are read */
    pid_t pid;                /* 0 while it is not running */
    uint64_t started_ms;      /* monotonic */
    uint64_t restart_at_ms;   /* monotonic; 0 when no restart is due */
    uint64_t backoff_ms;
    long restarts;
} child_t;

/* Appends arguments to the child's command line: strings, up to a NULL (past
 * CHILD_MAX_ARGS, nothing). */
void child_args(child_t *c, ...) __attribute__((sentinel));
/* Adds NAME=VALUE to the child's own environment (past CHILD_MAX_ENV, nothing). */
void child_env(child_t *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Forks and runs it. 0, or -1 (logged). */
int child_start(child_t *c);
/* The last lines of its log, on stderr: why it did not come up. */
void child_tail(const child_t *c);
/* Frees its command line and environment. */
void child_free(child_t *c);

/* Collects every child that exited and schedules its restart; while starting, also shows
 * the tail of its log. */
void supervisor_reap(child_t *children, size_t n, int starting);
/* Starts again each child whose restart is due. */
void supervisor_restart_due(child_t *children, size_t n);
/* Stops the running children in the order given (indexes into children): SIGTERM to each
 * one's process group, SIGKILL when it has not exited within 5 s. */
void supervisor_stop(child_t *children, const int *order, size_t n);

#endif
