/* common/loop.c — see loop.h. Watchers live in a zmq_pollitem_t array handed straight to
 * zmq_poll; timers in a small array scanned each turn (components keep their per-job
 * deadlines in their own structures and use one periodic timer, so this stays short). */
#define _GNU_SOURCE
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <zmq.h>

#include "buf.h"
#include "clock.h"
#include "log.h"
#include "loop.h"

typedef struct {
    loop_io_fn *fn;  /* NULL once removed; the slot is reclaimed after dispatch */
    void       *arg;
} watcher_t;

typedef struct {
    uint64_t       id;       /* 0 once cancelled or fired for the last time */
    uint64_t       due_ms;   /* on the monotonic clock */
    uint64_t       every_ms; /* 0 for one-shot */
    loop_timer_fn *fn;
    void          *arg;
} timer_t_;

typedef struct {
    loop_prepare_fn *fn;
    void            *arg;
} prepare_t;

struct loop {
    zmq_pollitem_t *items;      /* handed to zmq_poll as is */
    watcher_t      *watchers;   /* parallel to items */
    size_t          n_items;
    size_t          cap_items;
    int             dirty;      /* some watcher was removed: compact after dispatch */
    timer_t_       *timers;
    size_t          n_timers;
    size_t          cap_timers;
    uint64_t        next_timer_id;
    prepare_t       prepare[8]; /* few: libmicrohttpd's timeout, hiredis reconnects */
    size_t          n_prepare;
    int             stopped;
};

loop_t *loop_new(void)
{
    loop_t *self = xcalloc(1, sizeof *self);
    self->next_timer_id = 1;
    return self;
}

void loop_destroy(loop_t **self_p)
{
    assert(self_p);
    loop_t *self = *self_p;
    if (!self) return;
    free(self->items);
    free(self->watchers);
    free(self->timers);
    free(self);
    *self_p = NULL;
}

static int s_add(loop_t *self, void *socket, int fd, short events, loop_io_fn *fn, void *arg)
{
    assert(fn);
    if (self->n_items == self->cap_items) {
        self->cap_items = self->cap_items ? self->cap_items * 2 : 8;
        self->items = xrealloc(self->items, self->cap_items * sizeof *self->items);
        self->watchers = xrealloc(self->watchers, self->cap_items * sizeof *self->watchers);
    }
    self->items[self->n_items] = (zmq_pollitem_t){.socket = socket, .fd = fd, .events = events};
    self->watchers[self->n_items] = (watcher_t){.fn = fn, .arg = arg};
    self->n_items++;
    return 0;
}

int loop_add_socket(loop_t *self, void *socket, short events, loop_io_fn *fn, void *arg)
{
    assert(socket);
    return s_add(self, socket, 0, events, fn, arg);
}

int loop_add_fd(loop_t *self, int fd, short events, loop_io_fn *fn, void *arg)
{
    assert(fd >= 0);
    return s_add(self, NULL, fd, events, fn, arg);
}

void loop_set_fd_events(loop_t *self, int fd, short events)
{
    for (size_t i = 0; i < self->n_items; i++)
        if (!self->items[i].socket && self->items[i].fd == fd && self->watchers[i].fn)
            self->items[i].events = events;
}

static void s_remove(loop_t *self, void *socket, int fd)
{
    for (size_t i = 0; i < self->n_items; i++) {
        zmq_pollitem_t *it = &self->items[i];
        if (!self->watchers[i].fn) continue;
        if ((socket && it->socket == socket) || (!socket && !it->socket && it->fd == fd)) {
            self->watchers[i].fn = NULL;
            it->events = 0;
            self->dirty = 1;
        }
    }
}

void loop_remove_socket(loop_t *self, void *socket)
{
    s_remove(self, socket, -1);
}

void loop_remove_fd(loop_t *self, int fd)
{
    s_remove(self, NULL, fd);
}

