/* executor-node/zygote/sessions/zygote_sessions.c — see zygote_sessions.h. Forks are
 * session_fork.c's; the files of a workspace as a whole (snapshot, restore, a clone's copy) are
 * session_files.c's. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/idmap.h"
#include "common/log.h"
#include "proto/snapshot.h"
#include "executor-node/area/jobcopy.h"
#include "executor-node/area/scrub.h"
#include "executor-node/link/sessions_text.h"
#include "executor-node/mem/procfs.h"
#include "executor-node/sandbox/landlock.h"
#include "executor-node/zygote/pool/outcome.h"
#include "session_atomic.h"
#include "session_files.h"
#include "session_fork.h"
#include "session_results.h"
#include "zygote_session.h"
#include "zygote_sessions.h"

#define TICK_US     1000000u /* memory measurements and fork deadlines, at most this often */
#define MEASURE_MAX 4        /* sessions measured per tick (a 200 MB one costs ~5 ms) */

struct zygote_sessions {
    zygote_sessions_conf_t conf;
    zygote_sessions_io_t io;
    idmap_t *by_id; /* session id → zygote_session_t */
    size_t count;
    size_t ending;         /* of them, ending: their processes go, and they take no room */
    session_fork_t *forks; /* fork_session, under way */
    uint64_t next_tick_us;
};

/* What forks ask of the table (session_fork.h), defined with the table below. */
static const session_fork_hooks_t s_fork_hooks;

static void s_news(zygote_sessions_t *s, const zygote_session_t *z, zygote_session_event_t event)
{
    zmsg_t m = {.type = ZM_SESSION, .id = z->id};
    m.session.event = event;
    snprintf(m.session.tenant, sizeof m.session.tenant, "%s", z->tenant);
    m.session.idle_timeout_s = z->idle_timeout_s;
    m.session.memory_mb = z->memory_mb;
    m.session.memory_kb = z->memory_kb;
    m.session.retention_s = z->retention_s;
    snprintf(m.session.reason, sizeof m.session.reason, "%s", z->end_reason);
    s->io.news(s->io.arg, &m);
}

static const char *s_idstr(const uint8_t id[ID_BYTES], char out[ID_STR_LEN + 1])
{
    id_format(id, out);
    return out;
}

/* ---- the table --------------------------------------------------------------------------- */

zygote_sessions_t *zygote_sessions_new(const zygote_sessions_conf_t *conf,
                                       const zygote_sessions_io_t *io)
{
    zygote_sessions_t *s = xcalloc(1, sizeof *s);
    s->conf = *conf;
    s->io = *io;
    s->by_id = idmap_new();
    session_fork_hooks_t hooks = s_fork_hooks;
    hooks.arg = s;
    s->forks = session_fork_new(
        &(session_fork_conf_t){conf->pool, conf->ws, conf->env, conf->procfd, conf->fork_ok},
        &hooks);
    return s;
}

static void s_kill_one(void *arg, const uint8_t *id, void *value)
{
    (void)arg, (void)id;
    zygote_session_t *z = value;
    if (z->child && z->child->pid > 0) kill(z->child->pid, SIGKILL);
    if (z->backup && z->backup->pid > 0) kill(z->backup->pid, SIGKILL);
}

void zygote_sessions_destroy(zygote_sessions_t **self_p)
{
    zygote_sessions_t *s = *self_p;
    if (!s) return;
    idmap_each(s->by_id, s_kill_one, NULL); /* their slots and memory go with the zygote */
    idmap_destroy(&s->by_id);
    session_fork_destroy(&s->forks);
    free(s);
    *self_p = NULL;
}

static zygote_session_t *s_find(zygote_sessions_t *s, const uint8_t id[ID_BYTES],
                                const char *tenant)
{
    zygote_session_t *z = idmap_get(s->by_id, id);
    /* another tenant's session is answered like one that does not exist */
    return z && (!tenant || !strcmp(z->tenant, tenant)) ? z : NULL;
}

