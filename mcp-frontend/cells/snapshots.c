/* mcp-frontend/cells/snapshots.c — see snapshots.h. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/ids.h"
#include "common/session_keys.h"
#include "mcp-frontend/rpc/jsonrpc.h"
#include "snapshots.h"

/* KEYS: the tenant's snapshots (zset), this snapshot (hash), their bytes (counter); ARGV: now,
 * id, bytes, max count, max bytes, meta, blob, session. */
static const char s_put_lua[] =
    "local n = redis.call('ZCARD', KEYS[1])\n"
    /* put twice (a retry after an unanswered attempt) it is counted once */
    "if redis.call('EXISTS', KEYS[2]) == 1 then return {1, 'ok', n} end\n"
    "if n >= tonumber(ARGV[4]) then return {0, 'count', n} end\n"
    "local used = tonumber(redis.call('GET', KEYS[3]) or '0')\n"
    "if used + tonumber(ARGV[3]) > tonumber(ARGV[5]) then return {0, 'bytes', used} end\n"
    "redis.call('HSET', KEYS[2], 'meta', ARGV[6], 'blob', ARGV[7], 'bytes', ARGV[3], "
    "'session', ARGV[8], 'created_ms', ARGV[1])\n"
    "redis.call('ZADD', KEYS[1], ARGV[1], ARGV[2])\n"
    "redis.call('INCRBY', KEYS[3], ARGV[3])\n"
    "return {1, 'ok', n + 1}\n";

/* KEYS: zset, hash, counter; ARGV: id. 1 when it was there. */
static const char s_del_lua[] = "local b = redis.call('HGET', KEYS[2], 'bytes')\n"
                                "if not b then return 0 end\n"
                                "redis.call('DEL', KEYS[2])\n"
                                "redis.call('ZREM', KEYS[1], ARGV[1])\n"
                                "redis.call('DECRBY', KEYS[3], b)\n"
                                "return 1\n";

/* KEYS: zset; ARGV: key prefix, limit, session ("" for all). The metas, newest first. */
static const char s_list_lua[] =
    "local out = {}\n"
    "for _, id in ipairs(redis.call('ZREVRANGE', KEYS[1], 0, -1)) do\n"
    "  if #out >= tonumber(ARGV[2]) then break end\n"
    "  local h = redis.call('HMGET', ARGV[1] .. id, 'meta', 'session')\n"
    "  if h[1] and (ARGV[3] == '' or h[2] == ARGV[3]) then table.insert(out, h[1]) end\n"
    "end\n"
    "return out\n";

struct snapshots {
    store_t *store;
    store_script_t *put, *del, *list;
};

snapshots_t *snapshots_new(store_t *store)
{
    snapshots_t *self = xcalloc(1, sizeof *self);
    self->store = store;
    self->put = store_script(store, s_put_lua);
    self->del = store_script(store, s_del_lua);
    self->list = store_script(store, s_list_lua);
    return self;
}

void snapshots_destroy(snapshots_t **self_p)
{
    free(*self_p);
    *self_p = NULL;
}

typedef struct {
    const tenant_t *tenant;
    void (*fn)(void);
    void *arg;
} pending_t;

static pending_t *s_pending(const tenant_t *t, void (*fn)(void), void *arg)
{
    pending_t *p = xcalloc(1, sizeof *p);
    *p = (pending_t){t, fn, arg};
    return p;
}

/* ---- put ------------------------------------------------------------------------------------ */

static void s_on_put(void *arg, redisReply *r)
{
    pending_t *p = arg;
    snapshots_put_fn *fn = (snapshots_put_fn *)p->fn;
    char why[240];
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements < 3) {
        fn(p->arg, 0, "the snapshot store is unreachable right now; try again shortly");
    } else if (r->element[0]->integer == 1) {
        fn(p->arg, 1, NULL);
    } else if (r->element[1]->type == REDIS_REPLY_STRING && !strcmp(r->element[1]->str, "count")) {
        snprintf(why, sizeof why,
                 "you keep %lld snapshots, your maximum (max_snapshots %ld); "
                 "delete one with delete_state_snapshot",
                 r->element[2]->integer, p->tenant->max_snapshots);
        fn(p->arg, 0, why);
    } else {
        snprintf(why, sizeof why,
                 "your snapshots hold %lld bytes and this one would pass your "
                 "%ld MB (max_snapshot_mb); delete some with delete_state_snapshot",
                 r->element[2]->integer, p->tenant->max_snapshot_mb);
        fn(p->arg, 0, why);
    }
    free(p);
}

