/* executor-node/zygote/pool/pool.c — see pool.h. */
#define _GNU_SOURCE
#include <assert.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sched.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "executor-node/area/jobcopy.h"
#include "executor-node/sandbox/landlock.h"
#include "executor-node/sandbox/pidns.h"
#include "pool.h"

/* One allocation, the counters beside the slots: after every fork the zygote's pages are
 * copy-on-write again, and each distinct page it then writes costs a fault. */
struct pool {
    pool_conf_t conf;
    int sig_fd;   /* SIGCHLD */
    int timer_fd; /* armed at the earliest running child's deadline */
    uint64_t forks;
    uint32_t idle_deaths; /* pooled children that died in a row before any became ready */
    uint64_t muted; /* children whose socket was ignored after a premature byte */
    pidns_t *pidns; /* sessions' lineages, with the namespaces layer; else NULL */
    child_t children[]; /* conf.slots of them */
};

pool_t *pool_new(const pool_conf_t *conf, char *err, size_t errlen)
{
    pool_t *self = xcalloc(1, sizeof *self + conf->slots * sizeof self->children[0]);
    self->conf = *conf;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigprocmask(SIG_BLOCK, &set, NULL);
    self->sig_fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    self->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (self->sig_fd < 0 || self->timer_fd < 0) {
        snprintf(err, errlen, "signalfd/timerfd: %s", strerror(errno));
        pool_destroy(&self);
    } else if ((conf->env->sb->layers & LAYER_NAMESPACES) && !(self->pidns = pidns_new())) {
        snprintf(err, errlen, "pidfd of the zygote: %s", strerror(errno));
        pool_destroy(&self);
    }
    return self;
}

void pool_destroy(pool_t **self_p)
{
    assert(self_p);
    pool_t *self = *self_p;
    if (!self) return;
    if (self->sig_fd >= 0) close(self->sig_fd);
    if (self->timer_fd >= 0) close(self->timer_fd);
    pidns_destroy(&self->pidns);
    free(self);
    *self_p = NULL;
}

/* ---- slots --------------------------------------------------------------------------------- */

static child_t *s_free_slot(pool_t *self)
{
    for (size_t i = 0; i < self->conf.slots; i++)
        if (self->children[i].state == CHILD_FREE) return &self->children[i];
    return NULL;
}

static child_t *s_find_pid(pool_t *self, pid_t pid)
{
    for (size_t i = 0; i < self->conf.slots; i++)
        if (self->children[i].state != CHILD_FREE && self->children[i].pid == pid)
            return &self->children[i];
    return NULL;
}

/* A pooled child's workspace directory and the Landlock ruleset that opens it to that child
 * alone, made before the fork (workspace.h). A child pooled for a session gets a lineage's base
 * directory with its workspace mounted inside, and the rule names the base: its clones' own
 * directories go there too (zygote_sessions.h). */
static int s_workspace_for(pool_t *self, child_t *c)
{
    const child_env_t *env = self->conf.env;
    char err[256];
    int rc = c->session_capable
                 ? workspace_make_lineage(self->conf.ws, c->ws_base, c->ws_dir, err, sizeof err)
                 : workspace_make(self->conf.ws, c->ws_dir, err, sizeof err);
    if (rc < 0) {
        log_error("event=workspace_failed error=\"%s\"", err);
        c->ws_dir[0] = c->ws_base[0] = '\0';
        return -1;
    }
    const char *rule = c->session_capable ? c->ws_base : c->ws_dir;
    if ((env->sb->layers & LAYER_LANDLOCK) &&
        (c->landlock_fd = landlock_ruleset_egress(env->sb->landlock_abi, env->profile, &rule, 1,
                                                  c->egress ? env->sb->egress_port : 0, err,
                                                  sizeof err)) < 0) {
        log_error("event=workspace_failed error=\"%s\"", err);
        workspace_remove(self->conf.ws, c->ws_dir);
        if (c->ws_base[0]) workspace_remove_tree(self->conf.ws, c->ws_base);
        c->ws_dir[0] = c->ws_base[0] = '\0';
        return -1;
    }
    return 0;
}

static void s_workspace_drop(pool_t *self, child_t *c)
{
    if (c->landlock_fd >= 0) close(c->landlock_fd);
    c->landlock_fd = -1;
    if (c->ws_dir[0]) workspace_remove(self->conf.ws, c->ws_dir);
    if (c->ws_base[0]) workspace_remove_tree(self->conf.ws, c->ws_base);
    c->ws_dir[0] = c->ws_base[0] = '\0';
}