static zygote_session_t *s_add(zygote_sessions_t *s, const uint8_t id[ID_BYTES], const char *tenant,
                               child_t *c, const zygote_session_t *from)
{
    zygote_session_t *z = xcalloc(1, sizeof *z);
    memcpy(z->id, id, ID_BYTES);
    snprintf(z->tenant, sizeof z->tenant, "%s", tenant);
    z->child = c;
    z->layers = from ? from->layers : 1; /* a pooled child holds one Landlock layer */
    if (from) {
        z->files_marks = from->files_marks; /* its files, copied with their times */
        z->memory_mb = from->memory_mb;
        z->idle_timeout_s = from->idle_timeout_s;
        z->retention_s = from->retention_s;
        z->lineage = from->lineage;
        if (z->lineage) z->lineage->refs++;
    } else if (c->ws_base[0]) {
        z->lineage = xcalloc(1, sizeof *z->lineage);
        snprintf(z->lineage->base, sizeof z->lineage->base, "%s", c->ws_base);
        z->lineage->refs = 1;
        snprintf(z->spare, sizeof z->spare, "%s", c->ws_base);
    }
    snprintf(z->cwd, sizeof z->cwd, "%s", c->ws_dir);
    c->session = z;
    idmap_put(s->by_id, z->id, z);
    s->count++;
    return z;
}

size_t zygote_sessions_count(const zygote_sessions_t *s)
{
    return s->count;
}

int zygote_sessions_forking(const zygote_sessions_t *s)
{
    return session_fork_busy(s->forks);
}

/* ---- answers ----------------------------------------------------------------------------- */

static void s_describe(const zygote_sessions_t *s, const zygote_session_t *z, result_t *res)
{
    res->session.present = 1;
    memcpy(res->session.id, z->id, ID_BYTES);
    res->session.alive = !z->ending;
    free(res->session.end_reason);
    res->session.end_reason = z->ending ? xstrdup(z->end_reason) : NULL;
    res->session.memory_kb = z->memory_kb;
    res->session.memory_mb = z->memory_mb;
    res->session.idle_timeout_s = z->idle_timeout_s;
    res->session.forks_left = s->conf.fork_ok ? LANDLOCK_MAX_LAYERS - z->layers : 0;
    res->session.cell = z->cells; /* a cell's own number; for other jobs, the cells so far */
}

static void s_answer_clones(zygote_sessions_t *s, const uint8_t id[ID_BYTES],
                            const zygote_session_t *z, status_t st, const char *type,
                            const char *message, const child_t *c, zygote_session_t *const *clones,
                            size_t n)
{
    result_t res;
    result_init(&res);
    res.status = st;
    if (type) {
        res.error.present = 1;
        res.error.type = xstrdup(type);
        res.error.message = xstrdup(message);
    }
    res.exit.reason = xstrdup(status_name(st));
    if (z) s_describe(s, z, &res);
    if (n) {
        res.session.clones = xcalloc(n, ID_BYTES);
        for (size_t i = 0; i < n; i++) memcpy(res.session.clones[i], clones[i]->id, ID_BYTES);
        res.session.n_clones = n;
    }
    s->io.answer(s->io.arg, id, &res, c);
    scrub_result(&res);
}

static void s_answer(zygote_sessions_t *s, const uint8_t id[ID_BYTES], const zygote_session_t *z,
                     status_t st, const char *type, const char *message, const child_t *c)
{
    s_answer_clones(s, id, z, st, type, message, c, NULL, 0);
}

static void s_announce(zygote_sessions_t *s, zygote_session_t *z)
{
    if (z->announced) return;
    z->announced = 1;
    char idstr[ID_STR_LEN + 1];
    log_info("event=session_up session=%s tenant=%s memory_mb=%ld idle_timeout_s=%ld layers=%d",
             s_idstr(z->id, idstr), z->tenant, z->memory_mb, z->idle_timeout_s, z->layers);
    s_news(s, z, ZS_UP);
}

/* z is over: the node hears it now, before any answer that says so could bring another job. */
static void s_ending(zygote_sessions_t *s, zygote_session_t *z, const char *reason)
{
    if (!z->ending) {
        z->ending = 1;
        s->ending++;
        snprintf(z->end_reason, sizeof z->end_reason, "%s", reason);
    }
    if (z->announced && !z->down_sent) {
        z->down_sent = 1;
        s_news(s, z, ZS_DOWN);
    }
}

static void s_kill(zygote_sessions_t *s, zygote_session_t *z, const char *reason)
{
    s_ending(s, z, reason);
    z->child->answered = 1; /* nothing more is answered for its current job, if any */
    if (z->child->pid > 0) pool_kill(z->child, KILL_CANCEL);
}

/* A clone that never got a process leaves the table (session_fork.c frees its slot). */
static void s_forget(zygote_sessions_t *s, zygote_session_t *z)
{
    if (z->lineage) z->lineage->refs--; /* the parent holds it still */
    idmap_del(s->by_id, z->id);
    s->count--;
    s->ending -= z->ending;
    free(z);
}

