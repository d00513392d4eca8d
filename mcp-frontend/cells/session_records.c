/* mcp-frontend/cells/session_records.c — see session_records.h. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/idmap.h"
#include "common/log.h"
#include "common/session_keys.h"
#include "mcp-frontend/state/records.h"
#include "session_records.h"

#define CACHE_MAX      65536
#define RECORD_KEEP_MS (7LL * 24 * 3600 * 1000) /* an ended session's record: its reason stays */
#define ENDED_KEEP     10000 /* ended sessions' records kept per tenant at most */
#define START_RESERVE  60000 /* ms a place is held while the session starts */
#define RESUME_LEASE_MS 60000 /* a front-end resuming a session holds it this long at most */

/* Session records carry no TTL: under maxmemory-policy volatile-lru a key with one may be
 * evicted, and only execution records may be (README "Redis"). So the retention a TTL gave is
 * kept by hand: a session that leaves the live set (ended, or expired there) joins the tenant's
 * ended zset, scored by when it left, and whoever sweeps deletes the records of those ended
 * longer than RECORD_KEEP_MS ago, and of the oldest past ENDED_KEEP. A hibernated session
 * stays in the live set until its checkpoint expires (its node put it there with that score):
 * then it ends, and its checkpoint goes. Every script is
 * idempotent, for the store's journal replays writes after a reconnect (store.h).
 * SWEEP_LUA: KEYS[1] the live set, KEYS[2] the ended set; ARGV[1] now, ARGV[2] the records' key
 * prefix, ARGV[3] the cut-off (now - RECORD_KEEP_MS), ARGV[4] ENDED_KEEP. */
#define SWEEP_LUA                                                                                  \
    "local ckpt = string.gsub(ARGV[2], 'psess:$', 'ckpt:')\n"                                      \
    "for _, sid in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])) do\n"             \
    "  redis.call('ZADD', KEYS[2], 'NX', ARGV[1], sid)\n"                                          \
    "  local rec = ARGV[2] .. sid\n"                                                               \
    "  if redis.call('HGET', rec, 'state') == 'hibernated' then\n"                                 \
    "    redis.call('HSET', rec, 'state', 'ended', 'end_reason',\n"                                \
    "      (redis.call('HGET', rec, 'end_reason') or 'hibernated') ..\n"                           \
    "      '; its checkpoint was kept as long as your session retention and is gone')\n"          \
    "    redis.call('DEL', ckpt .. sid)\n"                                                         \
    "  end\n"                                                                                      \
    "end\n"                                                                                        \
    "redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])\n"                                   \
    "local old = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[3])\n"                          \
    "local n = redis.call('ZCARD', KEYS[2]) - #old - tonumber(ARGV[4])\n"                          \
    "if n > 0 then\n"                                                                              \
    "  for _, sid in ipairs(redis.call('ZRANGE', KEYS[2], #old, #old + n - 1)) do\n"               \
    "    table.insert(old, sid)\n"                                                                 \
    "  end\n"                                                                                      \
    "end\n"                                                                                        \
    "for _, sid in ipairs(old) do\n"                                                               \
    "  if not redis.call('ZSCORE', KEYS[1], sid) then redis.call('DEL', ARGV[2] .. sid) end\n"     \
    "  redis.call('ZREM', KEYS[2], sid)\n"                                                         \
    "end\n"

/* KEYS[1] the live set, KEYS[2] the ended set, KEYS[3..] the new sessions' records; ARGV now,
 * prefix, cut-off, ended-keep, memory_mb (each), reserved-until, max_sessions, max_memory_mb,
 * then the new ids. The expired leave the set first; then the count and the memory of the rest
 * decide, for all of the new ones or none (a fan-out's clones come together). */
static const char s_admit_lua[] =
    SWEEP_LUA "local ids = redis.call('ZRANGE', KEYS[1], 0, -1)\n"
              "local n = #ARGV - 8\n"
              "if #ids + n > tonumber(ARGV[7]) then return {0, 'sessions', #ids} end\n"
              "local mem = 0\n"
              "for _, sid in ipairs(ids) do\n"
              "  mem = mem + (tonumber(redis.call('HGET', ARGV[2] .. sid, 'memory_mb')) or 0)\n"
              "end\n"
              "if mem + n * tonumber(ARGV[5]) > tonumber(ARGV[8]) then return {0, 'memory', mem} end\n"
              /* the reservation lapses into the ended set if the session never starts (a front-end
               * that died meanwhile): the sweep then deletes its record */
              "for i = 1, n do\n"
              "  redis.call('ZADD', KEYS[1], ARGV[6], ARGV[8 + i])\n"
              "  redis.call('HSET', KEYS[2 + i], 'memory_mb', ARGV[5], 'state', 'starting')\n"
              "end\n"
              "return {1, 'ok', #ids}\n";