/* A reaped child's slot is free again. A session's directories are the session's to remove
 * (zygote_sessions.h): it heard of the end through on_session_gone. */
static void s_release(pool_t *self, child_t *c)
{
    if (c->sock > 0) close(c->sock);
    area_unmap(&c->area);
    if (!c->session) s_workspace_drop(self, c); /* reaped: nothing writes there any more */
    jobcopy_private_free(&c->inputs);
    if (c->holder && self->pidns) pidns_unref(self->pidns, c->holder); /* one fewer of its lineage */
    memset(c, 0, sizeof *c);
}

/* ---- fork ---------------------------------------------------------------------------------- */

/* In the new child: other children's areas are MADV_DONTFORK here, so it never sees another
 * tenant's job or output; it forgets their addresses too. */
static _Noreturn void s_become_child(pool_t *self, child_t *c, int wake_fd)
{
    /* only where set: each page of the table written here is a copy-on-write fault */
    for (size_t i = 0; i < self->conf.slots; i++)
        if (&self->children[i] != c && self->children[i].area.base)
            self->children[i].area.base = NULL;
    if (!self->conf.child_main)
        child_main(self->conf.env, &c->area, wake_fd, c->ws_dir, c->landlock_fd,
                   c->session_capable, c->egress);
    self->conf.child_main(self->conf.env, &c->area, wake_fd, c->ws_dir, c->landlock_fd,
                          c->session_capable, c->egress);
    _exit(127); /* it returned: a broken child, never a second zygote */
}

/* What a slot needs before its fork: a workspace, an area, a socketpair. 0, or -1 (logged,
 * undone). */
static int s_prepare(pool_t *self, child_t *c, int sv[2], int session_capable, int egress)
{
    memset(c, 0, sizeof *c);
    c->landlock_fd = -1;
    c->session_capable = session_capable;
    c->egress = egress;
    if (self->conf.ws && s_workspace_for(self, c) < 0) return -1;
    int rc = area_map(&c->area, self->conf.job_cap, self->conf.stream_cap);
    if (rc < 0) {
        log_error("event=area_map_failed error=\"%s\"", strerror(-rc));
        s_workspace_drop(self, c);
        return -1;
    }
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
        log_error("event=socketpair_failed error=\"%s\"", strerror(errno));
        area_unmap(&c->area);
        s_workspace_drop(self, c);
        return -1;
    }
    return 0;
}

/* With the namespaces layer each child is pid 1 of a pid namespace of its own: it sees no other
 * process — not its zygote, not another tenant's job — and its pid says nothing about how many
 * ran before it. glibc's fork() takes no flags, hence the raw clone; what fork() adds is not
 * needed here: the zygote is single-threaded (no lock another thread could hold, no atfork
 * handler of a thread pool to run) and the tid glibc keeps for it, 1 (it is pid 1 of the
 * namespace the node cloned it into), is the child's own too. A child pooled for a session is
 * pid 2 of its lineage's namespace instead, under a holder (pidns.h): it must be able to fork
 * itself with CLONE_PARENT, which the kernel refuses to a namespace's init. */
static pid_t s_clone(pool_t *self, child_t *c)
{
    if (!(self->conf.env->sb->layers & LAYER_NAMESPACES)) return fork();
    if (!c->session_capable)
        return (pid_t)syscall(SYS_clone, CLONE_NEWPID | SIGCHLD, NULL, NULL, NULL, NULL);
    if ((c->holder = pidns_hold(self->pidns)) < 0) {
        c->holder = 0;
        return -1;
    }
    pid_t pid = pidns_fork(self->pidns, c->holder);
    if (pid < 0) {
        int e = errno;
        pidns_unref(self->pidns, c->holder);
        c->holder = 0;
        errno = e;
    }
    return pid;
}

