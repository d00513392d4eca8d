/* common/redis_loop.h — hiredis's async API driven by our loop (common/loop.h): the connection's
 * fd is one of the loop's watchers, with the read/write interest hiredis asks for, and the loop
 * calls redisAsyncHandleRead/Write. Embed one in the object that owns the connection; it needs
 * nothing else. Connections are made by common/redis_dial.h, the one place that reaches Redis
 * (the front-end's store and bus, and every metrics snapshot publisher, use both). */
#ifndef SP_REDIS_LOOP_H
#define SP_REDIS_LOOP_H
#include <hiredis/async.h>

#include "loop.h"

typedef struct {
    loop_t            *loop;
    redisAsyncContext *ac;     /* NULL once hiredis has freed the context */
    int                fd;     /* -1 when not watched */
    short              events; /* ZMQ_POLLIN / ZMQ_POLLOUT hiredis wants */
} redis_loop_t;

/* Takes over ac's event hooks (ac->ev); ac->data stays the caller's. */
void redis_loop_attach(redis_loop_t *rl, loop_t *loop, redisAsyncContext *ac);

#endif