/* KEYS[1] the live set, KEYS[2] the ended set; ARGV as SWEEP_LUA's. Every live record,
 * flattened. */
static const char s_list_lua[] =
    SWEEP_LUA "local out = {}\n"
              "for _, sid in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do\n"
              "  local h = redis.call('HGETALL', ARGV[2] .. sid)\n"
              "  table.insert(out, sid)\n"
              "  table.insert(out, h)\n"
              "end\n"
              "return out\n";

/* KEYS[1] the checkpoint, KEYS[2] the session's record; ARGV now, lease-until, how ("hibernated":
 * its node freed it; "lost": its node went away). One front-end at a time resumes a session:
 * the record says resuming until the lease ends (a front-end that died meanwhile holds it no
 * longer). {1, blob, meta}, {0} (nothing to resume from), {2} (another is resuming it). */
static const char s_claim_lua[] =
    "local exp = tonumber(redis.call('HGET', KEYS[1], 'expires_ms') or '0')\n"
    "if exp <= tonumber(ARGV[1]) then return {0} end\n"
    "local state = redis.call('HGET', KEYS[2], 'state')\n"
    "if not state or state == 'ended' or state == 'starting' then return {0} end\n"
    "if state == 'resuming' and tonumber(redis.call('HGET', KEYS[2], 'resume_until') or '0') >\n"
    "   tonumber(ARGV[1]) then return {2} end\n"
    "if state == 'active' and ARGV[3] ~= 'lost' then return {0} end\n"
    "redis.call('HSET', KEYS[2], 'state', 'resuming', 'resume_until', ARGV[2])\n"
    "local h = redis.call('HMGET', KEYS[1], 'blob', 'meta')\n"
    "return {1, h[1], h[2]}\n";

typedef struct {
    char tenant[65];
    session_record_t s;
} cached_t;

struct session_records {
    loop_t *loop;
    store_t *store;
    long record_wait_ms; /* session_records_landed's bound; 0: it does not wait */
    store_script_t *admit, *list, *claim;
    idmap_t *cache; /* session id → cached_t (profile and limits never change) */
};

session_records_t *session_records_new(loop_t *loop, store_t *store, long record_wait_ms)
{
    session_records_t *self = xcalloc(1, sizeof *self);
    self->loop = loop;
    self->store = store;
    self->record_wait_ms = record_wait_ms;
    self->admit = store_script(store, s_admit_lua);
    self->list = store_script(store, s_list_lua);
    self->claim = store_script(store, s_claim_lua);
    self->cache = idmap_new();
    return self;
}

static void s_free(void *arg, const uint8_t *id, void *value)
{
    (void)arg, (void)id;
    free(value);
}

void session_records_destroy(session_records_t **self_p)
{
    session_records_t *self = *self_p;
    if (!self) return;
    idmap_each(self->cache, s_free, NULL);
    idmap_destroy(&self->cache);
    free(self);
    *self_p = NULL;
}

/* ---- the cache ----------------------------------------------------------------------------- */

static void s_cache(session_records_t *self, const tenant_t *t, const session_record_t *s)
{
    uint8_t raw[ID_BYTES];
    if (id_parse(s->id, raw) < 0) return;
    if (idmap_size(self->cache) >= CACHE_MAX) { /* simply start over: a miss costs one read */
        idmap_each(self->cache, s_free, NULL);
        idmap_destroy(&self->cache);
        self->cache = idmap_new();
    }
    cached_t *c = idmap_get(self->cache, raw);
    if (!c) {
        c = xcalloc(1, sizeof *c);
        idmap_put(self->cache, raw, c);
    }
    snprintf(c->tenant, sizeof c->tenant, "%s", t->name);
    c->s = *s;
}