static child_t *s_fork(pool_t *self, int session_capable, int egress)
{
    child_t *c = s_free_slot(self);
    int sv[2];
    if (egress && !self->conf.env->sb->egress_port) return NULL; /* this zygote serves none */
    if (!c || s_prepare(self, c, sv, session_capable, egress) < 0) return NULL;
    uint64_t t0 = clock_mono_us();
    pid_t pid = s_clone(self, c);
    if (pid > 0) log_debug("event=forked us=%llu", (unsigned long long)(clock_mono_us() - t0));
    if (pid < 0) {
        log_error("event=fork_failed error=\"%s\"", strerror(errno));
        close(sv[0]);
        close(sv[1]);
        area_unmap(&c->area);
        s_workspace_drop(self, c);
        return NULL;
    }
    if (pid == 0) s_become_child(self, c, sv[0]);
    self->forks++;
    close(sv[0]);
    if (c->landlock_fd >= 0) close(c->landlock_fd); /* the child has it */
    c->landlock_fd = -1;
    /* Later children must not inherit this area: it is this child's alone, and not copying
     * it keeps every later fork cheaper. */
    if (madvise(c->area.base, c->area.size, MADV_DONTFORK) < 0)
        log_warn("event=madvise_failed error=\"%s\"", strerror(errno));
    c->pid = pid;
    c->sock = sv[1];
    c->state = CHILD_IDLE;
    return c;
}

child_t *pool_fork(pool_t *self)
{
    return s_fork(self, 0, 0);
}

child_t *pool_fork_session(pool_t *self)
{
    return s_fork(self, 1, 0);
}

child_t *pool_fork_egress(pool_t *self)
{
    return s_fork(self, 0, 1);
}

child_t *pool_free_slot(pool_t *self, const child_t *parent)
{
    child_t *c = s_free_slot(self);
    if (c) {
        memset(c, 0, sizeof *c);
        c->landlock_fd = -1;
        c->sock = -1;
        c->holder = parent->holder; /* the clone is born in its parent's namespace */
        if (c->holder && self->pidns) pidns_ref(self->pidns, c->holder);
    }
    return c;
}

static child_t *s_take(pool_t *self, int session_capable, int egress, int extra)
{
    /* A child that is still warming up would make the job wait for it: take a ready one
     * when there is one (the phase is the child's word, but a wrong one only costs time). */
    child_t *ready = NULL, *warming = NULL;
    size_t n_ready = 0;
    for (size_t i = 0; i < self->conf.slots; i++) {
        child_t *k = &self->children[i];
        if (k->state != CHILD_IDLE || k->session_capable != session_capable || k->egress != egress)
            continue;
        if (area_hdr(&k->area)->phase == AREA_READY) {
            n_ready++;
            if (!ready) ready = k;
        } else if (!warming) {
            warming = k;
        }
    }
    /* Under a flood the flood's jobs would take every child as soon as it is ready, and a
     * quiet tenant's call would always wait for one still warming up (measured: half of them
     * on 2 saturated cores). */
    if (ready && !(extra && n_ready == 1)) return ready;
    if (warming) return warming;
    return s_fork(self, session_capable, egress); /* the pool ran dry: fork on the job's path */
}

child_t *pool_take(pool_t *self, int extra, int egress)
{
    return s_take(self, 0, egress, extra);
}

child_t *pool_take_session(pool_t *self, int egress)
{
    return s_take(self, 1, egress, 0);
}

/* ---- deadlines and kills ------------------------------------------------------------------- */

static void s_arm_timer(pool_t *self)
{
    uint64_t next = 0;
    for (size_t i = 0; i < self->conf.slots; i++) {
        child_t *c = &self->children[i];
        if (c->state == CHILD_RUNNING && !c->killed && (!next || c->deadline_us < next))
            next = c->deadline_us;
    }
    struct itimerspec its = {0};
    if (next) {
        its.it_value.tv_sec = (time_t)(next / 1000000u);
        its.it_value.tv_nsec = (long)(next % 1000000u) * 1000;
        if (!its.it_value.tv_sec && !its.it_value.tv_nsec) its.it_value.tv_nsec = 1;
    }
    if (timerfd_settime(self->timer_fd, TFD_TIMER_ABSTIME, &its, NULL) < 0)
        log_error("event=timerfd_failed error=\"%s\"", strerror(errno));
}

void pool_kill(child_t *c, kill_reason_t why)
{
    if (c->killed || c->pid <= 0) return; /* a clone not yet known has no pid to kill */
    c->killed = why;
    /* the whole process group: nothing the job might have left behind survives */
    if (kill(-c->pid, SIGKILL) < 0 && errno != ESRCH) kill(c->pid, SIGKILL);
}

