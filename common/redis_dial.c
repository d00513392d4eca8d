/* common/redis_dial.c — see redis_dial.h.
 *
 * The async dial is a small state machine driven by hiredis callbacks and one timer. hiredis
 * frees a failed context only after the callback that reports the failure returns, and its
 * cleanup hook then takes the fd off the loop through the redis_loop_t the context used; so
 * the next attempt is never started from inside such a callback but from the timer (the
 * `step_due` flag), when the old context is gone and its redis_loop_t free again. */
#define _GNU_SOURCE
#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "clock.h"
#include "log.h"
#include "redis_dial.h"

#define DIAL_TICK_MS 20

typedef enum { DIAL_IDLE, DIAL_SENTINEL, DIAL_SERVER } dial_state_t;

struct redis_dial {
    loop_t *loop;
    redis_url_t url;
    redis_loop_t *io; /* the caller's: the server connection */
    redis_loop_t sio; /* ours: a sentinel connection */
    long timeout_ms;
    redis_dial_fn *fn;
    void *arg;
    dial_state_t state;
    redisAsyncContext *ac; /* the connection of the current step, NULL once hiredis freed it */
    int next_sentinel;     /* the sentinel to ask next */
    int tried_direct;      /* a plain URL gets one attempt */
    char host[256];        /* the server to connect to (from the URL, or a sentinel's answer) */
    int port;
    int setup_left;    /* AUTH / SELECT / ROLE replies still awaited */
    int failed;        /* the current step failed; the timer starts the next one */
    int step_due;      /* start the next step at the next tick */
    uint64_t deadline; /* monotonic: the current step gives up then */
    uint64_t timer;
    char where[300];
    char err[600];
};

static void s_fail_step(redis_dial_t *d, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void s_fail_step(redis_dial_t *d, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->err, sizeof d->err, fmt, ap);
    va_end(ap);
    d->failed = 1;
    d->step_due = 1;
}

/* ---- the end ------------------------------------------------------------------------------ */

static void s_free(redis_dial_t *d)
{
    loop_timer_cancel(d->loop, d->timer);
    free(d);
}

/* Hands the server connection over (or NULL) and ends the dial. */
static void s_finish(redis_dial_t *d, redisAsyncContext *ac)
{
    d->ac = NULL;
    d->state = DIAL_IDLE;
    d->fn(d->arg, ac, d->where, ac ? NULL : d->err);
    s_free(d);
}

/* ---- the server --------------------------------------------------------------------------- */

static void s_on_setup(redisAsyncContext *ac, void *r, void *priv)
{
    redis_dial_t *d = priv;
    redisReply *reply = r;
    if (d->failed || ac != d->ac) return; /* this attempt is over */
    if (!reply || reply->type == REDIS_REPLY_ERROR) {
        s_fail_step(d, "%s: %s", d->where, reply ? reply->str : "connection lost during set-up");
        redisAsyncDisconnect(ac);
        return;
    }
    if (reply->type == REDIS_REPLY_ARRAY && reply->elements > 0 &&
        reply->element[0]->type == REDIS_REPLY_STRING) { /* ROLE */
        if (strcmp(reply->element[0]->str, "master") != 0) {
            s_fail_step(d, "%s is a %s, not the master (yet)", d->where, reply->element[0]->str);
            redisAsyncDisconnect(ac);
            return;
        }
    }
    if (--d->setup_left == 0) s_finish(d, ac);
}

static void s_on_server_connect(const redisAsyncContext *ac, int status)
{
    redis_dial_t *d = ac->data;
    if (ac != d->ac) return;
    if (status != REDIS_OK) {
        d->ac = NULL; /* hiredis frees it after this callback */
        s_fail_step(d, "%s: %s", d->where, ac->errstr);
        return;
    }
    if (d->setup_left == 0) s_finish(d, (redisAsyncContext *)ac);
}

static void s_on_server_gone(const redisAsyncContext *ac, int status)
{
    (void)status;
    redis_dial_t *d = ac->data;
    if (ac == d->ac) {
        d->ac = NULL;
        if (!d->failed) s_fail_step(d, "%s: connection lost during set-up", d->where);
    }
}

