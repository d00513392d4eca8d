/* executor-node/zygote/pool/outcome.c — see outcome.h. The order of the checks in outcome_result is
 * the order of trust: what the zygote itself did (kill for time, cancel), what the kernel says
 * (seccomp's trapped syscall, SIGSYS, SIGXCPU), what the C layer recorded (output cap, blocked
 * audit event), and only then what the runner in the hostile child wrote. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "common/clock.h"
#include "common/log.h"
#include "executor-node/sandbox/filter.h"
#include "executor-node/sandbox/workspace.h"
#include "outcome.h"

static void s_set_error(result_t *res, const char *type, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void s_set_error(result_t *res, const char *type, const char *fmt, ...)
{
    char    msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    free(res->error.type);
    free(res->error.message);
    free(res->error.traceback);
    res->error.type = xstrdup(type);
    res->error.message = xstrdup(msg);
    res->error.traceback = NULL;
    res->error.present = 1;
}

/* What the child printed, clamped to the zygote's own capacity. */
static void s_take_output(const area_t *area, result_t *res)
{
    area_hdr_t *h = area_hdr(area);
    uint32_t    cap = area->stream_cap;
    uint32_t    out_len = h->out_len < cap ? h->out_len : cap;
    uint32_t    err_len = h->err_len < cap ? h->err_len : cap;
    res->out = xstrndup((const char *)area_out(area), out_len);
    res->out_len = out_len;
    res->err = xstrndup((const char *)area_err(area), err_len);
    res->err_len = err_len;
    res->out_truncated = h->out_trunc != 0;
    res->err_truncated = h->err_trunc != 0;
}

/* ru is NULL when answering on the child's done byte: it is still exiting, and its own
 * figures stand in (clamped; they only concern its own job). */
static void s_take_usage(const area_t *area, const struct rusage *ru, result_t *res)
{
    area_hdr_t *h = area_hdr(area);
    if (ru) {
        res->cpu_ms = (double)(ru->ru_utime.tv_sec + ru->ru_stime.tv_sec) * 1000.0 +
                      (double)(ru->ru_utime.tv_usec + ru->ru_stime.tv_usec) / 1000.0;
        res->max_rss_kb = ru->ru_maxrss;
    } else {
        uint64_t cpu_us = h->self_cpu_us, rss = h->self_maxrss_kb;
        res->cpu_ms = cpu_us < 1000000000000ull ? (double)cpu_us / 1000.0 : 0;
        res->max_rss_kb = rss < (1ull << 40) ? (long)rss : 0;
    }
}

/* A signal's name for messages ("SIGSEGV"); "signal N" when it has none. */
static const char *s_signame(int sig, char *buf, size_t cap)
{
    const char *abbrev = sig > 0 && sig < 65 ? sigabbrev_np(sig) : NULL;
    if (abbrev) snprintf(buf, cap, "SIG%s", abbrev);
    else snprintf(buf, cap, "signal %d", sig);
    return buf;
}

/* Address space left under RLIMIT_AS at a crash below which it counts as running out of
 * memory: C code that did not check a failed allocation. */
static long s_oom_headroom_mb(const limits_t *l)
{
    long mb = l->memory_mb / 16;
    return mb < 16 ? 16 : mb > 64 ? 64 : mb;
}

/* The code never finished (no meta): how it ended, from the accounting — what the child's
 * handlers recorded (childsig.h) and the wait status — not from the signal alone: a crash
 * with room left under the memory limit is a crash, a job that killed itself killed itself. */