void pool_start(pool_t *self, child_t *c)
{
    if (area_hdr(&c->area)->phase == AREA_READY) self->idle_deaths = 0;
    c->start_us = clock_mono_us();
    c->deadline_us = c->start_us + (uint64_t)c->limits.wall_ms * 1000u;
    c->state = CHILD_RUNNING;
    char b = 'j';
    ssize_t n = write(c->sock, &b, 1);
    if (n != 1) pool_kill(c, KILL_CANCEL); /* reaping reports it; the child is already gone */
    s_arm_timer(self);
}

void pool_watch(pool_t *self, child_t *c, long wall_ms)
{
    c->start_us = clock_mono_us();
    c->deadline_us = c->start_us + (uint64_t)wall_ms * 1000u;
    c->state = CHILD_RUNNING;
    c->answered = 0;
    s_arm_timer(self);
}

void pool_forget(pool_t *self, child_t *c)
{
    s_release(self, c);
}

child_t *pool_find_pid(pool_t *self, pid_t pid)
{
    return pid > 0 ? s_find_pid(self, pid) : NULL;
}

int pool_is_holder(const pool_t *self, pid_t pid)
{
    return self->pidns && pidns_is_holder(self->pidns, pid);
}

size_t pool_holders(const pool_t *self)
{
    return self->pidns ? pidns_holders(self->pidns) : 0;
}

void pool_discard(pool_t *self, child_t *c)
{
    (void)self;
    c->state = CHILD_RUNNING;
    c->answered = 1;
    pool_kill(c, KILL_CANCEL); /* killed: no deadline of its own for the timer */
}

child_t *pool_find_job(pool_t *self, const uint8_t id[ID_BYTES])
{
    for (size_t i = 0; i < self->conf.slots; i++)
        if (self->children[i].state == CHILD_RUNNING &&
            memcmp(self->children[i].id, id, ID_BYTES) == 0)
            return &self->children[i];
    return NULL;
}

void pool_interrupt(pool_t *self, child_t *c, kill_reason_t why)
{
    if (c->killed || c->interrupted) return;
    c->interrupted = why;
    if (kill(c->pid, SIGINT) < 0 && errno != ESRCH) {
        pool_kill(c, why);
        return;
    }
    c->deadline_us = clock_mono_us() + (uint64_t)self->conf.interrupt_grace_ms * 1000u;
    s_arm_timer(self);
}

void pool_on_timer(pool_t *self)
{
    uint64_t expirations;
    if (read(self->timer_fd, &expirations, sizeof expirations) < 0 && errno != EAGAIN)
        log_warn("event=timerfd_read_failed error=\"%s\"", strerror(errno));
    uint64_t now = clock_mono_us();
    for (size_t i = 0; i < self->conf.slots; i++) {
        child_t *c = &self->children[i];
        if (c->state != CHILD_RUNNING || c->killed || c->deadline_us > now) continue;
        /* A session's cell is interrupted first (KeyboardInterrupt), so the session can live
         * on; one that does not stop within the grace is killed, and its session with it. */
        if (c->session && !c->interrupted && area_hdr(&c->area)->phase == AREA_STARTED)
            pool_interrupt(self, c, KILL_TIMEOUT);
        else
            pool_kill(c, c->interrupted ? c->interrupted : KILL_TIMEOUT);
    }
    s_arm_timer(self);
}

/* ---- ends ---------------------------------------------------------------------------------- */

/* A running child wrote its done byte: answer now, then make sure it ends. The socket is the
 * job's to write too: a byte before the runner has finished is the job's own, and from then on
 * the zygote stops listening to that socket (the child's exit still ends the job, through
 * SIGCHLD): one wake-up per job at most, however many bytes it writes, so a job cannot make
 * the shared zygote spend its CPU. A forged finish only hurts the forger, who gets its own
 * answer early and is killed. */
void pool_on_done(pool_t *self, child_t *c)
{
    char b[16];
    ssize_t n = read(c->sock, b, sizeof b);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
        close(c->sock); /* the child is gone or going: SIGCHLD will tell how */
        c->sock = -1;
        return;
    }
    if (c->answered) return;
    if (area_hdr(&c->area)->phase != AREA_FINISHED) {
        pool_mute(self, c);
        return;
    }
    self->conf.on_finished(self->conf.arg, c, 0, NULL);
    c->answered = 1;
    kill(c->pid, SIGKILL); /* nothing of the job may run past its answer */
}

void pool_mute(pool_t *self, child_t *c)
{
    c->muted = 1;
    self->muted++;
}

