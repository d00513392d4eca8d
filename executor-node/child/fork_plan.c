/* executor-node/child/fork_plan.c — see fork_plan.h. Runs in the clone before any of the
 * tenant's code does again; reads only what the zygote wrote. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fork_plan.h"

/* fd takes an inert descriptor (fds 0-2 are O_PATH descriptors of the root: sandbox.c). */
static void s_inert(int fd)
{
    if (fd > 2 && dup3(0, fd, O_CLOEXEC) < 0) close(fd);
}

static void s_reopen(const fork_plan_entry_t *e)
{
    /* never create or truncate: the clone's copy is already there, as the parent's was */
    int flags = e->flags & ~(O_CREAT | O_EXCL | O_TRUNC | O_NOCTTY);
    int fd = openat(AT_FDCWD, e->path, flags | O_CLOEXEC | O_NOFOLLOW, 0);
    if (fd < 0) {
        s_inert(e->fd);
        return;
    }
    if (e->pos > 0 && lseek(fd, e->pos, SEEK_SET) < 0) {
        /* a directory or a stream: its offset means nothing to keep */
    }
    int cloexec = (e->flags & O_CLOEXEC) ? O_CLOEXEC : 0;
    if (fd != e->fd && dup3(fd, e->fd, cloexec) < 0) {
        close(fd);
        s_inert(e->fd);
        return;
    }
    if (fd != e->fd) close(fd);
}

/* The shared mapping at [start, start+len) becomes a private copy of itself. */
static int s_private(const fork_plan_entry_t *e)
{
    void *at = (void *)(uintptr_t)e->start;
    if (madvise(at, e->len, MADV_NORMAL) < 0) return 0; /* not mapped here (MADV_DONTFORK) */
    void *copy = mmap(NULL, e->len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (copy == MAP_FAILED) return -1;
    if (e->prot & PROT_READ) memcpy(copy, at, e->len);
    if (mprotect(copy, e->len, e->prot) < 0 ||
        mremap(copy, e->len, e->len, MREMAP_MAYMOVE | MREMAP_FIXED, at) == MAP_FAILED) {
        munmap(copy, e->len);
        return -1;
    }
    return 0;
}

int fork_plan_apply(void *plan, size_t cap, int keep_fd)
{
    fork_plan_t *p = plan;
    if (p->magic != FORK_PLAN_MAGIC) return 0; /* nothing was open: nothing to redo */
    size_t n = p->n < fork_plan_capacity(cap) ? p->n : fork_plan_capacity(cap);
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        const fork_plan_entry_t *e = &p->e[i];
        if (e->kind != FP_PRIVATE && e->fd == keep_fd) continue; /* the clone's own wake socket */
        switch (e->kind) {
        case FP_REOPEN:
            s_reopen(e);
            break;
        case FP_INERT:
            s_inert(e->fd);
            break;
        case FP_PRIVATE:
            rc = s_private(e);
            break;
        default:
            break;
        }
    }
    explicit_bzero(p, sizeof *p + n * sizeof p->e[0]);
    return rc;
}
