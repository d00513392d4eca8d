/* executor-node/sandbox/pidns.c — see pidns.h. */
#define _GNU_SOURCE
#include <assert.h>
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/log.h"
#include "pidns.h"

#define HOLDER_STACK (16u << 10)

typedef struct {
    pid_t pid;   /* 0: a free entry */
    int refs;    /* processes of its lineage; 0 once killed */
    void *stack; /* its own, freed when it is reaped (it shares our memory) */
} holder_t;

struct pidns {
    int home; /* a pidfd of the zygote itself: setns back to its own namespace */
    holder_t *holders;
    size_t n, cap;
};

/* ---- the holder: runs in the zygote's memory, so no libc from here on (errno, locks and the
 * thread pointer are the zygote's), only raw syscalls, and no instrumented stack ------------- */

__attribute__((no_sanitize_address, no_sanitize_undefined)) static long s_raw(long nr, long a,
                                                                               long b, long c,
                                                                               long d)
{
    long ret;
    register long r10 __asm__("r10") = d;
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10)
                     : "rcx", "r11", "memory");
    return ret;
}

static const uint64_t s_every_signal = ~(uint64_t)0;

/* Pid 1 of the lineage's namespace: it blocks what can be blocked (the kernel spares an init the
 * rest, but for SIGKILL from the zygote's namespace) and waits for its end. */
__attribute__((no_sanitize_address, no_sanitize_undefined)) static int s_hold(void *arg)
{
    (void)arg;
    s_raw(SYS_rt_sigprocmask, SIG_BLOCK, (long)&s_every_signal, 0, sizeof s_every_signal);
    for (;;) s_raw(SYS_pause, 0, 0, 0, 0);
    return 0;
}

/* ---- the table ------------------------------------------------------------------------------ */

pidns_t *pidns_new(void)
{
    int home = (int)syscall(SYS_pidfd_open, getpid(), 0);
    if (home < 0) return NULL;
    pidns_t *self = xcalloc(1, sizeof *self);
    self->home = home;
    return self;
}

void pidns_destroy(pidns_t **self_p)
{
    assert(self_p);
    pidns_t *self = *self_p;
    if (!self) return;
    for (size_t i = 0; i < self->n; i++)
        if (self->holders[i].pid > 0) kill(self->holders[i].pid, SIGKILL);
    /* their stacks stay: a holder may run until the kill lands, and the zygote is ending */
    free(self->holders);
    close(self->home);
    free(self);
    *self_p = NULL;
}

static holder_t *s_find(const pidns_t *self, pid_t pid)
{
    for (size_t i = 0; pid > 0 && i < self->n; i++)
        if (self->holders[i].pid == pid) return &self->holders[i];
    return NULL;
}

static holder_t *s_slot(pidns_t *self)
{
    for (size_t i = 0; i < self->n; i++)
        if (!self->holders[i].pid) return &self->holders[i];
    if (self->n == self->cap) {
        self->cap = self->cap ? 2 * self->cap : 16;
        self->holders = xrealloc(self->holders, self->cap * sizeof *self->holders);
    }
    holder_t *h = &self->holders[self->n++];
    memset(h, 0, sizeof *h);
    return h;
}

pid_t pidns_hold(pidns_t *self)
{
    holder_t *h = s_slot(self);
    h->stack = xmalloc(HOLDER_STACK);
    /* CLONE_VM: ~40 µs where a fork of a 300 MB zygote copies its page tables */
    pid_t pid = clone(s_hold, (char *)h->stack + HOLDER_STACK, CLONE_VM | CLONE_NEWPID | SIGCHLD,
                      NULL);
    if (pid < 0) {
        int e = errno;
        free(h->stack);
        h->stack = NULL;
        errno = e;
        return -1;
    }
    h->pid = pid;
    h->refs = 1;
    return pid;
}

pid_t pidns_fork(pidns_t *self, pid_t holder)
{
    int fd = (int)syscall(SYS_pidfd_open, holder, 0);
    if (fd < 0) return -1;
    int rc = setns(fd, CLONE_NEWPID); /* only our next child is born there */
    int e = errno;
    close(fd);
    if (rc < 0) {
        errno = e;
        return -1;
    }
    pid_t pid = fork();
    if (pid == 0) return 0;
    e = errno;
    /* Every later job's child would be born in this lineage's namespace: never carry on so. */
    if (setns(self->home, CLONE_NEWPID) < 0) {
        log_error("event=pidns_return_failed error=\"%s\"", strerror(errno));
        abort();
    }
    errno = e;
    return pid;
}

void pidns_ref(pidns_t *self, pid_t holder)
{
    holder_t *h = s_find(self, holder);
    if (h && h->refs > 0) h->refs++;
}

void pidns_unref(pidns_t *self, pid_t holder)
{
    holder_t *h = s_find(self, holder);
    if (!h || h->refs <= 0 || --h->refs > 0) return;
    if (kill(h->pid, SIGKILL) < 0 && errno != ESRCH)
        log_warn("event=pidns_kill_failed pid=%d error=\"%s\"", (int)h->pid, strerror(errno));
}

int pidns_reaped(pidns_t *self, pid_t pid)
{
    holder_t *h = s_find(self, pid);
    if (!h) return 0;
    if (h->refs > 0) log_warn("event=pidns_holder_died pid=%d", (int)pid);
    free(h->stack);
    memset(h, 0, sizeof *h);
    return 1;
}

int pidns_is_holder(const pidns_t *self, pid_t pid)
{
    return s_find(self, pid) != NULL;
}

size_t pidns_holders(const pidns_t *self)
{
    size_t n = 0;
    for (size_t i = 0; i < self->n; i++) n += self->holders[i].pid > 0;
    return n;
}
