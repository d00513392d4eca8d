/* executor-node/zygote.c — see zygote.h.
 *
 * The loop waits on three fds: the channel to the node (jobs, cancels), a signalfd for
 * SIGCHLD (a child finished), a timerfd armed at the earliest wall-clock deadline. A job
 * takes an idle pre-forked child: its JobSpec is copied into the child's shared area and one
 * byte on the child's wake pipe starts it. When the child is reaped, wait4's status and
 * rusage plus what the child wrote into the area become the Result. The pool is refilled
 * after the result is sent, so the fork is off the next job's path. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../common/clock.h"
#include "../common/log.h"
#include "../common/profiles.h"
#include "../proto/job.h"
#include "../proto/mpack.h"
#include "../proto/result.h"
#include "outcome.h"
#include "pretouch.h"
#include "python.h"
#include "sandbox.h"
#include "scrub.h"
#include "workspace.h"
#include "zchan.h"
#include "zmsg.h"
#include "zygote.h"

#define CHAN_FD     3
#define JOB_CAP     (8u << 20) /* a JobSpec this large is refused before it reaches a child */
#define MAX_CHILDREN 1024
#define PROGRESS_US    50000u      /* how often running jobs' output is streamed */
#define PROGRESS_CHUNK (64u << 10) /* most bytes per stream per look */

enum { CHILD_FREE = 0, CHILD_IDLE, CHILD_RUNNING };

typedef struct {
    int      state;       /* CHILD_* */
    pid_t    pid;
    int      sock;        /* our end of the child's socketpair: wake byte out, done byte in */
    int      answered;    /* its result is sent; only the reaping is left */
    uint32_t streamed[2]; /* stdout/stderr bytes already sent as progress */
    int      running_sent;
    area_t   area;
    uint8_t  id[ID_BYTES];
    limits_t limits;
    int      kind;        /* JOB_EXEC / JOB_VALIDATE */
    char     tenant[JOB_MAX_TENANT + 1]; /* for the audit log */
    uint64_t start_us;    /* dispatch, monotonic */
    uint64_t deadline_us;
    int      killed;      /* KILL_* */
    char     ws_dir[WORKSPACE_PATH_MAX]; /* its workspace directory; "" for other profiles */
    int      landlock_fd; /* its own Landlock ruleset until forked (workspace profiles) */
    size_t   n_inputs;    /* the job's input files, for telling them from its outputs */
} child_t;

typedef struct {
    const zygote_conf_t *conf;
    const profile_t     *profile;
    sandbox_t            sb;
    zchan_t             *chan;
    int                  sig_fd;
    int                  timer_fd;
    child_t             *children;
    size_t               n_children; /* slots in the table */
    pid_t                self_pid;
    int                  child_sock; /* in a child: its end of the socketpair */
    long                 jobs_done;
    uint64_t             forks;
    uint64_t             forks_reported;
    uint64_t             started_us;
    int                  retiring;
    int                  quit;
    pretouch_t           touch;      /* pages a job makes private, pre-faulted by pooled children */
    workspace_t          ws;         /* workspace profiles: where the children's directories are */
} zygote_t;

static zygote_t *s_z; /* for the child, which consults the table right after fork */

static uint64_t s_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- the child ---------------------------------------------------------------------- */

static void s_child_fail(area_t *area, const char *type, const char *message)
{
    buf_t out;
    buf_init(&out);
    mpw_t w;
    mpw_init(&w, &out);
    mpw_map(&w, 2);
    mpw_kv_str(&w, "status", "internal_error");
    mpw_str(&w, "error");
    mpw_map(&w, 2);
    mpw_kv_str(&w, "type", type);
    mpw_kv_str(&w, "message", message);
    if (out.len <= JOBAREA_META_CAP) {
        memcpy(area_meta(area), out.data, out.len);
        area_hdr(area)->meta_len = (uint32_t)out.len;
    }
    buf_free(&out);
}

