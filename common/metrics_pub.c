/* common/metrics_pub.c — see metrics_pub.h. The connection is made by redis_dial.h (so a
 * Sentinel URL is followed through failovers) and driven through redis_loop.h. */
#define _GNU_SOURCE
#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#include <zmq.h>

#include "buf.h"
#include "clock.h"
#include "log.h"
#include "metrics_pub.h"
#include "redis_dial.h"
#include "redis_loop.h"
#include "redis_url.h"

#define PUB_MAX_FIELDS  64
#define PUB_STUCK_MS    5000 /* a snapshot or a connect pending this long: start over */
#define PUB_BACKOFF_MAX 10000

struct metrics_pub {
    loop_t *loop;
    redis_url_t url;
    char *key;
    long ttl_s;
    metrics_pub_fill_fn *fill;
    void *arg;
    uint64_t timer;
    redis_dial_t *dial;    /* a connection being made */
    redisAsyncContext *ac; /* NULL while disconnected */
    int connected;
    int drop; /* the server answered READONLY: reconnect to whoever is master now */
    redis_loop_t io;   /* the connection's fd on the loop (common/redis_loop.h) */
    uint64_t since_ms; /* the pending snapshot was sent */
    int inflight;      /* a snapshot awaits its replies */
    uint64_t next_connect_ms;
    uint64_t backoff_ms;
    int destroying;
    char *fields[2 * PUB_MAX_FIELDS]; /* the snapshot being filled */
    int n_fields;
    uint64_t published, errors;
    uint64_t log_window_ms;
    unsigned log_count;
};

static void s_log_error(metrics_pub_t *self, const char *what, const char *detail)
{
    uint64_t now = clock_mono_ms();
    if (now - self->log_window_ms > 60000) self->log_window_ms = now, self->log_count = 0;
    if (self->log_count++ < 5) {
        char q[200];
        log_warn("event=redis_publish_error what=%s error=%s errors_total=%llu", what,
                 log_quote(q, sizeof q, detail ? detail : ""), (unsigned long long)self->errors);
    }
}

static void s_publish(metrics_pub_t *self);

/* ---- connection ---------------------------------------------------------------------------- */

static void s_retry_later(metrics_pub_t *self)
{
    self->backoff_ms = self->backoff_ms ? self->backoff_ms * 2 : 500;
    if (self->backoff_ms > PUB_BACKOFF_MAX) self->backoff_ms = PUB_BACKOFF_MAX;
    self->next_connect_ms = clock_mono_ms() + self->backoff_ms;
}

static void s_on_disconnect(const redisAsyncContext *ac, int status)
{
    metrics_pub_t *self = ac->data;
    if (status != REDIS_OK && !self->destroying) {
        self->errors++;
        s_log_error(self, "disconnect", ac->errstr);
    }
    self->ac = NULL;
    self->connected = 0;
    self->inflight = 0;
    self->drop = 0;
    if (!self->destroying) s_retry_later(self);
}

static void s_on_dialled(void *arg, redisAsyncContext *ac, const char *where, const char *err)
{
    metrics_pub_t *self = arg;
    self->dial = NULL;
    if (!ac) {
        self->errors++;
        s_log_error(self, "connect", err);
        s_retry_later(self);
        return;
    }
    redis_dial_adopt(ac, self, s_on_disconnect);
    self->ac = ac;
    self->connected = 1;
    self->backoff_ms = 0;
    log_info("event=redis_connected purpose=metrics_snapshot server=%s", where);
    /* the first snapshot at once, not an interval later: readers (a front-end learning which
     * profiles are served, `snakepit up` waiting for that, `snakepit status`) see a component
     * as soon as it can be seen */
    s_publish(self);
}

static void s_connect(metrics_pub_t *self)
{
    self->dial = redis_dial_start(self->loop, &self->url, &self->io, PUB_STUCK_MS, s_on_dialled,
                                  self);
}

/* Frees the context from outside hiredis's callbacks (a snapshot stuck, or the server turned
 * out a replica after a failover). */
static void s_drop(metrics_pub_t *self, const char *why, const char *detail)
{
    self->errors++;
    s_log_error(self, why, detail);
    redisAsyncFree(self->ac); /* calls s_on_disconnect */
    self->ac = NULL;
    self->connected = 0;
    self->inflight = 0;
}

/* ---- snapshots ----------------------------------------------------------------------------- */

