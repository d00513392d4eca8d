/* executor-node/zygote/zygote.c — see zygote.h.
 *
 * The loop waits on the channel to the node (jobs, cancels), the pool's signalfd for SIGCHLD
 * and its deadline timerfd, and the wake socket of every running child. A job goes through
 * dispatch.h into an idle pre-forked child (pool.h) and one byte starts it; when the child
 * says it is done, or is reaped, outcome.h turns its area into the Result this file sends,
 * with a STATS summary for the node's metrics. Running jobs' output is streamed as PROGRESS
 * every 50 ms. The pool is refilled when nothing else is pending, so the fork is off the next
 * job's path. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/profiles.h"
#include "proto/result.h"
#include "proto/wire.h"
#include "executor-node/area/scrub.h"
#include "executor-node/link/emsg.h"
#include "executor-node/link/zchan.h"
#include "executor-node/link/zmsg.h"
#include "executor-node/mem/hugemem.h"
#include "executor-node/mem/pretouch.h"
#include "executor-node/mem/procfs.h"
#include "executor-node/python/python.h"
#include "executor-node/sandbox/filter.h"
#include "executor-node/sandbox/sandbox.h"
#include "executor-node/sandbox/workspace.h"
#include "executor-node/zygote/pool/outcome.h"
#include "executor-node/zygote/pool/pool.h"
#include "executor-node/zygote/sessions/zygote_sessions.h"
#include "dispatch.h"
#include "envprofile.h"
#include "zygote.h"

#define CHAN_FD        3
#define EGRESS_FD      4 /* where the listening socket goes to the node (emsg.h) */
#define MAX_CHILDREN   (1024 + 65536) /* jobs' children, and every session's process */
#define PROGRESS_US    50000u         /* how often running jobs' output is streamed */
#define PROGRESS_CHUNK (64u << 10)    /* most bytes per stream per look */
#define POLL_FIXED     3              /* channel, SIGCHLD, timer; then the running children */

typedef struct {
    const zygote_conf_t *conf;
    const profile_t *profile;
    sandbox_t sb;
    pretouch_t touch; /* pages a job makes private, pre-faulted by pooled children */
    workspace_t ws;   /* workspace profiles: where the children's directories are */
    child_env_t env;  /* what every child needs after fork */
    pool_t *pool;
    zygote_sessions_t *sessions; /* NULL when this zygote keeps none */
    int procfd;           /* procfs.h: memory and children, after the seal */
    dispatch_t dispatch;
    zchan_t *chan;
    /* the node's grant for the job whose JOB comes next (ZM_EGRESS): zeroed once used, before
     * any child is forked again (a child inherits this memory) */
    uint8_t grant_id[ID_BYTES];
    char grant_secret[EMSG_SECRET_LEN + 1];
    long jobs_done;
    uint64_t forks_reported;
    uint64_t started_us;
    int retiring;
    int quit;
} zygote_t;

/* ---- answers ------------------------------------------------------------------------------- */

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

/* What the node needs for its metrics, without decoding the whole Result; res NULL: pool news
 * between jobs (forks since the last summary and the pool's size, so the node's forks_total
 * and pool_children are right between jobs too). */
static void s_send_stats(zygote_t *z, const uint8_t *id, const child_t *c, const result_t *res,
                         int session)
{
    zmsg_t m = {.type = ZM_STATS, .id = id};
    m.stats.forks = pool_forks(z->pool) - z->forks_reported;
    m.stats.pool = pool_count(z->pool, CHILD_IDLE);
    z->forks_reported = pool_forks(z->pool);
    if (res) {
        m.stats.job = 1;
        m.stats.status = res->status;
        m.stats.wall_ms = res->wall_ms;
        m.stats.cpu_ms = res->cpu_ms;
        m.stats.max_rss_kb = res->max_rss_kb;
        m.stats.kind = c->kind;
        m.stats.session = session;
        m.stats.lowered = c->lowered;
        if (res->status == ST_SECURITY_VIOLATION && res->exit.syscall)
            snprintf(m.stats.syscall, sizeof m.stats.syscall, "%s", res->exit.syscall);
    }
    zmsg_send(z->chan, &m);
}