static void s_child_run(zygote_t *z, child_t *c)
{
    area_hdr_t *h = area_hdr(&c->area);
    jobspec_t   job;
    char        err[256];
    uint32_t    len = h->job_len < c->area.job_cap ? h->job_len : c->area.job_cap;
    h->phase = AREA_RUNNING;
    if (jobspec_decode(area_job(&c->area), len, &job, err, sizeof err) < 0) {
        s_child_fail(&c->area, "BadJob", err);
        _exit(0);
    }
    profile_apply_limits(z->profile, &job.limits);
    if (sandbox_child_limits(&z->sb, &job.limits, &c->area, err, sizeof err) < 0) {
        s_child_fail(&c->area, "SandboxError", err);
        _exit(0);
    }
    py_run_job(&job, z->profile, &c->area, (z->sb.layers & LAYER_PYTHON) != 0);
    /* Tell the zygote the result is complete, with our own resource use, so it can answer
     * before the exit teardown (which takes as long as the job itself for print(1)). */
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    area_hdr_t *hh = area_hdr(&c->area);
    hh->self_cpu_us = (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000u +
                      (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
    hh->self_maxrss_kb = (uint64_t)ru.ru_maxrss;
    hh->cpu_finish_ns = s_cpu_ns();
    char d = 'd';
    if (write(z->child_sock, &d, 1) < 0) {
    }
    _exit(0);
}

static void s_child_main(zygote_t *z, child_t *c, int wake_rd)
{
    z->child_sock = wake_rd;
    area_hdr(&c->area)->cpu_forked_ns = s_cpu_ns();
    area_hdr(&c->area)->forked_ns = clock_mono_us() * 1000u;
    py_after_fork();
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    /* Other children's areas are MADV_DONTFORK in the zygote, so this child never sees
     * another tenant's job or output; forget their addresses too. */
    for (size_t i = 0; i < z->n_children; i++)
        if (&z->children[i] != c) z->children[i].area.base = NULL;
    if (c->ws_dir[0]) { /* its own directory, its own ruleset; relative paths land there */
        z->sb.landlock_fd = c->landlock_fd;
        if (chdir(c->ws_dir) < 0) _exit(1);
        py_set_workspace(c->ws_dir);
    }
    if (sandbox_child_prepare(&z->sb, wake_rd) < 0) _exit(1);
    if (getppid() != z->self_pid) _exit(1); /* the zygote died before PDEATHSIG was set */
    char err[256];
    if (sandbox_child_lock(&z->sb, &c->area, err, sizeof err) < 0) {
        /* Reported with the job it was meant for: the zygote sees the meta when it reaps. */
        s_child_fail(&c->area, "SandboxError", err);
        area_hdr(&c->area)->phase = AREA_FINISHED;
        char b;
        while (read(wake_rd, &b, 1) < 0 && errno == EINTR) {
        }
        _exit(0);
    }
    /* No warm-up run: measured, a dry run in the pooled child took 270 copy-on-write faults
     * per job against 79 without (it touches pages the job never needs), and three times the
     * CPU. The job pays its own first touches. */
    pretouch_apply(&z->touch);
    area_hdr(&c->area)->locked_ns = clock_mono_us() * 1000u;
    area_hdr(&c->area)->cpu_locked_ns = s_cpu_ns();
    area_hdr(&c->area)->phase = AREA_READY;
    char    b;
    ssize_t n;
    do n = read(wake_rd, &b, 1);
    while (n < 0 && errno == EINTR);
    if (n != 1) _exit(0); /* the zygote closed the socket: this child is not needed */
    area_hdr(&c->area)->wake_ns = clock_mono_us() * 1000u;
    area_hdr(&c->area)->cpu_wake_ns = s_cpu_ns();
    s_child_run(z, c);
}

/* ---- pool -------------------------------------------------------------------------------- */

static child_t *s_slot(zygote_t *z)
{
    for (size_t i = 0; i < z->n_children; i++)
        if (z->children[i].state == CHILD_FREE) return &z->children[i];
    return NULL;
}

/* A pooled child's workspace directory and the Landlock ruleset that opens it to that child
 * alone, made before the fork (workspace.h). */
static int s_workspace_for(zygote_t *z, child_t *c)
{
    char err[256];
    if (workspace_make(&z->ws, c->ws_dir, err, sizeof err) < 0) {
        log_error("event=workspace_failed error=\"%s\"", err);
        c->ws_dir[0] = '\0';
        return -1;
    }
    if ((z->sb.layers & LAYER_LANDLOCK) &&
        (c->landlock_fd = sandbox_landlock_ruleset(&z->sb, z->profile, c->ws_dir, err, sizeof err)) < 0) {
        log_error("event=workspace_failed error=\"%s\"", err);
        workspace_remove(&z->ws, c->ws_dir);
        c->ws_dir[0] = '\0';
        return -1;
    }
    return 0;
}

static void s_workspace_drop(zygote_t *z, child_t *c)
{
    if (c->landlock_fd >= 0) close(c->landlock_fd);
    c->landlock_fd = -1;
    if (c->ws_dir[0]) workspace_remove(&z->ws, c->ws_dir);
    c->ws_dir[0] = '\0';
}

static child_t *s_fork_child(zygote_t *z)
{
    child_t *c = s_slot(z);
    if (!c) return NULL;
    memset(c, 0, sizeof *c);
    c->landlock_fd = -1;
    if (z->profile->workspace && s_workspace_for(z, c) < 0) return NULL;
    int rc = area_map(&c->area, JOB_CAP, (uint32_t)z->conf->stream_cap);
    if (rc < 0) {
        log_error("event=area_map_failed error=\"%s\"", strerror(-rc));
        s_workspace_drop(z, c);
        return NULL;
    }
    int p[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, p) < 0) {
        log_error("event=socketpair_failed error=\"%s\"", strerror(errno));
        area_unmap(&c->area);
        s_workspace_drop(z, c);
        return NULL;
    }
    uint64_t t0 = clock_mono_us();
    pid_t pid = fork();
    if (pid > 0) log_debug("event=forked us=%llu", (unsigned long long)(clock_mono_us() - t0));
    if (pid < 0) {
        log_error("event=fork_failed error=\"%s\"", strerror(errno));
        close(p[0]);
        close(p[1]);
        area_unmap(&c->area);
        s_workspace_drop(z, c);
        return NULL;
    }
    if (pid == 0) s_child_main(z, c, p[0]); /* never returns */
    z->forks++;
    close(p[0]);
    if (c->landlock_fd >= 0) close(c->landlock_fd); /* the child has it */
    c->landlock_fd = -1;
    /* Later children must not inherit this area: it is this child's alone, and not copying
     * it keeps every later fork cheaper. */
    if (madvise(c->area.base, c->area.size, MADV_DONTFORK) < 0)
        log_warn("event=madvise_failed error=\"%s\"", strerror(errno));
    c->pid = pid;
    c->sock = p[1];
    c->state = CHILD_IDLE;
    return c;
}

static size_t s_count(const zygote_t *z, int state)
{
    size_t n = 0;
    for (size_t i = 0; i < z->n_children; i++) n += z->children[i].state == state;
    return n;
}

static size_t s_ready_children(const zygote_t *z)
{
    size_t n = 0;
    for (size_t i = 0; i < z->n_children; i++)
        n += z->children[i].state == CHILD_IDLE && area_hdr(&z->children[i].area)->phase == AREA_READY;
    return n;
}

static int s_pool_short(const zygote_t *z)
{
    return !z->retiring && s_count(z, CHILD_IDLE) < (size_t)z->conf->pool;
}

static child_t *s_find_pid(zygote_t *z, pid_t pid)
{
    for (size_t i = 0; i < z->n_children; i++)
        if (z->children[i].state != CHILD_FREE && z->children[i].pid == pid) return &z->children[i];
    return NULL;
}

static child_t *s_find_job(zygote_t *z, const uint8_t id[ID_BYTES])
{
    for (size_t i = 0; i < z->n_children; i++)
        if (z->children[i].state == CHILD_RUNNING && memcmp(z->children[i].id, id, ID_BYTES) == 0)
            return &z->children[i];
    return NULL;
}

static void s_release(zygote_t *z, child_t *c)
{
    if (c->sock > 0) close(c->sock);
    area_unmap(&c->area);
    s_workspace_drop(z, c); /* reaped: nothing writes there any more */
    memset(c, 0, sizeof *c);
}

/* ---- deadlines ----------------------------------------------------------------------------- */

static void s_arm_timer(zygote_t *z)
{
    uint64_t next = 0;
    for (size_t i = 0; i < z->n_children; i++) {
        child_t *c = &z->children[i];
        if (c->state == CHILD_RUNNING && !c->killed && (!next || c->deadline_us < next))
            next = c->deadline_us;
    }
    struct itimerspec its = {0};
    if (next) {
        its.it_value.tv_sec = (time_t)(next / 1000000u);
        its.it_value.tv_nsec = (long)(next % 1000000u) * 1000;
        if (!its.it_value.tv_sec && !its.it_value.tv_nsec) its.it_value.tv_nsec = 1;
    }
    if (timerfd_settime(z->timer_fd, TFD_TIMER_ABSTIME, &its, NULL) < 0)
        log_error("event=timerfd_failed error=\"%s\"", strerror(errno));
}

static void s_kill(child_t *c, int why)
{
    if (c->killed) return;
    c->killed = why;
    /* the whole process group: nothing the job might have left behind survives */
    if (kill(-c->pid, SIGKILL) < 0 && errno != ESRCH) kill(c->pid, SIGKILL);
}

static void s_on_timer(zygote_t *z)
{
    uint64_t expirations;
    if (read(z->timer_fd, &expirations, sizeof expirations) < 0 && errno != EAGAIN)
        log_warn("event=timerfd_read_failed error=\"%s\"", strerror(errno));
    uint64_t now = clock_mono_us();
    for (size_t i = 0; i < z->n_children; i++) {
        child_t *c = &z->children[i];
        if (c->state == CHILD_RUNNING && !c->killed && c->deadline_us <= now) s_kill(c, KILL_TIMEOUT);
    }
    s_arm_timer(z);
}

/* ---- results ------------------------------------------------------------------------------ */

static void s_collect(const child_t *c, int wstatus, const struct rusage *ru, result_t *res)
{
    outcome_t o = {.area = &c->area, .limits = c->limits, .killed = (kill_reason_t)c->killed,
                   .wstatus = wstatus, .ru = ru,
                   .wall_ms = (double)(clock_mono_us() - c->start_us) / 1000.0};
    outcome_result(&o, res);
    if (!c->ws_dir[0] || c->kind != JOB_EXEC) return;
    /* What the job wrote, less its unchanged inputs (taken from the area's copy of the
     * JobSpec: the child could have changed it, which only changes its own answer). */
    jobspec_t job;
    char      err[64];
    uint32_t  len = area_hdr(&c->area)->job_len;
    int       have = c->n_inputs &&
                     jobspec_decode(area_job(&c->area), len < c->area.job_cap ? len : c->area.job_cap,
                                    &job, err, sizeof err) == 0;
    workspace_collect(c->ws_dir, have ? &job : NULL, res);
    if (have) scrub_jobspec(&job);
}

static void s_log_job(const child_t *c, const result_t *res, long minflt)
{
    if (log_get_level() > LOG_DEBUG) return;
    char        idstr[ID_STR_LEN + 1];
    area_hdr_t *h = area_hdr(&c->area);
    uint64_t    t0 = c->start_us * 1000u;
    id_format(c->id, idstr);
    /* Where a job's time went, relative to its dispatch (µs): for profiling the pool. */
    log_debug("event=job_done job=%s status=%s wall_ms=%.3f cpu_ms=%.2f wake_us=%lld "
              "start_us=%lld end_us=%lld finish_us=%lld minflt=%ld lock_us=%lld cpu_fork_us=%lld "
              "cpu_lock_us=%lld cpu_job_us=%lld",
              idstr, status_name(res->status), res->wall_ms, res->cpu_ms,
              h->wake_ns ? (long long)(h->wake_ns - t0) / 1000 : -1,
              h->code_start_ns ? (long long)(h->code_start_ns - t0) / 1000 : -1,
              h->code_end_ns ? (long long)(h->code_end_ns - t0) / 1000 : -1,
              h->finish_ns ? (long long)(h->finish_ns - t0) / 1000 : -1, minflt,
              (long long)(h->locked_ns - h->forked_ns) / 1000, (long long)h->cpu_forked_ns / 1000,
              (long long)(h->cpu_locked_ns - h->cpu_forked_ns) / 1000,
              (long long)(h->cpu_finish_ns - h->cpu_wake_ns) / 1000);
}

/* One line per security violation, for the operator's audit trail (issue #6). */
static void s_audit_log(const child_t *c, const result_t *res)
{
    if (res->status != ST_SECURITY_VIOLATION) return;
    char idstr[ID_STR_LEN + 1], what[200];
    id_format(c->id, idstr);
    log_warn("event=security_violation audit=1 job=%s tenant=%s profile=%s reason=%s syscall=%s",
             idstr, c->tenant, s_z->profile->name, res->exit.reason ? res->exit.reason : "?",
             log_quote(what, sizeof what, res->exit.syscall ? res->exit.syscall : "?"));
}

/* What the node needs for its metrics, without decoding the whole Result. */
static void s_send_stats(zygote_t *z, const child_t *c, const result_t *res)
{
    zmsg_t m = {.type = ZM_STATS, .id = c->id};
    m.stats = (zmsg_stats_t){.job = 1, .status = res->status, .wall_ms = res->wall_ms,
                             .cpu_ms = res->cpu_ms, .max_rss_kb = res->max_rss_kb,
                             .kind = c->kind, .forks = z->forks - z->forks_reported,
                             .pool = s_count(z, CHILD_IDLE)};
    if (res->status == ST_SECURITY_VIOLATION && res->exit.syscall)
        snprintf(m.stats.syscall, sizeof m.stats.syscall, "%s", res->exit.syscall);
    z->forks_reported = z->forks; /* forks are reported as news since the last summary */
    zmsg_send(z->chan, &m);
}

/* Pool news without a job: forks since the last summary and the pool's size, so the node's
 * forks_total and pool_children are right between jobs too. */
static void s_send_pool_stats(zygote_t *z)
{
    if (z->forks == z->forks_reported) return;
    zmsg_t m = {.type = ZM_STATS};
    m.stats = (zmsg_stats_t){.forks = z->forks - z->forks_reported, .pool = s_count(z, CHILD_IDLE)};
    z->forks_reported = z->forks;
    zmsg_send(z->chan, &m);
}

static void s_send_result(zygote_t *z, const child_t *c, result_t *res)
{
    buf_t out;
    buf_init(&out);
    /* Sized up front: a buffer that grew would leave copies of the result in freed memory. */
    size_t need = 64u << 10;
    need += res->out_len + res->err_len;
    for (size_t i = 0; i < res->n_images; i++) need += res->images[i].len + 64;
    for (size_t i = 0; i < res->n_files; i++) need += res->files[i].len + JOB_MAX_PATH + 16;
    need += (res->result ? strlen(res->result) : 0) + (res->variables ? strlen(res->variables) : 0) +
            (res->validation ? strlen(res->validation) : 0) +
            (res->error.traceback ? strlen(res->error.traceback) : 0) +
            (res->error.message ? strlen(res->error.message) : 0);
    buf_reserve(&out, need);
    if (!res->executor && z->conf->node[0]) res->executor = xstrdup(z->conf->node);
    result_encode(res, &out);
    zmsg_t m = {.type = ZM_RESULT, .id = c->id, .payload = out.data, .len = out.len};
    if (zmsg_send(z->chan, &m) < 0) z->quit = 1;
    explicit_bzero(out.data, out.len);
    buf_free(&out);
    s_audit_log(c, res);
    s_send_stats(z, c, res);
}

static void s_send_simple(zygote_t *z, const uint8_t id[ID_BYTES], status_t st, const char *type,
                          const char *msg)
{
    buf_t out;
    buf_init(&out);
    result_encode_simple(&out, st, type, msg);
    zmsg_t m = {.type = ZM_RESULT, .id = id, .payload = out.data, .len = out.len};
    if (zmsg_send(z->chan, &m) < 0) z->quit = 1;
    buf_free(&out);
}

/* A running child wrote its done byte: answer now, then make sure it ends. A byte written
 * early by the job's own code (the fd is visible to it) is ignored unless the runner has
 * finished; a forged finish only hurts the forger, who gets its own answer early and is
 * killed. */
static void s_on_done(zygote_t *z, child_t *c)
{
    char    b[16];
    ssize_t n = read(c->sock, b, sizeof b);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
        close(c->sock); /* the child is gone or going: SIGCHLD will tell how */
        c->sock = -1;
        return;
    }
    if (c->answered || area_hdr(&c->area)->phase != AREA_FINISHED) return;
    result_t res;
    result_init(&res);
    s_collect(c, 0, NULL, &res);
    s_send_result(z, c, &res);
    s_log_job(c, &res, -1);
    scrub_result(&res);
    c->answered = 1;
    z->jobs_done++;
    kill(c->pid, SIGKILL); /* nothing of the job may run past its answer */
}

