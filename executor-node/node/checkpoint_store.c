/* executor-node/node/checkpoint_store.c — see checkpoint_store.h. The connection is made by
 * common/redis_dial.h and driven through common/redis_loop.h, as the metrics snapshot's. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <hiredis/async.h>
#include <hiredis/hiredis.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/redis_dial.h"
#include "common/redis_loop.h"
#include "common/redis_url.h"
#include "common/session_keys.h"
#include "checkpoint_store.h"

#define CHECKPOINT_WRITE_MS 10000 /* a write unanswered this long has failed */
#define STORE_TICK_MS       500
#define STORE_STUCK_MS      5000
#define STORE_BACKOFF_MAX   5000
#define STORE_MAX_PENDING   64 /* writes waiting for a connection, at most */

/* KEYS: the checkpoint, the tenant's checkpoints, the session's record, the tenant's live set.
 * ARGV: blob, meta, expires_ms, now_ms, id, freed, reason, cells. The record is the front-end's
 * (mcp-frontend/cells/session_records.h): it is touched only when it exists (a session made
 * straight through a broker has none) and has not ended. Idempotent. */
static const char s_put_lua[] =
    "redis.call('HSET', KEYS[1], 'blob', ARGV[1], 'meta', ARGV[2], 'expires_ms', ARGV[3],\n"
    "           'cells', ARGV[8], 'created_ms', ARGV[4])\n"
    "redis.call('ZADD', KEYS[2], ARGV[3], ARGV[5])\n"
    "local state = redis.call('HGET', KEYS[3], 'state')\n"
    "if state and state ~= 'ended' then\n"
    "  redis.call('HSET', KEYS[3], 'checkpoint_cell', ARGV[8], 'checkpoint_ms', ARGV[4])\n"
    "  if ARGV[6] == '1' then\n"
    "    redis.call('HSET', KEYS[3], 'state', 'hibernated', 'end_reason', ARGV[7],\n"
    "               'hibernated_ms', ARGV[4])\n"
    "    redis.call('ZADD', KEYS[4], ARGV[3], ARGV[5])\n"
    "  end\n"
    "end\n"
    "return 1\n";

typedef struct write {
    checkpoint_store_t *owner;
    char keys[4][SESSION_KEY_MAX];
    char *args[8];
    size_t lens[8];
    checkpoint_done_fn *done;
    void *arg;
    uint64_t deadline_ms;
    int sent;     /* its EVAL is on the connection: hiredis will answer it, once */
    int answered; /* done was called (it timed out): only hiredis's answer is awaited */
    struct write *next;
} write_t;

struct checkpoint_store {
    loop_t *loop;
    redis_url_t url;
    redis_dial_t *dial;
    redisAsyncContext *ac;
    redis_loop_t io;
    int connected;
    int destroying;
    uint64_t next_connect_ms, backoff_ms;
    uint64_t timer;
    write_t *writes; /* under way, oldest first */
    size_t n_writes;
};

static void s_free_write(write_t *w)
{
    for (int i = 0; i < 8; i++) {
        if (w->args[i]) explicit_bzero(w->args[i], w->lens[i]); /* a tenant's data */
        free(w->args[i]);
    }
    free(w);
}

static void s_unlink(checkpoint_store_t *s, write_t *w)
{
    for (write_t **p = &s->writes; *p; p = &(*p)->next)
        if (*p == w) {
            *p = w->next;
            s->n_writes--;
            break;
        }
}

/* w is answered (once); it goes unless hiredis still holds it (sent: its reply frees it). */
static void s_finish(checkpoint_store_t *s, write_t *w, int ok, const char *why)
{
    if (!w->answered) {
        w->answered = 1;
        w->done(w->arg, ok, why);
    }
    if (!w->sent) {
        s_unlink(s, w);
        s_free_write(w);
    }
}

/* hiredis answers each sent write exactly once (NULL when the connection goes). */
static void s_on_reply(redisAsyncContext *ac, void *r, void *priv)
{
    write_t *w = priv;
    checkpoint_store_t *s = ac->data;
    redisReply *reply = r;
    w->sent = 0;
    if (!reply && !w->answered && !s->destroying)
        return; /* the connection went: sent again once reconnected (s_on_dialled), or failed
                   at its deadline */
    if (!reply || reply->type == REDIS_REPLY_ERROR)
        s_finish(s, w, 0, reply && reply->str ? reply->str : "the connection to Redis failed");
    else
        s_finish(s, w, 1, NULL);
}

static void s_send(checkpoint_store_t *s, write_t *w)
{
    const char *argv[3 + 4 + 8];
    size_t lens[3 + 4 + 8];
    argv[0] = "EVAL", lens[0] = 4;
    argv[1] = s_put_lua, lens[1] = sizeof s_put_lua - 1;
    argv[2] = "4", lens[2] = 1;
    for (int i = 0; i < 4; i++) argv[3 + i] = w->keys[i], lens[3 + i] = strlen(w->keys[i]);
    for (int i = 0; i < 8; i++) argv[7 + i] = w->args[i], lens[7 + i] = w->lens[i];
    if (redisAsyncCommandArgv(s->ac, s_on_reply, w, 15, argv, lens) == REDIS_OK) w->sent = 1;
}

/* ---- the connection ---------------------------------------------------------------------- */