static void s_send_result(zygote_t *z, const uint8_t id[ID_BYTES], result_t *res)
{
    buf_t out;
    buf_init(&out);
    /* Sized up front: a buffer that grew would leave copies of the result in freed memory. */
    size_t need = 64u << 10;
    need += res->out_len + res->err_len;
    for (size_t i = 0; i < res->n_images; i++) need += res->images[i].len + 64;
    for (size_t i = 0; i < res->n_files; i++) need += res->files[i].len + JOB_MAX_PATH + 16;
    for (size_t i = 0; i < res->n_outputs; i++) need += res->outputs[i].len + 192;
    need += (res->result ? strlen(res->result) : 0) +
            (res->variables ? strlen(res->variables) : 0) +
            (res->validation ? strlen(res->validation) : 0) +
            (res->error.traceback ? strlen(res->error.traceback) : 0) +
            (res->error.message ? strlen(res->error.message) : 0);
    buf_reserve(&out, need);
    if (!res->executor && z->conf->node[0]) res->executor = xstrdup(z->conf->node);
    result_encode(res, &out);
    zmsg_t m = {.type = ZM_RESULT, .id = id, .payload = out.data, .len = out.len};
    if (zmsg_send(z->chan, &m) < 0) z->quit = 1;
    explicit_bzero(out.data, out.len);
    buf_free(&out);
}

/* pool_finished_fn: a job is over; its one answer goes now. */
static void s_on_finished(void *arg, child_t *c, int wstatus, const struct rusage *ru)
{
    zygote_t *z = arg;
    if (c->session) { /* a session's: it may live on (zygote_sessions.h) */
        zygote_sessions_finished(z->sessions, c, wstatus, ru);
        z->jobs_done++;
        return;
    }
    outcome_t o = {.area = &c->area,
                   .limits = c->limits,
                   .killed = c->killed,
                   .wstatus = wstatus,
                   .ru = ru,
                   .start_us = c->start_us,
                   .id = c->id,
                   .tenant = c->tenant,
                   .profile = z->profile->name,
                   .kind = c->kind,
                   .ws_dir = c->ws_dir,
                   .inputs = c->inputs};
    result_t res;
    result_init(&res);
    outcome_result(&o, &res);
    s_send_result(z, c->id, &res);
    outcome_log(&o, &res, ru ? ru->ru_minflt : -1);
    s_send_stats(z, c->id, c, &res, 0);
    scrub_result(&res);
    z->jobs_done++;
}

static void s_on_session_gone(void *arg, child_t *c, int wstatus)
{
    zygote_t *z = arg;
    zygote_sessions_gone(z->sessions, c, wstatus);
}

/* zygote_sessions_io_t: a session job's answer, and its STATS when a child ran it. */
static void s_session_answer(void *arg, const uint8_t id[ID_BYTES], result_t *res, const child_t *c)
{
    zygote_t *z = arg;
    s_send_result(z, id, res);
    if (c) s_send_stats(z, id, c, res, 1);
}

static void s_session_news(void *arg, const zmsg_t *m)
{
    zygote_t *z = arg;
    if (zmsg_send(z->chan, m) < 0) z->quit = 1;
}