const session_record_t *session_records_cached(session_records_t *self, const tenant_t *t,
                                               const char *id)
{
    uint8_t raw[ID_BYTES];
    if (id_parse(id, raw) < 0) return NULL;
    const cached_t *c = idmap_get(self->cache, raw);
    return c && !strcmp(c->tenant, t->name) ? &c->s : NULL;
}

/* ---- records ------------------------------------------------------------------------------- */

static long s_long(const redisReply *v)
{
    return v && v->type == REDIS_REPLY_STRING ? strtol(v->str, NULL, 10) : 0;
}

static void s_str(char *dst, size_t cap, const redisReply *v)
{
    if (v && v->type == REDIS_REPLY_STRING) snprintf(dst, cap, "%s", v->str);
}

/* A record's HGETALL into s; 0 when it holds a session (a profile), -1 otherwise. */
static int s_parse(const redisReply *r, const char *id, session_record_t *s)
{
    memset(s, 0, sizeof *s);
    snprintf(s->id, sizeof s->id, "%s", id);
    for (size_t i = 0; r && r->type == REDIS_REPLY_ARRAY && i + 1 < r->elements; i += 2) {
        const redisReply *k = r->element[i], *v = r->element[i + 1];
        if (k->type != REDIS_REPLY_STRING) continue;
        const char *f = k->str;
        if (!strcmp(f, "profile"))
            s_str(s->profile, sizeof s->profile, v);
        else if (!strcmp(f, "memory_mb"))
            s->memory_mb = s_long(v);
        else if (!strcmp(f, "idle_timeout_s"))
            s->idle_timeout_s = s_long(v);
        else if (!strcmp(f, "state")) {
            s->ended = v->type == REDIS_REPLY_STRING && !strcmp(v->str, "ended");
            s->hibernated = v->type == REDIS_REPLY_STRING &&
                            (!strcmp(v->str, "hibernated") || !strcmp(v->str, "resuming"));
        } else if (!strcmp(f, "checkpoint_cell"))
            s->checkpoint_cell = s_long(v);
        else if (!strcmp(f, "checkpoint_ms"))
            s->checkpoint_ms = (uint64_t)s_long(v);
        else if (!strcmp(f, "end_reason"))
            s_str(s->end_reason, sizeof s->end_reason, v);
        else if (!strcmp(f, "created_ms"))
            s->created_ms = (uint64_t)s_long(v);
        else if (!strcmp(f, "last_used_ms"))
            s->last_used_ms = (uint64_t)s_long(v);
        else if (!strcmp(f, "cells"))
            s->cells = s_long(v);
        else if (!strcmp(f, "memory_kb"))
            s->memory_kb = (uint64_t)s_long(v);
        else if (!strcmp(f, "parent"))
            s_str(s->parent, sizeof s->parent, v);
        else if (!strcmp(f, "restored_from"))
            s_str(s->restored_from, sizeof s->restored_from, v);
        else if (!strcmp(f, "last_snapshot"))
            s_str(s->last_snapshot, sizeof s->last_snapshot, v);
        else if (!strcmp(f, "atomic"))
            s->atomic = s_long(v) != 0;
        else if (!strcmp(f, "network"))
            s->network = s_long(v) != 0;
    }
    return s->profile[0] ? 0 : -1;
}

typedef struct {
    session_records_t *self;
    const tenant_t *tenant;
    char id[ID_STR_LEN + 1];
    session_record_fn *fn;
    void *arg;
} lookup_t;

static void s_on_record(void *arg, redisReply *r)
{
    lookup_t *l = arg;
    session_record_t s;
    if (!r || r->type == REDIS_REPLY_ERROR)
        l->fn(l->arg, SESSION_RECORD_UNAVAILABLE, NULL);
    else if (s_parse(r, l->id, &s) < 0)
        l->fn(l->arg, SESSION_RECORD_NOT_FOUND, NULL);
    else {
        s_cache(l->self, l->tenant, &s);
        l->fn(l->arg, SESSION_RECORD_FOUND, &s);
    }
    free(l);
}