/* ---- jobs -------------------------------------------------------------------------------- */

/* The job's session when it is the job's tenant's and lives; NULL with why (one that is
 * ending says why, and only to its own tenant). */
static zygote_session_t *s_live(zygote_sessions_t *s, const jobspec_t *job, refusal_t *why)
{
    char idstr[ID_STR_LEN + 1];
    zygote_session_t *z = s_find(s, job->session, job->tenant);
    s_idstr(job->session, idstr);
    if (!z)
        refusal_fill(why, ST_REJECTED, "SessionUnknown", SESSION_UNKNOWN_FMT, idstr);
    else if (z->ending)
        refusal_fill(why, ST_REJECTED, "SessionEnded", SESSION_ENDED_FMT, idstr, z->end_reason);
    return z && !z->ending ? z : NULL;
}

/* A restore's files into dir, and its snapshot swapped for the part the session's process
 * reads (its variables and imports). */
static int s_restore_files(zygote_sessions_t *s, const char *dir, jobspec_t *job, refusal_t *why)
{
    snapshot_view_t v;
    char err[256];
    if (snapshot_decode(job->snapshot, job->snapshot_len, &v, err, sizeof err) < 0)
        return refusal_fill(why, ST_REJECTED, "BadSnapshot", "%s", err);
    int rc = 0;
    if (v.n_files && !s->conf.ws)
        rc = refusal_fill(why, ST_REJECTED, "BadSnapshot",
                          "the snapshot holds files, and profile %s has no workspace",
                          s->conf.env->profile->name);
    else if (v.n_files &&
             session_files_restore(s->conf.ws, dir, v.files, v.n_files, err, sizeof err) < 0)
        rc = refusal_fill(why, ST_INTERNAL_ERROR, "RestoreFailed", "%s", err);
    if (rc == 0) {
        buf_t b;
        buf_init(&b);
        snapshot_encode_variables(&v, &b);
        explicit_bzero(job->snapshot, job->snapshot_len);
        free(job->snapshot);
        job->snapshot = buf_steal(&b, &job->snapshot_len);
    }
    snapshot_view_free(&v);
    return rc;
}

/* Between cells a session's process waits in its C loop and runs nothing (child/wake.h): CPU
 * it used meanwhile means something of the tenant's ran outside any cell's deadline and slot.
 * Read through the zygote's own /proc, never from the process's account of itself. */
#define REST_CPU_MAX_MS 200 /* a few scheduler ticks of slack */

static void s_rest_begins(zygote_sessions_t *s, zygote_session_t *z)
{
    uint64_t ms;
    z->rest_cpu_ms = procfs_cpu_ms(s->conf.procfd, z->child->pid, &ms) == 0 ? ms + 1 : 0;
}

/* 0, or -1 (the session ended, why filled) when its process ran while it should have waited. */
static int s_rest_was_rest(zygote_sessions_t *s, zygote_session_t *z, refusal_t *why)
{
    uint64_t ms;
    if (!z->rest_cpu_ms || procfs_cpu_ms(s->conf.procfd, z->child->pid, &ms) < 0 ||
        ms + 1 <= z->rest_cpu_ms + REST_CPU_MAX_MS)
        return 0;
    log_warn("event=session_ran_between_cells tenant=%s cpu_ms=%llu", z->tenant,
             (unsigned long long)(ms + 1 - z->rest_cpu_ms));
    s_kill(s, z, "security violation: its process ran between cells");
    return refusal_fill(why, ST_REJECTED, "SessionEnded",
                        "the session ended: its process ran between cells");
}

