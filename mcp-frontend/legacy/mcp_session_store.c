/* mcp-frontend/legacy/mcp_session_store.c — see mcp_session_store.h. Every change that touches
 * several keys is one Lua script, so that no front-end ever sees half of it; the ones that must be
 * in place before an answer leaves (a new session's id, a subscription, a deletion) are waited for.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/log.h"
#include "mcp-frontend/rpc/call.h"
#include "mcp_session_store.h"
#include "stream_log.h"

#define TOUCH_EVERY_MS    1000
#define MAX_SUBSCRIPTIONS 1000
#define URI_SET_TTL_MS    (7L * 86400 * 1000) /* outlives sessions; stale members are skipped */

/* Removes a session and everything that names it (its subscriptions, its GET stream's log). */
#define LUA_DROP                                                                                   \
    "local function drop(P, zset, id)\n"                                                           \
    "  local s = P .. 'sess:' .. id\n"                                                             \
    "  for _, uri in ipairs(redis.call('SMEMBERS', s .. ':subs')) do\n"                            \
    "    redis.call('SREM', P .. 'uri:' .. uri, id)\n"                                             \
    "  end\n"                                                                                      \
    "  redis.call('DEL', s, s .. ':subs', s .. ':ev:g', s .. ':ev:g:fw')\n"                        \
    "  redis.call('ZREM', zset, id)\n"                                                             \
    "end\n"

/* KEYS: the tenant's zset, the new session's hash. ARGV: prefix, id, now, idle ms, cap, the
 * control channel, tenant, then the hash's fields and values. Returns the evicted ids. */
static const char s_open_lua[] =
    LUA_DROP "local P, id = ARGV[1], ARGV[2]\n"
             "local now, idle, cap = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])\n"
             "redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - idle)\n"
             "local n, evicted = redis.call('ZCARD', KEYS[1]), {}\n"
             "while n >= cap do\n"
             "  local old = redis.call('ZRANGE', KEYS[1], 0, 0)[1]\n"
             "  if not old then break end\n"
             "  drop(P, KEYS[1], old)\n"
             "  evicted[#evicted + 1] = old\n"
             "  redis.call('PUBLISH', ARGV[6], cjson.encode({t = 'sess', op = 'gone', why = "
             "'evicted', tn = ARGV[7], id = old}))\n"
             "  n = n - 1\n"
             "end\n"
             "redis.call('HSET', KEYS[2], unpack(ARGV, 8))\n"
             "redis.call('PEXPIRE', KEYS[2], idle)\n"
             "redis.call('ZADD', KEYS[1], ARGV[3], id)\n"
             "redis.call('PEXPIRE', KEYS[1], idle)\n"
             "return evicted\n";

/* KEYS: zset, hash. ARGV: id, now, idle ms. */
static const char s_touch_lua[] = "if redis.call('PEXPIRE', KEYS[2], ARGV[3]) == 1 then\n"
                                  "  redis.call('PEXPIRE', KEYS[2] .. ':subs', ARGV[3])\n"
                                  "  redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])\n"
                                  "  redis.call('PEXPIRE', KEYS[1], ARGV[3])\n"
                                  "end\n"
                                  "return 1\n";

/* KEYS: zset. ARGV: prefix, id, control channel, tenant. */
static const char s_delete_lua[] =
    LUA_DROP "drop(ARGV[1], KEYS[1], ARGV[2])\n"
             "redis.call('PUBLISH', ARGV[3], cjson.encode({t = 'sess', op = 'gone', why = "
             "'deleted', tn = ARGV[4], id = ARGV[2]}))\n"
             "return 1\n";

/* KEYS: the session's hash. ARGV: prefix, id, uri, 1|0, idle ms, uri set ttl, max. Returns 1,
 * 0 for an unknown session, -1 past the subscription cap. */
