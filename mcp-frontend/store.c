/* mcp-frontend/store.c — see store.h. hiredis's async context is driven by the loop through
 * its ev hooks (the adapter pattern of hiredis/adapters/ae.h): the hooks only record which
 * events hiredis wants, and the loop calls redisAsyncHandleRead/Write. hiredis answers
 * commands in order, so a FIFO of send times is enough to find the oldest unanswered one. */
#define _GNU_SOURCE
#include <assert.h>
#include <errno.h>
#include <hiredis/async.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zmq.h>

#include "../common/buf.h"
#include "../common/clock.h"
#include "../common/log.h"
#include "../common/redis_loop.h"
#include "store.h"

#define BUFFER_BYTES_PER_COMMAND 4096 /* the buffer's byte cap, per command it may hold */

struct store_script {
    char *source;
    char sha[41]; /* empty until SCRIPT LOAD answered */
    struct store_script *next;
};

typedef struct pending_write {
    char *cmd; /* RESP-formatted */
    size_t len;
    struct pending_write *next;
} pending_write_t;

/* One command in flight: what to call back, and whether it is an EVALSHA to retry. */
typedef struct {
    store_t *store;
    store_reply_fn *fn;
    void *arg;
    store_script_t *script; /* EVALSHA: retried as EVAL on NOSCRIPT */
    int write;              /* a write (counted as such when it fails), acknowledged or not */
    int argc;
    char **argv;
    size_t *argvlen;
} op_t;

struct store {
    loop_t *loop;
    redis_url_t url;
    store_conf_t conf;
    redisAsyncContext *ac; /* NULL while waiting to reconnect */
    int connected;         /* the connect callback said so */
    redis_loop_t io;       /* the connection's fd on the loop (common/redis_loop.h) */
    uint64_t *sent;        /* FIFO of send times (mono ms) of unanswered commands */
    size_t sent_head, sent_n, sent_cap;
    pending_write_t *queue, *queue_tail;
    long queue_n, queue_bytes;
    store_script_t *scripts;
    uint64_t timer;       /* watchdog and reconnect */
    uint64_t retry_at_ms; /* next reconnect attempt */
    long backoff_ms;
    int closing; /* inside redisAsyncFree: send nothing */
    store_stats_t stats;
};

static void s_connect(store_t *self);
static void s_flush_queue(store_t *self);

/* ---- the FIFO of send times */

static void s_sent_push(store_t *self)
{
    if (self->sent_n == self->sent_cap) {
        size_t cap = self->sent_cap ? self->sent_cap * 2 : 64;
        uint64_t *a = xmalloc(cap * sizeof *a);
        for (size_t i = 0; i < self->sent_n; i++)
            a[i] = self->sent[(self->sent_head + i) % self->sent_cap];
        free(self->sent);
        self->sent = a;
        self->sent_cap = cap;
        self->sent_head = 0;
    }
    self->sent[(self->sent_head + self->sent_n) % self->sent_cap] = clock_mono_ms();
    self->sent_n++;
}

static void s_sent_pop(store_t *self)
{
    if (!self->sent_n) return;
    self->sent_head = (self->sent_head + 1) % self->sent_cap;
    self->sent_n--;
}

/* ---- connection life */

static void s_schedule_reconnect(store_t *self)
{
    self->retry_at_ms = clock_mono_ms() + (uint64_t)self->backoff_ms;
    self->backoff_ms = self->backoff_ms * 2 > 2000 ? 2000 : self->backoff_ms * 2;
}

/* The connection is gone (hiredis frees the context after the callback): forget what was
 * in flight on it and try again later. */
static void s_lost(store_t *self)
{
    self->ac = NULL;
    self->connected = 0;
    self->sent_n = 0;
    s_schedule_reconnect(self);
}

static void s_on_connect(const redisAsyncContext *ac, int status)
{
    store_t *self = ac->data;
    if (status != REDIS_OK) {
        log_warn("event=redis_connect_failed error=\"%s\"", ac->errstr);
        self->stats.errors[STORE_OP_CONNECT]++;
        s_lost(self);
        return;
    }
    char where[300];
    redis_url_describe(&self->url, where, sizeof where);
    log_info("event=redis_connected url=%s", where);
    self->connected = 1;
    self->backoff_ms = 100;
    s_flush_queue(self);
}

static void s_on_disconnect(const redisAsyncContext *ac, int status)
{
    store_t *self = ac->data;
    if (status != REDIS_OK) {
        log_warn("event=redis_disconnected error=\"%s\"", ac->errstr);
        self->stats.errors[STORE_OP_DISCONNECT]++;
    }
    s_lost(self);
}