/* z's process gets the job in its area (it is not woken yet). */
static int s_prepare(zygote_sessions_t *s, zygote_session_t *z, const uint8_t id[ID_BYTES],
                     const jobspec_t *job, const char *proxy, refusal_t *why)
{
    child_t *c = z->child;
    if (s_rest_was_rest(s, z, why) < 0) return -1;
    area_reset(&c->area, 0, 0);
    area_hdr_t *hdr = area_hdr(&c->area);
    snprintf(hdr->egress_proxy, sizeof hdr->egress_proxy, "%s", c->egress && proxy ? proxy : "");
    uintptr_t at =
        c->area_seen_at ? c->area_seen_at + JOBAREA_HEADER : (uintptr_t)area_job(&c->area);
    if (!jobcopy_put_at(job, JOBCOPY_RUN, area_job(&c->area), c->area.job_cap, at))
        return refusal_fill(why, ST_REJECTED, "JobTooLarge",
                            "the job does not fit its sandbox's area");
    area_hdr_t *h = area_hdr(&c->area);
    h->job_len = (uint32_t)jobcopy_size(job, JOBCOPY_RUN);
    h->out_limit = (uint32_t)job->limits.output_bytes;
    if (job->n_files && s->conf.ws && !(c->inputs = jobcopy_private(job, JOBCOPY_FILES)))
        log_warn("event=inputs_not_kept files=%zu", job->n_files);
    memcpy(c->id, id, ID_BYTES);
    c->kind = job->kind;
    c->limits = job->limits;
    c->limits.memory_mb = z->memory_mb; /* the session's, set when it began */
    snprintf(c->tenant, sizeof c->tenant, "%s", job->tenant);
    z->cell_since_ns = workspace_now_ns(); /* the clock files are stamped with, not a finer one */
    if (job->kind == JOB_EXEC) z->cells++;
    return 0;
}

/* z's process gets the job and is woken. */
static int s_start(zygote_sessions_t *s, zygote_session_t *z, const uint8_t id[ID_BYTES],
                   const jobspec_t *job, const char *proxy, refusal_t *why)
{
    if (s_prepare(s, z, id, job, proxy, why) < 0) return -1;
    pool_start(s->conf.pool, z->child);
    return 0;
}

/* An atomic cell: z's files and process are set aside first (session_atomic.h), then it
 * starts (s_on_backup). The job waits in z's area meanwhile: the zygote keeps none. */
static int s_start_atomic(zygote_sessions_t *s, zygote_session_t *z, const uint8_t id[ID_BYTES],
                          jobspec_t *job, const char *proxy, refusal_t *why)
{
    char err[256];
    if (session_atomic_save_files(s->conf.ws, z, err, sizeof err) < 0)
        return refusal_fill(why, ST_INTERNAL_ERROR, "AtomicUnavailable",
                            "the session could not be set aside for an atomic cell: %s", err);
    int rc = 0;
    if (job->n_files && workspace_put(s->conf.ws, z->cwd, job, 1, err, sizeof err) < 0)
        rc = refusal_fill(why, ST_INTERNAL_ERROR, "WorkspaceError", "%s", err);
    if (rc == 0) rc = s_prepare(s, z, id, job, proxy, why);
    if (rc == 0) {
        z->atomic = 1;
        if ((rc = session_fork_backup(s->forks, z, why)) < 0) z->atomic = 0;
    }
    if (rc < 0) { /* nothing ran: what the job wrote goes too */
        if (session_atomic_restore_files(s->conf.ws, z, err, sizeof err) < 0)
            log_warn("event=atomic_files_not_restored error=\"%s\"", err);
        if (job->kind == JOB_EXEC && z->cells && !z->ending) z->cells--;
    }
    return rc;
}

static long s_idle_timeout(const zygote_sessions_t *s, long asked)
{
    long t = asked > 0 ? asked : s->conf.idle_default_s;
    return t > s->conf.idle_max_s ? s->conf.idle_max_s : t;
}

/* Room for n new sessions named ids. */
static int s_room(const zygote_sessions_t *s, const uint8_t (*ids)[ID_BYTES], size_t n,
                  refusal_t *why)
{
    if ((long)(s->count - s->ending + n) > s->conf.max_sessions) /* (the node counts the same) */
        return refusal_fill(why, ST_REJECTED, "SessionLimit",
                            "this executor holds its maximum of %ld sessions",
                            s->conf.max_sessions);
    for (size_t i = 0; i < n; i++)
        if (idmap_get(s->by_id, ids[i]))
            return refusal_fill(why, ST_REJECTED, "DuplicateSession",
                                "a session with this id exists");
    return 0;
}