static const char s_subscribe_lua[] =
    "if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end\n"
    "local subs, set = KEYS[1] .. ':subs', ARGV[1] .. 'uri:' .. ARGV[3]\n"
    "if ARGV[4] == '1' then\n"
    "  if redis.call('SCARD', subs) >= tonumber(ARGV[7]) then return -1 end\n"
    "  redis.call('SADD', subs, ARGV[3])\n"
    "  redis.call('PEXPIRE', subs, ARGV[5])\n"
    "  redis.call('SADD', set, ARGV[2])\n"
    "  redis.call('PEXPIRE', set, ARGV[6])\n"
    "else\n"
    "  redis.call('SREM', subs, ARGV[3])\n"
    "  redis.call('SREM', set, ARGV[2])\n"
    "end\n"
    "return 1\n";

/* KEYS: the URI's set. ARGV: prefix, the notification, replay ms, the listen event. Each live
 * subscribed session's GET stream log gets the notification (ids of sessions gone are dropped
 * from the set); each front-end whose listen streams watch the URI ("L:<inbox>") gets the
 * event in its inbox. */
static const char s_fanout_lua[] = STREAM_LOG_LUA_APPEND
    "local n = 0\n"
    "for _, id in ipairs(redis.call('SMEMBERS', KEYS[1])) do\n"
    "  if string.sub(id, 1, 2) == 'L:' then\n"
    "    redis.call('PUBLISH', string.sub(id, 3), ARGV[4])\n"
    "  else\n"
    "    local s = ARGV[1] .. 'sess:' .. id\n"
    "    if redis.call('EXISTS', s) == 0 then redis.call('SREM', KEYS[1], id)\n"
    "    else append(s .. ':ev:g', '*', ARGV[2], '0', ARGV[3]) end\n"
    "  end\n"
    "  n = n + 1\n"
    "end\n"
    "return n\n";

struct mcp_session_store {
    store_t **store_p; /* &fe->store: NULL once the store is gone (shutdown) */
    bus_t *bus;
    mcp_sessions_t *sessions;
    store_script_t *open, *touch, *del, *subscribe, *fanout;
    const stream_log_t *log; /* whose replay window bounds a resource update's fan-out */
    mcp_session_store_stats_t stats;
};

static void s_prefix(char *out, size_t cap, const char *tenant)
{
    snprintf(out, cap, "sp:t:{%s}:", tenant);
}

static void s_zset(char *out, size_t cap, const char *tenant)
{
    snprintf(out, cap, "sp:t:{%s}:sessions", tenant);
}

/* A last-use score: wall ms to the microsecond, so that sessions opened or used within one
 * millisecond still have an order, and the least recently used is evicted, not the smallest id. */
static void s_use_score(char *out, size_t cap)
{
    uint64_t us = clock_wall_us();
    snprintf(out, cap, "%llu.%03llu", (unsigned long long)(us / 1000),
             (unsigned long long)(us % 1000));
}

static long s_idle_ms(const mcp_session_store_t *self)
{
    return mcp_sessions_conf(self->sessions)->idle_s * 1000;
}

/* An operation waiting for Redis. */
typedef struct {
    mcp_session_store_t *db;
    mcp_session_t *s; /* held */
    mcp_session_store_done_fn *done;
    mcp_session_store_found_fn *found;
    void *arg;
    tenant_t *tenant;
    char id[40];
    int level;
} op_t;

static op_t *s_op(mcp_session_store_t *self, mcp_session_t *s, mcp_session_store_done_fn *done,
                  void *arg)
{
    op_t *op = xcalloc(1, sizeof *op);
    op->db = self;
    op->s = s;
    if (s) mcp_session_hold(s);
    op->done = done;
    op->arg = arg;
    return op;
}

static void s_op_end(op_t *op, int rc)
{
    if (op->done) op->done(op->arg, rc);
    if (op->s) mcp_session_release(op->s);
    free(op);
}

static int s_ok(const redisReply *r)
{
    return r && r->type != REDIS_REPLY_ERROR;
}

/* ---- lookup */

