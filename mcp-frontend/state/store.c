/* mcp-frontend/state/store.c — see store.h: the connection, queries and writes (Lua scripts are
 * store_scripts.c's, built on this file's store.h like any other user of the store). The
 * connection is made by common/redis_dial.h and then driven by the loop through its
 * redis_loop_t. hiredis answers commands in order, so a FIFO of send times is enough to find the
 * oldest unanswered one; writes live in the journal (store_journal.h) until their replay window
 * has passed. */
#define _GNU_SOURCE
#include <assert.h>
#include <errno.h>
#include <hiredis/async.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/redis_dial.h"
#include "common/redis_loop.h"
#include "store.h"
#include "store_journal.h"

#define BUFFER_BYTES_PER_COMMAND 4096 /* the journal's byte cap, per command it may hold */
#define MAX_CONNECT_HOOKS        8

/* One command in flight: what to call back, and how it may be sent again. */
enum { FIRST_PART = 1, FIRST_EXEC };

typedef struct op {
    store_t *store;
    store_reply_fn *fn;
    void *arg;
    store_resend_fn *resend; /* an error reply may have it sent again, changed (once) */
    void *resend_arg;
    journal_entry_t *entry; /* a write: its journal entry */
    int first;              /* of a write's first form: FIRST_PART (MULTI or a command, entry
                               NULL) or FIRST_EXEC (the write's answer) */
    uint64_t conn;          /* the connection it was sent on */
    char *cmd;              /* a query waiting for the connection being made: its bytes */
    size_t len;
    uint64_t deadline; /* ...and when it gives up (monotonic) */
    struct op *next;
    int argc; /* a query that may be sent again: its arguments (the op's) */
    char **argv;
    size_t *argvlen;
} op_t;

typedef struct {
    store_connect_fn *fn;
    void *arg;
} hook_t;

struct store {
    loop_t *loop;
    redis_url_t url;
    store_conf_t conf;
    redis_dial_t *dial;    /* a connection being made */
    redisAsyncContext *ac; /* NULL while disconnected */
    uint64_t conn;         /* counts connections: ops of an old one are told apart */
    redis_loop_t io;       /* the connection's fd on the loop (common/redis_loop.h) */
    char where[300];       /* the server of the current connection */
    uint64_t *sent;        /* FIFO of send times (mono ms) of unanswered commands */
    size_t sent_head, sent_n, sent_cap;
    journal_t *journal;
    op_t *waiting, *waiting_tail; /* queries made while the connection was being made */
    void *scripts; /* store_scripts.c's table, freed with free_scripts (store_keep_scripts) */
    void (*free_scripts)(void *scripts);
    hook_t hooks[MAX_CONNECT_HOOKS];
    int n_hooks;
    uint64_t timer;       /* watchdog and reconnect */
    uint64_t retry_at_ms; /* next reconnect attempt */
    long backoff_ms;
    int drop;    /* the server turned out a replica or still loading: reconnect */
    int closing; /* inside redisAsyncFree: send nothing */
    store_stats_t stats;
};

static void s_pump(store_t *self);
static int s_send_op(store_t *self, op_t *op, const char *cmd, size_t len);
static void s_op_free(op_t *op);

/* ---- queries that wait for the connection being made: a front-end that has just started (or
 * lost Redis a moment ago) answers its first requests once the connection is there, rather than
 * refusing them — for at most --redis-timeout-ms. */

/* Keeps a query (taking cmd) until the connection being made is there, or its deadline. */
static void s_wait_op(store_t *self, op_t *op, char *cmd, size_t len)
{
    op->cmd = cmd;
    op->len = len;
    op->deadline = clock_mono_ms() + (uint64_t)self->conf.timeout_ms;
    if (self->waiting_tail)
        self->waiting_tail->next = op;
    else
        self->waiting = op;
    self->waiting_tail = op;
}

/* Sends the waiting queries (connected), or fails them: all (no connection) or those past
 * their deadline. */
