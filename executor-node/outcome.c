/* executor-node/outcome.c — see outcome.h. The order of the checks in outcome_result is the
 * order of trust: what the zygote itself did (kill for time, cancel), what the kernel says
 * (seccomp's trapped syscall, SIGSYS, SIGXCPU), what the C layer recorded (output cap, blocked
 * audit event), and only then what the runner in the hostile child wrote. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "../common/clock.h"
#include "../common/log.h"
#include "../proto/mpack.h"
#include "outcome.h"
#include "filter.h"
#include "workspace.h"

/* A PNG's size from its IHDR chunk (PNG spec §11.2.2): the child's own numbers are not
 * taken. 0 when the bytes are not a PNG. */
static int s_png_size(const uint8_t *p, size_t len, uint32_t *w, uint32_t *h)
{
    static const uint8_t sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    if (len < 24 || memcmp(p, sig, 8) != 0 || memcmp(p + 12, "IHDR", 4) != 0) return 0;
    *w = (uint32_t)p[16] << 24 | (uint32_t)p[17] << 16 | (uint32_t)p[18] << 8 | p[19];
    *h = (uint32_t)p[20] << 24 | (uint32_t)p[21] << 16 | (uint32_t)p[22] << 8 | p[23];
    return *w > 0 && *h > 0 && *w < (1u << 20) && *h < (1u << 20);
}

/* images: [{mime, width, height, data}]: PNGs only, within OUTCOME_MAX_IMAGES and the byte
 * caps; the rest is dropped and flagged as truncated. */
static void s_read_images(mpr_t *r, result_t *res)
{
    uint32_t n;
    if (mpr_array(r, &n) < 0) return;
    size_t total = 0;
    for (uint32_t i = 0; i < n && !r->err; i++) {
        uint32_t       m;
        const uint8_t *data = NULL;
        uint32_t       dlen = 0;
        if (mpr_map(r, &m) < 0) return;
        for (uint32_t j = 0; j < m && !r->err; j++) {
            const char *k;
            uint32_t    kl;
            if (mpr_str(r, &k, &kl) < 0) return;
            if (mpr_key_is(k, kl, "data")) mpr_bytes(r, &data, &dlen);
            else mpr_skip(r); /* mime, width, height: recomputed below */
        }
        uint32_t w, h;
        if (r->err || !data) continue;
        if (!s_png_size(data, dlen, &w, &h) || res->n_images >= OUTCOME_MAX_IMAGES ||
            dlen > OUTCOME_MAX_IMAGE || total + dlen > OUTCOME_MAX_IMAGES_BYTES) {
            res->images_truncated = 1;
            continue;
        }
        if (!res->images) res->images = xcalloc(OUTCOME_MAX_IMAGES, sizeof *res->images);
        result_image_t *im = &res->images[res->n_images++];
        im->mime = xstrdup("image/png");
        im->width = w;
        im->height = h;
        im->data = xmalloc(dlen ? dlen : 1);
        memcpy(im->data, data, dlen);
        im->len = dlen;
        total += dlen;
    }
}

int outcome_read_meta(const uint8_t *meta, size_t len, result_t *res)
{
    if (!len || len > JOBAREA_META_CAP) return -1;
    mpr_t    r;
    uint32_t n;
    mpr_init(&r, meta, len);
    if (mpr_map(&r, &n) < 0) return -1;
    status_t st = ST_ERROR;
    for (uint32_t i = 0; i < n && !r.err; i++) {
        const char *k;
        uint32_t    kl;
        if (mpr_str(&r, &k, &kl) < 0) break;
        if (mpr_key_is(k, kl, "status")) {
            const char *v;
            uint32_t    vl;
            if (mpr_str(&r, &v, &vl) == 0 && status_parse_n(v, vl, &st) < 0) st = ST_ERROR;
        } else if (mpr_key_is(k, kl, "result")) {
            free(res->result);
            mpr_strdup(&r, RESULT_MAX_TEXT, &res->result);
        } else if (mpr_key_is(k, kl, "variables")) {
            free(res->variables);
            mpr_strdup(&r, RESULT_MAX_TEXT, &res->variables);
        } else if (mpr_key_is(k, kl, "validation")) {
            free(res->validation);
            mpr_strdup(&r, RESULT_MAX_TEXT, &res->validation);
        } else if (mpr_key_is(k, kl, "images") && !res->images) {
            s_read_images(&r, res);
        } else if (mpr_key_is(k, kl, "summary")) {
            free(res->session.summary);
            mpr_strdup(&r, RESULT_MAX_TEXT, &res->session.summary);
        } else if (mpr_key_is(k, kl, "snapshot") && !res->snapshot) {
            const uint8_t *start = r.p;
            if (mpr_skip(&r) == 0) {
                res->snapshot_len = (size_t)(r.p - start);
                res->snapshot = xmalloc(res->snapshot_len);
                memcpy(res->snapshot, start, res->snapshot_len);
            }
        } else if (mpr_key_is(k, kl, "images_truncated")) {
            int t = 0;
            if (mpr_bool(&r, &t) == 0 && t) res->images_truncated = 1;
        } else if (mpr_key_is(k, kl, "error") && !res->error.present) {
            uint32_t m;
            if (mpr_nil(&r)) continue;
            if (mpr_map(&r, &m) < 0) break;
            res->error.present = 1;
            for (uint32_t j = 0; j < m && !r.err; j++) {
                if (mpr_str(&r, &k, &kl) < 0) break;
                /* a key may come twice: free what the first one gave (found by fuzz_meta) */
                char **dst = mpr_key_is(k, kl, "type")        ? &res->error.type
                             : mpr_key_is(k, kl, "message")   ? &res->error.message
                             : mpr_key_is(k, kl, "traceback") ? &res->error.traceback
                                                              : NULL;
                if (dst) {
                    free(*dst);
                    mpr_strdup(&r, mpr_key_is(k, kl, "type") ? 256 : RESULT_MAX_TEXT, dst);
                } else if (mpr_key_is(k, kl, "line")) {
                    int64_t v;
                    if (mpr_int(&r, &v) == 0) res->error.line = v > 0 && v < 1 << 30 ? (long)v : 0;
                } else {
                    mpr_skip(&r);
                }
            }
        } else {
            mpr_skip(&r);
        }
    }
    if (r.err) { /* a child that scribbled over its meta gets a plain error, nothing else */
        log_warn("event=bad_meta error=\"%s\"", r.err);
        st = ST_ERROR;
    }
    /* The child may only report outcomes of its own code; the rest are the zygote's call. */
    if (st != ST_OK && st != ST_ERROR && st != ST_SYNTAX_ERROR && st != ST_MEMORY_LIMIT &&
        st != ST_OUTPUT_LIMIT && st != ST_INTERNAL_ERROR)
        st = ST_ERROR;
    res->status = st;
    return r.err ? -1 : 0;
}

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