void session_records_lookup(session_records_t *self, const tenant_t *t, const char *id,
                            session_record_fn *fn, void *arg)
{
    uint8_t raw[ID_BYTES];
    char key[SESSION_KEY_MAX], canonical[ID_STR_LEN + 1];
    if (id_parse(id, raw) < 0) {
        fn(arg, SESSION_RECORD_NOT_FOUND, NULL);
        return;
    }
    id_format(raw, canonical);
    session_record_key(key, t->name, canonical);
    lookup_t *l = xcalloc(1, sizeof *l);
    *l = (lookup_t){self, t, "", fn, arg};
    snprintf(l->id, sizeof l->id, "%s", canonical);
    if (store_queryf(self->store, s_on_record, l, "HGETALL %s", key) < 0) {
        free(l);
        fn(arg, SESSION_RECORD_UNAVAILABLE, NULL);
    }
}

/* ---- admission ----------------------------------------------------------------------------- */

typedef struct {
    const tenant_t *tenant;
    session_record_admit_fn *fn;
    void *arg;
} admit_t;

static void s_on_admit(void *arg, redisReply *r)
{
    admit_t *a = arg;
    char why[200];
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements < 3) {
        a->fn(a->arg, 0, "the session store is unreachable right now; try again shortly");
    } else if (r->element[0]->integer == 1) {
        a->fn(a->arg, 1, NULL);
    } else {
        int memory =
            r->element[1]->type == REDIS_REPLY_STRING && !strcmp(r->element[1]->str, "memory");
        if (memory)
            snprintf(why, sizeof why,
                     "your sessions already hold %lld MB of your %ld MB "
                     "(max_session_memory_mb); close one first",
                     r->element[2]->integer, a->tenant->max_session_memory_mb);
        else
            snprintf(why, sizeof why,
                     "you have %lld sessions, your maximum (max_sessions %ld); "
                     "close one first",
                     r->element[2]->integer, a->tenant->max_sessions);
        a->fn(a->arg, 0, why);
    }
    free(a);
}

/* SWEEP_LUA's keys and arguments for t, at wall. */
typedef struct {
    char live[SESSION_KEY_MAX], ended[SESSION_KEY_MAX], prefix[SESSION_KEY_MAX];
    char now[24], cutoff[24], keep[24];
} sweep_args_t;

static void s_sweep_args(sweep_args_t *s, const tenant_t *t, uint64_t wall)
{
    session_records_key(s->live, t->name);
    session_records_ended_key(s->ended, t->name);
    session_record_key(s->prefix, t->name, "");
    snprintf(s->now, sizeof s->now, "%llu", (unsigned long long)wall);
    snprintf(s->cutoff, sizeof s->cutoff, "%lld", (long long)wall - RECORD_KEEP_MS);
    snprintf(s->keep, sizeof s->keep, "%d", ENDED_KEEP);
}

void session_records_admit_n(session_records_t *self, const tenant_t *t,
                             const char (*ids)[ID_STR_LEN + 1], size_t n, long memory_mb,
                             long idle_s, session_record_admit_fn *fn, void *arg)
{
    char mem[24], until[24], max_n[24], max_mem[24];
    char(*recs)[SESSION_KEY_MAX] = xcalloc(n, SESSION_KEY_MAX);
    const char **keys = xcalloc(2 + n, sizeof *keys), **argv = xcalloc(8 + n, sizeof *argv);
    uint64_t wall = clock_wall_ms();
    sweep_args_t s;
    s_sweep_args(&s, t, wall);
    snprintf(mem, sizeof mem, "%ld", memory_mb);
    snprintf(until, sizeof until, "%llu",
             (unsigned long long)(wall + START_RESERVE + (uint64_t)idle_s * 1000));
    snprintf(max_n, sizeof max_n, "%ld", t->max_sessions);
    snprintf(max_mem, sizeof max_mem, "%ld", t->max_session_memory_mb);
    keys[0] = s.live, keys[1] = s.ended;
    const char *fixed[] = {s.now, s.prefix, s.cutoff, s.keep, mem, until, max_n, max_mem};
    memcpy(argv, fixed, sizeof fixed);
    for (size_t i = 0; i < n; i++) {
        session_record_key(recs[i], t->name, ids[i]);
        keys[2 + i] = recs[i];
        argv[8 + i] = ids[i];
    }
    /* EVAL takes KEYS then ARGV as one list */
    const char **all = xcalloc(10 + 2 * n, sizeof *all);
    memcpy(all, keys, (2 + n) * sizeof *all);
    memcpy(all + 2 + n, argv, (8 + n) * sizeof *all);
    admit_t *a = xcalloc(1, sizeof *a);
    *a = (admit_t){t, fn, arg};
    int rc = store_eval(self->store, self->admit, s_on_admit, a, (int)(2 + n), (int)(10 + 2 * n),
                        all);
    free(all);
    free(argv);
    free(keys);
    free(recs);
    if (rc < 0) {
        free(a);
        fn(arg, 0, "the session store is unreachable right now; try again shortly");
    }
}

