/* mcp-frontend/state/store.h — the front-end's one Redis connection (hiredis async, on the loop).
 *
 * Two kinds of traffic, with different promises:
 *   - queries (auth lookups, rate-limit scripts, record reads): sent at once, answered exactly
 *     once through the callback with the reply, or with NULL when Redis failed or went away.
 *     While a connection is being made (at start, after a Redis restart or failover) a query
 *     waits for it, up to --redis-timeout-ms; one that cannot be sent at all (Redis away, no
 *     connection being made) returns -1 and its callback is never called.
 *   - writes (execution records, usage counters): fire and forget, pipelined, kept in a
 *     bounded journal (store_journal.h) while Redis is away or slow, and for --redis-replay-ms
 *     after Redis acknowledged them; every reconnect sends the journal again, in order, so a
 *     failover or a Redis restart that lost acknowledged writes gets them back. EVERY WRITE
 *     MUST THEREFORE BE IDEMPOTENT (records.c's scripts are). What does not fit is dropped and
 *     counted. A write may ask to hear when Redis has it (store_write_acked); writes keep
 *     their order either way, so that answer also covers every write made before it.
 * Neither ever blocks the loop: a Redis that stops answering is detected by the age of the
 * oldest unanswered command and the connection is dropped and re-made. The
 * connection is made by common/redis_dial.h, so a redis-sentinel:// URL is followed through
 * failovers; a reply that says the server is a replica (READONLY) or still loading its data
 * (LOADING) drops the connection too, and the write is sent again to whoever is master. */
#ifndef SP_FE_STORE_H
#define SP_FE_STORE_H
#include <hiredis/hiredis.h>
#include <stddef.h>
#include <stdint.h>

#include "common/loop.h"
#include "common/redis_url.h"

typedef struct store store_t;

typedef enum {
    STORE_OP_CONNECT,
    STORE_OP_DISCONNECT,
    STORE_OP_TIMEOUT,
    STORE_OP_QUERY,
    STORE_OP_WRITE,
    STORE_OP__COUNT
} store_op_t;

typedef struct {
    uint64_t errors[STORE_OP__COUNT]; /* failed or unsendable commands, by what failed */
    uint64_t writes_dropped;          /* writes the full journal could not keep */
    uint64_t writes_replayed;         /* writes sent again after a reconnect */
    uint64_t connects;                /* connections made (the first one included) */
} store_stats_t;

typedef struct {
    char url[512];        /* redis://[user:pass@]host:port[/db] or unix:///path */
    long timeout_ms;      /* an unanswered command older than this drops the connection */
    long buffer_commands; /* writes kept while Redis is away (and about 4 KiB each at most) */
    long replay_ms;       /* acknowledged writes are kept this long and sent again on reconnect */
} store_conf_t;

/* reply is NULL when the command failed at the connection level (an error reply from Redis
 * is passed through as a REDIS_REPLY_ERROR). The reply is freed after the callback. */
typedef void(store_reply_fn)(void *arg, redisReply *reply);

/* url: conf->url, parsed (the caller checks it at start, to refuse a bad one early). */
store_t *store_new(loop_t *loop, const redis_url_t *url, const store_conf_t *conf);
void store_destroy(store_t **self_p);
int store_connected(const store_t *self);
/* The server the store is connected to ("unix:/run/r.sock", "10.0.0.2:6379"), "" when none. */
const char *store_where(const store_t *self);
/* Called on the loop each time a connection has been made (the first one too), before any
 * buffered write is sent on it: the place to re-establish what a Redis that restarted empty
 * would have lost. At most 4 hooks. */
typedef void(store_connect_fn)(void *arg, store_t *store);
void store_on_connect(store_t *self, store_connect_fn *fn, void *arg);
const store_stats_t *store_stats(const store_t *self);
/* Writes not yet acknowledged by Redis (waiting in the journal or in flight). */
long store_unacked(const store_t *self);
const char *store_op_name(store_op_t op);

int store_query(store_t *self, store_reply_fn *fn, void *arg, int argc, const char **argv,
                const size_t *argvlen);
/* A query from printf-like arguments (hiredis's format: %s, %b, %d...). */
int store_queryf(store_t *self, store_reply_fn *fn, void *arg, const char *fmt, ...);

/* Fire-and-forget write, queued when Redis is away. */
void store_write(store_t *self, int argc, const char **argv, const size_t *argvlen);
void store_writef(store_t *self, const char *fmt, ...);
/* A write whose answer is wanted: 0 when it was sent, and fn will be called exactly once with
 * Redis's reply (NULL when the connection failed first) — possibly before this returns, when
 * the connection fails as the write goes out; -1 when it could not be sent now and was
 * buffered like any write (or dropped, counted): fn is never called. */
int store_write_acked(store_t *self, store_reply_fn *fn, void *arg, int argc, const char **argv,
                      const size_t *argvlen);