/* The status and its error, in the order of trust (see the top of this file). */
static void s_judge(const outcome_t *o, result_t *res)
{
    const area_t *area = o->area;
    area_hdr_t   *h = area_hdr(area);
    int           sig = res->exit.signal;
    const char   *reason = sig ? "signal" : "exit";
    char          name[64];

    /* the runner's view first; the checks below override it */
    if (h->meta_len) outcome_read_meta(area_meta(area), h->meta_len, res);
    if (o->killed == KILL_TIMEOUT) {
        res->status = ST_TIMEOUT;
        reason = "timeout";
        s_set_error(res, "Timeout", "execution exceeded the %ld ms wall-clock limit", o->limits.wall_ms);
    } else if (o->killed == KILL_CANCEL) {
        res->status = ST_CANCELLED;
        reason = "cancelled";
        s_set_error(res, "Cancelled", "execution was cancelled");
    } else if (h->trap_syscall >= 0 || sig == SIGSYS) {
        res->status = ST_SECURITY_VIOLATION;
        reason = "seccomp";
        const char *sys = h->trap_syscall >= 0
                              ? filter_syscall_name(h->trap_syscall, name, sizeof name)
                              : "rt_sigaction";
        res->exit.syscall = xstrdup(sys);
        s_set_error(res, "SecurityViolation", "the sandbox stopped the process at syscall %s", sys);
    } else if (sig == SIGXCPU || (sig == SIGKILL && res->cpu_ms >= (double)o->limits.cpu_ms)) {
        res->status = ST_CPU_LIMIT;
        reason = "cpu_limit";
        s_set_error(res, "CpuLimit", "execution exceeded the %ld ms CPU time limit", o->limits.cpu_ms);
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
    } else if (h->audit_blocked) {
        char event[sizeof h->audit_event];
        memcpy(event, (const char *)h->audit_event, sizeof event);
        event[sizeof event - 1] = '\0';
        res->status = ST_SECURITY_VIOLATION;
        reason = "audit";
        res->exit.syscall = xstrdup(event);
        s_set_error(res, "SecurityViolation", "the sandbox blocked '%s'", event);
    } else if (!h->meta_len) {
        if (sig == SIGSEGV || sig == SIGBUS || sig == SIGABRT || sig == SIGKILL) {
            /* Most interpreter crashes under an address-space limit are allocation
             * failures in C code that did not raise MemoryError. */
            res->status = ST_MEMORY_LIMIT;
            s_set_error(res, "MemoryLimit", "the interpreter died with signal %d, most likely "
                        "out of memory (limit %ld MB)", sig, o->limits.memory_mb);
        } else if (sig) {
            res->status = ST_ERROR;
            s_set_error(res, "ProcessDied", "the process was killed by signal %d", sig);
        } else {
            res->status = ST_ERROR;
            s_set_error(res, "ProcessExit", "the code ended the process (exit status %d) "
                        "before it finished", res->exit.code);
        }
    }
    if (res->status == ST_MEMORY_LIMIT && !res->error.present)
        s_set_error(res, "MemoryError", "memory limit of %ld MB reached", o->limits.memory_mb);
    res->exit.reason = xstrdup(reason);
}

void outcome_result(const outcome_t *o, result_t *res)
{
    s_take_output(o->area, res);
    s_take_usage(o->area, o->ru, res);
    res->wall_ms = (double)(clock_mono_us() - o->start_us) / 1000.0;
    res->exit.signal = WIFSIGNALED(o->wstatus) ? WTERMSIG(o->wstatus) : 0;
    res->exit.code = WIFEXITED(o->wstatus) ? WEXITSTATUS(o->wstatus) : 0;
    s_judge(o, res);
    /* What the job wrote, less its unchanged inputs. */
    if (o->ws_dir && o->ws_dir[0] && o->kind == JOB_EXEC)
        workspace_collect(o->ws_dir, o->inputs, o->files_since_ns, res);
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
    if (res->status == ST_SECURITY_VIOLATION) { /* the operator's audit trail (issue #6) */
        char idstr[ID_STR_LEN + 1], what[200];
        id_format(o->id, idstr);
        log_warn("event=security_violation audit=1 job=%s tenant=%s profile=%s reason=%s syscall=%s",
                 idstr, o->tenant, o->profile, res->exit.reason ? res->exit.reason : "?",
                 log_quote(what, sizeof what, res->exit.syscall ? res->exit.syscall : "?"));
    }
    if (log_get_level() <= LOG_DEBUG) s_log_timings(o, res, minflt);
}