void session_records_admit(session_records_t *self, const tenant_t *t, const char *id,
                           long memory_mb, long idle_s, session_record_admit_fn *fn, void *arg)
{
    char one[1][ID_STR_LEN + 1];
    snprintf(one[0], sizeof one[0], "%s", id);
    session_records_admit_n(self, t, (const char(*)[ID_STR_LEN + 1])one, 1, memory_mb, idle_s, fn,
                            arg);
}

void session_records_release(session_records_t *self, const tenant_t *t, const char *id)
{
    char live[SESSION_KEY_MAX], ended[SESSION_KEY_MAX], rec[SESSION_KEY_MAX];
    session_records_key(live, t->name);
    session_records_ended_key(ended, t->name);
    session_record_key(rec, t->name, id);
    store_writef(self->store, "ZREM %s %s", live, id);
    store_writef(self->store, "ZREM %s %s", ended, id);
    store_writef(self->store, "DEL %s", rec);
}

/* ---- what happens to one -------------------------------------------------------------------- */

/* Live until until_ms (no TTL on the record: the sweep in SWEEP_LUA retires it). */
static void s_expiry(session_records_t *self, const tenant_t *t, const char *id, uint64_t until_ms)
{
    char live[SESSION_KEY_MAX], ended[SESSION_KEY_MAX];
    session_records_key(live, t->name);
    session_records_ended_key(ended, t->name);
    store_writef(self->store, "ZADD %s %llu %s", live, (unsigned long long)until_ms, id);
    store_writef(self->store, "ZREM %s %s", ended, id); /* used again after a sweep */
}

void session_records_opened(session_records_t *self, const tenant_t *t, const session_record_t *s)
{
    char rec[SESSION_KEY_MAX];
    session_record_key(rec, t->name, s->id);
    store_writef(self->store,
                 "HSET %s tenant %s profile %s state active created_ms %llu last_used_ms %llu "
                 "cells %ld memory_mb %ld idle_timeout_s %ld memory_kb %llu parent %s "
                 "restored_from %s atomic %d network %d",
                 rec, t->name, s->profile, (unsigned long long)s->created_ms,
                 (unsigned long long)s->last_used_ms, s->cells, s->memory_mb, s->idle_timeout_s,
                 (unsigned long long)s->memory_kb, s->parent, s->restored_from, s->atomic, s->network);
    s_expiry(self, t, s->id, s->last_used_ms + (uint64_t)s->idle_timeout_s * 1000);
    s_cache(self, t, s);
    char use[RECORD_USAGE_KEY_MAX]; /* the day's count of sessions started, for get_usage */
    store_writef(self->store, "HINCRBY %s sessions 1",
                 record_usage_key(use, t->name, s->created_ms));
}

void session_records_ended(session_records_t *self, const tenant_t *t, const char *id,
                           const char *reason)
{
    char live[SESSION_KEY_MAX], ended[SESSION_KEY_MAX], rec[SESSION_KEY_MAX];
    uint8_t raw[ID_BYTES];
    cached_t *c = id_parse(id, raw) == 0 ? idmap_get(self->cache, raw) : NULL;
    if (c && !strcmp(c->tenant, t->name)) { /* this front-end answers its next call itself */
        c->s.ended = 1;
        snprintf(c->s.end_reason, sizeof c->s.end_reason, "%s", reason);
    }
    uint64_t now = clock_wall_ms();
    session_records_key(live, t->name);
    session_records_ended_key(ended, t->name);
    session_record_key(rec, t->name, id);
    store_writef(self->store, "ZREM %s %s", live, id);
    store_writef(self->store, "HSET %s state ended end_reason %s ended_ms %llu", rec, reason,
                 (unsigned long long)now);
    /* its reason stays RECORD_KEEP_MS; NX: a replayed end does not extend that */
    store_writef(self->store, "ZADD %s NX %llu %s", ended, (unsigned long long)now, id);
    /* an ended session is never resumed: its checkpoint, if its node made one, goes */
    char ckpt[SESSION_KEY_MAX], ckpts[SESSION_KEY_MAX];
    checkpoint_key(ckpt, t->name, id);
    checkpoints_key(ckpts, t->name);
    store_writef(self->store, "DEL %s", ckpt);
    store_writef(self->store, "ZREM %s %s", ckpts, id);
}

