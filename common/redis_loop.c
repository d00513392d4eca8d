/* common/redis_loop.c — see redis_loop.h. */
#include <zmq.h>

#include "redis_loop.h"

static void s_set(redis_loop_t *rl, short add, short del)
{
    rl->events = (short)((rl->events | add) & ~del);
    if (rl->fd >= 0) loop_set_fd_events(rl->loop, rl->fd, rl->events);
}

static void s_add_read(void *p) { s_set(p, ZMQ_POLLIN, 0); }
static void s_del_read(void *p) { s_set(p, 0, ZMQ_POLLIN); }
static void s_add_write(void *p) { s_set(p, ZMQ_POLLOUT, 0); }
static void s_del_write(void *p) { s_set(p, 0, ZMQ_POLLOUT); }

/* hiredis is freeing the context (a disconnect, or the owner's redisAsyncFree). */
static void s_cleanup(void *p)
{
    redis_loop_t *rl = p;
    if (rl->fd >= 0) loop_remove_fd(rl->loop, rl->fd);
    rl->fd = -1;
    rl->events = 0;
    rl->ac = NULL;
}

static void s_on_io(loop_t *loop, short revents, void *arg)
{
    (void)loop;
    redis_loop_t *rl = arg;
    /* a read may drop the connection and free the context: rl->ac is NULL then */
    if (rl->ac && (revents & (ZMQ_POLLIN | ZMQ_POLLERR))) redisAsyncHandleRead(rl->ac);
    if (rl->ac && (revents & ZMQ_POLLOUT)) redisAsyncHandleWrite(rl->ac);
}

void redis_loop_attach(redis_loop_t *rl, loop_t *loop, redisAsyncContext *ac)
{
    rl->loop = loop;
    rl->ac = ac;
    rl->fd = ac->c.fd;
    rl->events = 0;
    loop_add_fd(loop, rl->fd, 0, s_on_io, rl);
    ac->ev.data = rl;
    ac->ev.addRead = s_add_read;
    ac->ev.delRead = s_del_read;
    ac->ev.addWrite = s_add_write;
    ac->ev.delWrite = s_del_write;
    ac->ev.cleanup = s_cleanup;
}