static void s_waiting(store_t *self, int fail_all)
{
    uint64_t now = clock_mono_ms();
    op_t *keep = NULL, **tail = &keep;
    op_t *op = self->waiting;
    self->waiting = self->waiting_tail = NULL;
    while (op) {
        op_t *next = op->next;
        op->next = NULL;
        int sent = self->ac && !self->closing && s_send_op(self, op, op->cmd, op->len) == 0;
        if (sent) {
            free(op->cmd);
            op->cmd = NULL;
        } else if (fail_all || now >= op->deadline) {
            self->stats.errors[STORE_OP_QUERY]++;
            if (op->fn) op->fn(op->arg, NULL);
            free(op->cmd);
            s_op_free(op);
        } else {
            *tail = op;
            tail = &op->next;
        }
        op = next;
    }
    /* callbacks may have queued more meanwhile: those go behind the ones kept */
    *tail = self->waiting;
    self->waiting = keep;
    self->waiting_tail = NULL;
    for (op_t *t = keep; t; t = t->next) self->waiting_tail = t;
}

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
    self->backoff_ms = self->backoff_ms * 2 > REDIS_RECONNECT_MAX_MS ? REDIS_RECONNECT_MAX_MS
                                                                     : self->backoff_ms * 2;
}

/* The connection is gone (hiredis frees the context after the callback): every write still
 * in the journal goes again on the next one. */
static void s_lost(store_t *self)
{
    self->ac = NULL;
    self->where[0] = '\0';
    self->sent_n = 0;
    self->drop = 0;
    journal_rewind(self->journal);
    s_schedule_reconnect(self);
}

static void s_on_disconnect(const redisAsyncContext *ac, int status)
{
    store_t *self = ac->data;
    if (status != REDIS_OK) {
        log_warn("event=redis_disconnected server=%s error=\"%s\"", self->where, ac->errstr);
        self->stats.errors[STORE_OP_DISCONNECT]++;
    }
    s_lost(self);
}

static void s_on_dialled(void *arg, redisAsyncContext *ac, const char *where, const char *err)
{
    store_t *self = arg;
    self->dial = NULL;
    if (!ac) {
        log_warn("event=redis_connect_failed error=\"%s\"", err);
        self->stats.errors[STORE_OP_CONNECT]++;
        s_schedule_reconnect(self);
        s_waiting(self, 1);
        return;
    }
    redis_dial_adopt(ac, self, s_on_disconnect);
    self->ac = ac;
    self->conn++;
    self->stats.connects++;
    self->backoff_ms = 100;
    snprintf(self->where, sizeof self->where, "%s", where);
    char url[600];
    redis_url_describe(&self->url, url, sizeof url);
    log_info("event=redis_connected url=%s server=%s replay=%ld", url, where,
             journal_unacked(self->journal));
    for (int i = 0; i < self->n_hooks; i++) self->hooks[i].fn(self->hooks[i].arg, self);
    s_waiting(self, 0);
    s_pump(self);
}

static void s_connect(store_t *self)
{
    self->dial = redis_dial_start(self->loop, &self->url, &self->io, self->conf.timeout_ms,
                                  s_on_dialled, self);
}

/* Frees the context from outside hiredis's callbacks: every pending callback is called with
 * NULL, then the disconnect callback; nothing may be sent on the dying context meanwhile. */
static void s_drop_connection(store_t *self)
{
    self->closing = 1;
    redisAsyncFree(self->ac);
    self->closing = 0;
    if (self->ac) s_lost(self); /* freed before the disconnect callback could say so */
}

/* The watchdog: reconnects when due, and drops a connection whose oldest command has waited
 * too long (a stopped or overloaded Redis must not hold requests forever) or whose server
 * turned out not to be the master. */
static void s_on_timer(loop_t *loop, void *arg)
{
    (void)loop;
    store_t *self = arg;
    uint64_t now = clock_mono_ms();
    journal_trim(self->journal, now);
    if (self->waiting) s_waiting(self, 0);
    if (!self->ac) {
        if (!self->dial && now >= self->retry_at_ms) s_connect(self);
        return;
    }
    if (self->drop) {
        log_warn("event=redis_reconnect server=%s reason=\"not the master, or still loading\"",
                 self->where);
        s_drop_connection(self);
        return;
    }
    if (self->sent_n && now - self->sent[self->sent_head] > (uint64_t)self->conf.timeout_ms) {
        log_warn("event=redis_timeout server=%s waited_ms=%llu unanswered=%zu", self->where,
                 (unsigned long long)(now - self->sent[self->sent_head]), self->sent_n);
        self->stats.errors[STORE_OP_TIMEOUT]++;
        s_drop_connection(self);
    }
}