/* ---- progress ------------------------------------------------------------------------------ */

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
    for (size_t i = 0; i < pool_slots(z->pool); i++) {
        child_t *c = pool_child(z->pool, i);
        if (c->session && c->muted) zygote_sessions_on_muted(z->sessions, c); /* may answer it */
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

/* ---- from the node ------------------------------------------------------------------------- */

/* ZM_EGRESS: the secret of the job whose JOB follows, kept until then (32 hex digits; anything
 * else is no grant). */
static void s_grant(zygote_t *z, const zmsg_t *msg)
{
    explicit_bzero(z->grant_secret, sizeof z->grant_secret);
    if (msg->len == EMSG_SECRET_LEN) /* the payload has no NUL of its own: the buffer's is kept */
        memcpy(z->grant_secret, msg->payload, EMSG_SECRET_LEN);
    if (!z->sb.egress_port || strspn(z->grant_secret, "0123456789abcdef") != EMSG_SECRET_LEN) {
        explicit_bzero(z->grant_secret, sizeof z->grant_secret);
        log_warn("event=egress_grant_ignored port=%d", z->sb.egress_port);
        return;
    }
    memcpy(z->grant_id, msg->id, ID_BYTES);
}

/* The job's proxy URL into url when the node granted it network egress; NULL otherwise. The
 * grant is used up either way. */
static const char *s_proxy_for(zygote_t *z, const uint8_t id[ID_BYTES], char *url, size_t cap)
{
    const char *proxy = NULL;
    if (z->grant_secret[0] && !memcmp(z->grant_id, id, ID_BYTES)) {
        snprintf(url, cap, "http://job:%s@127.0.0.1:%d", z->grant_secret, z->sb.egress_port);
        proxy = url;
    }
    explicit_bzero(z->grant_secret, sizeof z->grant_secret);
    return proxy;
}

static void s_on_msg(void *arg, const zmsg_t *msg)
{
    zygote_t *z = arg;
    switch (msg->type) {
    case ZM_JOB: {
        refusal_t why;
        char url[128];
        const char *proxy = s_proxy_for(z, msg->id, url, sizeof url);
        int rc = dispatch_job(&z->dispatch, msg->id, msg->payload, msg->len, proxy, &why);
        explicit_bzero(url, sizeof url);
        if (rc < 0) s_send_simple(z, msg->id, why.status, why.type, why.message);
        break;
    }
    case ZM_EGRESS:
        s_grant(z, msg);
        break;
    case ZM_EGRESS_STOP: { /* past its byte cap: a session's cell is interrupted, as a cancel */
        child_t *c = pool_find_job(z->pool, msg->id);
        if (c && c->session)
            pool_interrupt(z->pool, c, KILL_EGRESS);
        else if (c)
            pool_kill(c, KILL_EGRESS);
        break;
    }
    case ZM_CANCEL: {
        child_t *c = pool_find_job(z->pool, msg->id);
        /* a session's cell is interrupted, so the session can live on */
        if (c && c->session)
            pool_interrupt(z->pool, c, KILL_CANCEL);
        else if (c)
            pool_kill(c, KILL_CANCEL);
        break;
    }
    case ZM_SESSION_END: {
        char reason[WIRE_MAX_REASON + 1];
        snprintf(reason, sizeof reason, "%.*s",
                 (int)(msg->len < WIRE_MAX_REASON ? msg->len : WIRE_MAX_REASON),
                 (const char *)msg->payload);
        if (z->sessions) zygote_sessions_end(z->sessions, msg->id, reason);
        break;
    }
    default:
        log_warn("event=unknown_message type=%u", msg->type);
        break;
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

/* ---- start-up ------------------------------------------------------------------------------ */

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
    zmsg_t m = {.type = ZM_HELLO};
    zmsg_hello_t *h = &m.hello;
    snprintf(h->profile, sizeof h->profile, "%s", z->profile->name);
    snprintf(h->python, sizeof h->python, "%s", py_version());
    h->packages = py_versions(); /* JSON {package: version} */
    h->packages_len = strlen(h->packages);
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
    py_run_job(&job, z->profile, NULL, (z->sb.layers & LAYER_PYTHON) != 0, NULL);
}

/* The pool and the way into it, once everything a child inherits is in place. */
static int s_make_pool(zygote_t *z, char *err, size_t errlen)
{
    const zygote_conf_t *conf = z->conf;
    z->env = (child_env_t){&z->sb, z->profile, &z->touch, getpid()};
    /* running + answered-but-not-yet-reaped + pool, with room to spare */
    size_t slots = (size_t)(2 * conf->slots + conf->pool + 2 + conf->max_sessions +
                            conf->session_pool + conf->egress_pool);
    pool_conf_t pc = {.slots = slots < MAX_CHILDREN ? slots : MAX_CHILDREN,
                      .job_cap = DISPATCH_JOB_CAP,
                      .stream_cap = (uint32_t)conf->stream_cap,
                      .env = &z->env,
                      .ws = z->profile->workspace ? &z->ws : NULL,
                      .on_finished = s_on_finished,
                      .on_session_gone = s_on_session_gone,
                      .interrupt_grace_ms = conf->session_grace_ms,
                      .arg = z};
    if (!(z->pool = pool_new(&pc, err, errlen))) return -1;
    if (conf->max_sessions > 0) {
        unsigned on = z->sb.layers;
        /* fork_session's isolation rests on these: seccomp keeps the clone to its call site,
         * NPROC stops any other, Landlock (with signal scoping) keeps the two sides apart */
        int fork_ok = (on & LAYER_SECCOMP) && (on & LAYER_RLIMITS) && (on & LAYER_LANDLOCK) &&
                      z->sb.landlock_abi >= 6;
        zygote_sessions_conf_t sc = {.pool = z->pool,
                                     .ws = pc.ws,
                                     .env = &z->env,
                                     .procfd = z->procfd,
                                     .max_sessions = conf->max_sessions,
                                     .idle_default_s = conf->session_idle_s,
                                     .idle_max_s = conf->session_max_idle_s,
                                     .fork_ok = fork_ok,
                                     .interrupt_grace_ms = conf->session_grace_ms,
                                     .node = conf->node};
        zygote_sessions_io_t io = {s_session_answer, s_session_news, z};
        z->sessions = zygote_sessions_new(&sc, &io);
    }
    /* the node's cap over every profile's: a stream holds at most stream_cap bytes */
    z->dispatch =
        (dispatch_t){z->profile, z->pool, pc.ws, {.output_bytes = conf->stream_cap}, z->sessions};
    return 0;
}

/* Serving jobs with network egress: the listening socket in our namespace goes to the node,
 * which hands it to its egress process; we keep no copy (nothing here ever accepts). */
static int s_egress_listener(zygote_t *z, char *err, size_t errlen)
{
    z->sb.egress_port = 0;
    if (z->conf->egress_port <= 0) return 0;
    z->sb.egress_port = (int)z->conf->egress_port;
    int fd = sandbox_egress_listener(&z->sb, err, errlen);
    if (fd < 0) return -1;
    int rc = emsg_send_fd(EGRESS_FD, 0, fd);
    if (rc < 0) snprintf(err, errlen, "network egress: handing the listener over: %s", strerror(errno));
    close(fd);
    close(EGRESS_FD);
    return rc;
}

static int s_start(zygote_t *z, char *err, size_t errlen)
{
    z->sb.layers = z->conf->layers;
    z->sb.run_uid = (uid_t)z->conf->run_uid;
    z->sb.run_gid = (gid_t)z->conf->run_gid;
    z->sb.drop_uid = z->conf->drop_uid;
    if (sandbox_probe(&z->sb, err, errlen) < 0 || sandbox_neutral_host(&z->sb, err, errlen) < 0)
        return -1;
    if (s_egress_listener(z, err, errlen) < 0) return -1;
    if (py_init(z->profile, z->conf->python, (z->sb.layers & LAYER_PYTHON) != 0, z->sb.env_host, err,
                errlen) < 0)
        return -1;
    if ((z->sb.layers & LAYER_SECCOMP) &&
        filter_compile(z->profile, &z->sb.filter, err, errlen) < 0)
        return -1;
    z->sb.base_vm = s_vm_bytes() + (32u << 20); /* slack for the runner's own allocations */
    char why[256];
    if (pretouch_record(&z->touch, s_probe, z, why, sizeof why) < 0)
        log_warn("event=pretouch_unavailable error=\"%s\"", why);
    else
        log_info("event=pretouch_recorded pages=%zu ranges=%zu", z->touch.pages, z->touch.n);
    z->procfd =
        z->conf->max_sessions > 0 ? procfs_open((z->sb.layers & LAYER_NAMESPACES) != 0) : -1;
    /* last of the zygote's own memory work, while /proc is mounted (hugemem.h) */
    long huge = hugemem_collapse(why, sizeof why);
    if (huge < 0)
        log_warn("event=huge_pages_unavailable error=\"%s\"", why);
    else
        log_info("event=huge_pages made=%ld", huge);
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
    return s_make_pool(z, err, errlen);
}

/* ---- the loop ------------------------------------------------------------------------------ */

/* The channel, the pool's two fds, and the wake socket of every child still running a job. */
static nfds_t s_poll_set(zygote_t *z, struct pollfd *fds, child_t **owner)
{
    nfds_t n = 0;
    fds[n++] =
        (struct pollfd){zchan_fd(z->chan), POLLIN | (zchan_pending(z->chan) ? POLLOUT : 0), 0};
    fds[n++] = (struct pollfd){pool_sig_fd(z->pool), POLLIN, 0};
    fds[n++] = (struct pollfd){pool_timer_fd(z->pool), POLLIN, 0};
    for (size_t i = 0; i < pool_slots(z->pool); i++) {
        child_t *c = pool_child(z->pool, i);
        int want = c->session ? zygote_sessions_wants_io(c)
                              : c->state == CHILD_RUNNING && !c->answered && !c->muted;
        if (want && c->sock >= 0) {
            owner[n] = c;
            fds[n++] = (struct pollfd){c->sock, POLLIN, 0};
        }
    }
    return n;
}

/* Which kind of child the pool is short of: 1 for a job's, 2 for a session's, 3 for a job's
 * with network egress, 0 for none. Not while a fork_session is under way: its RLIMIT_NPROC
 * window counts our children. */
static int s_pool_short(const zygote_t *z)
{
    if (z->retiring || (z->sessions && zygote_sessions_forking(z->sessions))) return 0;
    if (pool_idle(z->pool, 0) < (size_t)z->conf->pool) return 1;
    if (z->sessions && pool_idle(z->pool, 1) < (size_t)z->conf->session_pool) return 2;
    if (z->sb.egress_port && pool_idle_egress(z->pool) < (size_t)z->conf->egress_pool) return 3;
    return 0;
}

static child_t *s_refill(zygote_t *z, int kind)
{
    return kind == 2 ? pool_fork_session(z->pool)
           : kind == 3 ? pool_fork_egress(z->pool)
                       : pool_fork(z->pool);
}

/* How long poll may sleep. Refilling the pool (a fork) waits until nothing else is pending: a
 * job or a finished child is always served first. While a ready child remains the fork waits
 * a little longer, so that the next job (often right behind the last answer) does not share
 * the CPU with it: measured by make bench, p50 at concurrency 1 went from 2.3 to 1.2 ms with
 * no loss of throughput. Running jobs stream their output meanwhile. */
static int s_timeout(zygote_t *z, int short_pool, uint64_t *next_progress_us)
{
    int timeout = !short_pool         ? 1000 /* wakes to check its age */
                  : pool_ready(z->pool) ? 2
                                        : pool_refill_delay_ms(z->pool);
    if (pool_count(z->pool, CHILD_RUNNING)) {
        uint64_t now = clock_mono_us();
        if (now >= *next_progress_us) {
            s_progress(z);
            *next_progress_us = now + PROGRESS_US;
        }
        int left = (int)((*next_progress_us - now) / 1000) + 1;
        if (timeout > left || timeout == 1000) timeout = left;
    }
    return timeout;
}

static void s_serve(zygote_t *z)
{
    size_t cap = pool_slots(z->pool) + POLL_FIXED;
    struct pollfd *fds = xcalloc(cap, sizeof *fds);
    child_t **owner = xcalloc(cap, sizeof *owner);
    uint64_t next_progress_us = 0;
    while (!z->quit) {
        nfds_t nfds = s_poll_set(z, fds, owner);
        int short_pool = s_pool_short(z);
        int ready = poll(fds, nfds, s_timeout(z, short_pool, &next_progress_us));
        if (ready < 0) {
            if (errno == EINTR) continue;
            log_error("event=poll_failed error=\"%s\"", strerror(errno));
            break;
        }
        if (z->sessions) zygote_sessions_tick(z->sessions);
        if (ready == 0) {
            if (short_pool && !s_refill(z, short_pool))
                poll(NULL, 0, 100); /* fork failing: back off */
            else if (!s_pool_short(z) && pool_forks(z->pool) != z->forks_reported)
                s_send_stats(z, NULL, NULL, NULL, 0); /* the pool is full again */
            s_check_recycle(z);
            continue;
        }
        for (nfds_t i = POLL_FIXED; i < nfds; i++) {
            if (!fds[i].revents) continue;
            if (owner[i]->session)
                zygote_sessions_on_io(z->sessions, owner[i]);
            else if (owner[i]->state == CHILD_RUNNING)
                pool_on_done(z->pool, owner[i]);
        }
        s_check_recycle(z);
        if (fds[1].revents) pool_on_sigchld(z->pool);
        if (fds[2].revents) pool_on_timer(z->pool);
        if (fds[0].revents & POLLOUT && zchan_flush(z->chan) < 0) break;
        if ((fds[0].revents & (POLLIN | POLLHUP | POLLERR)) && zmsg_read(z->chan, s_on_msg, z) < 0)
            break; /* the node is gone */
    }
    free(fds);
    free(owner);
}

/* --test-missing-module (tests only): base, with module imported first in the warm-up. */
static const profile_t *s_test_profile(const profile_t *base, const char *module)
{
    size_t n = 0;
    while (base->preload && base->preload[n]) n++;
    const char **preload = xcalloc(n + 2, sizeof *preload);
    preload[0] = module;
    for (size_t i = 0; i < n; i++) preload[i + 1] = base->preload[i];
    profile_t *p = xcalloc(1, sizeof *p);
    *p = *base;
    p->preload = preload;
    return p;
}

int zygote_main(const zygote_conf_t *conf)
{
    zygote_t z = {.conf = conf, .started_us = clock_mono_us(), .procfd = -1};
    char err[512];
    z.chan = zchan_new(CHAN_FD);
    z.profile = profile_find(conf->profile);
    if (!z.profile) {
        snprintf(err, sizeof err, "unknown profile %s", conf->profile);
        return s_fatal(&z, err);
    }
    if (conf->test_missing[0]) z.profile = s_test_profile(z.profile, conf->test_missing);
    if (conf->env_site[0]) {
        /* with a mount namespace the environment is mounted at a neutral path (envprofile.h) */
        int mounted = (conf->layers & LAYER_NAMESPACES) != 0;
        z.sb.env_host = conf->env_site;
        z.profile = envprofile_new(z.profile, mounted ? ENVPROFILE_SITE : conf->env_site,
                                   conf->env_modules, err, sizeof err);
        if (!z.profile) return s_fatal(&z, err);
    }
    if (s_start(&z, err, sizeof err) < 0) return s_fatal(&z, err);
    s_hello(&z);
    for (int kind; (kind = s_pool_short(&z)) && s_refill(&z, kind);) {
    }
    log_info("event=zygote_ready profile=%s python=%s pid=%d pool=%ld", z.profile->name,
             py_version(), (int)getpid(), conf->pool);
    s_serve(&z);
    /* Children die with us (PDEATHSIG), and as pid 1 of the namespace our exit kills
     * everything left in it anyway. */
    log_info("event=zygote_exit profile=%s jobs=%ld", z.profile->name, z.jobs_done);
    return 0;
}