static void s_on_script_loaded(void *arg, redisReply *reply);

static void s_connect(store_t *self)
{
    char err[256];
    /* hiredis queues what is sent until the socket connects: AUTH, SELECT, the scripts */
    redisAsyncContext *ac = redis_loop_connect(&self->io, self->loop, &self->url, self,
                                               s_on_connect, s_on_disconnect, err, sizeof err);
    if (!ac) {
        log_warn("event=redis_connect_failed error=\"%s\"", err);
        self->stats.errors[STORE_OP_CONNECT]++;
        s_schedule_reconnect(self);
        return;
    }
    self->ac = ac;
    if (self->url.db) store_queryf(self, NULL, NULL, "SELECT %d", self->url.db);
    for (store_script_t *s = self->scripts; s; s = s->next)
        store_queryf(self, s_on_script_loaded, s, "SCRIPT LOAD %s", s->source);
}

/* The watchdog: reconnects when due, and drops a connection whose oldest command has waited
 * too long (a stopped or overloaded Redis must not hold requests forever). */
static void s_on_timer(loop_t *loop, void *arg)
{
    (void)loop;
    store_t *self = arg;
    uint64_t now = clock_mono_ms();
    if (!self->ac) {
        if (now >= self->retry_at_ms) s_connect(self);
        return;
    }
    if (self->sent_n && now - self->sent[self->sent_head] > (uint64_t)self->conf.timeout_ms) {
        log_warn("event=redis_timeout waited_ms=%llu unanswered=%zu",
                 (unsigned long long)(now - self->sent[self->sent_head]), self->sent_n);
        self->stats.errors[STORE_OP_TIMEOUT]++;
        /* every pending callback is called with NULL, then the disconnect callback; no new
         * command may be sent on the dying context meanwhile */
        self->closing = 1;
        redisAsyncFree(self->ac);
        self->closing = 0;
        if (self->ac) { /* the disconnect callback is not called for a free before connect */
            self->ac = NULL;
            self->connected = 0;
            self->sent_n = 0;
            s_schedule_reconnect(self);
        }
    }
}

store_t *store_new(loop_t *loop, const redis_url_t *url, const store_conf_t *conf)
{
    store_t *self = xcalloc(1, sizeof *self);
    self->loop = loop;
    self->url = *url;
    self->conf = *conf;
    if (self->conf.timeout_ms <= 0) self->conf.timeout_ms = 2000;
    self->io.fd = -1;
    self->backoff_ms = 100;
    s_connect(self);
    self->timer = loop_timer_add(loop, 50, 50, s_on_timer, self);
    return self;
}

void store_destroy(store_t **self_p)
{
    assert(self_p);
    store_t *self = *self_p;
    if (!self) return;
    loop_timer_cancel(self->loop, self->timer);
    if (self->ac) {
        self->closing = 1;
        redisAsyncFree(self->ac); /* pending callbacks get NULL now */
        self->ac = NULL;
    }
    while (self->queue) {
        pending_write_t *w = self->queue;
        self->queue = w->next;
        free(w->cmd);
        free(w);
    }
    while (self->scripts) {
        store_script_t *s = self->scripts;
        self->scripts = s->next;
        free(s->source);
        free(s);
    }
    free(self->sent);
    free(self);
    *self_p = NULL;
}

int store_connected(const store_t *self)
{
    return self && self->connected;
}

const store_stats_t *store_stats(const store_t *self)
{
    return &self->stats;
}

const char *store_op_name(store_op_t op)
{
    static const char *const names[STORE_OP__COUNT] = {[STORE_OP_CONNECT] = "connect",
                                                       [STORE_OP_DISCONNECT] = "disconnect",
                                                       [STORE_OP_TIMEOUT] = "timeout",
                                                       [STORE_OP_QUERY] = "query",
                                                       [STORE_OP_WRITE] = "write"};
    return names[op];
}

/* ---- commands */

static void s_op_free(op_t *op)
{
    for (int i = 0; i < op->argc; i++) free(op->argv[i]);
    free(op->argv);
    free(op->argvlen);
    free(op);
}

static int s_send_op(store_t *self, op_t *op, const char *cmd, size_t len);

static int s_is_noscript(const redisReply *r)
{
    return r && r->type == REDIS_REPLY_ERROR && r->str && strncmp(r->str, "NOSCRIPT", 8) == 0;
}