void session_records_used(session_records_t *self, const tenant_t *t, const char *id,
                          const result_t *res, int cell)
{
    char rec[SESSION_KEY_MAX];
    session_record_key(rec, t->name, id);
    if (!res->session.present) return;
    if (!res->session.alive) {
        session_records_ended(self, t, id,
                              res->session.end_reason ? res->session.end_reason : "ended");
        return;
    }
    uint64_t now = clock_wall_ms();
    /* one HSET (a session's cells are most of the writes): the cell's number, not an increment
     * (the journal may send a write twice); memory_kb 0 is "not measured yet" and left alone */
    unsigned cells = cell ? res->session.cell : 0;
    unsigned long long kb = res->session.memory_kb;
    if (cells && kb)
        store_writef(self->store, "HSET %s last_used_ms %llu cells %u memory_kb %llu", rec,
                     (unsigned long long)now, cells, kb);
    else if (cells)
        store_writef(self->store, "HSET %s last_used_ms %llu cells %u", rec,
                     (unsigned long long)now, cells);
    else if (kb)
        store_writef(self->store, "HSET %s last_used_ms %llu memory_kb %llu", rec,
                     (unsigned long long)now, kb);
    else
        store_writef(self->store, "HSET %s last_used_ms %llu", rec, (unsigned long long)now);
    s_expiry(self, t, id, now + (uint64_t)res->session.idle_timeout_s * 1000);
}

/* ---- waiting for the writes ---------------------------------------------------------------- */

/* One session_records_landed: freed by the acknowledgement, which comes exactly once (with NULL if
 * the connection fails or the store is torn down), after fn has run, from there or the timer. */
typedef struct {
    session_records_t *self;
    session_record_landed_fn *fn;
    void *arg;
    uint64_t timer;
    int told; /* fn has run */
} landing_t;

static void s_on_landed(void *arg, redisReply *r)
{
    landing_t *l = arg;
    if (!r || r->type == REDIS_REPLY_ERROR)
        log_warn("event=session_record_unconfirmed error=%s",
                 r ? r->str : "the connection to Redis failed");
    if (!l->told) {
        loop_timer_cancel(l->self->loop, l->timer);
        l->fn(l->arg);
    }
    free(l);
}

static void s_on_landing_late(loop_t *loop, void *arg)
{
    (void)loop;
    landing_t *l = arg;
    log_warn("event=session_record_slow waited_ms=%ld", l->self->record_wait_ms);
    l->told = 1;
    l->timer = 0;
    l->fn(l->arg); /* the writes are on their way; the answer goes without them */
}

void session_records_landed(session_records_t *self, session_record_landed_fn *fn, void *arg)
{
    static const char *ping[] = {"PING"};
    if (self->record_wait_ms <= 0) {
        fn(arg);
        return;
    }
    landing_t *l = xcalloc(1, sizeof *l);
    *l = (landing_t){self, fn, arg, 0, 0};
    /* the timer first: a connection failing as the command goes out acknowledges it at once */
    l->timer = loop_timer_add(self->loop, (uint64_t)self->record_wait_ms, 0, s_on_landing_late, l);
    if (store_write_acked(self->store, s_on_landed, l, 1, ping, NULL) < 0) {
        loop_timer_cancel(self->loop, l->timer); /* buffered behind the writes while Redis is */
        free(l);                                 /* away: nothing to wait for now */
        fn(arg);
    }
}

void session_records_snapshotted(session_records_t *self, const tenant_t *t, const char *id,
                                 const char *snapshot_id)
{
    char rec[SESSION_KEY_MAX];
    session_record_key(rec, t->name, id);
    store_writef(self->store, "HSET %s last_snapshot %s", rec, snapshot_id);
    char use[RECORD_USAGE_KEY_MAX]; /* the day's count of snapshots saved, for get_usage */
    store_writef(self->store, "HINCRBY %s snapshots 1",
                 record_usage_key(use, t->name, clock_wall_ms()));
}

