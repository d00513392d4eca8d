/* executor-node/child/child.c — see child.h. Everything here runs in the child, whose code is about
 * to become a tenant's: each step must hold before the next, and no user code runs before the
 * last layer is in place. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "executor-node/area/jobcopy.h"
#include "executor-node/python/audit.h"
#include "executor-node/python/python.h"
#include "executor-node/sandbox/childsig.h"
#include "executor-node/sandbox/filter.h"
#include "executor-node/sandbox/landlock.h"
#include "child.h"
#include "session_child.h"
#include "wake.h"

static uint64_t s_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Every layer that does not depend on the job, in the order docs/sandbox.md gives. NULL, or the layer
 * that could not be entered (errno says why). */
static const char *s_lock(const sandbox_t *sb, area_t *area, int wake_fd, int egress)
{
    unsigned on = sb->layers;
    /* the reporters the layers below rely on: SIGSYS for seccomp's traps, SIGXCPU for the CPU
     * limit, the crash accounting behind an honest memory_limit */
    if (childsig_enter(area) < 0) return "signals";
    if ((on & LAYER_RLIMITS) && sandbox_enter_rlimits(sb) < 0) return "rlimits";
    /* Landlock needs no_new_privs or CAP_SYS_ADMIN in our namespace; an unprivileged node
     * without namespaces has neither until nnp is set, so it is set first there (nnp only
     * affects execve, which seccomp traps anyway). */
    if ((on & LAYER_LANDLOCK) &&
        landlock_enter(sb->landlock_fd, !(on & LAYER_NAMESPACES) && geteuid() != 0) < 0)
        return "landlock";
    if ((on & LAYER_UID) && sandbox_enter_uid(sb) < 0) return "uid";
    /* seccomp without CAP_SYS_ADMIN requires nnp, so the filter brings it along */
    if ((on & (LAYER_NNP | LAYER_SECCOMP)) && sandbox_enter_nnp() < 0) return "nnp";
    prologue_t mine = {.session = sb->session,
                       .site = (uint64_t)(uintptr_t)session_clone_site,
                       .wake_site = (uint64_t)(uintptr_t)wake_send_site,
                       .wake_fd = wake_fd,
                       .egress = egress};
    if ((on & LAYER_SECCOMP) && filter_enter(&sb->filter, &mine) < 0) return "seccomp";
    return NULL;
}

/* One byte from the zygote: 1, or 0 when it closed the socket instead. */
static int s_wait_wake(int wake_fd)
{
    char b;
    ssize_t n;
    do n = read(wake_fd, &b, 1);
    while (n < 0 && errno == EINTR);
    return n == 1;
}

/* A layer could not be entered: reported with the job this child was meant for (the zygote
 * reads the meta when it reaps), which never starts. */
static _Noreturn void s_fail_before_job(area_t *area, int wake_fd, const char *why)
{
    area_report(area, "internal_error", "SandboxError", why);
    area_hdr(area)->phase = AREA_FINISHED;
    s_wait_wake(wake_fd);
    _exit(0);
}

/* The job: its own limits, then the Python layer (py_run_job arms the audit hook), then the
 * done byte with our own resource use, so the zygote can answer before the exit teardown
 * (which takes as long as the job itself for print(1)). */
static _Noreturn void s_run(const child_env_t *env, const sandbox_t *sb, area_t *area, int wake_fd,
                            const char *ws_dir)
{
    area_hdr_t *h = area_hdr(area);
    const jobspec_t *job = (const jobspec_t *)(void *)area_job(area); /* decoded by the zygote */
    char err[256];
    h->phase = AREA_RUNNING;
    if (sandbox_child_limits(sb, &job->limits, area, err, sizeof err) < 0) {
        area_report(area, "internal_error", "SandboxError", err);
        _exit(0);
    }
    py_run_job(job, env->profile, area, (sb->layers & LAYER_PYTHON) != 0, ws_dir);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    h->self_cpu_us = (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000u +
                     (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
    h->self_maxrss_kb = (uint64_t)ru.ru_maxrss;
    h->cpu_finish_ns = s_cpu_ns();
    if (wake_send(wake_fd, "d", 1) < 0) {
        /* the zygote is gone or killing us: nothing left to tell */
    }
    _exit(0);
}

_Noreturn void child_main(const child_env_t *env, area_t *area, int wake_fd, const char *ws_dir,
                          int landlock_fd, int session, int egress)
{
    area_hdr_t *h = area_hdr(area);
    sandbox_t sb = *env->sb; /* our copy: a workspace child brings its own ruleset */
    sb.session = session;
    char err[256];
    h->cpu_forked_ns = s_cpu_ns();
    h->forked_ns = clock_mono_us() * 1000u;
    py_after_fork(); /* CPython's own after-fork bookkeeping, before anything else runs */
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    if (egress && !ws_dir[0]) sb.landlock_fd = sb.landlock_egress_fd; /* the egress ruleset */
    if (ws_dir[0]) { /* its own directory, its own ruleset; relative paths land there */
        sb.landlock_fd = landlock_fd;
        if (chdir(ws_dir) < 0) _exit(1);
        audit_set_workspace(ws_dir);
    }
    /* the process: its own group, no fd but the wake socket, dies with the zygote */
    if (sandbox_child_prepare(&sb, wake_fd) < 0) _exit(1);
    /* the zygote died before PDEATHSIG was set? (In its own pid namespace the parent is out of
     * sight, getppid() is 0; and the zygote is pid 1 of the namespace around it, whose death
     * ends every process inside.) */
    if (!(sb.layers & LAYER_NAMESPACES) && getppid() != env->zygote) _exit(1);
    /* rlimits, Landlock, uid, nnp, seccomp: every layer that does not depend on the job */
    const char *layer = s_lock(&sb, area, wake_fd, egress);
    if (layer) {
        snprintf(err, sizeof err, "entering layer %s: %s", layer, strerror(errno));
        s_fail_before_job(area, wake_fd, err);
    }
    /* No warm-up run: measured, a dry run in the pooled child took 270 copy-on-write faults
     * per job against 79 without (it touches pages the job never needs), and three times the
     * CPU. The job pays its own first touches, less those pretouch knows of. */
    pretouch_apply(env->touch);
    h->locked_ns = clock_mono_us() * 1000u;
    h->cpu_locked_ns = s_cpu_ns();
    h->phase = AREA_READY;
    if (!s_wait_wake(wake_fd)) _exit(0); /* the zygote closed the socket: not needed */
    h->wake_ns = clock_mono_us() * 1000u;
    h->cpu_wake_ns = s_cpu_ns();
    const jobspec_t *job = (const jobspec_t *)(void *)area_job(area);
    if (session && (job->kind == JOB_SESSION_NEW || job->kind == JOB_SESSION_RESTORE))
        session_child_main(env, &sb, area, wake_fd, ws_dir); /* kept: cell after cell */
    s_run(env, &sb, area, wake_fd, ws_dir);
}
