/* common/redis_dial.h — reaching the Redis a URL names (redis_url.h): directly over TCP or a
 * unix socket, or the master a set of Redis Sentinels watch. A Sentinel URL is resolved at
 * every connect: each sentinel in turn is asked for the master's address (SENTINEL
 * get-master-addr-by-name), and a connection to it is kept only when ROLE says `master` — a
 * sentinel that has not yet seen a failover, or an old master come back as a replica, is
 * passed over. So a component that reconnects after its Redis went away follows a failover
 * without knowing one happened; this file is the only one that knows about Sentinel. AUTH and
 * SELECT are done before the caller has the connection.
 *
 * Two forms: on a loop (hiredis async; the front-end's store, every metrics snapshot) and
 * blocking with a timeout (the CLI). */
#ifndef SP_REDIS_DIAL_H
#define SP_REDIS_DIAL_H
#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#include <stddef.h>

#include "loop.h"
#include "redis_loop.h"
#include "redis_url.h"

/* Between attempts of a component that keeps reconnecting (the front-end's store and bus): the
 * wait starts at 100 ms and doubles up to this. Short, because a Redis that comes back or a
 * replica that is promoted announces nothing, every second of wait after that is a second in
 * which new legacy sessions cannot be opened, and an attempt is cheap (a refused connect, or
 * one question to each sentinel). */
#define REDIS_RECONNECT_MAX_MS 500

typedef struct redis_dial redis_dial_t;

/* Called exactly once. ac: connected, authenticated, on the right db, attached to the loop
 * through the caller's io; the caller's from now on (redis_dial_adopt). NULL when no server
 * could be reached, with err saying why. where: the server, for logs ("10.0.0.2:6379"). The
 * dial is over when this returns (forget the pointer). */
typedef void(redis_dial_fn)(void *arg, redisAsyncContext *ac, const char *where, const char *err);

/* io: the caller's redis_loop_t, which the connection it gets will use; it must not be
 * attached to a live context. timeout_ms bounds each step (a connect, a sentinel's answer).
 * fn is never called before this returns. */
redis_dial_t *redis_dial_start(loop_t *loop, const redis_url_t *url, redis_loop_t *io,
                               long timeout_ms, redis_dial_fn *fn, void *arg);
/* Gives up: fn is not called, a half-made connection is freed. */
void redis_dial_cancel(redis_dial_t **self_p);
/* Takes over a connection fn handed out: its data and disconnect callback become the
 * owner's. */
void redis_dial_adopt(redisAsyncContext *ac, void *data, redisDisconnectCallback *on_disconnect);

/* The blocking form: a connection with timeout_ms on connect and on every command, or NULL
 * with the reason in err. */
redisContext *redis_dial_blocking(const redis_url_t *url, long timeout_ms, char *err,
                                  size_t errlen);

#endif