static void s_compact(loop_t *self)
{
    size_t j = 0;
    for (size_t i = 0; i < self->n_items; i++) {
        if (!self->watchers[i].fn) continue;
        self->items[j] = self->items[i];
        self->watchers[j] = self->watchers[i];
        j++;
    }
    self->n_items = j;
    self->dirty = 0;
}

uint64_t loop_timer_add(loop_t *self, uint64_t after_ms, uint64_t every_ms, loop_timer_fn *fn,
                        void *arg)
{
    assert(fn);
    if (self->n_timers == self->cap_timers) {
        self->cap_timers = self->cap_timers ? self->cap_timers * 2 : 8;
        self->timers = xrealloc(self->timers, self->cap_timers * sizeof *self->timers);
    }
    uint64_t id = self->next_timer_id++;
    self->timers[self->n_timers++] = (timer_t_){
        .id = id, .due_ms = clock_mono_ms() + after_ms, .every_ms = every_ms, .fn = fn, .arg = arg};
    return id;
}

void loop_timer_cancel(loop_t *self, uint64_t id)
{
    if (!id) return;
    for (size_t i = 0; i < self->n_timers; i++)
        if (self->timers[i].id == id) self->timers[i].id = 0;
}

void loop_on_prepare(loop_t *self, loop_prepare_fn *fn, void *arg)
{
    assert(self->n_prepare < sizeof self->prepare / sizeof self->prepare[0]);
    self->prepare[self->n_prepare++] = (prepare_t){fn, arg};
}

static long s_wait_ms(loop_t *self)
{
    long     wait = -1;
    uint64_t now = clock_mono_ms();
    for (size_t i = 0; i < self->n_timers; i++) {
        if (!self->timers[i].id) continue;
        long left = self->timers[i].due_ms > now ? (long)(self->timers[i].due_ms - now) : 0;
        if (wait < 0 || left < wait) wait = left;
    }
    for (size_t i = 0; i < self->n_prepare; i++) {
        long w = self->prepare[i].fn(self, self->prepare[i].arg);
        if (w >= 0 && (wait < 0 || w < wait)) wait = w;
    }
    return wait;
}

static void s_run_timers(loop_t *self)
{
    uint64_t now = clock_mono_ms();
    /* Only timers that existed when this pass began may fire: a callback that adds a timer
     * due now must not starve the poll. */
    size_t n = self->n_timers;
    for (size_t i = 0; i < n; i++) {
        timer_t_ *t = &self->timers[i];
        if (!t->id || t->due_ms > now) continue;
        loop_timer_fn *fn = t->fn;
        void          *arg = t->arg;
        if (t->every_ms)
            t->due_ms = now + t->every_ms;
        else
            t->id = 0;
        fn(self, arg); /* may add timers and move the array: index again next turn */
    }
    size_t j = 0;
    for (size_t i = 0; i < self->n_timers; i++)
        if (self->timers[i].id) self->timers[j++] = self->timers[i];
    self->n_timers = j;
}

int loop_run(loop_t *self)
{
    self->stopped = 0;
    while (!self->stopped) {
        long wait = s_wait_ms(self);
        if (self->stopped) break;
        /* a timer or prepare hook may have removed a watcher (and closed its socket) */
        if (self->dirty) s_compact(self);
        int rc = zmq_poll(self->items, (int)self->n_items, wait);
        if (rc < 0) {
            if (errno == EINTR) continue;
            if (errno == ETERM) return -ETERM;
            log_error("event=poll_failed error=\"%s\"", zmq_strerror(errno));
            return -errno;
        }
        size_t n = self->n_items; /* watchers added during dispatch wait for the next turn */
        for (size_t i = 0; i < n && rc > 0; i++) {
            short re = self->items[i].revents;
            if (!re) continue;
            rc--;
            self->items[i].revents = 0;
            if (!self->watchers[i].fn) continue;
            self->watchers[i].fn(self, re, self->watchers[i].arg);
        }
        if (self->dirty) s_compact(self);
        s_run_timers(self);
    }
    return 0;
}

void loop_stop(loop_t *self)
{
    self->stopped = 1;
}