static void s_on_sigchld(zygote_t *z)
{
    struct signalfd_siginfo si;
    while (read(z->sig_fd, &si, sizeof si) == sizeof si) {
    }
    for (;;) {
        int           wstatus;
        struct rusage ru;
        pid_t         pid = wait4(-1, &wstatus, WNOHANG, &ru);
        if (pid <= 0) break;
        child_t *c = s_find_pid(z, pid);
        if (!c) continue;
        if (c->state == CHILD_RUNNING && !c->answered) {
            result_t res;
            result_init(&res);
            s_collect(c, wstatus, &ru, &res);
            s_send_result(z, c, &res);
            char idstr[ID_STR_LEN + 1];
            id_format(c->id, idstr);
            s_log_job(c, &res, ru.ru_minflt);
            scrub_result(&res);
            z->jobs_done++;
        } else if (c->state == CHILD_IDLE) {
            log_warn("event=idle_child_died pid=%d status=%d", pid, wstatus);
        }
        s_release(z, c);
    }
    s_arm_timer(z);
}

/* ---- jobs from the node ------------------------------------------------------------------- */

static void s_on_job(zygote_t *z, const uint8_t id[ID_BYTES], const uint8_t *body, size_t len)
{
    jobspec_t job;
    char      err[256];
    if (len > JOB_CAP) {
        s_send_simple(z, id, ST_REJECTED, "JobTooLarge", "the JobSpec exceeds the executor's 8 MiB job area");
        return;
    }
    if (jobspec_decode(body, len, &job, err, sizeof err) < 0) {
        log_warn("event=bad_jobspec error=\"%s\"", err);
        s_send_simple(z, id, ST_REJECTED, "BadJob", err);
        return;
    }
    if (strcmp(job.service, z->profile->name) != 0) {
        snprintf(err, sizeof err, "this zygote serves %s, not %s", z->profile->name, job.service);
        scrub_jobspec(&job);
        s_send_simple(z, id, ST_REJECTED, "WrongService", err);
        return;
    }
    if (job.n_files && (!z->profile->workspace || workspace_check_files(&job, err, sizeof err) < 0)) {
        if (!z->profile->workspace)
            snprintf(err, sizeof err, "profile %s has no workspace for files; use python.filesystem "
                     "or python.data_science", z->profile->name);
        scrub_jobspec(&job);
        s_send_simple(z, id, ST_REJECTED, "BadFiles", err);
        return;
    }
    /* A child that is still warming up would make the job wait for it: take a ready one
     * when there is one (the phase is the child's word, but a wrong one only costs time). */
    child_t *c = NULL;
    for (size_t i = 0; i < z->n_children; i++) {
        child_t *k = &z->children[i];
        if (k->state != CHILD_IDLE) continue;
        if (area_hdr(&k->area)->phase == AREA_READY) {
            c = k;
            break;
        }
        if (!c) c = k;
    }
    if (!c) c = s_fork_child(z); /* the pool ran dry: fork on the job's path */
    if (!c) {
        scrub_jobspec(&job);
        s_send_simple(z, id, ST_INTERNAL_ERROR, "ForkFailed", "the executor could not start a sandbox");
        return;
    }
    if (job.n_files && workspace_put(&z->ws, c->ws_dir, &job, err, sizeof err) < 0) {
        /* That child's directory is spoilt: it goes, the job is answered. */
        c->state = CHILD_RUNNING;
        c->answered = 1;
        s_kill(c, KILL_CANCEL); /* killed: no deadline of its own for the timer */
        scrub_jobspec(&job);
        s_send_simple(z, id, ST_INTERNAL_ERROR, "WorkspaceError", err);
        return;
    }
    c->n_inputs = job.n_files;
    area_hdr_t *h = area_hdr(&c->area);
    memcpy(area_job(&c->area), body, len);
    h->job_len = (uint32_t)len;
    profile_apply_limits(z->profile, &job.limits);
    if (job.limits.output_bytes > z->conf->stream_cap) job.limits.output_bytes = z->conf->stream_cap;
    h->out_limit = (uint32_t)job.limits.output_bytes;
    memcpy(c->id, id, ID_BYTES);
    c->limits = job.limits;
    c->kind = job.kind;
    snprintf(c->tenant, sizeof c->tenant, "%s", job.tenant);
    c->start_us = clock_mono_us();
    c->deadline_us = c->start_us + (uint64_t)job.limits.wall_ms * 1000u;
    c->state = CHILD_RUNNING;
    scrub_jobspec(&job);
    char    b = 'j';
    ssize_t n = write(c->sock, &b, 1);
    if (n != 1) s_kill(c, KILL_CANCEL); /* reaping reports it; the child is already gone */
    s_arm_timer(z);
}