void pool_kept(pool_t *self, child_t *c)
{
    c->state = CHILD_KEPT;
    c->killed = KILL_NONE;
    c->interrupted = KILL_NONE;
    c->answered = 0;
    c->muted =
        0; /* heard again at its next job (zygote_sessions.c drains what the last one left) */
    c->deadline_us = 0;
    c->running_sent = 0;
    c->streamed[0] = c->streamed[1] = 0;
    jobcopy_private_free(&c->inputs);
    s_arm_timer(self);
}

void pool_on_sigchld(pool_t *self)
{
    struct signalfd_siginfo si;
    while (read(self->sig_fd, &si, sizeof si) == sizeof si) {
    }
    for (;;) {
        int wstatus;
        struct rusage ru;
        pid_t pid = wait4(-1, &wstatus, WNOHANG, &ru);
        if (pid <= 0) break;
        child_t *c = s_find_pid(self, pid);
        if (!c) {
            if (!self->pidns || !pidns_reaped(self->pidns, pid))
                log_debug("event=unknown_child_reaped pid=%d status=%d", pid, wstatus);
            continue;
        }
        if (c->state == CHILD_RUNNING && !c->answered)
            self->conf.on_finished(self->conf.arg, c, wstatus, &ru);
        else if (c->state == CHILD_IDLE && !c->killed && area_hdr(&c->area)->phase != AREA_READY) {
            /* said once, then at 2, 4, 8…: a layer failing in every child would say it at
             * every fork (pool_refill_delay_ms slows those down) */
            uint32_t n = ++self->idle_deaths;
            if (!(n & (n - 1)))
                log_warn("event=idle_child_died pid=%d status=%d in_a_row=%u", pid, wstatus, n);
        } else if (c->state == CHILD_IDLE)
            log_warn("event=idle_child_died pid=%d status=%d", pid, wstatus);
        if (c->session) self->conf.on_session_gone(self->conf.arg, c, wstatus);
        s_release(self, c);
    }
    s_arm_timer(self);
}

/* ---- counts -------------------------------------------------------------------------------- */

int pool_sig_fd(const pool_t *self)
{
    return self->sig_fd;
}

int pool_timer_fd(const pool_t *self)
{
    return self->timer_fd;
}

size_t pool_slots(const pool_t *self)
{
    return self->conf.slots;
}

child_t *pool_child(pool_t *self, size_t i)
{
    return &self->children[i];
}

size_t pool_count(const pool_t *self, child_state_t state)
{
    size_t n = 0;
    for (size_t i = 0; i < self->conf.slots; i++) n += self->children[i].state == state;
    return n;
}

size_t pool_tenant_running(const pool_t *self, const char *tenant)
{
    size_t n = 0;
    for (size_t i = 0; i < self->conf.slots; i++) {
        const child_t *c = &self->children[i];
        /* one that answered or was killed is only being torn down */
        n += c->state == CHILD_RUNNING && !c->answered && !c->killed && !strcmp(c->tenant, tenant);
    }
    return n;
}

size_t pool_ready(const pool_t *self)
{
    size_t n = 0;
    for (size_t i = 0; i < self->conf.slots; i++)
        n += self->children[i].state == CHILD_IDLE && !self->children[i].session_capable &&
             !self->children[i].egress && area_hdr(&self->children[i].area)->phase == AREA_READY;
    return n;
}

size_t pool_idle(const pool_t *self, int session_capable)
{
    size_t n = 0;
    for (size_t i = 0; i < self->conf.slots; i++)
        n += self->children[i].state == CHILD_IDLE && !self->children[i].egress &&
             self->children[i].session_capable == session_capable;
    return n;
}

size_t pool_idle_egress(const pool_t *self)
{
    size_t n = 0;
    for (size_t i = 0; i < self->conf.slots; i++)
        n += self->children[i].state == CHILD_IDLE && self->children[i].egress &&
             !self->children[i].session_capable;
    return n;
}

int pool_refill_delay_ms(const pool_t *self)
{
    if (self->idle_deaths < 3) return 0;
    uint32_t shift = self->idle_deaths - 3 < 7 ? self->idle_deaths - 3 : 7;
    return 10 << shift > 1000 ? 1000 : 10 << shift;
}

uint64_t pool_forks(const pool_t *self)
{
    return self->forks;
}

uint64_t pool_muted(const pool_t *self)
{
    return self->muted;
}