static void s_on_loaded(void *arg, redisReply *r)
{
    op_t *op = arg;
    mcp_session_store_t *self = op->db;
    mcp_session_t *s = NULL;
    int unavailable = !s_ok(r) || r->type != REDIS_REPLY_ARRAY;
    if (!unavailable && r->elements >= 2) {
        json_t *fields = json_object();
        for (size_t i = 0; i + 1 < r->elements; i += 2)
            if (r->element[i]->type == REDIS_REPLY_STRING &&
                r->element[i + 1]->type == REDIS_REPLY_STRING)
                json_object_set_new(fields, r->element[i]->str,
                                    json_stringn(r->element[i + 1]->str, r->element[i + 1]->len));
        s = mcp_session_restore(self->sessions, op->tenant, op->id, fields);
        json_decref(fields);
    } else if (!unavailable) {
        self->stats.not_found++;
    } else {
        /* Redis cannot say now: a copy held here serves (a deletion would have needed Redis
         * too), rather than failing a session that has done nothing wrong */
        s = mcp_session_find(self->sessions, op->id);
        if (s && s->tenant == op->tenant)
            unavailable = 0;
        else
            s = NULL;
    }
    op->found(op->arg, s, unavailable);
    free(op);
}

void mcp_session_store_find(mcp_session_store_t *self, tenant_t *tenant, const char *id,
                            mcp_session_store_found_fn *fn, void *arg)
{
    bus_drain(self->bus); /* a deletion elsewhere that has reached us already counts */
    mcp_session_t *s = mcp_session_find(self->sessions, id);
    if (s && s->tenant != tenant) s = NULL; /* another tenant's session is as unknown as any */
    /* a copy is trusted while it is fresh, and only while the bus would have told of a
     * deletion; a copy that never was stored (just initialized, or stdio) is the session; and
     * while Redis cannot be asked, nobody can have deleted it either: the copy serves */
    if (s && (!s->stored || (mcp_session_fresh(s) && bus_connected(self->bus)) ||
              !store_connected(*self->store_p))) {
        self->stats.hits++;
        fn(arg, s, 0);
        return;
    }
    self->stats.misses++;
    op_t *op = s_op(self, NULL, NULL, NULL);
    op->found = fn;
    op->arg = arg;
    op->tenant = tenant;
    snprintf(op->id, sizeof op->id, "%s", id);
    char key[200];
    mcp_session_key(key, sizeof key, tenant->name, id);
    if (store_queryf(*self->store_p, s_on_loaded, op, "HGETALL %s", key) < 0) {
        free(op);
        fn(arg, NULL, 1);
    }
}

/* ---- open, touch, delete */

static void s_on_opened(void *arg, redisReply *r)
{
    op_t *op = arg;
    if (s_ok(r) && r->type == REDIS_REPLY_ARRAY) {
        op->s->stored = 1;
        op->s->fresh_until_ms =
            clock_mono_ms() + (uint64_t)mcp_sessions_conf(op->db->sessions)->cache_ms;
        op->s->touched_ms = clock_mono_ms();
        for (size_t i = 0; i < r->elements; i++) {
            const char *old = r->element[i]->type == REDIS_REPLY_STRING ? r->element[i]->str : "";
            op->db->stats.evicted++;
            log_info("event=session_evicted session=%.8s tenant=%s reason=tenant_at_cap", old,
                     op->s->tenant->name);
            /* here at once (the bus tells the other front-ends, a moment later) */
            mcp_session_t *gone = mcp_session_find(op->db->sessions, old);
            if (gone && gone->tenant == op->s->tenant) mcp_session_close(gone);
        }
    }
    s_op_end(op, s_ok(r) ? 0 : -1);
}