/* ---- list ------------------------------------------------------------------------------------ */

const char *session_record_iso(uint64_t ms, char out[32])
{
    time_t s = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&s, &tm);
    size_t n = strftime(out, 32, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out + n, 32 - n, ".%03uZ", (unsigned)(ms % 1000));
    return out;
}

json_t *session_record_json(const session_record_t *s)
{
    char created[32], used[32], expires[32];
    json_t *o = json_pack(
        "{s:s,s:s,s:s,s:s,s:I,s:I,s:I,s:I,s:s}", "session_id", s->id, "profile", s->profile,
        "created", session_record_iso(s->created_ms, created), "last_used",
        session_record_iso(s->last_used_ms, used), "cells", (json_int_t)s->cells,
        "memory_in_use_mb", (json_int_t)((s->memory_kb + 512) / 1024), "memory_limit_mb",
        (json_int_t)s->memory_mb, "idle_timeout_s", (json_int_t)s->idle_timeout_s, "expires_at",
        session_record_iso(s->last_used_ms + (uint64_t)s->idle_timeout_s * 1000, expires));
    json_object_set_new(o, "parent_session_id",
                        s->parent[0] ? json_string(s->parent) : json_null());
    json_object_set_new(o, "atomic", json_boolean(s->atomic));
    json_object_set_new(o, "state", json_string(s->hibernated ? "hibernated" : "live"));
    if (s->checkpoint_ms) { /* what it resumes from, should its node free it or go away */
        char at[32];
        json_object_set_new(o, "checkpoint",
                            json_pack("{s:I,s:s}", "after_cell", (json_int_t)s->checkpoint_cell,
                                      "at", session_record_iso(s->checkpoint_ms, at)));
    }
    if (s->hibernated) json_object_set_new(o, "hibernated_because", json_string(s->end_reason));
    return o;
}

typedef struct {
    session_record_list_fn *fn;
    void *arg;
} list_t;

static void s_on_list(void *arg, redisReply *r)
{
    list_t *l = arg;
    if (!r || r->type != REDIS_REPLY_ARRAY) {
        l->fn(l->arg, NULL);
        free(l);
        return;
    }
    json_t *out = json_array();
    for (size_t i = 0; i + 1 < r->elements; i += 2) {
        session_record_t s;
        if (r->element[i]->type == REDIS_REPLY_STRING &&
            s_parse(r->element[i + 1], r->element[i]->str, &s) == 0 && !s.ended)
            json_array_append_new(out, session_record_json(&s));
    }
    l->fn(l->arg, out);
    free(l);
}

void session_records_list(session_records_t *self, const tenant_t *t, session_record_list_fn *fn,
                          void *arg)
{
    sweep_args_t s;
    s_sweep_args(&s, t, clock_wall_ms());
    const char *args[] = {s.live, s.ended, s.now, s.prefix, s.cutoff, s.keep};
    list_t *l = xcalloc(1, sizeof *l);
    *l = (list_t){fn, arg};
    if (store_eval(self->store, self->list, s_on_list, l, 2, 6, args) < 0) {
        free(l);
        fn(arg, NULL);
    }
}

/* ---- why it ended ---------------------------------------------------------------------------- */

typedef struct {
    session_records_t *self;
    const tenant_t *tenant;
    session_record_explain_fn *fn;
    void *arg;
} explain_t;