static void s_connect_server(redis_dial_t *d)
{
    const redis_url_t *u = &d->url;
    redisAsyncContext *ac;
    if (u->path[0]) {
        snprintf(d->where, sizeof d->where, "unix:%s", u->path);
        ac = redisAsyncConnectUnix(u->path);
    } else {
        snprintf(d->where, sizeof d->where, "%s:%d", d->host, d->port);
        ac = redisAsyncConnect(d->host, d->port);
    }
    if (!ac || ac->err) {
        s_fail_step(d, "%s: %s", d->where, ac ? ac->errstr : "out of memory");
        if (ac) redisAsyncFree(ac);
        return;
    }
    d->state = DIAL_SERVER;
    d->ac = ac;
    d->deadline = clock_mono_ms() + (uint64_t)d->timeout_ms;
    ac->data = d;
    redis_loop_attach(d->io, d->loop, ac);
    redisAsyncSetConnectCallback(ac, s_on_server_connect);
    redisAsyncSetDisconnectCallback(ac, s_on_server_gone);
    /* hiredis queues these until the socket connects; they go first, in this order */
    d->setup_left = 0;
    if (u->password[0]) {
        if (u->user[0])
            redisAsyncCommand(ac, s_on_setup, d, "AUTH %s %s", u->user, u->password);
        else
            redisAsyncCommand(ac, s_on_setup, d, "AUTH %s", u->password);
        d->setup_left++;
    }
    if (u->db) {
        redisAsyncCommand(ac, s_on_setup, d, "SELECT %d", u->db);
        d->setup_left++;
    }
    if (redis_url_is_sentinel(u)) {
        redisAsyncCommand(ac, s_on_setup, d, "ROLE");
        d->setup_left++;
    }
    /* a Redis still loading its data answers -LOADING: not ready, try again later */
    redisAsyncCommand(ac, s_on_setup, d, "PING");
    d->setup_left++;
}

/* ---- sentinels ---------------------------------------------------------------------------- */

static void s_on_master_addr(redisAsyncContext *ac, void *r, void *priv)
{
    redis_dial_t *d = priv;
    redisReply *reply = r;
    if (d->failed || ac != d->ac) return;
    const redis_addr_t *s = &d->url.sentinel[d->next_sentinel - 1];
    if (!reply || reply->type != REDIS_REPLY_ARRAY || reply->elements != 2 ||
        reply->element[0]->type != REDIS_REPLY_STRING ||
        reply->element[1]->type != REDIS_REPLY_STRING) {
        s_fail_step(d, "sentinel %s:%d does not know master '%s'%s%s", s->host, s->port,
                    d->url.master, reply && reply->type == REDIS_REPLY_ERROR ? ": " : "",
                    reply && reply->type == REDIS_REPLY_ERROR ? reply->str : "");
    } else {
        snprintf(d->host, sizeof d->host, "%s", reply->element[0]->str);
        d->port = atoi(reply->element[1]->str);
        d->step_due = 1; /* the server next, once this connection is closed */
    }
    redisAsyncDisconnect(ac);
}

static void s_on_sentinel_connect(const redisAsyncContext *ac, int status)
{
    redis_dial_t *d = ac->data;
    if (ac != d->ac || status == REDIS_OK) return;
    const redis_addr_t *s = &d->url.sentinel[d->next_sentinel - 1];
    d->ac = NULL;
    s_fail_step(d, "sentinel %s:%d: %s", s->host, s->port, ac->errstr);
}

static void s_on_sentinel_gone(const redisAsyncContext *ac, int status)
{
    (void)status;
    redis_dial_t *d = ac->data;
    if (ac == d->ac) d->ac = NULL;
}

static void s_ask_sentinel(redis_dial_t *d)
{
    const redis_addr_t *s = &d->url.sentinel[d->next_sentinel++];
    d->host[0] = '\0';
    redisAsyncContext *ac = redisAsyncConnect(s->host, s->port);
    if (!ac || ac->err) {
        s_fail_step(d, "sentinel %s:%d: %s", s->host, s->port, ac ? ac->errstr : "out of memory");
        if (ac) redisAsyncFree(ac);
        return;
    }
    d->state = DIAL_SENTINEL;
    d->ac = ac;
    d->deadline = clock_mono_ms() + (uint64_t)d->timeout_ms;
    ac->data = d;
    redis_loop_attach(&d->sio, d->loop, ac);
    redisAsyncSetConnectCallback(ac, s_on_sentinel_connect);
    redisAsyncSetDisconnectCallback(ac, s_on_sentinel_gone);
    redisAsyncCommand(ac, s_on_master_addr, d, "SENTINEL get-master-addr-by-name %s",
                      d->url.master);
}