store_t *store_new(loop_t *loop, const redis_url_t *url, const store_conf_t *conf)
{
    store_t *self = xcalloc(1, sizeof *self);
    self->loop = loop;
    self->url = *url;
    self->conf = *conf;
    if (self->conf.timeout_ms <= 0) self->conf.timeout_ms = 2000;
    long n = self->conf.buffer_commands > 0 ? self->conf.buffer_commands : 1;
    self->journal = journal_new(n, n * BUFFER_BYTES_PER_COMMAND, self->conf.replay_ms);
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
    redis_dial_cancel(&self->dial);
    self->closing = 1;
    s_waiting(self, 1);
    self->closing = 0;
    if (self->ac) {
        self->closing = 1;
        redisAsyncFree(self->ac); /* pending callbacks get NULL now */
        self->ac = NULL;
    }
    journal_destroy(&self->journal);
    if (self->free_scripts) self->free_scripts(self->scripts);
    free(self->sent);
    free(self);
    *self_p = NULL;
}

int store_connected(const store_t *self)
{
    return self && self->ac != NULL;
}

const char *store_where(const store_t *self)
{
    return self->where;
}

void store_on_connect(store_t *self, store_connect_fn *fn, void *arg)
{
    assert(self->n_hooks < MAX_CONNECT_HOOKS);
    self->hooks[self->n_hooks++] = (hook_t){fn, arg};
}