static void s_retry_later(checkpoint_store_t *s)
{
    s->backoff_ms = s->backoff_ms ? 2 * s->backoff_ms : 200;
    if (s->backoff_ms > STORE_BACKOFF_MAX) s->backoff_ms = STORE_BACKOFF_MAX;
    s->next_connect_ms = clock_mono_ms() + s->backoff_ms;
}

static void s_on_disconnect(const redisAsyncContext *ac, int status)
{
    checkpoint_store_t *s = ac->data;
    if (status != REDIS_OK && !s->destroying)
        log_warn("event=checkpoint_store_disconnected error=\"%s\"", ac->errstr);
    s->ac = NULL;
    s->connected = 0;
    if (!s->destroying) s_retry_later(s);
}

static void s_on_dialled(void *arg, redisAsyncContext *ac, const char *where, const char *err)
{
    checkpoint_store_t *s = arg;
    s->dial = NULL;
    if (!ac) {
        log_warn("event=checkpoint_store_unreachable error=\"%s\"", err ? err : "?");
        s_retry_later(s);
        return;
    }
    redis_dial_adopt(ac, s, s_on_disconnect);
    s->ac = ac;
    s->connected = 1;
    s->backoff_ms = 0;
    log_info("event=redis_connected purpose=checkpoints server=%s", where);
    for (write_t *w = s->writes; w; w = w->next)
        if (!w->sent) s_send(s, w);
}

static void s_on_tick(loop_t *loop, void *arg)
{
    (void)loop;
    checkpoint_store_t *s = arg;
    uint64_t now = clock_mono_ms();
    for (write_t *w = s->writes, *next; w; w = next) {
        next = w->next;
        if (now > w->deadline_ms && !w->answered) s_finish(s, w, 0, "Redis did not answer in time");
    }
    if (!s->ac && !s->dial && now >= s->next_connect_ms)
        s->dial = redis_dial_start(s->loop, &s->url, &s->io, STORE_STUCK_MS, s_on_dialled, s);
}

checkpoint_store_t *checkpoint_store_new(loop_t *loop, const char *redis_url, char *err,
                                         size_t errlen)
{
    checkpoint_store_t *s = xcalloc(1, sizeof *s);
    if (redis_url_parse(redis_url, &s->url, err, errlen) < 0 ||
        redis_url_resolve(&s->url, err, errlen) < 0) {
        free(s);
        return NULL;
    }
    s->loop = loop;
    s->io.fd = -1;
    s->dial = redis_dial_start(loop, &s->url, &s->io, STORE_STUCK_MS, s_on_dialled, s);
    s->timer = loop_timer_add(loop, STORE_TICK_MS, STORE_TICK_MS, s_on_tick, s);
    return s;
}

void checkpoint_store_destroy(checkpoint_store_t **self_p)
{
    checkpoint_store_t *s = *self_p;
    if (!s) return;
    s->destroying = 1;
    loop_timer_cancel(s->loop, s->timer);
    redis_dial_cancel(&s->dial);
    for (write_t *w = s->writes, *next; w; w = next) {
        next = w->next;
        s_finish(s, w, 0, "the executor is stopping"); /* unsent ones go here */
    }
    if (s->ac) redisAsyncFree(s->ac); /* its answers (NULL) free the sent ones */
    while (s->writes) {               /* none should be left; never leak one */
        write_t *w = s->writes;
        s_unlink(s, w);
        s_free_write(w);
    }
    free(s);
    *self_p = NULL;
}

int checkpoint_store_connected(const checkpoint_store_t *s)
{
    return s->connected;
}

/* ---- writes ----------------------------------------------------------------------------- */

static void s_arg(write_t *w, int i, const void *data, size_t len)
{
    w->args[i] = xmalloc(len + 1);
    memcpy(w->args[i], data, len);
    w->args[i][len] = '\0';
    w->lens[i] = len;
}

static void s_arg_fmt(write_t *w, int i, unsigned long long v)
{
    char b[32];
    int n = snprintf(b, sizeof b, "%llu", v);
    s_arg(w, i, b, (size_t)n);
}

void checkpoint_store_put(checkpoint_store_t *s, const checkpoint_t *c, checkpoint_done_fn *done,
                          void *arg)
{
    if (s->n_writes >= STORE_MAX_PENDING) {
        done(arg, 0, "too many checkpoints are waiting for Redis");
        return;
    }
    write_t *w = xcalloc(1, sizeof *w);
    w->owner = s;
    checkpoint_key(w->keys[0], c->tenant, c->session);
    checkpoints_key(w->keys[1], c->tenant);
    session_record_key(w->keys[2], c->tenant, c->session);
    session_records_key(w->keys[3], c->tenant);
    s_arg(w, 0, c->blob, c->len);
    s_arg(w, 1, c->meta, strlen(c->meta));
    s_arg_fmt(w, 2, (unsigned long long)c->expires_ms);
    s_arg_fmt(w, 3, (unsigned long long)c->now_ms);
    s_arg(w, 4, c->session, strlen(c->session));
    s_arg(w, 5, c->freed ? "1" : "0", 1);
    s_arg(w, 6, c->reason ? c->reason : "", c->reason ? strlen(c->reason) : 0);
    s_arg_fmt(w, 7, c->cells);
    w->done = done;
    w->arg = arg;
    w->deadline_ms = clock_mono_ms() + CHECKPOINT_WRITE_MS;
    /* the oldest first: appended */
    write_t **p = &s->writes;
    while (*p) p = &(*p)->next;
    *p = w;
    s->n_writes++;
    if (s->ac) s_send(s, w);
}