/* session_new, or a restore into a new session: a pooled child becomes the session. */
static int s_create(zygote_sessions_t *s, const uint8_t id[ID_BYTES], jobspec_t *job,
                    const char *proxy, refusal_t *why)
{
    char err[256];
    if (s_room(s, (const uint8_t(*)[ID_BYTES])job->new_session, 1, why) < 0) return -1;
    child_t *c = pool_take_session(s->conf.pool, proxy != NULL);
    if (!c)
        return refusal_fill(why, ST_INTERNAL_ERROR, "ForkFailed",
                            "the executor could not start a sandbox");
    int rc = 0;
    if (job->n_files && workspace_put(s->conf.ws, c->ws_dir, job, 1, err, sizeof err) < 0)
        rc = refusal_fill(why, ST_INTERNAL_ERROR, "WorkspaceError", "%s", err);
    if (rc == 0 && job->kind == JOB_SESSION_RESTORE) rc = s_restore_files(s, c->ws_dir, job, why);
    if (rc < 0) {
        pool_discard(s->conf.pool, c); /* its directory is spoilt: it goes */
        return -1;
    }
    zygote_session_t *z = s_add(s, job->new_session, job->tenant, c, NULL);
    z->memory_mb = job->limits.memory_mb;
    z->idle_timeout_s = s_idle_timeout(s, job->idle_timeout_s);
    z->retention_s = job->retention_s;
    z->cells = job->resume_cells; /* a resumed session numbers its cells on */
    if (s_start(s, z, id, job, proxy, why) < 0) {
        s_kill(s, z, "the session could not start");
        return -1;
    }
    return 0;
}

/* A cell, a snapshot, a summary or a restore, in an existing session. */
static int s_in_session(zygote_sessions_t *s, const uint8_t id[ID_BYTES], jobspec_t *job,
                        const char *proxy, refusal_t *why)
{
    char err[256];
    zygote_session_t *z = s_live(s, job, why);
    if (!z) return -1;
    if (z->fork || z->backup || z->child->state != CHILD_KEPT)
        return refusal_fill(why, ST_REJECTED, "SessionBusy", "the session is running another job");
    if (job->atomic) return s_start_atomic(s, z, id, job, proxy, why);
    if (job->n_files && workspace_put(s->conf.ws, z->cwd, job, 1, err, sizeof err) < 0)
        return refusal_fill(why, ST_INTERNAL_ERROR, "WorkspaceError", "%s", err);
    if (job->kind == JOB_SESSION_RESTORE && s_restore_files(s, z->cwd, job, why) < 0) return -1;
    return s_start(s, z, id, job, proxy, why);
}

static int s_close(zygote_sessions_t *s, const uint8_t id[ID_BYTES], const jobspec_t *job,
                   refusal_t *why)
{
    zygote_session_t *z = s_live(s, job, why);
    if (!z) return -1;
    if (z->fork || z->backup || z->child->state != CHILD_KEPT)
        return refusal_fill(why, ST_REJECTED, "SessionBusy", "the session is running another job");
    s_kill(s, z, "closed by the client");
    s_answer(s, id, z, ST_OK, NULL, NULL, NULL);
    return 0;
}

int zygote_sessions_job(zygote_sessions_t *s, const uint8_t id[ID_BYTES], jobspec_t *job,
                        const char *proxy, refusal_t *why)
{
    switch (job->kind) {
    case JOB_SESSION_NEW:
        return s_create(s, id, job, proxy, why);
    case JOB_SESSION_RESTORE:
        return job->has_new_session ? s_create(s, id, job, proxy, why)
                                    : s_in_session(s, id, job, proxy, why);
    case JOB_EXEC:
        return s_in_session(s, id, job, proxy, why);
    case JOB_SESSION_SNAPSHOT:
    case JOB_SESSION_INFO:
        return s_in_session(s, id, job, NULL, why);
    case JOB_SESSION_CLOSE:
        return s_close(s, id, job, why);
    case JOB_SESSION_FORK: {
        zygote_session_t *z = s_live(s, job, why);
        if (!z) return -1;
        return session_fork_start(s->forks, z, id, job, why);
    }
    default:
        return refusal_fill(why, ST_REJECTED, "BadJob", "a %s job does not run in a session",
                            job_kind_name(job->kind));
    }
}

/* ---- ends -------------------------------------------------------------------------------- */