long store_unacked(const store_t *self)
{
    return journal_unacked(self->journal);
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

/* A command in RESP (the Redis protocol's array of bulk strings) into a malloc'd buffer: what
 * hiredis's redisFormatCommandArgv makes, without a sprintf per argument (a record's write has
 * ~50 arguments, and that formatting was a tenth of the front-end's instructions per call).
 * Its length, or -1. */
static char *s_digits(char *end, size_t v)
{
    do *--end = (char)('0' + v % 10);
    while ((v /= 10) != 0);
    return end;
}

#define ARG_LEN(i) (argvlen ? argvlen[i] : strlen(argv[i])) /* NULL lengths: C strings */

static int s_format(char **out, int argc, const char **argv, const size_t *argvlen)
{
    size_t total = 1 + 20 + 2;
    for (int i = 0; i < argc; i++) total += 1 + 20 + 2 + ARG_LEN(i) + 2;
    char *cmd = xmalloc(total), *p = cmd, num[20];
    char *d = s_digits(num + sizeof num, (size_t)argc);
    *p++ = '*';
    memcpy(p, d, (size_t)(num + sizeof num - d));
    p += num + sizeof num - d;
    *p++ = '\r', *p++ = '\n';
    for (int i = 0; i < argc; i++) {
        size_t len = ARG_LEN(i);
        d = s_digits(num + sizeof num, len);
        *p++ = '$';
        memcpy(p, d, (size_t)(num + sizeof num - d));
        p += num + sizeof num - d;
        *p++ = '\r', *p++ = '\n';
        if (len) memcpy(p, argv[i], len);
        p += len;
        *p++ = '\r', *p++ = '\n';
    }
    *out = cmd;
    return (int)(p - cmd);
}

static void s_op_free(op_t *op)
{
    for (int i = 0; i < op->argc; i++) free(op->argv[i]);
    free(op->argv);
    free(op->argvlen);
    free(op);
}

static int s_is_error(const redisReply *r, const char *prefix)
{
    return r && r->type == REDIS_REPLY_ERROR && r->str &&
           strncmp(r->str, prefix, strlen(prefix)) == 0;
}

/* A write's reply. NULL: its connection is gone, and the journal sends it again on the next
 * one. A replica's READONLY or a loading server's LOADING: the same, after reconnecting. */
static void s_on_write_reply(store_t *self, op_t *op, redisReply *reply)
{ /* (a part of a first form has no entry: its errors count, EXEC's answer acks) */
    if (!reply || op->conn != self->conn) return;
    /* a first form refused whole because a command in it met one of the errors below: none of
     * it was applied, and the journal sends the write again on the next connection */
    if (self->drop && op->first == FIRST_EXEC && s_is_error(reply, "EXECABORT")) return;
    if (s_is_error(reply, "READONLY") || s_is_error(reply, "LOADING") ||
        s_is_error(reply, "MASTERDOWN")) {
        self->drop = 1;
        return;
    }
    /* A script write by SHA the server does not know: its script cache was flushed under
     * this connection. The next connection loads every script before the journal goes again
     * (store_on_connect's hooks run first), so that write is not lost. */
    if (s_is_error(reply, "NOSCRIPT")) {
        log_warn("event=redis_reconnect server=%s reason=\"a script write met NOSCRIPT\"",
                 self->where);
        self->drop = 1;
        return;
    }
    if (reply->type == REDIS_REPLY_ERROR) {
        self->stats.errors[STORE_OP_WRITE]++;
        log_warn("event=redis_error_reply error=\"%.200s\"", reply->str ? reply->str : "");
    } else if (op->first == FIRST_EXEC && reply->type == REDIS_REPLY_ARRAY) {
        for (size_t i = 0; i < reply->elements; i++) /* a command of it that failed alone */
            if (reply->element[i]->type == REDIS_REPLY_ERROR) {
                self->stats.errors[STORE_OP_WRITE]++;
                log_warn("event=redis_error_reply error=\"%.200s\"", reply->element[i]->str);
            }
    }
    if (op->entry) journal_acked(self->journal, op->entry, clock_mono_ms());
}

/* An error reply its sender takes back: the command, changed, goes again on the same op (its
 * callback hears the new reply, the error is not counted). 1 when it went. */
static int s_resend(store_t *self, op_t *op, const redisReply *reply)
{
    store_resend_fn *resend = op->resend;
    op->resend = NULL; /* once */
    if (!resend(op->resend_arg, reply, op->argc, op->argv, op->argvlen)) return 0;
    char *cmd;
    int len = s_format(&cmd, op->argc, (const char **)op->argv, op->argvlen);
    int resent = len > 0 && s_send_op(self, op, cmd, (size_t)len) == 0;
    free(cmd);
    return resent;
}

static void s_on_reply(redisAsyncContext *ac, void *r, void *privdata)
{
    (void)ac;
    op_t *op = privdata;
    store_t *self = op->store;
    redisReply *reply = r;
    s_sent_pop(self);
    if (op->resend && reply && reply->type == REDIS_REPLY_ERROR && s_resend(self, op, reply))
        return;
    if (op->entry || op->first) {
        s_on_write_reply(self, op, reply);
    } else if (!reply || reply->type == REDIS_REPLY_ERROR) {
        self->stats.errors[STORE_OP_QUERY]++;
        if (reply)
            log_warn("event=redis_error_reply error=\"%.200s\"", reply->str ? reply->str : "");
        if (s_is_error(reply, "READONLY") || s_is_error(reply, "LOADING")) self->drop = 1;
    }
    if (op->fn) op->fn(op->arg, reply);
    s_op_free(op);
    if (self->ac && !self->closing) s_pump(self);
}

/* Sends a formatted command on the connection: 0, or -1 when there is none to take it. */
static int s_send_op(store_t *self, op_t *op, const char *cmd, size_t len)
{
    if (!self->ac || self->closing) return -1;
    if (redisAsyncFormattedCommand(self->ac, s_on_reply, op, cmd, len) != REDIS_OK) return -1;
    op->conn = self->conn;
    s_sent_push(self);
    return 0;
}

/* A command not yet sent, calling fn with its reply. */
static op_t *s_op_new(store_t *self, store_reply_fn *fn, void *arg)
{
    op_t *op = xcalloc(1, sizeof *op);
    op->store = self;
    op->fn = fn;
    op->arg = arg;
    return op;
}

/* Sends a formatted query (taking cmd and op), or, while a connection is being made, keeps it
 * until then. 0, or -1 when Redis is away (no connection and none being made). */
static int s_query_op(store_t *self, op_t *op, char *cmd, size_t len)
{
    if (!self->ac && self->dial && !self->closing) {
        s_wait_op(self, op, cmd, len);
        return 0;
    }
    int rc = s_send_op(self, op, cmd, len);
    free(cmd);
    if (rc < 0) s_op_free(op);
    return rc;
}

static int s_query(store_t *self, store_reply_fn *fn, void *arg, char *cmd, size_t len)
{
    return s_query_op(self, s_op_new(self, fn, arg), cmd, len);
}

int store_query_resend(store_t *self, store_reply_fn *fn, void *arg, int argc, char **argv,
                       size_t *argvlen, store_resend_fn *resend, void *resend_arg)
{
    op_t *op = s_op_new(self, fn, arg);
    op->argc = argc;
    op->argv = argv;
    op->argvlen = argvlen;
    op->resend = resend;
    op->resend_arg = resend_arg;
    /* like any query, it waits for a connection being made; one that cannot even wait is
     * refused before it is formatted */
    if (self->closing || (!self->ac && !self->dial)) {
        s_op_free(op);
        return -1;
    }
    char *cmd;
    int len = s_format(&cmd, argc, (const char **)argv, argvlen);
    if (len < 0) {
        s_op_free(op);
        return -1;
    }
    return s_query_op(self, op, cmd, (size_t)len);
}

void store_keep_scripts(store_t *self, void *scripts, void (*free_fn)(void *scripts))
{
    assert(!self->scripts);
    self->scripts = scripts;
    self->free_scripts = free_fn;
}

void *store_scripts(const store_t *self)
{
    return self->scripts;
}

int store_query(store_t *self, store_reply_fn *fn, void *arg, int argc, const char **argv,
                const size_t *argvlen)
{
    if (!self) return -1; /* shutting down */
    char *cmd;
    int len = s_format(&cmd, argc, argv, argvlen);
    if (len < 0) return -1;
    return s_query(self, fn, arg, cmd, (size_t)len);
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
    return s_query(self, fn, arg, cmd, (size_t)len);
}

/* ---- writes */

/* Sends journal entries while the connection is up and not backed up: the number of
 * unanswered commands doubles as the measure of a slow Redis. */
static void s_pump(store_t *self)
{
    journal_entry_t *e;
    while (self->ac && !self->closing && !self->drop &&
           (long)self->sent_n < self->conf.buffer_commands &&
           (e = journal_next_unsent(self->journal))) {
        op_t *op = s_op_new(self, NULL, NULL);
        op->entry = e;
        if (s_send_op(self, op, e->cmd, e->len) < 0) {
            s_op_free(op);
            return;
        }
        if (e->acked_ms) self->stats.writes_replayed++; /* it was acknowledged once before */
        journal_mark_sent(self->journal, e);
    }
}

static void s_dropped(store_t *self)
{
    self->stats.writes_dropped++;
    static uint64_t last_log;
    uint64_t now = clock_mono_ms();
    if (now - last_log > 5000) {
        last_log = now;
        log_warn("event=redis_write_dropped reason=buffer_full buffered=%ld bytes=%ld",
                 journal_entries(self->journal), journal_bytes(self->journal));
    }
}

/* 0 when the write went on the wire now (fn, if any, will hear the reply); -1 when it waits in
 * the journal or was dropped. Takes cmd. once: sent at most once (store_journal.h). */
static int s_write_journalled(store_t *self, char *cmd, size_t len, store_reply_fn *fn, void *arg,
                              int once)
{
    int immediate = self->ac && !self->closing && !self->drop &&
                    !journal_next_unsent(self->journal) &&
                    (long)self->sent_n < self->conf.buffer_commands;
    journal_entry_t *e = once ? journal_append_once(self->journal, cmd, len)
                              : journal_append(self->journal, cmd, len);
    if (!e) {
        s_dropped(self);
        return -1;
    }
    if (!immediate) return -1;
    op_t *op = s_op_new(self, fn, arg);
    op->entry = e;
    if (s_send_op(self, op, e->cmd, e->len) < 0) {
        s_op_free(op);
        return -1;
    }
    journal_mark_sent(self->journal, e);
    return 0;
}

static int s_write_formatted(store_t *self, char *cmd, size_t len, store_reply_fn *fn, void *arg)
{
    return s_write_journalled(self, cmd, len, fn, arg, 0);
}

void store_publish(store_t *self, const char *channel, const char *message)
{
    if (!self) return;
    char *cmd;
    int len = redisFormatCommand(&cmd, "PUBLISH %s %s", channel, message);
    if (len < 0) return;
    s_write_journalled(self, cmd, (size_t)len, NULL, NULL, 1);
}

void store_write(store_t *self, int argc, const char **argv, const size_t *argvlen)
{
    if (!self) return;
    char *cmd;
    int len = s_format(&cmd, argc, argv, argvlen);
    if (len < 0) return;
    s_write_formatted(self, cmd, (size_t)len, NULL, NULL);
}

int store_write_acked(store_t *self, store_reply_fn *fn, void *arg, int argc, const char **argv,
                      const size_t *argvlen)
{
    if (!self) return -1;
    char *cmd;
    int len = s_format(&cmd, argc, argv, argvlen);
    if (len < 0) return -1;
    if (s_write_formatted(self, cmd, (size_t)len, fn, arg) < 0) return -1;
    /* someone waits for the answer: on the wire now, not at the loop's next turn */
    redisAsyncHandleWrite(self->ac);
    return 0;
}

int store_write_first(store_t *self, int argc, const char **argv, const size_t *argvlen,
                      int n_first, const int *first_argc, const char **first_argv,
                      const size_t *first_lens, store_reply_fn *fn, void *arg)
{
    if (!self) return -1;
    if (n_first < 1) /* no first form: an ordinary write */
        return fn ? store_write_acked(self, fn, arg, argc, argv, argvlen)
                  : (store_write(self, argc, argv, argvlen), 0);
    char *cmd;
    int len = s_format(&cmd, argc, argv, argvlen);
    if (len < 0) return -1;
    int immediate = self->ac && !self->closing && !self->drop &&
                    !journal_next_unsent(self->journal) &&
                    (long)self->sent_n + n_first + 2 <= self->conf.buffer_commands;
    journal_entry_t *e = journal_append(self->journal, cmd, (size_t)len);
    if (!e) {
        s_dropped(self);
        return -1;
    }
    if (!immediate) return -1; /* the journal sends the replayable form */
    /* One transaction, so that Redis (and a replica it feeds) applies all of it or none: a
     * replay that found it half applied would take its usage for counted. */
    static const char MULTI[] = "*1\r\n$5\r\nMULTI\r\n", EXEC[] = "*1\r\n$4\r\nEXEC\r\n";
    for (int i = -1, at = 0; i <= n_first; i++) {
        int exec = i == n_first;
        char *part = NULL;
        const char *word = i < 0 ? MULTI : EXEC;
        size_t wlen = i < 0 ? sizeof MULTI - 1 : sizeof EXEC - 1;
        if (i >= 0 && !exec) {
            wlen = (size_t)s_format(&part, first_argc[i], first_argv + at, first_lens + at);
            word = part;
            at += first_argc[i];
        }
        op_t *op = s_op_new(self, exec ? fn : NULL, exec ? arg : NULL);
        op->entry = exec ? e : NULL;
        op->first = exec ? FIRST_EXEC : FIRST_PART;
        int sent = s_send_op(self, op, word, wlen);
        free(part);
        if (sent < 0) { /* the connection is going, the open MULTI with it: the entry, unsent,
                           goes on the next one */
            s_op_free(op);
            return -1;
        }
    }
    journal_mark_sent(self->journal, e);
    if (fn) redisAsyncHandleWrite(self->ac); /* someone waits for the answer: on the wire now */
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

int store_write_call(store_t *self, const char *verb, const char *body, int nkeys, int nargs,
                     const char **args, const size_t *lens, store_reply_fn *fn, void *arg)
{
    return store_write_call_first(self, verb, body, nkeys, nargs, args, lens, 0, NULL, NULL, NULL,
                                  fn, arg);
}

int store_write_call_first(store_t *self, const char *verb, const char *body, int nkeys,
                           int nargs, const char **args, const size_t *lens, int n_first,
                           const int *first_argc, const char **first_argv,
                           const size_t *first_lens, store_reply_fn *fn, void *arg)
{
    if (!self) return -1;
    int argc = 3 + nargs;
    const char **argv = xcalloc((size_t)argc, sizeof *argv);
    size_t *argl = xcalloc((size_t)argc, sizeof *argl);
    char n[16];
    snprintf(n, sizeof n, "%d", nkeys);
    argv[0] = verb, argl[0] = strlen(verb);
    argv[1] = body, argl[1] = strlen(body);
    argv[2] = n, argl[2] = strlen(n);
    for (int i = 0; i < nargs; i++) {
        argv[3 + i] = args[i];
        argl[3 + i] = lens ? lens[i] : strlen(args[i]);
    }
    int rc = store_write_first(self, argc, argv, argl, n_first, first_argc, first_argv,
                               first_lens, fn, arg); /* n_first 0: an ordinary write */
    free(argv);
    free(argl);
    return rc;
}

int store_write_eval(store_t *self, const char *source, int nkeys, int nargs, const char **args,
                     const size_t *lens, store_reply_fn *fn, void *arg)
{
    return store_write_call(self, "EVAL", source, nkeys, nargs, args, lens, fn, arg);
}
