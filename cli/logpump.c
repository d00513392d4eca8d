/* cli/logpump.c — see logpump.h. */
#define _GNU_SOURCE
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "logpump.h"

#define LINE_BUF    65536 /* a line longer than this is written in pieces */
#define SYNC_WAIT_S 1

typedef struct {
    char path[PATH_MAX];
    int rd, wr;            /* the pipe: the thread reads rd; children write into wr */
    int file;              /* the current NAME.log, O_APPEND */
    long size;             /* its size */
    char buf[LINE_BUF];    /* what came after the last newline */
    size_t held;           /* bytes in buf */
    unsigned long dropped; /* bytes that could not be written (a full disk) */
} pumped_t;

struct logpump {
    long max_bytes;
    int keep;
    pumped_t log[LOGPUMP_MAX_LOGS];
    size_t n;
    int wake; /* eventfd: 1 = sync asked, 2 = stop */
    pthread_t thread;
    int running;
    pthread_mutex_t lock; /* guards synced */
    pthread_cond_t synced_cv;
    uint64_t synced; /* sync requests the thread has answered */
    uint64_t asked;  /* sync requests made (the caller's thread only) */
};

logpump_t *logpump_new(long max_bytes, int keep)
{
    assert(max_bytes > 0 && keep >= 0);
    logpump_t *self = calloc(1, sizeof *self);
    if (!self) return NULL;
    self->max_bytes = max_bytes;
    self->keep = keep;
    self->wake = -1;
    pthread_mutex_init(&self->lock, NULL);
    pthread_cond_init(&self->synced_cv, NULL);
    return self;
}

/* ---- the files -------------------------------------------------------------------------- */

static int s_open(pumped_t *l)
{
    l->file = open(l->path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    struct stat st;
    l->size = l->file >= 0 && fstat(l->file, &st) == 0 ? (long)st.st_size : 0;
    return l->file < 0 ? -1 : 0;
}

/* NAME.log.(k) → NAME.log.(k+1) from the oldest kept down, NAME.log → NAME.log.1, and a new
 * NAME.log. With keep 0 the full file is simply started over. */
static void s_rotate(logpump_t *self, pumped_t *l)
{
    char from[PATH_MAX + 16], to[PATH_MAX + 16];
    if (l->file >= 0) close(l->file);
    if (self->keep == 0) {
        unlink(l->path);
    } else {
        snprintf(to, sizeof to, "%s.%d", l->path, self->keep);
        unlink(to);
        for (int k = self->keep - 1; k >= 1; k--) {
            snprintf(from, sizeof from, "%s.%d", l->path, k);
            snprintf(to, sizeof to, "%s.%d", l->path, k + 1);
            rename(from, to);
        }
        snprintf(to, sizeof to, "%s.1", l->path);
        rename(l->path, to);
    }
    s_open(l);
}

static void s_write(pumped_t *l, const char *data, size_t len)
{
    while (len) {
        ssize_t w = l->file >= 0 ? write(l->file, data, len) : -1;
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            l->dropped += len;
            return;
        }
        data += w, len -= (size_t)w;
        l->size += w;
    }
}

/* Writes the complete lines held; a partial line stays unless flush (or the buffer is full). */
static void s_lines_out(logpump_t *self, pumped_t *l, int flush)
{
    size_t upto = l->held;
    if (!flush && l->held < sizeof l->buf) {
        const char *nl = memrchr(l->buf, '\n', l->held);
        upto = nl ? (size_t)(nl - l->buf) + 1 : 0;
    }
    if (!upto) return;
    /* line by line, so that a file is rotated at the first line's end past the size */
    for (size_t at = 0; at < upto;) {
        const char *nl = memchr(l->buf + at, '\n', upto - at);
        size_t len = nl ? (size_t)(nl - (l->buf + at)) + 1 : upto - at;
        if (l->size >= self->max_bytes) s_rotate(self, l);
        s_write(l, l->buf + at, len);
        at += len;
    }
    memmove(l->buf, l->buf + upto, l->held - upto);
    l->held -= upto;
}

/* Reads what the pipe holds now (it is non-blocking). */
static void s_drain(logpump_t *self, pumped_t *l)
{
    for (;;) {
        ssize_t r = read(l->rd, l->buf + l->held, sizeof l->buf - l->held);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return;
        l->held += (size_t)r;
        s_lines_out(self, l, 0);
    }
}