static void s_judge_unfinished(const outcome_t *o, const area_hdr_t *h, result_t *res)
{
    int sig = res->exit.signal, self = h->self_signal, crash = h->crash_signal;
    char name[32];
    if (self > 0 && self < 65 && res->exit.code == 128 + self) {
        res->status = ST_ERROR;
        res->exit.signal = self;
        s_set_error(res, "Killed", "the code sent itself %s, which ended the process",
                    s_signame(self, name, sizeof name));
    } else if (crash > 0 && crash == sig && h->crash_headroom_mb < s_oom_headroom_mb(&o->limits)) {
        res->status = ST_MEMORY_LIMIT;
        s_set_error(res, "MemoryLimit", "the interpreter crashed (%s) with its address space "
                    "full: an allocation past the memory limit of %ld MB that the code did not "
                    "check", s_signame(sig, name, sizeof name), o->limits.memory_mb);
    } else if (crash > 0 && crash == sig) {
        res->status = ST_ERROR;
        s_set_error(res, "Crash", "the interpreter crashed with %s, with at least %d MB of its "
                    "%ld MB memory limit still free (not an out-of-memory)",
                    s_signame(sig, name, sizeof name), h->crash_headroom_mb, o->limits.memory_mb);
    } else if (sig) {
        res->status = ST_ERROR;
        s_set_error(res, "ProcessDied", "the process was killed by %s",
                    s_signame(sig, name, sizeof name));
    } else if (h->phase == AREA_STARTED && res->exit.code == 0) {
        res->status = ST_OK; /* os._exit(0) from the code: a process that ended well */
    } else if (h->phase == AREA_STARTED) {
        res->status = ST_ERROR; /* os._exit(n): its status passed through, as a shell sees it */
        s_set_error(res, "SystemExit", "exit code %d", res->exit.code);
    } else {
        res->status = ST_ERROR;
        s_set_error(res, "ProcessExit", "the code ended the process (exit status %d) "
                    "before it finished", res->exit.code);
    }
}

static void s_violation(result_t *res, const char *reason, const char *what, const char *fmt)
{
    res->status = ST_SECURITY_VIOLATION;
    free(res->exit.reason);
    res->exit.reason = xstrdup(reason);
    res->exit.syscall = xstrdup(what);
    /* The audit hook's own PermissionError, when it is what ended the code, already says it
     * best (and where): "[sandbox] the sandbox cannot start processes: subprocess.Popen 'ls'".
     * It is the child's word, but only about its own job. */
    if (res->error.present && res->error.message && !strncmp(res->error.message, "[sandbox] ", 10))
        return;
    s_set_error(res, "SecurityViolation", fmt, what);
}

