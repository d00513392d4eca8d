/* cli/logpump.h — size-bounded logs for the components `snakepit up` runs.
 *
 * Each component writes its stdout and stderr into a pipe; one thread copies what arrives into
 * STATE_DIR/logs/NAME.log, whole lines at a time, and when that file has reached max_bytes it
 * becomes NAME.log.1 (older ones NAME.log.2 … NAME.log.KEEP, the oldest deleted) and a new
 * NAME.log begins. A farm that runs for months then holds at most (KEEP + 1) × max_bytes of
 * logs per component, where it used to grow by a line per job forever.
 *
 * Why a pipe and a thread rather than the file itself: a component holds its log open for its
 * whole life, so a file renamed under it keeps growing under the new name, and copying then
 * truncating it loses what is written in between. The pipe outlives restarts of its
 * component (the pump holds both ends), and the executor's zygotes inherit it like the file. */
#ifndef SP_LOGPUMP_H
#define SP_LOGPUMP_H
#include <stddef.h>

typedef struct logpump logpump_t;

#define LOGPUMP_MAX_LOGS 8

/* max_bytes: the size at which a log is rotated (> 0); keep: how many rotated files stay. */
logpump_t *logpump_new(long max_bytes, int keep);
/* Adds the log at path (appended to; rotated first when already over the size). Returns the
 * descriptor a child's stdout and stderr are to be made (dup2) — close-on-exec, owned by the
 * pump — or -1 with the reason in err. Before logpump_start only. */
int logpump_add(logpump_t *self, const char *path, char *err, size_t errlen);
/* Starts the thread. 0, or -1 with the reason in err. */
int logpump_start(logpump_t *self, char *err, size_t errlen);
/* Returns once everything written into the pipes so far is in the files (or after a second):
 * before reading a log's last lines. */
void logpump_sync(logpump_t *self);
/* Copies what is still in the pipes, stops the thread, closes everything. */
void logpump_destroy(logpump_t **self_p);

#endif