/* Why a job leaves the session unusable, or NULL when it lives on. ru: the process was reaped. */
static const char *s_end_reason(const zygote_sessions_t *s, const zygote_session_t *z,
                                const child_t *c, const result_t *res, const struct rusage *ru,
                                int first, char *buf, size_t cap)
{
    const char *what = res->exit.syscall ? res->exit.syscall : "?";
    if (c->killed == KILL_TIMEOUT)
        snprintf(buf, cap,
                 "timeout: the cell went past its %ld ms limit and did not stop within "
                 "%ld ms of its KeyboardInterrupt",
                 c->limits.wall_ms, (long)s->conf.interrupt_grace_ms);
    else if (c->killed == KILL_CANCEL)
        snprintf(buf, cap,
                 "cancelled: the cell did not stop within %ld ms of its "
                 "KeyboardInterrupt",
                 (long)s->conf.interrupt_grace_ms);
    else if (c->killed == KILL_EGRESS)
        snprintf(buf, cap,
                 "egress_limit: the cell went past its network byte cap and did not stop "
                 "within %ld ms of its KeyboardInterrupt",
                 (long)s->conf.interrupt_grace_ms);
    else if (res->status == ST_MEMORY_LIMIT)
        snprintf(buf, cap, "memory_limit: a cell needed more than the session's %ld MB",
                 z->memory_mb);
    else if (res->status == ST_SECURITY_VIOLATION)
        snprintf(buf, cap, "security_violation: the sandbox stopped the session at %.100s", what);
    else if (res->status == ST_CPU_LIMIT)
        snprintf(buf, cap, "cpu_limit: the session used up its CPU time");
    else if (ru)
        snprintf(buf, cap, "the session's process ended (%s %d)",
                 res->exit.signal ? "signal" : "exit status",
                 res->exit.signal ? res->exit.signal : res->exit.code);
    else if (first && res->status != ST_OK)
        snprintf(buf, cap, "the session could not start: %.100s",
                 res->error.message ? res->error.message : status_name(res->status));
    else
        return NULL;
    return buf;
}

/* An atomic cell ended (res): ok, it stays and its copies go; otherwise the session is put back
 * as it was, and lives on. The end reason the session has after it (NULL: it lives on). */
static const char *s_atomic_end(zygote_sessions_t *s, zygote_session_t *z, result_t *res,
                                const struct rusage *ru, const char *end, char *buf, size_t cap)
{
    char err[256], idstr[ID_STR_LEN + 1];
    res->session.atomic = 1;
    if (res->status == ST_OK && !end) {
        session_atomic_commit(s->conf.pool, z);
        session_atomic_drop_files(s->conf.ws, z);
        return NULL;
    }
    int restored = session_atomic_rollback(s->conf.pool, z, ru != NULL) == 0;
    if (session_atomic_restore_files(s->conf.ws, z, err, sizeof err) < 0)
        log_warn("event=atomic_files_not_restored session=%s error=\"%s\"", s_idstr(z->id, idstr),
                 err);
    if (!restored) {
        snprintf(buf, cap,
                 "an atomic cell ended %s and the session as it was before it could "
                 "not be put back (its copy was gone)",
                 status_name(res->status));
        return buf;
    }
    res->session.rolled_back = 1;
    z->measured = 0; /* the process is another one: measure it again */
    log_info("event=atomic_rolled_back session=%s status=%s", s_idstr(z->id, idstr),
             status_name(res->status));
    return NULL;
}

void zygote_sessions_finished(zygote_sessions_t *s, child_t *c, int wstatus,
                              const struct rusage *ru)
{
    /* (the answer goes after the news of a new session: the node must know of it before
     * anyone holding the answer can send it a job) */
    zygote_session_t *z = c->session;
    if (z->fork) {
        session_fork_died(s->forks, c); /* the fork's answer, and both sides' fate */
        return;
    }
    int first = !z->announced;
    c->answered = 1;
    outcome_t o = {.area = &c->area,
                   .limits = c->limits,
                   .killed = c->killed,
                   .interrupted = c->interrupted,
                   .wstatus = wstatus,
                   .ru = ru,
                   .start_us = c->start_us,
                   .id = c->id,
                   .tenant = c->tenant,
                   .profile = s->conf.env->profile->name,
                   .kind = c->kind == JOB_EXEC ? JOB_EXEC : JOB_VALIDATE, /* files: cells only */
                   .ws_dir = c->ws_dir,
                   .inputs = c->inputs,
                   .files_since_ns = z->cell_since_ns,
                   .files_marks = c->kind == JOB_EXEC ? &z->files_marks : NULL};
    result_t res;
    result_init(&res);
    outcome_result(&o, &res);
    if (res.status == ST_OK && c->kind == JOB_SESSION_SNAPSHOT)
        session_snapshot_result(s->conf.ws, z, &res);
    if (res.status == ST_OK && c->kind == JOB_SESSION_INFO)
        session_info_result(s->conf.ws, z, &res);
    char buf[WIRE_MAX_REASON + 1];
    const char *end = s_end_reason(s, z, c, &res, ru, first, buf, sizeof buf);
    child_t *was = c; /* the process that ran it (an atomic cell's rollback replaces it) */
    if (z->atomic) end = s_atomic_end(s, z, &res, ru, end, buf, sizeof buf);
    c = z->child;
    if (end) s_ending(s, z, end);
    s_describe(s, z, &res);
    if (!end) {
        if (c == was) pool_kept(s->conf.pool, c);
        s_rest_begins(s, z);
        if (first) s_announce(s, z);
    }
    s->io.answer(s->io.arg, was->id, &res, was);
    outcome_log(&o, &res, ru ? ru->ru_minflt : -1);
    scrub_result(&res);
    if (end && !ru) {
        s_kill(s, z, end); /* its reap finishes the end (zygote_sessions_gone) */
    }
}

