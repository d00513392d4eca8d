/* common/redis_loop.h — hiredis's async API driven by our loop (common/loop.h): the connection's
 * fd is one of the loop's watchers, with the read/write interest hiredis asks for, and the loop
 * calls redisAsyncHandleRead/Write. Embed one in the object that owns the connection; it needs
 * nothing else. (The front-end's store and the metrics snapshot publisher both use it.) */
#ifndef SP_REDIS_LOOP_H
#define SP_REDIS_LOOP_H
#include <hiredis/async.h>

#include "loop.h"
#include "redis_url.h"

typedef struct {
    loop_t            *loop;
    redisAsyncContext *ac;     /* NULL once hiredis has freed the context */
    int                fd;     /* -1 when not watched */
    short              events; /* ZMQ_POLLIN / ZMQ_POLLOUT hiredis wants */
} redis_loop_t;

/* Takes over ac's event hooks (ac->ev); ac->data stays the caller's. */
void redis_loop_attach(redis_loop_t *rl, loop_t *loop, redisAsyncContext *ac);
/* Connects to url (TCP or unix socket) and attaches the connection: data becomes ac->data, the
 * callbacks are set, and AUTH is queued first when the URL carries a password (hiredis sends it
 * once the socket connects). NULL with the reason in err. */
redisAsyncContext *redis_loop_connect(redis_loop_t *rl, loop_t *loop, const redis_url_t *url,
                                      void *data, redisConnectCallback *on_connect,
                                      redisDisconnectCallback *on_disconnect, char *err,
                                      size_t errlen);

#endif