void mcp_session_store_open(mcp_session_store_t *self, mcp_session_t *s,
                            mcp_session_store_done_fn *done, void *arg)
{
    if (s->transport != TRANSPORT_HTTP) { /* the stdio session is the process's own */
        if (done) done(arg, 0);
        return;
    }
    const mcp_sessions_conf_t *conf = mcp_sessions_conf(self->sessions);
    char zset[160], hash[200], prefix[160], now[40], idle[24], cap[24], tasks[4], level[8],
        created[24];
    s_zset(zset, sizeof zset, s->tenant->name);
    mcp_session_key(hash, sizeof hash, s->tenant->name, s->id);
    s_prefix(prefix, sizeof prefix, s->tenant->name);
    s_use_score(now, sizeof now);
    snprintf(created, sizeof created, "%llu", (unsigned long long)clock_wall_ms());
    snprintf(idle, sizeof idle, "%ld", s_idle_ms(self));
    snprintf(cap, sizeof cap, "%ld", conf->max_per_tenant);
    snprintf(tasks, sizeof tasks, "%d", s->client_tasks);
    snprintf(level, sizeof level, "%d", s->log_level);
    const char *args[] = {zset,
                          hash,
                          prefix,
                          s->id,
                          now,
                          idle,
                          cap,
                          bus_control(self->bus),
                          s->tenant->name,
                          "proto",
                          s->protocol,
                          "client",
                          s->client_name,
                          "ep",
                          s->endpoint,
                          "tasks",
                          tasks,
                          "level",
                          level,
                          "created_ms",
                          created};
    op_t *op = s_op(self, s, done, arg);
    if (store_eval(*self->store_p, self->open, s_on_opened, op, 2,
                   (int)(sizeof args / sizeof args[0]), args) < 0)
        s_op_end(op, -1);
}

void mcp_session_store_touch(mcp_session_store_t *self, mcp_session_t *s)
{
    uint64_t mono = clock_mono_ms();
    if (!s->stored || mono - s->touched_ms < TOUCH_EVERY_MS) return;
    s->touched_ms = mono;
    char zset[160], hash[200], now[40], idle[24];
    s_zset(zset, sizeof zset, s->tenant->name);
    mcp_session_key(hash, sizeof hash, s->tenant->name, s->id);
    s_use_score(now, sizeof now);
    snprintf(idle, sizeof idle, "%ld", s_idle_ms(self));
    const char *args[] = {zset, hash, s->id, now, idle};
    store_eval(*self->store_p, self->touch, NULL, NULL, 2, 5, args); /* lost when Redis is away */
}

/* The deletion's news is on its way to every front-end when its script answers, but not yet
 * written to each: Redis writes the script's answer and the PUBLISH's messages in one pass at
 * the end of its loop turn, in no order a client can count on, and on a busy machine this
 * front-end, its client and another front-end could all run before Redis wrote that front-end's
 * message (whose copy then served one more request after the DELETE was answered). Redis reads
 * a new command only after that pass: once a PING sent after the answer is answered, every
 * message is in its subscriber's socket, where bus_drain finds it before a copy is trusted. */
static void s_on_written(void *arg, redisReply *r)
{
    (void)r; /* the deletion is done either way */
    s_op_end(arg, 0);
}

static void s_on_deleted(void *arg, redisReply *r)
{
    op_t *op = arg;
    if (!s_ok(r))
        s_op_end(op, -1);
    else if (store_queryf(*op->db->store_p, s_on_written, op, "PING") < 0)
        s_op_end(op, 0);
}

void mcp_session_store_delete(mcp_session_store_t *self, mcp_session_t *s,
                              mcp_session_store_done_fn *done, void *arg)
{
    char zset[160], prefix[160];
    s_zset(zset, sizeof zset, s->tenant->name);
    s_prefix(prefix, sizeof prefix, s->tenant->name);
    const char *args[] = {zset, prefix, s->id, bus_control(self->bus), s->tenant->name};
    self->stats.deleted++;
    op_t *op = s_op(self, s, done, arg);
    if (!s->stored || store_eval(*self->store_p, self->del, s_on_deleted, op, 1, 5, args) < 0)
        s_op_end(op, s->stored ? -1 : 0);
}

/* ---- level, subscriptions */

static void s_on_level(void *arg, redisReply *r)
{
    op_t *op = arg;
    if (s_ok(r))
        bus_publish(op->db->bus,
                    json_pack("{s:s,s:s,s:s,s:s,s:i}", "t", "sess", "op", "level", "tn",
                              op->s->tenant->name, "id", op->s->id, "level", op->level));
    s_op_end(op, s_ok(r) ? 0 : -1);
}