/* ---- steps -------------------------------------------------------------------------------- */

/* What comes after the step that just ended (its connection is gone). */
static void s_next(redis_dial_t *d)
{
    int sentinel = redis_url_is_sentinel(&d->url);
    dial_state_t was = d->state;
    d->state = DIAL_IDLE;
    if (!sentinel) {
        if (d->tried_direct) {
            s_finish(d, NULL);
            return;
        }
        d->tried_direct = 1;
        snprintf(d->host, sizeof d->host, "%s", d->url.host);
        d->port = d->url.port;
        d->failed = 0;
        s_connect_server(d);
        return;
    }
    if (was == DIAL_SENTINEL && !d->failed && d->host[0]) {
        s_connect_server(d); /* the sentinel named the master */
        return;
    }
    if (d->next_sentinel >= d->url.n_sentinels) {
        char last[300];
        snprintf(last, sizeof last, "%.299s", d->err);
        snprintf(d->err, sizeof d->err, "no sentinel gave a reachable master '%.128s' (last: %s)",
                 d->url.master, last);
        s_finish(d, NULL);
        return;
    }
    d->failed = 0;
    s_ask_sentinel(d);
}

/* Abandons the current step's connection from outside hiredis's callbacks. */
static void s_abandon(redis_dial_t *d)
{
    redisAsyncContext *ac = d->ac;
    d->failed = 1;
    d->ac = NULL;
    if (ac) redisAsyncFree(ac); /* pending callbacks see d->failed and return */
}

static void s_on_tick(loop_t *loop, void *arg)
{
    (void)loop;
    redis_dial_t *d = arg;
    if (d->ac && clock_mono_ms() > d->deadline) {
        if (d->state == DIAL_SENTINEL)
            snprintf(d->err, sizeof d->err, "sentinel %s:%d did not answer in %ld ms",
                     d->url.sentinel[d->next_sentinel - 1].host,
                     d->url.sentinel[d->next_sentinel - 1].port, d->timeout_ms);
        else
            snprintf(d->err, sizeof d->err, "%.300s did not answer in %ld ms", d->where,
                     d->timeout_ms);
        s_abandon(d);
        d->step_due = 1;
    }
    /* the step's connection must be gone before the next one may use its redis_loop_t */
    if (d->step_due && !d->ac) {
        d->step_due = 0;
        s_next(d);
    }
}

redis_dial_t *redis_dial_start(loop_t *loop, const redis_url_t *url, redis_loop_t *io,
                               long timeout_ms, redis_dial_fn *fn, void *arg)
{
    redis_dial_t *d = xcalloc(1, sizeof *d);
    d->loop = loop;
    d->url = *url;
    d->io = io;
    d->sio.fd = -1;
    d->timeout_ms = timeout_ms > 0 ? timeout_ms : 1000;
    d->fn = fn;
    d->arg = arg;
    d->step_due = 1; /* the first step at the first tick: fn never runs inside this call */
    d->timer = loop_timer_add(loop, 0, DIAL_TICK_MS, s_on_tick, d);
    return d;
}

void redis_dial_cancel(redis_dial_t **self_p)
{
    assert(self_p);
    redis_dial_t *d = *self_p;
    if (!d) return;
    s_abandon(d);
    s_free(d);
    *self_p = NULL;
}

void redis_dial_adopt(redisAsyncContext *ac, void *data, redisDisconnectCallback *on_disconnect)
{
    ac->data = data;
    ac->onDisconnect = on_disconnect;
}

/* ---- blocking ----------------------------------------------------------------------------- */