static void s_on_msg(void *arg, const zmsg_t *msg)
{
    zygote_t *z = arg;
    switch (msg->type) {
    case ZM_JOB: s_on_job(z, msg->id, msg->payload, msg->len); break;
    case ZM_CANCEL: {
        child_t *c = s_find_job(z, msg->id);
        if (c) s_kill(c, KILL_CANCEL);
        break;
    }
    default: log_warn("event=unknown_message type=%u", msg->type); break;
    }
}

/* Children share this process's address-space layout and hash secret: after enough jobs or
 * time, ask the node for a successor (a fresh exec, fresh randomness). We keep serving until
 * the node closes our channel. */
static void s_check_recycle(zygote_t *z)
{
    if (z->retiring) return;
    int by_jobs = z->conf->recycle_jobs > 0 && z->jobs_done >= z->conf->recycle_jobs;
    int by_time = z->conf->recycle_s > 0 &&
                  clock_mono_us() - z->started_us >= (uint64_t)z->conf->recycle_s * 1000000u;
    if (!by_jobs && !by_time) return;
    z->retiring = 1;
    log_info("event=zygote_retire profile=%s jobs=%ld reason=%s", z->profile->name, z->jobs_done,
             by_jobs ? "jobs" : "age");
    zmsg_t m = {.type = ZM_RETIRE};
    if (zmsg_send(z->chan, &m) < 0) z->quit = 1;
}