void mcp_session_store_set_level(mcp_session_store_t *self, mcp_session_t *s, int level,
                                 mcp_session_store_done_fn *done, void *arg)
{
    s->log_level = level;
    op_t *op = s_op(self, s, done, arg);
    op->level = level;
    char hash[200];
    mcp_session_key(hash, sizeof hash, s->tenant->name, s->id);
    if (!s->stored)
        s_op_end(op, 0);
    else if (store_queryf(*self->store_p, s_on_level, op, "HSET %s level %d", hash, level) < 0)
        s_op_end(op, -1);
}

static void s_on_subscribed(void *arg, redisReply *r)
{
    int rc = s_ok(r) && r->type == REDIS_REPLY_INTEGER ? (int)r->integer : -2;
    s_op_end(arg, rc == 1 ? 0 : rc == -1 ? -2 : -1);
}

void mcp_session_store_subscribe(mcp_session_store_t *self, mcp_session_t *s, const char *uri,
                                 int on, mcp_session_store_done_fn *done, void *arg)
{
    op_t *op = s_op(self, s, done, arg);
    if (!s->stored) { /* stdio: the process's own set */
        int full = on && json_object_size(s->subscriptions) >= MAX_SUBSCRIPTIONS;
        if (on && !full) json_object_set_new(s->subscriptions, uri, json_true());
        if (!on) json_object_del(s->subscriptions, uri);
        s_op_end(op, full ? -2 : 0);
        return;
    }
    char hash[200], prefix[160], idle[24], ttl[24], max[16];
    mcp_session_key(hash, sizeof hash, s->tenant->name, s->id);
    s_prefix(prefix, sizeof prefix, s->tenant->name);
    snprintf(idle, sizeof idle, "%ld", s_idle_ms(self));
    snprintf(ttl, sizeof ttl, "%ld", URI_SET_TTL_MS);
    snprintf(max, sizeof max, "%d", MAX_SUBSCRIPTIONS);
    const char *args[] = {hash, prefix, s->id, uri, on ? "1" : "0", idle, ttl, max};
    if (store_eval(*self->store_p, self->subscribe, s_on_subscribed, op, 1, 8, args) < 0)
        s_op_end(op, -1);
}

void mcp_session_store_resource_updated(mcp_session_store_t *self, const char *tenant,
                                        const char *uri, long replay_ms)
{
    char set[600], prefix[160], ttl[24];
    snprintf(set, sizeof set, "sp:t:{%s}:uri:%s", tenant, uri);
    s_prefix(prefix, sizeof prefix, tenant);
    snprintf(ttl, sizeof ttl, "%ld", replay_ms);
    json_t *n = rpc_notification("notifications/resources/updated", json_pack("{s:s}", "uri", uri));
    char *text = json_dumps(n, JSON_COMPACT);
    json_decref(n);
    json_t *ev = json_pack("{s:s,s:s,s:s}", "t", "res", "tn", tenant, "uri", uri);
    char *event = json_dumps(ev, JSON_COMPACT);
    json_decref(ev);
    const char *args[] = {set, prefix, text, ttl, event};
    store_eval(*self->store_p, self->fanout, NULL, NULL, 1, 5, args); /* lost when Redis is away */
    free(text);
    free(event);
}

/* ---- what other front-ends say */

void mcp_session_store_cancel_elsewhere(mcp_session_store_t *self, mcp_session_t *s,
                                        const json_t *request_id, const char *reason)
{
    bus_publish(self->bus,
                json_pack("{s:s,s:s,s:s,s:O,s:s}", "t", "cancel", "tn", s->tenant->name, "id",
                          s->id, "rid", request_id, "why", reason ? reason : "client cancelled"));
}

static mcp_session_t *s_local(mcp_session_store_t *self, const json_t *ev)
{
    const char *id = json_string_value(json_object_get(ev, "id"));
    const char *tn = json_string_value(json_object_get(ev, "tn"));
    mcp_session_t *s = id ? mcp_session_find(self->sessions, id) : NULL;
    return s && tn && !strcmp(s->tenant->name, tn) ? s : NULL;
}

