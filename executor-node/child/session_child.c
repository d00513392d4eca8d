/* executor-node/child/session_child.c — see session_child.h. Everything here runs in a session's
 * process, which has run tenant code and will again: it trusts nothing in its own memory but
 * what this loop wrote, and it holds no descriptor but its wake socket between jobs. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "executor-node/python/audit.h"
#include "executor-node/python/python.h"
#include "executor-node/sandbox/childsig.h"
#include "fork_plan.h"
#include "session_child.h"
#include "wake.h"

/* The fork_session clone: exactly CLONE_PARENT | SIGCHLD (0x8000 | 17), from the one syscall
 * instruction the prologue allows it from. Not glibc's fork(), which runs atfork handlers and
 * asks for other flags; without a new stack the clone returns on a copy of this one, as fork
 * does. Returns the clone's pid, 0 in the clone, or -errno. */
long session_clone(void);
__asm__(".text\n"
        ".globl session_clone\n"
        ".hidden session_clone\n"
        ".type session_clone, @function\n"
        "session_clone:\n"
        "    mov $56, %eax\n"     /* __NR_clone */
        "    mov $0x8011, %edi\n" /* CLONE_PARENT | SIGCHLD */
        "    xor %esi, %esi\n"    /* no new stack */
        "    xor %edx, %edx\n"
        "    xor %r10d, %r10d\n"
        "    xor %r8d, %r8d\n"
        "    syscall\n"
        ".globl session_clone_site\n"
        ".hidden session_clone_site\n"
        "session_clone_site:\n"
        "    ret\n"
        ".size session_clone, .-session_clone\n");

typedef struct {
    const child_env_t *env;
    sandbox_t *sb;
    area_t area;
    int wake;
    char ws_dir[WORKSPACE_PATH_MAX]; /* its workspace, "" in profiles without one */
} me_t;

typedef struct {
    char cmd; /* 'j', 'f', or 0 at end of file */
    fork_msg_t fork;
    int fds[SESSION_FORK_FDS];
    int n_fds;
} wake_msg_t;

static uint64_t s_cpu_us(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000u +
           (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

static void s_send(int fd, const void *msg, size_t len)
{
    if (wake_send(fd, msg, len) < 0) {
        /* the zygote is gone or ending us: the next read says so */
    }
}

static void s_reply(int fd, char cmd, int32_t value)
{
    char b[5] = {cmd};
    memcpy(b + 1, &value, sizeof value);
    s_send(fd, b, sizeof b);
}

/* How many descriptors an 'f' with these flags brings (session_child.h's order). */
static int s_fork_fds(uint32_t flags)
{
    if (flags & FORK_BACKUP) return 2;
    return 3 + ((flags & FORK_HAS_CWD) != 0) + ((flags & FORK_PARENT_LAYER) != 0);
}

/* The next datagram from the zygote, with the descriptors a fork brings. */
static void s_receive(int wake, wake_msg_t *m)
{
    char data[1 + sizeof(fork_msg_t)];
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(SESSION_FORK_FDS * sizeof(int))];
    } ctl;
    struct iovec iov = {data, sizeof data};
    struct msghdr mh = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf, .msg_controllen = sizeof ctl.buf};
    ssize_t n;
    memset(m, 0, sizeof *m);
    do n = recvmsg(wake, &mh, MSG_CMSG_CLOEXEC);
    while (n < 0 && errno == EINTR);
    if (n <= 0) return; /* the zygote closed the socket: cmd 0 */
    m->cmd = data[0];
    if (m->cmd == 'f' && (size_t)n == sizeof data) memcpy(&m->fork, data + 1, sizeof m->fork);
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
        size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < k && m->n_fds < SESSION_FORK_FDS; i++)
            memcpy(&m->fds[m->n_fds++], CMSG_DATA(c) + i * sizeof(int), sizeof(int));
    }
    if (m->cmd == 'f' && m->n_fds != s_fork_fds(m->fork.flags)) m->cmd = '?'; /* malformed */
}

static void s_close_fds(wake_msg_t *m)
{
    for (int i = 0; i < m->n_fds; i++)
        if (m->fds[i] >= 0) close(m->fds[i]);
    m->n_fds = 0;
}