static redisContext *s_block_connect(const char *host, int port, const char *path, long ms,
                                     char *err, size_t errlen)
{
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    redisContext *c =
        path ? redisConnectUnixWithTimeout(path, tv) : redisConnectWithTimeout(host, port, tv);
    if (!c || c->err) {
        if (path)
            snprintf(err, errlen, "redis unix:%s: %s", path, c ? c->errstr : "out of memory");
        else
            snprintf(err, errlen, "redis %s:%d: %s", host, port, c ? c->errstr : "out of memory");
        if (c) redisFree(c);
        return NULL;
    }
    redisSetTimeout(c, tv);
    return c;
}

/* AUTH, SELECT and (for a Sentinel URL) ROLE on a fresh connection: 0, or -1 with err. */
static int s_block_setup(redisContext *c, const redis_url_t *u, char *err, size_t errlen)
{
    redisReply *r = NULL;
    if (u->password[0]) {
        r = u->user[0] ? redisCommand(c, "AUTH %s %s", u->user, u->password)
                       : redisCommand(c, "AUTH %s", u->password);
        if (!r || r->type == REDIS_REPLY_ERROR) {
            snprintf(err, errlen, "redis AUTH: %s", r ? r->str : c->errstr);
            if (r) freeReplyObject(r);
            return -1;
        }
        freeReplyObject(r);
    }
    if (u->db) {
        r = redisCommand(c, "SELECT %d", u->db);
        if (!r || r->type == REDIS_REPLY_ERROR) {
            snprintf(err, errlen, "redis SELECT %d: %s", u->db, r ? r->str : c->errstr);
            if (r) freeReplyObject(r);
            return -1;
        }
        freeReplyObject(r);
    }
    r = redisCommand(c, "PING");
    if (!r || r->type == REDIS_REPLY_ERROR) {
        snprintf(err, errlen, "redis PING: %s", r ? r->str : c->errstr);
        if (r) freeReplyObject(r);
        return -1;
    }
    freeReplyObject(r);
    if (!redis_url_is_sentinel(u)) return 0;
    r = redisCommand(c, "ROLE");
    int master = r && r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
                 r->element[0]->type == REDIS_REPLY_STRING &&
                 strcmp(r->element[0]->str, "master") == 0;
    if (!master) snprintf(err, errlen, "redis: the server the sentinel named is not a master");
    if (r) freeReplyObject(r);
    return master ? 0 : -1;
}

/* Asks one sentinel where the master is: 0 with host and port, or -1 with err. */
static int s_block_ask(const redis_addr_t *s, const char *master, long ms, char *host,
                       size_t host_cap, int *port, char *err, size_t errlen)
{
    redisContext *c = s_block_connect(s->host, s->port, NULL, ms, err, errlen);
    if (!c) return -1;
    redisReply *r = redisCommand(c, "SENTINEL get-master-addr-by-name %s", master);
    int ok = r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
             r->element[0]->type == REDIS_REPLY_STRING && r->element[1]->type == REDIS_REPLY_STRING;
    if (ok) {
        snprintf(host, host_cap, "%s", r->element[0]->str);
        *port = atoi(r->element[1]->str);
    } else {
        snprintf(err, errlen, "sentinel %s:%d does not know master '%s'", s->host, s->port, master);
    }
    if (r) freeReplyObject(r);
    redisFree(c);
    return ok ? 0 : -1;
}

redisContext *redis_dial_blocking(const redis_url_t *u, long ms, char *err, size_t errlen)
{
    if (!redis_url_is_sentinel(u)) {
        redisContext *c =
            s_block_connect(u->host, u->port, u->path[0] ? u->path : NULL, ms, err, errlen);
        if (c && s_block_setup(c, u, err, errlen) < 0) {
            redisFree(c);
            c = NULL;
        }
        return c;
    }
    char last[300] = "no sentinel";
    for (int i = 0; i < u->n_sentinels; i++) {
        char host[256];
        int port = 0;
        if (s_block_ask(&u->sentinel[i], u->master, ms, host, sizeof host, &port, last,
                        sizeof last) < 0)
            continue;
        redisContext *c = s_block_connect(host, port, NULL, ms, last, sizeof last);
        if (c && s_block_setup(c, u, last, sizeof last) == 0) return c;
        if (c) redisFree(c);
    }
    snprintf(err, errlen, "no sentinel gave a reachable master '%s' (last: %s)", u->master, last);
    return NULL;
}