static void s_on_session_event(void *arg, const json_t *ev, int from_self)
{
    (void)from_self;
    mcp_session_store_t *self = arg;
    mcp_session_t *s = s_local(self, ev);
    const char *op = json_string_value(json_object_get(ev, "op"));
    if (!s || !op) return;
    if (!strcmp(op, "gone")) {
        const char *why = json_string_value(json_object_get(ev, "why"));
        log_info("event=session_ended session=%.8s tenant=%s why=%s", s->id, s->tenant->name,
                 why ? why : "?");
        mcp_session_close(s);
    } else if (!strcmp(op, "level")) {
        s->log_level = (int)json_integer_value(json_object_get(ev, "level"));
    }
}

static void s_on_cancel_event(void *arg, const json_t *ev, int from_self)
{
    (void)from_self;
    mcp_session_store_t *self = arg;
    mcp_session_t *s = s_local(self, ev);
    call_t *c = s ? call_find(s, json_object_get(ev, "rid")) : NULL;
    if (c && strcmp(c->method, "initialize") != 0)
        call_cancel(c, json_string_value(json_object_get(ev, "why")));
}

/* The bus was down: a copy may have missed a deletion or a level change. */
static void s_on_bus_back(void *arg)
{
    mcp_session_store_t *self = arg;
    mcp_sessions_stale(self->sessions);
}

mcp_session_store_t *mcp_session_store_new(store_t **store_p, bus_t *bus, mcp_sessions_t *sessions)
{
    mcp_session_store_t *self = xcalloc(1, sizeof *self);
    self->store_p = store_p;
    self->bus = bus;
    self->sessions = sessions;
    self->open = store_script(*store_p, s_open_lua);
    self->touch = store_script(*store_p, s_touch_lua);
    self->del = store_script(*store_p, s_delete_lua);
    self->subscribe = store_script(*store_p, s_subscribe_lua);
    self->fanout = store_script(*store_p, s_fanout_lua);
    bus_on(bus, "sess", s_on_session_event, self);
    bus_on(bus, "cancel", s_on_cancel_event, self);
    bus_on_reconnect(bus, s_on_bus_back, self);
    return self;
}

/* ---- the legacy era joined to the session table (mcp_session_keeper_t) */

static void s_keep(void *self, mcp_session_t *s, mcp_session_done_fn *done, void *arg)
{
    mcp_session_store_open(self, s, done, arg);
}

static void s_set_level(void *self, mcp_session_t *s, int level, mcp_session_done_fn *done,
                        void *arg)
{
    mcp_session_store_set_level(self, s, level, done, arg);
}

static void s_subscribe(void *self, mcp_session_t *s, const char *uri, int on,
                        mcp_session_done_fn *done, void *arg)
{
    mcp_session_store_subscribe(self, s, uri, on, done, arg);
}

static void s_cancel_elsewhere(void *self, mcp_session_t *s, const json_t *request_id,
                               const char *reason)
{
    mcp_session_store_cancel_elsewhere(self, s, request_id, reason);
}

static void s_resource_updated(void *arg, const char *tenant, const char *uri)
{
    mcp_session_store_t *self = arg;
    mcp_session_store_resource_updated(self, tenant, uri, stream_log_replay_ms(self->log));
}

void mcp_session_store_join(mcp_session_store_t *self, const stream_log_t *log)
{
    self->log = log;
    mcp_sessions_kept_by(self->sessions,
                         &(mcp_session_keeper_t){s_keep, s_set_level, s_subscribe,
                                                 s_cancel_elsewhere, s_resource_updated, self});
}

void mcp_session_store_destroy(mcp_session_store_t **self_p)
{
    free(*self_p);
    *self_p = NULL;
}

const mcp_session_store_stats_t *mcp_session_store_stats(const mcp_session_store_t *self)
{
    return &self->stats;
}