/* One job: its CPU budget, the session module, and the done byte with what it cost. */
static void s_job(me_t *me, int first)
{
    area_hdr_t *h = area_hdr(&me->area);
    const jobspec_t *job = (const jobspec_t *)(void *)area_job(&me->area);
    h->wake_ns = clock_mono_us() * 1000u;
    h->phase = AREA_RUNNING;
    uint64_t cpu0 = s_cpu_us();
    /* a CPU backstop behind the cell's wall-clock limit and its grace (sandbox.h) */
    if (sandbox_cell_cpu(me->sb, job->limits.cpu_ms + job->limits.wall_ms + 5000) < 0) {
        area_report(&me->area, "internal_error", "SandboxError", "setting the cell's CPU limit");
    } else {
        if (!first) py_drop_signals();
        py_session_job(job, me->env->profile, &me->area, (me->sb->layers & LAYER_PYTHON) != 0,
                       me->ws_dir, first);
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    h->self_cpu_us = s_cpu_us() - cpu0; /* this job's, not the session's */
    h->self_maxrss_kb = (uint64_t)ru.ru_maxrss;
    /* Until the next cell, a second of CPU at most: nothing should run while this loop waits,
     * and the zygote ends a session whose process did (zygote_sessions.c s_rest_was_rest). */
    sandbox_cell_cpu(me->sb, 1000);
    s_send(me->wake, "d", 1);
}

/* In a clone: its own socket and area, then (a session's clone) its own Landlock layer and
 * directory, nothing shared with the session (fork_plan.h), CPython's after-fork work, and 'R'.
 * A backup keeps the session's directory and layers and does no after-fork work: it is the
 * session as it was, and may become it again. Any failure ends it; the zygote, which never
 * hears 'R', gives up on it. */
static void s_become_clone(me_t *me, wake_msg_t *m)
{
    uint32_t flags = m->fork.flags;
    int sock = m->fds[0], memfd = m->fds[1];
    int mine = flags & FORK_BACKUP ? -1 : m->fds[2];
    int cwd = flags & FORK_HAS_CWD ? m->fds[3] : -1;
    if (flags & FORK_PARENT_LAYER) close(m->fds[m->n_fds - 1]); /* the session's layer, not ours */
    /* The wake socket keeps its number: the prologue lets recvmsg read that fd only. */
    close(me->wake);
    if (fcntl(sock, F_DUPFD_CLOEXEC, me->wake) != me->wake) _exit(1);
    close(sock);
    if (area_attach(&me->area, memfd, m->fork.job_cap, m->fork.stream_cap) < 0) _exit(1);
    close(memfd);
    /* Our own clones, if we make any, must not inherit this area either. */
    if (madvise(me->area.base, me->area.size, MADV_DONTFORK) < 0) _exit(1);
    childsig_moved(&me->area); /* its reports go to its own area, and its own pid is itself */
    if (mine >= 0) {
        if (syscall(SYS_landlock_restrict_self, mine, 0) < 0 && (me->sb->layers & LAYER_LANDLOCK))
            _exit(1);
        close(mine);
    }
    if (cwd >= 0) {
        if (fchdir(cwd) < 0) _exit(1);
        close(cwd);
        audit_set_workspace(m->fork.cwd);
        snprintf(me->ws_dir, sizeof me->ws_dir, "%s", m->fork.cwd);
    }
    /* nothing open before the fork may stay shared with the session (fork_plan.h) */
    if (fork_plan_apply(area_job(&me->area), me->area.job_cap, me->wake) < 0) _exit(1);
    if (!(flags & FORK_BACKUP)) py_after_fork(); /* thread state, and random's reseed */
    m->n_fds = 0;
    /* 'R', and where the area is mapped here: the zygote lays each job's copy out for it */
    char r[1 + sizeof(uint64_t)] = {'R'};
    uint64_t at = (uint64_t)(uintptr_t)me->area.base;
    memcpy(r + 1, &at, sizeof at);
    s_send(me->wake, r, sizeof r);
}

/* fork_session (one 'f' per clone), or an atomic cell's backup, on the session's side. The
 * zygote has raised our RLIMIT_NPROC for these clones and lowers it when we have answered the
 * last one. */
static void s_fork(me_t *me, wake_msg_t *m)
{
    long pid = session_clone();
    if (pid == 0) {
        s_become_clone(me, m);
        return;
    }
    uint32_t flags = m->fork.flags;
    int parent_ll = flags & FORK_PARENT_LAYER ? m->fds[m->n_fds - 1] : -1;
    for (int i = 0; i < m->n_fds; i++)
        if (m->fds[i] != parent_ll) close(m->fds[i]);
    int err = pid < 0 ? (int)-pid : 0;
    /* Our own next layer, after the last clone: from here on the clones' directories are out
     * of our reach. Should it fail, the zygote ends the clones (our old layers still reach
     * their directories). */
    if (!err && parent_ll >= 0 && syscall(SYS_landlock_restrict_self, parent_ll, 0) < 0 &&
        (me->sb->layers & LAYER_LANDLOCK))
        err = errno;
    if (parent_ll >= 0) close(parent_ll);
    m->n_fds = 0;
    if (err)
        s_reply(me->wake, 'E', pid > 0 ? (int32_t)pid : -err);
    else
        s_reply(me->wake, 'F', (int32_t)pid);
}

_Noreturn void session_child_main(const child_env_t *env, sandbox_t *sb, area_t *area, int wake_fd,
                                  const char *ws_dir)
{
    me_t me = {env, sb, *area, wake_fd, ""};
    snprintf(me.ws_dir, sizeof me.ws_dir, "%s", ws_dir);
    char err[256] = "setting the session's limits";
    const jobspec_t *job = (const jobspec_t *)(void *)area_job(area);
    /* Clones get an area of their own; ours is shared with the zygote alone. */
    if (madvise(me.area.base, me.area.size, MADV_DONTFORK) < 0 ||
        sandbox_session_limits(sb, &job->limits, &me.area, err, sizeof err) < 0) {
        area_report(&me.area, "internal_error", "SandboxError", err);
        area_hdr(&me.area)->phase = AREA_FINISHED;
        s_send(me.wake, "d", 1);
        _exit(0);
    }
    s_job(&me, 1);
    for (;;) {
        wake_msg_t m;
        s_receive(me.wake, &m);
        switch (m.cmd) {
        case 'j':
            s_job(&me, 0);
            break;
        case 'f':
            s_fork(&me, &m);
            break;
        case 0:
            _exit(0); /* the session is over */
        default:
            s_close_fds(&m); /* not ours to act on */
            break;
        }
    }
}