static void s_on_reply(redisAsyncContext *ac, void *r, void *privdata)
{
    (void)ac;
    op_t *op = privdata;
    store_t *self = op->store;
    redisReply *reply = r;
    s_sent_pop(self);
    if (op->script && s_is_noscript(reply)) {
        /* the script cache was flushed (or Redis restarted): run it by source once */
        op->script->sha[0] = '\0';
        char *cmd;
        free(op->argv[0]);
        free(op->argv[1]);
        op->argv[0] = xstrdup("EVAL");
        op->argvlen[0] = 4;
        op->argv[1] = xstrdup(op->script->source);
        op->argvlen[1] = strlen(op->script->source);
        op->script = NULL;
        int len = redisFormatCommandArgv(&cmd, op->argc, (const char **)op->argv, op->argvlen);
        if (len > 0 && s_send_op(self, op, cmd, (size_t)len) == 0) {
            free(cmd);
            return;
        }
        free(cmd);
        reply = NULL;
    }
    if (!reply)
        self->stats.errors[op->write ? STORE_OP_WRITE : STORE_OP_QUERY]++;
    else if (reply->type == REDIS_REPLY_ERROR) {
        self->stats.errors[op->write ? STORE_OP_WRITE : STORE_OP_QUERY]++;
        log_warn("event=redis_error_reply error=\"%.200s\"", reply->str ? reply->str : "");
    }
    if (op->fn) op->fn(op->arg, reply);
    s_op_free(op);
}

static int s_send_op(store_t *self, op_t *op, const char *cmd, size_t len)
{
    if (!self->ac || self->closing) return -1;
    if (redisAsyncFormattedCommand(self->ac, s_on_reply, op, cmd, len) != REDIS_OK) return -1;
    s_sent_push(self);
    return 0;
}

static op_t *s_op_new(store_t *self, store_reply_fn *fn, void *arg)
{
    op_t *op = xcalloc(1, sizeof *op);
    op->store = self;
    op->fn = fn;
    op->arg = arg;
    return op;
}

int store_query(store_t *self, store_reply_fn *fn, void *arg, int argc, const char **argv,
                const size_t *argvlen)
{
    if (!self) return -1; /* shutting down */
    char *cmd;
    int len = redisFormatCommandArgv(&cmd, argc, argv, argvlen);
    if (len < 0) return -1;
    op_t *op = s_op_new(self, fn, arg);
    int rc = s_send_op(self, op, cmd, (size_t)len);
    free(cmd);
    if (rc < 0) s_op_free(op);
    return rc;
}

int store_queryf(store_t *self, store_reply_fn *fn, void *arg, const char *fmt, ...)
{
    if (!self) return -1; /* shutting down */
    char *cmd;
    va_list ap;
    va_start(ap, fmt);
    int len = redisvFormatCommand(&cmd, fmt, ap);
    va_end(ap);
    if (len < 0) return -1;
    op_t *op = s_op_new(self, fn, arg);
    int rc = s_send_op(self, op, cmd, (size_t)len);
    free(cmd);
    if (rc < 0) s_op_free(op);
    return rc;
}

/* ---- writes */

static void s_enqueue(store_t *self, char *cmd, size_t len)
{
    if (self->queue_n >= self->conf.buffer_commands ||
        self->queue_bytes + (long)len > self->conf.buffer_commands * BUFFER_BYTES_PER_COMMAND) {
        self->stats.writes_dropped++;
        static uint64_t last_log;
        uint64_t now = clock_mono_ms();
        if (now - last_log > 5000) {
            last_log = now;
            log_warn("event=redis_write_dropped reason=buffer_full buffered=%ld bytes=%ld",
                     self->queue_n, self->queue_bytes);
        }
        free(cmd);
        return;
    }
    pending_write_t *w = xcalloc(1, sizeof *w);
    w->cmd = cmd;
    w->len = len;
    if (self->queue_tail)
        self->queue_tail->next = w;
    else
        self->queue = w;
    self->queue_tail = w;
    self->queue_n++;
    self->queue_bytes += (long)len;
}

/* Writes go straight out only while the connection is up and not backed up: the number of
 * unanswered commands doubles as the measure of a slow Redis. */
static int s_can_send_write(const store_t *self)
{
    return self->connected && !self->closing && !self->queue &&
           (long)self->sent_n < self->conf.buffer_commands;
}

/* 0 when sent (fn, if any, will hear the reply); -1 when buffered or dropped. Takes cmd. */
static int s_write_formatted(store_t *self, char *cmd, size_t len, store_reply_fn *fn, void *arg)
{
    if (s_can_send_write(self)) {
        op_t *op = s_op_new(self, fn, arg);
        op->write = 1;
        if (s_send_op(self, op, cmd, len) == 0) {
            free(cmd);
            return 0;
        }
        s_op_free(op);
    }
    s_enqueue(self, cmd, len);
    return -1;
}