/* The status and its error, in the order of trust (see the top of this file). */
static void s_judge(const outcome_t *o, result_t *res)
{
    const area_t *area = o->area;
    area_hdr_t   *h = area_hdr(area);
    int           sig = res->exit.signal;
    const char   *reason = sig ? "signal" : "exit";
    char          name[64];
    meta_flags_t  flags = {0};

    /* the runner's view first; the checks below override it */
    if (h->meta_len) outcome_read_meta(area_meta(area), h->meta_len, res, &flags);
    res->exit.reason = NULL;
    if (h->meta_len && !sig) res->exit.code = flags.exit_code; /* sys.exit's, through the runner */
    if (o->killed == KILL_TIMEOUT) {
        res->status = ST_TIMEOUT;
        reason = "timeout";
        s_set_error(res, "Timeout", "execution exceeded the %ld ms wall-clock limit", o->limits.wall_ms);
    } else if (o->killed == KILL_EGRESS) {
        res->status = ST_EGRESS_LIMIT;
        reason = "egress_limit";
        s_set_error(res, "EgressLimit", "the job moved more bytes over the network than its "
                    "tenant's egress cap allows, and was stopped there (%s)",
                    o->interrupted ? "the session lives on" : "its output so far is kept");
    } else if (o->killed == KILL_CANCEL) {
        res->status = ST_CANCELLED;
        reason = "cancelled";
        s_set_error(res, "Cancelled", "execution was cancelled");
    } else if (h->trap_syscall >= 0) {
        const char *sys = filter_syscall_name(h->trap_syscall, name, sizeof name);
        s_violation(res, "seccomp", sys, "the sandbox stopped the process at syscall %s");
        return;
    } else if (sig == SIGSYS) {
        /* a trap while SIGSYS was blocked (glibc's posix_spawn and CPython's subprocess block
         * every signal around their clone): the kernel ends the process without our handler,
         * and with it the syscall's name */
        s_violation(res, "seccomp", "unknown",
                    "the sandbox stopped the process at a refused syscall (%s: its signals "
                    "were blocked, so it went unnamed)");
        return;
    } else if (sig == SIGXCPU || h->limit_hit == LIMIT_CPU ||
               (sig == SIGKILL && res->cpu_ms >= (double)o->limits.cpu_ms)) {
        res->status = ST_CPU_LIMIT;
        reason = "cpu_limit";
        s_set_error(res, "CpuLimit", "execution exceeded the %ld ms CPU time limit", o->limits.cpu_ms);
    } else if (o->interrupted == KILL_EGRESS) {
        res->status = ST_EGRESS_LIMIT;
        reason = "interrupted";
        s_set_error(res, "EgressLimit", "the cell moved more bytes over the network than its "
                    "tenant's egress cap allows and stopped on KeyboardInterrupt; the session "
                    "lives on");
    } else if (o->interrupted) {
        /* a session's cell that stopped on its KeyboardInterrupt: the session lives on */
        res->status = o->interrupted == KILL_CANCEL ? ST_CANCELLED : ST_TIMEOUT;
        reason = "interrupted";
        if (o->interrupted == KILL_CANCEL)
            s_set_error(res, "Cancelled", "the cell was cancelled and stopped on KeyboardInterrupt; "
                        "the session lives on");
        else
            s_set_error(res, "Timeout", "the cell exceeded its %ld ms wall-clock limit and stopped "
                        "on KeyboardInterrupt; the session lives on", o->limits.wall_ms);
    } else if (h->limit_hit == LIMIT_OUTPUT) {
        res->status = ST_OUTPUT_LIMIT;
        reason = "output_limit";
        s_set_error(res, "OutputLimit", "output exceeded %ld bytes; the job was stopped there",
                    o->limits.output_bytes);
    } else if ((h->audit_blocked || h->audit_denied) && flags.denied) {
        /* a refusal is a violation when it is what ended the code; one the code caught (an
         * offline fallback, a library probing /tmp) leaves the status to the code, and is
         * listed in security_events either way */
        const volatile char *src = h->audit_blocked ? h->audit_event : h->denied_event;
        char event[sizeof h->audit_event];
        for (size_t i = 0; i < sizeof event; i++) event[i] = src[i];
        event[sizeof event - 1] = '\0';
        s_violation(res, "audit", event, "the sandbox blocked '%s'");
        return;
    } else if (!h->meta_len) {
        s_judge_unfinished(o, h, res);
        if (res->exit.signal) reason = "signal";
    }
    if (res->status == ST_MEMORY_LIMIT && !res->error.present)
        s_set_error(res, "MemoryError", "memory limit of %ld MB reached", o->limits.memory_mb);
    res->exit.reason = xstrdup(reason);
}

/* One entry of res->events, its words copied. */
static void s_add_event(result_t *res, const char *operation, const char *target,
                        const char *layer, uint32_t count)
{
    if (!res->events) res->events = xcalloc(RESULT_MAX_EVENTS, sizeof *res->events);
    if (res->n_events == RESULT_MAX_EVENTS) {
        res->events_truncated = 1;
        return;
    }
    result_event_t *e = &res->events[res->n_events++];
    e->operation = xstrdup(operation);
    e->target = target && target[0] ? xstrdup(target) : NULL;
    e->layer = xstrdup(layer);
    e->count = count ? count : 1;
}

/* What the layers refused, for security_events: the audit hook's list (the child's area, read
 * as hostile: every string cut at its slot), then a seccomp trap, which ends the job. */