void snapshots_put(snapshots_t *self, const tenant_t *t, const char *id, json_t *meta,
                   const void *blob, size_t len, snapshots_put_fn *fn, void *arg)
{
    char zset[SESSION_KEY_MAX], hash[SESSION_KEY_MAX], counter[SESSION_KEY_MAX];
    char now[24], bytes[24], max_n[24], max_b[24];
    snapshots_key(zset, t->name);
    snapshot_key(hash, t->name, id);
    snapshot_bytes_key(counter, t->name);
    snprintf(now, sizeof now, "%llu", (unsigned long long)clock_wall_ms());
    snprintf(bytes, sizeof bytes, "%zu", len);
    snprintf(max_n, sizeof max_n, "%ld", t->max_snapshots);
    snprintf(max_b, sizeof max_b, "%lld", (long long)t->max_snapshot_mb << 20);
    char *meta_text = json_text(meta, JSON_COMPACT); /* exact reals (jsonrpc.h) */
    const char *session = json_string_value(json_object_get(meta, "session_id"));
    const char *args[] = {
        zset, hash, counter, now, id, bytes, max_n, max_b, meta_text, blob, session ? session : ""};
    size_t lens[11];
    for (int i = 0; i < 11; i++) lens[i] = i == 9 ? len : strlen(args[i]);
    pending_t *p = s_pending(t, (void (*)(void))fn, arg);
    if (store_evaln(self->store, self->put, s_on_put, p, 3, 11, args, lens) < 0) {
        free(p);
        fn(arg, 0, "the snapshot store is unreachable right now; try again shortly");
    }
    free(meta_text);
}

/* ---- get, list, delete --------------------------------------------------------------------- */

static void s_on_get(void *arg, redisReply *r)
{
    pending_t *p = arg;
    snapshots_get_fn *fn = (snapshots_get_fn *)p->fn;
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2) {
        fn(p->arg, -1, NULL, NULL, 0);
    } else if (r->element[0]->type != REDIS_REPLY_STRING ||
               r->element[1]->type != REDIS_REPLY_STRING) {
        fn(p->arg, 0, NULL, NULL, 0);
    } else {
        json_t *meta = json_loadb(r->element[0]->str, r->element[0]->len, 0, NULL);
        fn(p->arg, meta ? 1 : 0, meta, r->element[1]->str, r->element[1]->len);
        json_decref(meta);
    }
    free(p);
}

void snapshots_get(snapshots_t *self, const tenant_t *t, const char *id, snapshots_get_fn *fn,
                   void *arg)
{
    char hash[SESSION_KEY_MAX];
    uint8_t raw[ID_BYTES];
    if (id_parse(id, raw) < 0) {
        fn(arg, 0, NULL, NULL, 0);
        return;
    }
    snapshot_key(hash, t->name, id);
    pending_t *p = s_pending(t, (void (*)(void))fn, arg);
    if (store_queryf(self->store, s_on_get, p, "HMGET %s meta blob", hash) < 0) {
        free(p);
        fn(arg, -1, NULL, NULL, 0);
    }
}

static void s_on_list(void *arg, redisReply *r)
{
    pending_t *p = arg;
    snapshots_list_fn *fn = (snapshots_list_fn *)p->fn;
    if (!r || r->type != REDIS_REPLY_ARRAY) {
        fn(p->arg, NULL);
    } else {
        json_t *out = json_array();
        for (size_t i = 0; i < r->elements; i++) {
            json_t *m = r->element[i]->type == REDIS_REPLY_STRING
                            ? json_loadb(r->element[i]->str, r->element[i]->len, 0, NULL)
                            : NULL;
            if (m) json_array_append_new(out, m);
        }
        fn(p->arg, out);
    }
    free(p);
}

void snapshots_list(snapshots_t *self, const tenant_t *t, const char *session, long limit,
                    snapshots_list_fn *fn, void *arg)
{
    char zset[SESSION_KEY_MAX], prefix[SESSION_KEY_MAX], n[24];
    snapshots_key(zset, t->name);
    snapshot_key(prefix, t->name, "");
    snprintf(n, sizeof n, "%ld", limit);
    const char *args[] = {zset, prefix, n, session ? session : ""};
    pending_t *p = s_pending(t, (void (*)(void))fn, arg);
    if (store_eval(self->store, self->list, s_on_list, p, 1, 4, args) < 0) {
        free(p);
        fn(arg, NULL);
    }
}

static void s_on_del(void *arg, redisReply *r)
{
    pending_t *p = arg;
    snapshots_del_fn *fn = (snapshots_del_fn *)p->fn;
    if (!r || r->type != REDIS_REPLY_INTEGER)
        fn(p->arg, 0, 1);
    else
        fn(p->arg, r->integer == 1, 0);
    free(p);
}

void snapshots_delete(snapshots_t *self, const tenant_t *t, const char *id, snapshots_del_fn *fn,
                      void *arg)
{
    char zset[SESSION_KEY_MAX], hash[SESSION_KEY_MAX], counter[SESSION_KEY_MAX];
    uint8_t raw[ID_BYTES];
    if (id_parse(id, raw) < 0) {
        fn(arg, 0, 0);
        return;
    }
    snapshots_key(zset, t->name);
    snapshot_key(hash, t->name, id);
    snapshot_bytes_key(counter, t->name);
    const char *args[] = {zset, hash, counter, id};
    pending_t *p = s_pending(t, (void (*)(void))fn, arg);
    if (store_eval(self->store, self->del, s_on_del, p, 3, 4, args) < 0) {
        free(p);
        fn(arg, 0, 1);
    }
}