/* A write with two forms. The journal keeps argv, the idempotent form (a script that counts
 * usage only for a record's first final write, say) that any replay sends; when the write can
 * go on the wire at once it goes as the first form instead: n_first plain commands (the i-th
 * has first_argc[i] arguments, all of them back to back in first_argv/first_lens) that need not
 * be idempotent, for they are sent once — cheaper for Redis than the script (bench/redis_cost.py).
 * They go as one MULTI/EXEC transaction, applied (and replicated) whole or not at all, so that a
 * replay never meets them half done. fn, if any, hears EXEC's reply (an array: a command that
 * failed alone is an error in it, counted and logged here); since Redis applies a connection's
 * commands in order, the whole first form (and every write before it) is in. A replay after
 * the first form landed finds its work done. Returns as store_write_acked. */
int store_write_first(store_t *self, int argc, const char **argv, const size_t *argvlen,
                      int n_first, const int *first_argc, const char **first_argv,
                      const size_t *first_lens, store_reply_fn *fn, void *arg);

/* PUBLISH in the writes' order (a listener finds in Redis whatever was written before it), but
 * sent at most once: never replayed after a reconnect, for pub/sub is at most once anyway and a
 * listener would hear a replayed event twice. Dropped, counted, when the journal is full. */
void store_publish(store_t *self, const char *channel, const char *message);

/* A script write: verb (EVAL or EVALSHA) with body (its source or SHA), nkeys, and the
 * arguments (lens NULL: strings). fn as store_write_acked's, or NULL. */
int store_write_call(store_t *self, const char *verb, const char *body, int nkeys, int nargs,
                     const char **args, const size_t *lens, store_reply_fn *fn, void *arg);
/* The same call as the replayable form of store_write_first, the first form beside it. */
int store_write_call_first(store_t *self, const char *verb, const char *body, int nkeys,
                           int nargs, const char **args, const size_t *lens, int n_first,
                           const int *first_argc, const char **first_argv,
                           const size_t *first_lens, store_reply_fn *fn, void *arg);
/* An idempotent write that is a Lua script: EVAL with its source. fn as store_write_acked's,
 * or NULL. (store_write_script below sends a script made with store_script by SHA.) */
int store_write_eval(store_t *self, const char *source, int nkeys, int nargs, const char **args,
                     const size_t *lens, store_reply_fn *fn, void *arg);

/* A query its sender may change and send again when Redis answers it with an error: the
 * store keeps argv and argvlen (taken: both arrays and every argv[i] are xmalloc'd) until the
 * answer. On an error reply resend is called, once; it may rewrite the arguments in place and
 * return 1 to have the command sent again (fn hears that answer instead, and the error is not
 * counted), or 0 to pass the error on. Otherwise as store_query. store_scripts.c sends a
 * script's EVALSHA this way, to fall back to EVAL on NOSCRIPT. */
typedef int(store_resend_fn)(void *arg, const redisReply *error, int argc, char **argv,
                             size_t *argvlen);
int store_query_resend(store_t *self, store_reply_fn *fn, void *arg, int argc, char **argv,
                       size_t *argvlen, store_resend_fn *resend, void *resend_arg);
/* The scripts layer's table (store_scripts.c), kept by the store — set once, freed with free_fn
 * when the store is destroyed — so that every script made on a store is the store's. */
void store_keep_scripts(store_t *self, void *scripts, void (*free_fn)(void *scripts));
void *store_scripts(const store_t *self); /* NULL until kept */

/* ---- Lua scripts (store_scripts.c) */
/* A Lua script run as a query, by EVALSHA, falling back to EVAL on NOSCRIPT: answered as
 * queries are (and, like them, waiting for a connection being made). The script is loaded
 * (SCRIPT LOAD) on every connect — a connect hook registered with the first script — which also
 * gives us its SHA-1 without computing it here. */
typedef struct store_script store_script_t;

store_script_t *store_script(store_t *self, const char *source); /* owned by the store */
int store_eval(store_t *self, store_script_t *script, store_reply_fn *fn, void *arg, int nkeys,
               int nargs, const char **args /* keys, then arguments */);
/* The same with each argument's length (binary-safe: a snapshot's bytes). */
int store_evaln(store_t *self, store_script_t *script, store_reply_fn *fn, void *arg, int nkeys,
                int nargs, const char **args, const size_t *lens);
/* An idempotent write (store_write_eval's promise) that is a script made here: sent by
 * EVALSHA once its SHA-1 is known — every connection loads the store's scripts before the
 * journal is sent on it, so a replay into a Redis that never saw the script finds it there —
 * and by source until then. A write answered NOSCRIPT (the script cache flushed under an open
 * connection) drops the connection, and the next one loads the scripts and sends it again.
 * Saves Redis hashing a kilobyte of source per write, and the bytes. fn as store_write_eval's. */
int store_write_script(store_t *self, store_script_t *script, int nkeys, int nargs,
                       const char **args, const size_t *lens, store_reply_fn *fn, void *arg);
/* The same script as the replayable form of store_write_first, the first form beside it (sent
 * as the script alone until its SHA-1 is known). */
int store_write_script_first(store_t *self, store_script_t *script, int nkeys, int nargs,
                             const char **args, const size_t *lens, int n_first,
                             const int *first_argc, const char **first_argv,
                             const size_t *first_lens, store_reply_fn *fn, void *arg);

#endif