/* ---- progress -------------------------------------------------------------------------- */

/* stream NULL: the job's process has started ({state: running}). */
static void s_send_progress(zygote_t *z, const child_t *c, const char *stream, const uint8_t *data,
                            size_t len)
{
    zmsg_t m = {.type = ZM_PROGRESS, .id = c->id, .progress = {stream, data, len}};
    zmsg_send(z->chan, &m);
}

/* What running jobs printed since the last look, as PROGRESS chunks (PROTOCOL.md §3): the
 * front-end turns them into notifications/progress. The child is alive and hostile: each
 * length is read once and clamped. */
static void s_progress(zygote_t *z)
{
    for (size_t i = 0; i < z->n_children; i++) {
        child_t *c = &z->children[i];
        if (c->state != CHILD_RUNNING || c->answered || c->kind != JOB_EXEC) continue;
        area_hdr_t *h = area_hdr(&c->area);
        if (!c->running_sent && h->phase != AREA_READY && h->phase != AREA_IDLE) {
            c->running_sent = 1;
            s_send_progress(z, c, NULL, NULL, 0);
        }
        for (int s = 0; s < 2; s++) {
            uint32_t have = s ? h->err_len : h->out_len;
            if (have > c->area.stream_cap) have = c->area.stream_cap;
            if (have <= c->streamed[s]) continue;
            size_t n = have - c->streamed[s];
            if (n > PROGRESS_CHUNK) n = PROGRESS_CHUNK;
            const uint8_t *base = s ? area_err(&c->area) : area_out(&c->area);
            s_send_progress(z, c, s ? "stderr" : "stdout", base + c->streamed[s], n);
            c->streamed[s] += (uint32_t)n;
        }
    }
}