static void s_on_explain(void *arg, session_record_status_t st, const session_record_t *s)
{
    explain_t *e = arg;
    char why[300];
    if (st != SESSION_RECORD_FOUND) {
        e->fn(e->arg, ST_REJECTED, "SessionNotFound",
              st == SESSION_RECORD_UNAVAILABLE ? "the session store is unreachable right now"
                                               : "no such session for your tenant");
    } else if (s->ended) {
        e->fn(e->arg, ST_REJECTED, "SessionEnded", s->end_reason);
    } else if (s->hibernated) { /* its node freed it after a checkpoint: it resumes */
        e->fn(e->arg, ST_REJECTED, "SessionHibernated", s->end_reason);
    } else if (s->checkpoint_ms &&
               s->last_used_ms + (uint64_t)s->idle_timeout_s * 1000 > clock_wall_ms() + 2000) {
        /* lost with its node, which had checkpointed it: it resumes from there */
        e->fn(e->arg, ST_LOST, "SessionCheckpointed", "its executor went away");
    } else if (s->last_used_ms + (uint64_t)s->idle_timeout_s * 1000 <= clock_wall_ms() + 2000) {
        snprintf(why, sizeof why, "session expired after %ld s idle", s->idle_timeout_s);
        session_records_ended(e->self, e->tenant, s->id, why);
        e->fn(e->arg, ST_REJECTED, "SessionEnded", why);
    } else {
        snprintf(why, sizeof why,
                 "session lost: its executor went away; restore a snapshot of it with "
                 "restore_state_snapshot%s%s%s",
                 s->last_snapshot[0] ? " (latest: " : " (it has none: list_state_snapshots)",
                 s->last_snapshot, s->last_snapshot[0] ? ")" : "");
        session_records_ended(e->self, e->tenant, s->id, why);
        e->fn(e->arg, ST_LOST, "SessionLost", why);
    }
    free(e);
}

void session_records_explain(session_records_t *self, const tenant_t *t, const char *id,
                             session_record_explain_fn *fn, void *arg)
{
    explain_t *e = xcalloc(1, sizeof *e);
    *e = (explain_t){self, t, fn, arg};
    session_records_lookup(self, t, id, s_on_explain, e);
}

/* ---- checkpoints: a session resumed (mcp-frontend/cells/resume.h) ----------------------------- */

typedef struct {
    session_record_claim_fn *fn;
    void *arg;
} claim_t;

static void s_on_claim(void *arg, redisReply *r)
{
    claim_t *c = arg;
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements < 1)
        c->fn(c->arg, -1, NULL, 0, NULL);
    else if (r->element[0]->integer != 1 || r->elements < 3 ||
             r->element[1]->type != REDIS_REPLY_STRING || r->element[2]->type != REDIS_REPLY_STRING)
        c->fn(c->arg, r->element[0]->integer == 2 ? 2 : 0, NULL, 0, NULL);
    else
        c->fn(c->arg, 1, r->element[1]->str, r->element[1]->len, r->element[2]->str);
    free(c);
}

void session_records_claim(session_records_t *self, const tenant_t *t, const char *id, int lost,
                           session_record_claim_fn *fn, void *arg)
{
    char ckpt[SESSION_KEY_MAX], rec[SESSION_KEY_MAX], now[24], until[24];
    uint64_t wall = clock_wall_ms();
    checkpoint_key(ckpt, t->name, id);
    session_record_key(rec, t->name, id);
    snprintf(now, sizeof now, "%llu", (unsigned long long)wall);
    snprintf(until, sizeof until, "%llu", (unsigned long long)(wall + RESUME_LEASE_MS));
    const char *args[] = {ckpt, rec, now, until, lost ? "lost" : "hibernated"};
    claim_t *c = xcalloc(1, sizeof *c);
    *c = (claim_t){fn, arg};
    if (store_eval(self->store, self->claim, s_on_claim, c, 2, 5, args) < 0) {
        free(c);
        fn(arg, -1, NULL, 0, NULL);
    }
}

void session_records_resumed(session_records_t *self, const tenant_t *t, const session_record_t *s)
{
    char rec[SESSION_KEY_MAX];
    session_record_key(rec, t->name, s->id);
    store_writef(self->store,
                 "HSET %s state active last_used_ms %llu cells %ld memory_kb 0 end_reason %s "
                 "resumed_ms %llu",
                 rec, (unsigned long long)s->last_used_ms, s->cells, "",
                 (unsigned long long)s->last_used_ms);
    store_writef(self->store, "HDEL %s resume_until", rec);
    s_expiry(self, t, s->id, s->last_used_ms + (uint64_t)s->idle_timeout_s * 1000);
    s_cache(self, t, s);
}

void session_records_unclaim(session_records_t *self, const tenant_t *t, const char *id, int lost)
{
    char rec[SESSION_KEY_MAX];
    session_record_key(rec, t->name, id);
    /* back as it was: another call may try again */
    store_writef(self->store, "HSET %s state %s resume_until 0", rec, lost ? "active" : "hibernated");
}