void store_write(store_t *self, int argc, const char **argv, const size_t *argvlen)
{
    if (!self) return;
    char *cmd;
    int len = redisFormatCommandArgv(&cmd, argc, argv, argvlen);
    if (len < 0) return;
    s_write_formatted(self, cmd, (size_t)len, NULL, NULL);
}

int store_write_acked(store_t *self, store_reply_fn *fn, void *arg, int argc, const char **argv,
                      const size_t *argvlen)
{
    if (!self) return -1;
    char *cmd;
    int len = redisFormatCommandArgv(&cmd, argc, argv, argvlen);
    if (len < 0) return -1;
    if (s_write_formatted(self, cmd, (size_t)len, fn, arg) < 0) return -1;
    /* someone waits for the answer: on the wire now, not at the loop's next turn */
    redisAsyncHandleWrite(self->ac);
    return 0;
}

void store_writef(store_t *self, const char *fmt, ...)
{
    if (!self) return;
    char *cmd;
    va_list ap;
    va_start(ap, fmt);
    int len = redisvFormatCommand(&cmd, fmt, ap);
    va_end(ap);
    if (len < 0) return;
    s_write_formatted(self, cmd, (size_t)len, NULL, NULL);
}

static void s_flush_queue(store_t *self)
{
    while (self->queue && self->connected && !self->closing) {
        pending_write_t *w = self->queue;
        op_t *op = s_op_new(self, NULL, NULL);
        op->write = 1;
        if (s_send_op(self, op, w->cmd, w->len) < 0) {
            s_op_free(op);
            return;
        }
        self->queue = w->next;
        if (!self->queue) self->queue_tail = NULL;
        self->queue_n--;
        self->queue_bytes -= (long)w->len;
        free(w->cmd);
        free(w);
    }
}

/* ---- scripts */

static void s_on_script_loaded(void *arg, redisReply *reply)
{
    store_script_t *s = arg;
    if (reply && reply->type == REDIS_REPLY_STRING && reply->len == 40)
        memcpy(s->sha, reply->str, 41);
}

store_script_t *store_script(store_t *self, const char *source)
{
    store_script_t *s = xcalloc(1, sizeof *s);
    s->source = xstrdup(source);
    s->next = self->scripts;
    self->scripts = s;
    if (self->ac) store_queryf(self, s_on_script_loaded, s, "SCRIPT LOAD %s", s->source);
    return s;
}

int store_eval(store_t *self, store_script_t *script, store_reply_fn *fn, void *arg, int nkeys,
               int nargs, const char **args)
{
    return store_evaln(self, script, fn, arg, nkeys, nargs, args, NULL);
}

int store_evaln(store_t *self, store_script_t *script, store_reply_fn *fn, void *arg, int nkeys,
                int nargs, const char **args, const size_t *lens)
{
    if (!self) return -1; /* shutting down */
    if (!self->ac || self->closing) return -1;
    op_t *op = s_op_new(self, fn, arg);
    op->argc = 3 + nargs;
    op->argv = xcalloc((size_t)op->argc, sizeof *op->argv);
    op->argvlen = xcalloc((size_t)op->argc, sizeof *op->argvlen);
    int by_sha = script->sha[0] != '\0';
    op->argv[0] = xstrdup(by_sha ? "EVALSHA" : "EVAL");
    op->argv[1] = xstrdup(by_sha ? script->sha : script->source);
    char n[16];
    snprintf(n, sizeof n, "%d", nkeys);
    op->argv[2] = xstrdup(n);
    for (int i = 0; i < 3; i++) op->argvlen[i] = strlen(op->argv[i]);
    for (int i = 0; i < nargs; i++) {
        size_t len = lens ? lens[i] : strlen(args[i]);
        op->argv[3 + i] = xmalloc(len + 1);
        memcpy(op->argv[3 + i], args[i], len);
        op->argv[3 + i][len] = '\0';
        op->argvlen[3 + i] = len;
    }
    op->script = by_sha ? script : NULL;
    char *cmd;
    int len = redisFormatCommandArgv(&cmd, op->argc, (const char **)op->argv, op->argvlen);
    int rc = len < 0 ? -1 : s_send_op(self, op, cmd, (size_t)len);
    if (len >= 0) free(cmd);
    if (rc < 0) s_op_free(op);
    return rc;
}