/* ---- start-up ----------------------------------------------------------------------------- */

static size_t s_vm_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f) return 0;
    unsigned long pages = 0;
    if (fscanf(f, "%lu", &pages) != 1) pages = 0;
    fclose(f);
    return pages * (size_t)sysconf(_SC_PAGESIZE);
}

static void s_hello(zygote_t *z)
{
    zmsg_t        m = {.type = ZM_HELLO};
    zmsg_hello_t *h = &m.hello;
    snprintf(h->profile, sizeof h->profile, "%s", z->profile->name);
    snprintf(h->python, sizeof h->python, "%s", py_version());
    if (strlen(py_versions()) < sizeof h->packages) /* JSON {package: version} */
        snprintf(h->packages, sizeof h->packages, "%s", py_versions());
    sandbox_layers_format(z->sb.layers, h->layers, sizeof h->layers);
    h->base_vm = z->sb.base_vm;
    h->landlock_abi = z->sb.landlock_abi;
    zmsg_send(z->chan, &m);
}

static int s_fatal(zygote_t *z, const char *msg)
{
    log_error("event=zygote_failed profile=%s error=\"%s\"", z->conf->profile, msg);
    if (z->chan) {
        zmsg_t m = {.type = ZM_FATAL, .payload = (const uint8_t *)msg, .len = strlen(msg)};
        zmsg_send(z->chan, &m);
        for (int i = 0; i < 50 && zchan_pending(z->chan); i++) {
            struct pollfd p = {zchan_fd(z->chan), POLLOUT, 0};
            poll(&p, 1, 100);
            zchan_flush(z->chan);
        }
    }
    return 2;
}