static void s_take_events(const area_hdr_t *h, result_t *res)
{
    uint32_t n = h->n_events < AREA_EVENTS ? h->n_events : AREA_EVENTS;
    for (uint32_t i = 0; i < n; i++) {
        const area_event_t *slot = &h->events[i];
        char op[sizeof slot->operation], target[sizeof slot->target];
        memcpy(op, slot->operation, sizeof op);
        memcpy(target, slot->target, sizeof target);
        op[sizeof op - 1] = target[sizeof target - 1] = '\0';
        if (op[0]) s_add_event(res, op, target, "python", slot->count);
    }
    if (h->events_dropped) res->events_truncated = 1;
    if (h->trap_syscall >= 0) {
        char name[64];
        s_add_event(res, filter_syscall_name(h->trap_syscall, name, sizeof name), NULL,
                    "seccomp", 1);
    } else if (res->exit.signal == SIGSYS) { /* trapped with its signals blocked: unnamed */
        s_add_event(res, "unknown", NULL, "seccomp", 1);
    }
}

void outcome_result(const outcome_t *o, result_t *res)
{
    s_take_output(o->area, res);
    s_take_usage(o->area, o->ru, res);
    res->wall_ms = (double)(clock_mono_us() - o->start_us) / 1000.0;
    res->exit.signal = WIFSIGNALED(o->wstatus) ? WTERMSIG(o->wstatus) : 0;
    res->exit.code = WIFEXITED(o->wstatus) ? WEXITSTATUS(o->wstatus) : 0;
    s_judge(o, res);
    s_take_events(area_hdr(o->area), res);
    /* What the job wrote, less its unchanged inputs. */
    if (o->ws_dir && o->ws_dir[0] && o->kind == JOB_EXEC)
        workspace_collect(o->ws_dir, o->inputs, o->files_since_ns, o->files_marks, res);
}

/* Where a job's time went, relative to its dispatch (µs): for profiling the pool. */
static void s_log_timings(const outcome_t *o, const result_t *res, long minflt)
{
    char        idstr[ID_STR_LEN + 1];
    area_hdr_t *h = area_hdr(o->area);
    uint64_t    t0 = o->start_us * 1000u;
    id_format(o->id, idstr);
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

void outcome_log(const outcome_t *o, const result_t *res, long minflt)
{
    if (res->status == ST_SECURITY_VIOLATION) { /* the operator's audit trail */
        char idstr[ID_STR_LEN + 1], what[200];
        id_format(o->id, idstr);
        log_warn("event=security_violation audit=1 job=%s tenant=%s profile=%s reason=%s syscall=%s",
                 idstr, o->tenant, o->profile, res->exit.reason ? res->exit.reason : "?",
                 log_quote(what, sizeof what, res->exit.syscall ? res->exit.syscall : "?"));
    }
    for (size_t i = 0; i < res->n_events; i++) { /* and each refusal, caught or not */
        char idstr[ID_STR_LEN + 1], op[120], target[240];
        const result_event_t *e = &res->events[i];
        id_format(o->id, idstr);
        log_warn("event=security_event audit=1 job=%s tenant=%s profile=%s layer=%s operation=%s "
                 "target=%s count=%u ended_job=%d",
                 idstr, o->tenant, o->profile, e->layer, log_quote(op, sizeof op, e->operation),
                 log_quote(target, sizeof target, e->target ? e->target : ""), e->count,
                 res->status == ST_SECURITY_VIOLATION);
    }
    if (res->events_truncated) { /* more distinct refusals than a Result lists */
        char idstr[ID_STR_LEN + 1];
        id_format(o->id, idstr);
        log_warn("event=security_events_truncated audit=1 job=%s tenant=%s profile=%s listed=%zu",
                 idstr, o->tenant, o->profile, res->n_events);
    }
    if (log_get_level() <= LOG_DEBUG) s_log_timings(o, res, minflt);
}