void zygote_sessions_gone(zygote_sessions_t *s, child_t *c, int wstatus)
{
    zygote_session_t *z = c->session;
    char idstr[ID_STR_LEN + 1];
    if (c != z->child) { /* an atomic cell's backup: the session itself lives on */
        if (z->fork) session_fork_died(s->forks, c);
        if (z->backup == c) {
            log_warn("event=atomic_backup_died session=%s status=%d", s_idstr(z->id, idstr),
                     wstatus);
            z->backup = NULL;
        }
        c->session = NULL;
        c->ws_dir[0] = c->ws_base[0] = '\0'; /* the session's, not the pool's to remove */
        return;
    }
    if (z->fork) session_fork_died(s->forks, c);
    if (!z->ending) {
        char why[WIRE_MAX_REASON + 1];
        if (WIFSIGNALED(wstatus))
            snprintf(why, sizeof why, "the session's process was killed (signal %d)",
                     WTERMSIG(wstatus));
        else
            snprintf(why, sizeof why, "the session's process exited (%d)", WEXITSTATUS(wstatus));
        s_ending(s, z, why);
    }
    if (z->backup) session_atomic_commit(s->conf.pool, z); /* nothing left to put back */
    session_atomic_drop_files(s->conf.ws, z);
    if (z->cwd[0] && s->conf.ws) workspace_remove(s->conf.ws, z->cwd);
    if (z->lineage && --z->lineage->refs == 0) {
        workspace_remove_tree(s->conf.ws, z->lineage->base);
        free(z->lineage);
    }
    c->ws_dir[0] = c->ws_base[0] = '\0'; /* removed above: nothing for the pool to drop */
    c->session = NULL;
    log_info("event=session_down session=%s tenant=%s cells=%u reason=\"%s\"",
             s_idstr(z->id, idstr), z->tenant, z->cells, z->end_reason);
    idmap_del(s->by_id, z->id);
    s->count--;
    s->ending -= z->ending;
    free(z);
}

int zygote_sessions_wants_io(const child_t *c)
{
    if (c->state == CHILD_RUNNING && !c->answered) return !c->muted;
    return c->session->fork && c->state == CHILD_KEPT && c->pid <= 0; /* a clone's 'R' */
}

void zygote_sessions_on_io(zygote_sessions_t *s, child_t *c)
{
    if (c->session && c->session->fork && session_fork_on_io(s->forks, c)) return;
    char b[16];
    ssize_t n = read(c->sock, b, sizeof b);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
        close(c->sock); /* the process is gone or going: SIGCHLD tells how */
        c->sock = -1;
        return;
    }
    if (c->state != CHILD_RUNNING || c->answered) return;
    /* A byte written early by the cell's own code (the socket is visible to it) mutes the
     * socket for the rest of the job, as pool.c does a one-off job's: one wake-up of the shared
     * zygote per job however many bytes it writes. The job's end is then seen on the progress
     * tick (zygote_sessions_on_muted), at most 50 ms late. */
    if (area_hdr(&c->area)->phase != AREA_FINISHED) {
        pool_mute(s->conf.pool, c);
        return;
    }
    zygote_sessions_finished(s, c, 0, NULL);
}

/* What a muted job left in its socket goes before the next job's bytes can be heard (a
 * datagram each; bounded, as the job could have queued many: what is left mutes the next one). */
static void s_drain(child_t *c)
{
    char b[16];
    for (int i = 0; i < 64 && recv(c->sock, b, sizeof b, MSG_DONTWAIT) > 0; i++) {
    }
}