/* The pretouch probe: a small job, run the way a child runs one (the sandbox layers aside), so
 * the pages it writes are the ones a real job will. */
static void s_probe(void *arg)
{
    zygote_t *z = arg;
    py_after_fork();
    jobspec_t job;
    jobspec_init(&job);
    job.tenant = "probe";
    job.service = (char *)z->profile->name;
    job.code = "x = 1\nprint(x)\n";
    job.code_len = strlen(job.code);
    profile_apply_limits(z->profile, &job.limits);
    py_run_job(&job, z->profile, NULL, (z->sb.layers & LAYER_PYTHON) != 0);
}

static int s_start(zygote_t *z, char *err, size_t errlen)
{
    z->sb.layers = z->conf->layers;
    z->sb.run_uid = (uid_t)z->conf->run_uid;
    z->sb.run_gid = (gid_t)z->conf->run_gid;
    z->sb.drop_uid = z->conf->drop_uid;
    if (sandbox_probe(&z->sb, err, errlen) < 0) return -1;
    if (py_init(z->profile, z->conf->python, err, errlen) < 0) return -1;
    if (sandbox_compile(&z->sb, z->profile, err, errlen) < 0) return -1;
    z->sb.base_vm = s_vm_bytes() + (32u << 20); /* slack for the runner's own allocations */
    char why[256];
    if (pretouch_record(&z->touch, s_probe, z, why, sizeof why) < 0)
        log_warn("event=pretouch_unavailable error=\"%s\"", why);
    else
        log_info("event=pretouch_recorded pages=%zu ranges=%zu", z->touch.pages, z->touch.n);
    if (sandbox_seal_filesystem(&z->sb, z->profile, err, errlen) < 0) return -1;
    if (z->profile->workspace) {
        /* children that drop privileges own their files as that uid; others as we are */
        uid_t uid = z->sb.drop_uid ? z->sb.run_uid : getuid();
        gid_t gid = z->sb.drop_uid ? z->sb.run_gid : getgid();
        if (workspace_init(&z->ws, z->profile, (z->sb.layers & LAYER_NAMESPACES) != 0, uid, gid,
                           err, errlen) < 0)
            return -1;
        z->sb.fsize_max = z->ws.size_mb << 20;
    }
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigprocmask(SIG_BLOCK, &set, NULL);
    z->sig_fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    z->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (z->sig_fd < 0 || z->timer_fd < 0) {
        snprintf(err, errlen, "signalfd/timerfd: %s", strerror(errno));
        return -1;
    }
    return 0;
}