void metrics_pub_field(metrics_pub_t *self, const char *name, const char *fmt, ...)
{
    if (self->n_fields >= PUB_MAX_FIELDS) return;
    va_list ap;
    va_start(ap, fmt);
    char *value = NULL;
    if (vasprintf(&value, fmt, ap) < 0) value = NULL;
    va_end(ap);
    if (!value) return;
    self->fields[2 * self->n_fields] = xstrdup(name);
    self->fields[2 * self->n_fields + 1] = value;
    self->n_fields++;
}

static void s_on_hset(redisAsyncContext *ac, void *r, void *priv)
{
    (void)ac;
    metrics_pub_t *self = priv;
    redisReply *reply = r;
    if (!reply || reply->type == REDIS_REPLY_ERROR) {
        self->errors++;
        s_log_error(self, "hset", reply ? reply->str : "disconnected");
        if (reply && reply->str &&
            (!strncmp(reply->str, "READONLY", 8) || !strncmp(reply->str, "LOADING", 7)))
            self->drop = 1;
    }
}

static void s_on_expire(redisAsyncContext *ac, void *r, void *priv)
{
    (void)ac;
    metrics_pub_t *self = priv;
    redisReply *reply = r;
    self->inflight = 0;
    if (reply && reply->type != REDIS_REPLY_ERROR) self->published++;
}

static void s_publish(metrics_pub_t *self)
{
    self->n_fields = 0;
    self->fill(self->arg, self);
    int argc = 2 + 2 * self->n_fields;
    const char *argv[2 + 2 * PUB_MAX_FIELDS];
    size_t lens[2 + 2 * PUB_MAX_FIELDS];
    argv[0] = "HSET", lens[0] = 4;
    argv[1] = self->key, lens[1] = strlen(self->key);
    for (int i = 0; i < 2 * self->n_fields; i++) {
        argv[2 + i] = self->fields[i];
        lens[2 + i] = strlen(self->fields[i]);
    }
    if (self->n_fields) {
        /* HSET then EXPIRE on one connection: replies come in order, so the EXPIRE reply
         * ends the snapshot. */
        redisAsyncCommandArgv(self->ac, s_on_hset, self, argc, argv, lens);
        redisAsyncCommand(self->ac, s_on_expire, self, "EXPIRE %s %ld", self->key, self->ttl_s);
        self->inflight = 1;
        self->since_ms = clock_mono_ms();
    }
    for (int i = 0; i < 2 * self->n_fields; i++) free(self->fields[i]);
    self->n_fields = 0;
}

static void s_on_tick(loop_t *loop, void *arg)
{
    (void)loop;
    metrics_pub_t *self = arg;
    uint64_t now = clock_mono_ms();
    if (!self->ac) {
        if (!self->dial && now >= self->next_connect_ms) s_connect(self);
        return;
    }
    if (self->drop) {
        s_drop(self, "reconnect", "the server is not the master (any more)");
        return;
    }
    if (self->inflight) {
        self->errors++; /* this interval's snapshot is skipped */
        if (now - self->since_ms > PUB_STUCK_MS) s_drop(self, "reply_timeout", "no answer");
        return;
    }
    s_publish(self);
}

metrics_pub_t *metrics_pub_new(loop_t *loop, const char *redis_url, const char *key, long every_ms,
                               long ttl_s, metrics_pub_fill_fn *fn, void *arg, char *err,
                               size_t errlen)
{
    metrics_pub_t *self = xcalloc(1, sizeof *self);
    if (redis_url_parse(redis_url, &self->url, err, errlen) < 0 ||
        redis_url_resolve(&self->url, err, errlen) < 0) {
        free(self);
        return NULL;
    }
    self->loop = loop;
    self->key = xstrdup(key);
    self->ttl_s = ttl_s > 0 ? ttl_s : 10;
    self->fill = fn;
    self->arg = arg;
    self->io.fd = -1;
    s_connect(self);
    self->timer = loop_timer_add(loop, (uint64_t)every_ms, (uint64_t)every_ms, s_on_tick, self);
    return self;
}

void metrics_pub_destroy(metrics_pub_t **self_p)
{
    assert(self_p);
    metrics_pub_t *self = *self_p;
    if (!self) return;
    self->destroying = 1;
    loop_timer_cancel(self->loop, self->timer);
    redis_dial_cancel(&self->dial);
    if (self->ac) redisAsyncFree(self->ac); /* its cleanup hook takes the fd off the loop */
    self->ac = NULL;
    free(self->key);
    free(self);
    *self_p = NULL;
}

uint64_t metrics_pub_published(const metrics_pub_t *self)
{
    return self->published;
}

uint64_t metrics_pub_errors(const metrics_pub_t *self)
{
    return self->errors;
}

int metrics_pub_connected(const metrics_pub_t *self)
{
    return self->connected;
}