void zygote_sessions_on_muted(zygote_sessions_t *s, child_t *c)
{
    if (!c->muted || c->state != CHILD_RUNNING || c->answered || c->sock < 0 ||
        area_hdr(&c->area)->phase != AREA_FINISHED)
        return;
    s_drain(c);
    zygote_sessions_finished(s, c, 0, NULL);
}

void zygote_sessions_end(zygote_sessions_t *s, const uint8_t id[ID_BYTES], const char *reason)
{
    zygote_session_t *z = s_find(s, id, NULL);
    if (z && !z->ending && !z->fork && !z->backup && z->child->state == CHILD_KEPT)
        s_kill(s, z, reason);
}

/* ---- memory ------------------------------------------------------------------------------ */

typedef struct {
    zygote_sessions_t *s;
    int budget;
} measure_t;

static void s_measure_one(void *arg, const uint8_t *id, void *value)
{
    (void)id;
    measure_t *m = arg;
    zygote_session_t *z = value;
    uint64_t kb;
    if (m->budget <= 0 || z->ending || z->fork || z->child->state != CHILD_KEPT ||
        z->measured == z->cells + 1)
        return;
    m->budget--;
    z->measured = z->cells + 1;
    if (procfs_pss_kb(m->s->conf.procfd, z->child->pid, &kb) < 0) return;
    z->memory_kb = kb;
    if (z->announced) s_news(m->s, z, ZS_MEMORY);
}

void zygote_sessions_tick(zygote_sessions_t *s)
{
    uint64_t now = clock_mono_us();
    if (now < s->next_tick_us) return;
    s->next_tick_us = now + TICK_US;
    session_fork_tick(s->forks);
    measure_t m = {s, MEASURE_MAX};
    idmap_each(s->by_id, s_measure_one, &m); /* (it changes nothing in the map) */
}

/* ---- the table as forks see it (session_fork_hooks_t) ------------------------------------ */

static zygote_session_t *h_add(void *arg, const uint8_t id[ID_BYTES], const char *tenant,
                               child_t *c, const zygote_session_t *from)
{
    return s_add(arg, id, tenant, c, from);
}

static void h_forget(void *arg, zygote_session_t *z)
{
    s_forget(arg, z);
}

static int h_room(void *arg, const uint8_t (*ids)[ID_BYTES], size_t n, refusal_t *why)
{
    return s_room(arg, ids, n, why);
}

static void h_announce(void *arg, zygote_session_t *z)
{
    s_announce(arg, z);
}

static void h_answer(void *arg, const uint8_t id[ID_BYTES], const zygote_session_t *z, status_t st,
                     const char *type, const char *message, const child_t *c,
                     zygote_session_t *const *clones, size_t n)
{
    s_answer_clones(arg, id, z, st, type, message, c, clones, n);
}

static void h_kill(void *arg, zygote_session_t *z, const char *reason)
{
    s_kill(arg, z, reason);
}

static void h_ended(void *arg, zygote_session_t *z, const char *reason)
{
    s_ending(arg, z, reason);
}

/* An atomic cell's backup is ready: the cell starts; or it could not be made: the cell is
 * answered without having run, and what it wrote (its input files) is taken back. */
static void h_backup_done(void *arg, zygote_session_t *z, child_t *backup, const char *why)
{
    zygote_sessions_t *s = arg;
    char err[256];
    if (backup && !z->ending && z->child->state == CHILD_KEPT) {
        z->backup = backup;
        pool_start(s->conf.pool, z->child);
        return;
    }
    z->backup = backup;
    session_atomic_commit(s->conf.pool, z); /* a backup of a session that ends meanwhile goes */
    if (session_atomic_restore_files(s->conf.ws, z, err, sizeof err) < 0)
        log_warn("event=atomic_files_not_restored error=\"%s\"", err);
    if (z->cells) z->cells--; /* the cell never ran */
    char message[320];
    snprintf(message, sizeof message,
             "the session could not be set aside for an atomic cell, which did not run: %s",
             why ? why : "it ended meanwhile");
    child_t *c = z->child;
    if (!z->ending) s_rest_begins(s, z);
    s_answer(s, c->id, z, ST_INTERNAL_ERROR, "AtomicUnavailable", message, c);
}

static const session_fork_hooks_t s_fork_hooks = {
    h_add, h_forget, h_room, h_announce, h_answer, h_kill, h_ended, h_backup_done, NULL,
};