int zygote_main(const zygote_conf_t *conf)
{
    zygote_t z = {0};
    char     err[512];
    s_z = &z;
    z.conf = conf;
    z.self_pid = getpid();
    z.started_us = clock_mono_us();
    z.chan = zchan_new(CHAN_FD);
    z.profile = profile_find(conf->profile);
    if (!z.profile) {
        snprintf(err, sizeof err, "unknown profile %s", conf->profile);
        return s_fatal(&z, err);
    }
    if (s_start(&z, err, sizeof err) < 0) return s_fatal(&z, err);
    /* running + answered-but-not-yet-reaped + pool, with room to spare */
    z.n_children = (size_t)(2 * conf->slots + conf->pool + 2);
    if (z.n_children > MAX_CHILDREN) z.n_children = MAX_CHILDREN;
    z.children = xcalloc(z.n_children, sizeof *z.children);
    s_hello(&z);
    while (s_pool_short(&z) && s_fork_child(&z)) {
    }
    log_info("event=zygote_ready profile=%s python=%s pid=%d pool=%ld", z.profile->name,
             py_version(), (int)getpid(), conf->pool);

    struct pollfd *fds = xcalloc(z.n_children + 3, sizeof *fds);
    child_t      **owner = xcalloc(z.n_children + 3, sizeof *owner);
    uint64_t next_progress_us = 0;
    while (!z.quit) {
        fds[0] = (struct pollfd){zchan_fd(z.chan), POLLIN | (zchan_pending(z.chan) ? POLLOUT : 0), 0};
        fds[1] = (struct pollfd){z.sig_fd, POLLIN, 0};
        fds[2] = (struct pollfd){z.timer_fd, POLLIN, 0};
        nfds_t nfds = 3;
        for (size_t i = 0; i < z.n_children; i++) {
            child_t *c = &z.children[i];
            if (c->state == CHILD_RUNNING && !c->answered && c->sock >= 0) {
                owner[nfds] = c;
                fds[nfds++] = (struct pollfd){c->sock, POLLIN, 0};
            }
        }
        /* Refilling the pool (a fork) waits until nothing else is pending: a job or a
         * finished child is always served first. While a ready child remains the fork waits
         * a little longer, so that the next job (often right behind the last answer) does not
         * share the CPU with it: measured by make bench, p50 at concurrency 1 went from 2.3 to
         * 1.2 ms with no loss of throughput. */
        int short_pool = s_pool_short(&z);
        int timeout = !short_pool ? 1000 /* wakes to check its age */ : s_ready_children(&z) ? 2 : 0;
        if (s_count(&z, CHILD_RUNNING)) { /* running jobs stream their output */
            uint64_t now = clock_mono_us();
            if (now >= next_progress_us) {
                s_progress(&z);
                next_progress_us = now + PROGRESS_US;
            }
            int left = (int)((next_progress_us - now) / 1000) + 1;
            if (timeout > left || timeout == 1000) timeout = left;
        }
        int ready = poll(fds, nfds, timeout);
        if (ready < 0) {
            if (errno == EINTR) continue;
            log_error("event=poll_failed error=\"%s\"", strerror(errno));
            break;
        }
        if (ready == 0) {
            if (short_pool && !s_fork_child(&z)) poll(NULL, 0, 100); /* fork failing: back off */
            else if (!s_pool_short(&z)) s_send_pool_stats(&z); /* the pool is full again */
            s_check_recycle(&z);
            continue;
        }
        for (nfds_t i = 3; i < nfds; i++)
            if (fds[i].revents && owner[i]->state == CHILD_RUNNING) s_on_done(&z, owner[i]);
        s_check_recycle(&z);
        if (fds[1].revents) s_on_sigchld(&z);
        if (fds[2].revents) s_on_timer(&z);
        if (fds[0].revents & POLLOUT && zchan_flush(z.chan) < 0) break;
        if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
            if (zmsg_read(z.chan, s_on_msg, &z) < 0) break; /* the node is gone */
        }
    }
    free(fds);
    free(owner);
    /* Children die with us (PDEATHSIG), and as pid 1 of the namespace our exit kills
     * everything left in it anyway. */
    log_info("event=zygote_exit profile=%s jobs=%ld", z.profile->name, z.jobs_done);
    return 0;
}
