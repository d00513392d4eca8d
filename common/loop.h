/* common/loop.h — the reactor at the centre of every snakepit process: one thread, one
 * zmq_poll over ZeroMQ sockets and plain fds (libmicrohttpd's epoll fd, hiredis, signalfd,
 * zygote sockets), plus timers. Redis's ae.c with zmq_poll underneath, because a ZeroMQ
 * socket can only be waited on correctly through zmq_poll.
 *
 * Callbacks may add or remove watchers and timers, including their own: removal marks the
 * slot and the array is compacted after the dispatch pass, so no callback ever sees a freed
 * watcher (libuv's rule). */
#ifndef SP_LOOP_H
#define SP_LOOP_H
#include <stdint.h>

typedef struct loop loop_t;

/* events and revents hold ZMQ_POLLIN / ZMQ_POLLOUT / ZMQ_POLLERR, for plain fds too (zmq_poll
 * maps them to poll(2)'s, whose values differ); by these names for code that does not include
 * <zmq.h>. */
enum { LOOP_IN = 1, LOOP_OUT = 2, LOOP_ERR = 4 };
typedef void(loop_io_fn)(loop_t *loop, short revents, void *arg);
typedef void(loop_timer_fn)(loop_t *loop, void *arg);
/* Called before each wait; returns the longest the loop may sleep in ms, or -1 for no bound. */
typedef long(loop_prepare_fn)(loop_t *loop, void *arg);

loop_t *loop_new(void);
void    loop_destroy(loop_t **self_p);

int  loop_add_socket(loop_t *self, void *socket, short events, loop_io_fn *fn, void *arg);
int  loop_add_fd(loop_t *self, int fd, short events, loop_io_fn *fn, void *arg);
void loop_set_fd_events(loop_t *self, int fd, short events);
void loop_remove_socket(loop_t *self, void *socket);
void loop_remove_fd(loop_t *self, int fd);

/* Timers fire once after `after_ms`, then every `every_ms` when that is non-zero. The id is
 * never 0, so 0 can mean "no timer". */
uint64_t loop_timer_add(loop_t *self, uint64_t after_ms, uint64_t every_ms, loop_timer_fn *fn,
                        void *arg);
void     loop_timer_cancel(loop_t *self, uint64_t id);

void loop_on_prepare(loop_t *self, loop_prepare_fn *fn, void *arg);

int  loop_run(loop_t *self); /* until loop_stop; 0, or -errno when polling fails */
void loop_stop(loop_t *self);

#endif