/* ---- the thread ---------------------------------------------------------------------------- */

static void s_answer_sync(logpump_t *self, uint64_t requests)
{
    for (size_t i = 0; i < self->n; i++) {
        s_drain(self, &self->log[i]);
        s_lines_out(self, &self->log[i], 1);
    }
    pthread_mutex_lock(&self->lock);
    self->synced += requests;
    pthread_cond_broadcast(&self->synced_cv);
    pthread_mutex_unlock(&self->lock);
}

static void *s_run(void *arg)
{
    logpump_t *self = arg;
    struct pollfd pfd[LOGPUMP_MAX_LOGS + 1];
    for (;;) {
        for (size_t i = 0; i < self->n; i++) pfd[i] = (struct pollfd){self->log[i].rd, POLLIN, 0};
        pfd[self->n] = (struct pollfd){self->wake, POLLIN, 0};
        if (poll(pfd, self->n + 1, -1) < 0 && errno != EINTR) break;
        for (size_t i = 0; i < self->n; i++)
            if (pfd[i].revents) s_drain(self, &self->log[i]);
        uint64_t v = 0;
        if (pfd[self->n].revents && read(self->wake, &v, sizeof v) == sizeof v) {
            uint64_t stop = v >> 32, syncs = v & 0xffffffffu;
            if (syncs) s_answer_sync(self, syncs);
            if (stop) break;
        }
    }
    s_answer_sync(self, 0);
    return NULL;
}

/* ---- the verbs ----------------------------------------------------------------------------- */

int logpump_add(logpump_t *self, const char *path, char *err, size_t errlen)
{
    assert(!self->running);
    if (self->n == LOGPUMP_MAX_LOGS) {
        snprintf(err, errlen, "more than %d logs", LOGPUMP_MAX_LOGS);
        return -1;
    }
    pumped_t *l = &self->log[self->n];
    int fds[2];
    snprintf(l->path, sizeof l->path, "%s", path);
    if (pipe2(fds, O_CLOEXEC) < 0) {
        snprintf(err, errlen, "pipe for %s: %s", path, strerror(errno));
        return -1;
    }
    if (s_open(l) < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        close(fds[0]), close(fds[1]);
        return -1;
    }
    if (l->size >= self->max_bytes) s_rotate(self, l);
    fcntl(fds[0], F_SETFL, O_NONBLOCK);
    l->rd = fds[0], l->wr = fds[1];
    self->n++;
    return l->wr;
}

int logpump_start(logpump_t *self, char *err, size_t errlen)
{
    self->wake = eventfd(0, EFD_CLOEXEC);
    int rc = self->wake < 0 ? errno : pthread_create(&self->thread, NULL, s_run, self);
    if (rc) {
        snprintf(err, errlen, "log pump: %s", strerror(rc));
        return -1;
    }
    self->running = 1;
    return 0;
}

void logpump_sync(logpump_t *self)
{
    if (!self || !self->running) return;
    uint64_t one = 1;
    if (write(self->wake, &one, sizeof one) != sizeof one) return;
    self->asked++;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += SYNC_WAIT_S;
    pthread_mutex_lock(&self->lock);
    while (self->synced < self->asked)
        if (pthread_cond_timedwait(&self->synced_cv, &self->lock, &until) == ETIMEDOUT) break;
    pthread_mutex_unlock(&self->lock);
}

void logpump_destroy(logpump_t **self_p)
{
    logpump_t *self = *self_p;
    if (!self) return;
    if (self->running) {
        uint64_t stop = (uint64_t)1 << 32;
        if (write(self->wake, &stop, sizeof stop) == sizeof stop) pthread_join(self->thread, NULL);
    }
    for (size_t i = 0; i < self->n; i++) {
        pumped_t *l = &self->log[i];
        if (l->dropped) log_warn("event=log_bytes_dropped path=%s bytes=%lu", l->path, l->dropped);
        close(l->rd), close(l->wr);
        if (l->file >= 0) close(l->file);
    }
    if (self->wake >= 0) close(self->wake);
    pthread_mutex_destroy(&self->lock);
    pthread_cond_destroy(&self->synced_cv);
    free(self);
    *self_p = NULL;
}
