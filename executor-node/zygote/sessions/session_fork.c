/* executor-node/zygote/sessions/session_fork.c — see session_fork.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "executor-node/child/fork_plan.h"
#include "executor-node/child/session_child.h"
#include "executor-node/mem/procfs.h"
#include "executor-node/sandbox/landlock.h"
#include "session_files.h"
#include "session_fork.h"
#include "session_fork_plan.h"

#define FORK_WAIT_MS 10000 /* from 'f' to the clones' 'R' */
/* Headroom in a forking session's RLIMIT_NPROC beyond its own clones: other forks (atomic
 * cells' backups above all) run at the same time, each raising its own session's limit against
 * the same per-uid count, and a pooled child may be forked meanwhile. Only the session's own C
 * loop runs in that window (it clones exactly as often as it was asked to), and every other
 * session's limit stays 0: the headroom lets nothing of a tenant's fork. */
#define NPROC_SLACK 16
#define MAX_STRAYS   256

struct session_fork {
    session_fork_conf_t conf;
    session_fork_hooks_t hooks;
    struct fork_op *ops; /* under way */
};

/* One clone of a fork under way. */
typedef struct {
    zygote_session_t *z;          /* its session (NULL for a backup, or once dropped) */
    child_t *c;                   /* its slot */
    int ready;                    /* 'R' came, from a checked pid */
    char dir[WORKSPACE_PATH_MAX]; /* under the parent's spare ("" without a workspace) */
    char cwd[WORKSPACE_PATH_MAX]; /* dir/w, its workspace */
    int fds[SESSION_FORK_FDS];    /* what its 'f' carries, until sent */
    int n_fds;
    uint32_t flags; /* its 'f''s */
} clone_t;

typedef struct fork_op {
    uint8_t job[ID_BYTES];
    int backup; /* an atomic cell's backup (session_fork_backup) */
    zygote_session_t *parent;
    child_t *pc;     /* its slot */
    clone_t *clones; /* n */
    size_t n, n_forked, n_ready;
    int parent_done;                     /* every 'F' came (or an 'E'): the session is idle again */
    int parent_ll;                       /* the session's next layer (sent with the last 'f') */
    char next_spare[WORKSPACE_PATH_MAX]; /* the parent's spare once the fork is done */
    uint64_t started_us, deadline_us;
    struct fork_op *next;
} fork_op_t;

session_fork_t *session_fork_new(const session_fork_conf_t *conf, const session_fork_hooks_t *hooks)
{
    session_fork_t *s = xcalloc(1, sizeof *s);
    s->conf = *conf;
    s->hooks = *hooks;
    return s;
}

static void s_free_op(fork_op_t *f)
{
    for (size_t i = 0; i < f->n; i++)
        for (int k = 0; k < f->clones[i].n_fds; k++)
            if (f->clones[i].fds[k] >= 0) close(f->clones[i].fds[k]);
    if (f->parent_ll >= 0) close(f->parent_ll);
    free(f->clones);
    free(f);
}

void session_fork_destroy(session_fork_t **self_p)
{
    session_fork_t *s = *self_p;
    if (!s) return;
    while (s->ops) { /* the zygote is ending: their processes go with it */
        struct fork_op *f = s->ops;
        s->ops = f->next;
        s_free_op(f);
    }
    free(s);
    *self_p = NULL;
}

int session_fork_busy(const session_fork_t *s)
{
    for (const fork_op_t *o = s->ops; o; o = o->next)
        if (!o->backup) return 1; /* an atomic cell's backup leaves the pool alone (NPROC_SLACK) */
    return 0;
}

/* RLIMIT_NPROC's soft limit of a child (its hard one stays as it was). */
static void s_nproc(pid_t pid, rlim_t soft)
{
    struct rlimit rl;
    if (pid <= 0 || prlimit(pid, RLIMIT_NPROC, NULL, &rl) < 0) return;
    rl.rlim_cur = soft < rl.rlim_max ? soft : rl.rlim_max;
    if (prlimit(pid, RLIMIT_NPROC, &rl, NULL) < 0)
        log_warn("event=nproc_failed pid=%d error=\"%s\"", (int)pid, strerror(errno));
}

/* Processes of the children's uid in this zygote's user namespace, as many as it could be:
 * RLIMIT_NPROC counts them all, so the session's soft limit is this plus its clones. */
static rlim_t s_nproc_count(session_fork_t *s)
{
    /* the zygote itself and the lineages' pid namespace holders (pidns.h), when children keep
     * its uid */
    rlim_t n = s->conf.env->sb->drop_uid ? 0 : 1 + (rlim_t)pool_holders(s->conf.pool);
    for (size_t i = 0; i < pool_slots(s->conf.pool); i++) n += pool_child(s->conf.pool, i)->pid > 0;
    return n;
}

/* Kills every child of the zygote that no slot knows: a clone nobody asked for (the holders of
 * the lineages' pid namespaces are the zygote's own). Only once no fork is under way: another
 * fork's clone is a child no slot knows until it says 'R'. */
static void s_sweep(session_fork_t *s)
{
    if (s->ops) return;
    pid_t kids[MAX_STRAYS];
    size_t n = procfs_children(s->conf.procfd, getpid(), kids, MAX_STRAYS);
    for (size_t i = 0; i < n; i++) {
        if (pool_find_pid(s->conf.pool, kids[i]) || pool_is_holder(s->conf.pool, kids[i])) continue;
        log_warn("event=stray_child_killed pid=%d", (int)kids[i]);
        kill(kids[i], SIGKILL);
    }
}

static void s_unlink_op(session_fork_t *s, fork_op_t *f)
{
    for (fork_op_t **p = &s->ops; *p; p = &(*p)->next)
        if (*p == f) {
            *p = f->next;
            break;
        }
    if (f->parent) f->parent->fork = NULL;
    for (size_t i = 0; i < f->n; i++)
        if (f->clones[i].z) f->clones[i].z->fork = NULL;
}

/* A clone that never got a process: everything made for it goes. One that has a process is
 * killed; its reap cleans up. */
static void s_drop_clone(session_fork_t *s, fork_op_t *f, clone_t *k)
{
    zygote_session_t *z = k->z;
    child_t *c = k->c;
    k->z = NULL;
    k->c = NULL;
    if (!c) return;
    if (f->backup) { /* no session of its own: its slot is ours to free */
        c->session = NULL;
        c->ws_dir[0] = c->ws_base[0] = '\0'; /* the session's directory, not the backup's */
        if (c->pid > 0)
            pool_discard(s->conf.pool, c);
        else
            pool_forget(s->conf.pool, c);
        return;
    }
    if (!z) return;
    z->fork = NULL;
    if (c->pid > 0) { /* it exists: its reap cleans up (zygote_sessions_gone) */
        s->hooks.kill(s->hooks.arg, z, "the fork it came from failed");
        return;
    }
    if (z->cwd[0] && s->conf.ws) workspace_remove(s->conf.ws, z->cwd);
    if (k->dir[0]) rmdir(k->dir);
    s->hooks.forget(s->hooks.arg, z); /* its lineage the parent holds still */
    c->session = NULL;
    c->ws_dir[0] = '\0';
    pool_forget(s->conf.pool, c);
}

static void s_fail(session_fork_t *s, fork_op_t *f, const char *type, const char *why)
{
    char idstr[ID_STR_LEN + 1];
    id_format(f->parent->id, idstr);
    log_warn("event=session_fork_failed session=%s backup=%d error=\"%s\"", idstr, f->backup, why);
    s_unlink_op(s, f);
    s_nproc(f->pc->pid, 0);
    for (size_t i = 0; i < f->n; i++) s_drop_clone(s, f, &f->clones[i]);
    if (f->next_spare[0]) rmdir(f->next_spare);
    if (!f->parent_done && !f->parent->ending) /* it may be cloning still: it cannot be trusted */
        s->hooks.kill(s->hooks.arg, f->parent, "the session did not complete a fork");
    if (f->backup)
        s->hooks.backup_done(s->hooks.arg, f->parent, NULL, why);
    else
        s->hooks.answer(s->hooks.arg, f->job, f->parent->ending ? NULL : f->parent,
                        ST_INTERNAL_ERROR, type, why, f->pc, NULL, 0);
    s_sweep(s);
    s_free_op(f);
}

static void s_complete(session_fork_t *s, fork_op_t *f)
{
    zygote_session_t *p = f->parent;
    s_unlink_op(s, f);
    s_sweep(s);
    if (f->backup) {
        child_t *b = f->clones[0].c;
        pool_kept(s->conf.pool, b);
        char idstr[ID_STR_LEN + 1];
        log_debug("event=session_backup session=%s us=%llu", (id_format(p->id, idstr), idstr),
                  (unsigned long long)(clock_mono_us() - f->started_us));
        s->hooks.backup_done(s->hooks.arg, p, b, NULL);
        s_free_op(f);
        return;
    }
    p->layers++;
    if (f->next_spare[0]) snprintf(p->spare, sizeof p->spare, "%s", f->next_spare);
    zygote_session_t **made = xcalloc(f->n, sizeof *made);
    for (size_t i = 0; i < f->n; i++) {
        made[i] = f->clones[i].z;
        made[i]->layers = p->layers;
        pool_kept(s->conf.pool, f->clones[i].c); /* ready for its first cell */
        s->hooks.announce(s->hooks.arg, made[i]);
    }
    char pid_str[ID_STR_LEN + 1], cid_str[ID_STR_LEN + 1];
    log_info("event=session_forked session=%s clone=%s clones=%zu us=%llu",
             (id_format(p->id, pid_str), pid_str), (id_format(made[0]->id, cid_str), cid_str), f->n,
             (unsigned long long)(clock_mono_us() - f->started_us));
    s->hooks.answer(s->hooks.arg, f->job, made[0], ST_OK, NULL, NULL, f->pc, made, f->n);
    free(made);
    s_free_op(f);
}

/* ---- preparing ----------------------------------------------------------------------------- */

/* The parent's next spare, made once per fork. */
static int s_next_spare(fork_op_t *f, char *err, size_t errlen)
{
    if (snprintf(f->next_spare, sizeof f->next_spare, "%s/s", f->parent->spare) >=
        (int)sizeof f->next_spare) {
        f->next_spare[0] = '\0';
        snprintf(err, errlen, "the session's directories are nested too deep");
        return -1;
    }
    if (mkdir(f->next_spare, 0711) < 0 && errno != EEXIST) { /* EEXIST: a failed fork's, empty */
        snprintf(err, errlen, "mkdir %s: %s", f->next_spare, strerror(errno));
        f->next_spare[0] = '\0';
        return -1;
    }
    return 0;
}

/* Clone i's directory (under the parent's spare) with its workspace, a copy of the parent's. */
static int s_dirs(session_fork_t *s, fork_op_t *f, size_t i, char *err, size_t errlen)
{
    clone_t *k = &f->clones[i];
    const zygote_session_t *p = f->parent;
    /* "f" as it always was for one clone; "f1", "f2"… for the others of a fan-out */
    int n = i ? snprintf(k->dir, sizeof k->dir, "%s/f%zu", p->spare, i)
              : snprintf(k->dir, sizeof k->dir, "%s/f", p->spare);
    if (n >= (int)sizeof k->dir ||
        snprintf(k->cwd, sizeof k->cwd, "%s/w", k->dir) >= (int)sizeof k->cwd) {
        snprintf(err, errlen, "the session's directories are nested too deep");
        k->dir[0] = k->cwd[0] = '\0';
        return -1;
    }
    if (mkdir(k->dir, 0711) < 0 && errno != EEXIST) { /* EEXIST: a failed fork's, empty */
        snprintf(err, errlen, "mkdir %s: %s", k->dir, strerror(errno));
        k->dir[0] = k->cwd[0] = '\0';
        return -1;
    }
    if (workspace_mount(s->conf.ws, k->cwd, err, errlen) < 0) {
        k->cwd[0] = '\0';
        return -1;
    }
    return session_files_copy(s->conf.ws, p->cwd, k->cwd, err, errlen);
}

/* A Landlock layer that keeps a side to dirs (none without a workspace: then its point is that
 * each side is in a domain of its own, no signals across, ABI 6 scoping). A session with network
 * keeps it on both sides: each new layer allows the egress port when the parent's child has it. */
static int s_ruleset(session_fork_t *s, const fork_op_t *f, const char **dirs, int n, char *err,
                     size_t errlen)
{
    const sandbox_t *sb = s->conf.env->sb;
    return landlock_ruleset_egress(sb->landlock_abi, s->conf.env->profile, dirs,
                                   s->conf.ws ? (size_t)n : 0, f->pc->egress ? sb->egress_port : 0,
                                   err, errlen);
}

/* What the clones must redo so that they share nothing with the parent (child/fork_plan.h),
 * read once and written into each clone's own area, where it reads it first. */
static int s_plan(session_fork_t *s, fork_op_t *f, char *err, size_t errlen)
{
    const child_t *pc = f->pc;
    uintptr_t area = pc->area_seen_at ? pc->area_seen_at : (uintptr_t)pc->area.base;
    child_t *first = f->clones[0].c;
    if (session_fork_plan(s->conf.procfd, pc->pid, f->parent->cwd, area, area + pc->area.size,
                          area_job(&first->area), first->area.job_cap, err, errlen) < 0)
        return -1;
    const fork_plan_t *plan = (const fork_plan_t *)(const void *)area_job(&first->area);
    size_t size =
        plan->magic == FORK_PLAN_MAGIC ? sizeof *plan + plan->n * sizeof plan->e[0] : sizeof *plan;
    for (size_t i = 1; i < f->n; i++) memcpy(area_job(&f->clones[i].c->area), plan, size);
    return 0;
}

/* Clone i's slot, area, socket, and (a session's clone) directory, layer and working
 * directory. 0, or -1 with why. */
static int s_prepare_clone(session_fork_t *s, fork_op_t *f, size_t i, char *err, size_t errlen)
{
    clone_t *k = &f->clones[i];
    child_t *pc = f->pc;
    int sv[2] = {-1, -1}, memfd = -1, on = 1;
    k->n_fds = 0;
    if (!(k->c = pool_free_slot(s->conf.pool, pc))) {
        snprintf(err, errlen, "no room for another sandbox");
        return -1;
    }
    child_t *cc = k->c;
    cc->session_capable = 1;
    cc->egress = pc->egress; /* its seccomp prologue is its parent's, so is its network */
    cc->state = CHILD_KEPT;
    cc->answered = 1;
    /* (area_map_memfd's mapping is MADV_DONTFORK: no child forked later inherits the clone's area) */
    if (area_map_memfd(&cc->area, pc->area.job_cap, pc->area.stream_cap, &memfd) < 0 ||
        socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0 ||
        setsockopt(sv[1], SOL_SOCKET, SO_PASSCRED, &on, sizeof on) < 0) {
        snprintf(err, errlen, "area or socket: %s", strerror(errno));
        if (memfd >= 0) close(memfd);
        if (sv[0] >= 0) close(sv[0]);
        if (sv[1] >= 0) close(sv[1]);
        return -1;
    }
    cc->sock = sv[1];
    k->fds[k->n_fds++] = sv[0];
    k->fds[k->n_fds++] = memfd;
    if (f->backup) {
        k->flags = FORK_BACKUP;
        return 0;
    }
    if (s->conf.ws && s_dirs(s, f, i, err, errlen) < 0) return -1;
    snprintf(cc->ws_dir, sizeof cc->ws_dir, "%s", k->cwd);
    const char *mine[1] = {k->dir};
    int ll = s_ruleset(s, f, mine, 1, err, errlen);
    if (ll < 0) return -1;
    k->fds[k->n_fds++] = ll;
    if (k->cwd[0]) {
        int cwd_fd = open(k->cwd, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (cwd_fd < 0) {
            snprintf(err, errlen, "open %s: %s", k->cwd, strerror(errno));
            return -1;
        }
        k->fds[k->n_fds++] = cwd_fd;
        k->flags |= FORK_HAS_CWD;
    }
    return 0;
}

/* 'f' with the descriptors (session_child.h's order). 0, or -1 with errno. */
static int s_send(int sock, const fork_msg_t *msg, const int *fds, int n)
{
    char data[1 + sizeof *msg] = {'f'};
    memcpy(data + 1, msg, sizeof *msg);
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(SESSION_FORK_FDS * sizeof(int))];
    } ctl;
    memset(&ctl, 0, sizeof ctl);
    struct iovec iov = {data, sizeof data};
    struct msghdr mh = {.msg_iov = &iov,
                        .msg_iovlen = 1,
                        .msg_control = ctl.buf,
                        .msg_controllen = CMSG_SPACE((size_t)n * sizeof(int))};
    struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN((size_t)n * sizeof(int));
    memcpy(CMSG_DATA(c), fds, (size_t)n * sizeof(int));
    return sendmsg(sock, &mh, MSG_NOSIGNAL) == (ssize_t)sizeof data ? 0 : -1;
}

/* Every clone's 'f', the session's next layer with the last; their descriptors are closed
 * here once sent. 0, or -1 with why. */
static int s_send_all(session_fork_t *s, fork_op_t *f, char *err, size_t errlen)
{
    child_t *pc = f->pc;
    rlim_t pending = 0; /* clones of every fork under way not yet made (this one's included) */
    for (const fork_op_t *o = s->ops; o; o = o->next) pending += o->n - o->n_ready;
    s_nproc(pc->pid, s_nproc_count(s) + pending + NPROC_SLACK);
    for (size_t i = 0; i < f->n; i++) {
        clone_t *k = &f->clones[i];
        fork_msg_t msg = {pc->area.job_cap, pc->area.stream_cap, k->flags, ""};
        snprintf(msg.cwd, sizeof msg.cwd, "%s", k->cwd);
        if (i + 1 == f->n && f->parent_ll >= 0) {
            msg.flags |= FORK_PARENT_LAYER;
            k->fds[k->n_fds++] = f->parent_ll;
            f->parent_ll = -1; /* closed with the clone's */
        }
        int rc = s_send(pc->sock, &msg, k->fds, k->n_fds);
        for (int j = 0; j < k->n_fds; j++) close(k->fds[j]);
        k->n_fds = 0;
        if (rc < 0) {
            snprintf(err, errlen, "sending the fork: %s", strerror(errno));
            /* what was sent is being cloned: the parent cannot be trusted (s_fail ends it);
             * nothing sent, nothing to distrust */
            if (!i) f->parent_done = 1;
            return -1;
        }
    }
    return 0;
}

/* A new op for parent and the job id, with n clones, linked in. */
static fork_op_t *s_op(session_fork_t *s, zygote_session_t *parent, const uint8_t id[ID_BYTES],
                       size_t n, int backup)
{
    fork_op_t *f = xcalloc(1, sizeof *f);
    memcpy(f->job, id, ID_BYTES);
    f->backup = backup;
    f->parent = parent, f->pc = parent->child;
    f->n = n;
    f->clones = xcalloc(n, sizeof *f->clones);
    f->parent_ll = -1;
    f->started_us = clock_mono_us();
    f->parent_done = 1; /* until the first 'f' goes: nothing to distrust */
    f->next = s->ops;
    s->ops = f;
    parent->fork = f;
    return f;
}

/* The 'f's go, the parent is watched. 0 when under way; -1 when it failed (answered). */
static int s_go(session_fork_t *s, fork_op_t *f, char *err, size_t errlen, int rc)
{
    if (rc == 0) {
        f->parent_done = 0;
        rc = s_send_all(s, f, err, errlen);
    }
    if (rc < 0) {
        s_fail(s, f, "ForkFailed", err);
        return -1;
    }
    child_t *pc = f->pc;
    if (!f->backup) {
        area_reset(&pc->area, 0, 0); /* so its deadline kills rather than interrupts */
        memcpy(pc->id, f->job, ID_BYTES);
        pc->kind = JOB_SESSION_FORK;
    }
    pool_watch(s->conf.pool, pc, FORK_WAIT_MS);
    f->deadline_us = f->started_us + FORK_WAIT_MS * 1000u;
    return 0;
}

int session_fork_start(session_fork_t *s, zygote_session_t *parent, const uint8_t id[ID_BYTES],
                       const jobspec_t *job, refusal_t *why)
{
    child_t *pc = parent->child;
    char err[256] = "";
    size_t n = 1 + job->n_more_sessions;
    if (!s->conf.fork_ok)
        return refusal_fill(why, ST_REJECTED, "ForkUnavailable",
                            "fork_session needs the seccomp and landlock layers (Landlock ABI 6 or "
                            "later) on the executor, and one of them is off");
    if (parent->fork || parent->backup || pc->state != CHILD_KEPT)
        return refusal_fill(why, ST_REJECTED, "SessionBusy", "the session is running another job");
    if (parent->layers >= LANDLOCK_MAX_LAYERS)
        return refusal_fill(
            why, ST_REJECTED, "ForkLimit",
            "this session has used the %d forks Landlock's %d layers allow (every fork_session "
            "of it, or of a session it was forked from, stacks one on it); save it with "
            "create_state_snapshot and restore that into a new session, which starts from a "
            "fresh sandbox",
            parent->layers - 1, LANDLOCK_MAX_LAYERS);
    uint8_t(*ids)[ID_BYTES] = xcalloc(n, ID_BYTES);
    memcpy(ids[0], job->new_session, ID_BYTES);
    if (job->n_more_sessions) memcpy(ids[1], job->more_sessions, job->n_more_sessions * ID_BYTES);
    if (s->hooks.room(s->hooks.arg, (const uint8_t(*)[ID_BYTES])ids, n, why) < 0) {
        free(ids);
        return -1;
    }
    fork_op_t *f = s_op(s, parent, id, n, 0);
    int rc = s->conf.ws ? s_next_spare(f, err, sizeof err) : 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        rc = s_prepare_clone(s, f, i, err, sizeof err);
        if (f->clones[i].c) { /* the clone's session, sharing the parent's lineage, its process
                                 still to come */
            f->clones[i].z =
                s->hooks.add(s->hooks.arg, ids[i], parent->tenant, f->clones[i].c, parent);
            snprintf(f->clones[i].z->spare, sizeof f->clones[i].z->spare, "%s", f->clones[i].dir);
            f->clones[i].z->fork = f;
        }
    }
    free(ids);
    if (rc == 0) {
        const char *mine[2] = {parent->cwd, f->next_spare};
        if ((f->parent_ll = s_ruleset(s, f, mine, 2, err, sizeof err)) < 0) rc = -1;
    }
    if (rc == 0) rc = s_plan(s, f, err, sizeof err);
    s_go(s, f, err, sizeof err, rc);
    return 0; /* under way, or answered */
}

int session_fork_backup(session_fork_t *s, zygote_session_t *z, refusal_t *why)
{
    char err[256] = "";
    if (z->fork || z->backup || z->child->state != CHILD_KEPT)
        return refusal_fill(why, ST_REJECTED, "SessionBusy", "the session is running another job");
    fork_op_t *f = s_op(s, z, z->child->id, 1, 1);
    int rc = s_prepare_clone(s, f, 0, err, sizeof err);
    if (f->clones[0].c) f->clones[0].c->session = z; /* its events come to this op, then to z */
    if (rc == 0) rc = s_plan(s, f, err, sizeof err);
    s_go(s, f, err, sizeof err, rc);
    return 0; /* under way, or answered through backup_done */
}

/* ---- answers ------------------------------------------------------------------------------ */

static clone_t *s_clone_of(fork_op_t *f, const child_t *c)
{
    for (size_t i = 0; i < f->n; i++)
        if (f->clones[i].c == c) return &f->clones[i];
    return NULL;
}

/* 'F' + pid, or 'E' + value, from the parent, once per clone. */
static void s_parent_said(session_fork_t *s, fork_op_t *f)
{
    char b[16];
    ssize_t n = read(f->pc->sock, b, sizeof b);
    if (n <= 0) return; /* gone: its reap fails the fork */
    int32_t v = 0;
    if (n == 5) memcpy(&v, b + 1, sizeof v);
    if (n == 5 && b[0] == 'F' && ++f->n_forked < f->n) return; /* more clones to come */
    s_nproc(f->pc->pid, 0);
    f->parent_done = 1;
    if (f->backup) { /* idle again, its cell still in its area (with its inputs) to start */
        f->pc->state = CHILD_KEPT;
        f->pc->deadline_us = 0;
    } else {
        pool_kept(s->conf.pool, f->pc);
    }
    if (n == 5 && b[0] == 'F') {
        if (f->n_ready == f->n) s_complete(s, f);
        return;
    }
    /* an error: the clones it made before are killed with the rest (s_fail) */
    char why[160];
    snprintf(why, sizeof why, "the session could not fork: %s",
             n == 5 && b[0] == 'E' && v < 0 ? strerror(-v) : "it answered something else");
    s_fail(s, f, "ForkFailed", why);
}

/* 'R' + where it mapped its area, from a clone, with the kernel's word for its pid. */
static void s_clone_said(session_fork_t *s, fork_op_t *f, clone_t *k)
{
    char b[16];
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(sizeof(struct ucred))];
    } ctl;
    struct iovec iov = {b, sizeof b};
    struct msghdr mh = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf, .msg_controllen = sizeof ctl.buf};
    ssize_t n = recvmsg(k->c->sock, &mh, MSG_CMSG_CLOEXEC);
    if (n <= 0) {
        s_fail(s, f, "ForkFailed", "the clone ended before it was ready");
        return;
    }
    struct ucred cred = {0};
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS)
            memcpy(&cred, CMSG_DATA(c), sizeof cred);
    /* It must be a child of ours that no slot holds yet: not the parent writing on the
     * clone's socket before passing it on. */
    siginfo_t si = {0};
    if (n != 1 + (ssize_t)sizeof(uint64_t) || b[0] != 'R' || cred.pid <= 0 ||
        pool_find_pid(s->conf.pool, cred.pid) ||
        waitid(P_PID, (id_t)cred.pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0 || si.si_pid) {
        s_fail(s, f, "ForkFailed", "the clone's ready message did not check out");
        return;
    }
    k->c->pid = cred.pid;
    uint64_t at;
    memcpy(&at, b + 1, sizeof at);
    k->c->area_seen_at = (uintptr_t)at;  /* only ever written into its own area's copies */
    if (setpgid(cred.pid, cred.pid) < 0) /* its own group: kill(0) and our kills reach it alone */
        log_warn("event=setpgid_failed pid=%d error=\"%s\"", (int)cred.pid, strerror(errno));
    s_nproc(cred.pid, 0);
    k->ready = 1;
    if (++f->n_ready == f->n && f->parent_done) s_complete(s, f);
}

/* The op c is a side of: its session's, or (a backup's slot) the session it backs up. */
static fork_op_t *s_op_of(const child_t *c)
{
    return c->session ? c->session->fork : NULL;
}

int session_fork_on_io(session_fork_t *s, child_t *c)
{
    fork_op_t *f = s_op_of(c);
    if (!f) return 0;
    if (c == f->pc && !f->parent_done) {
        s_parent_said(s, f);
        return 1;
    }
    clone_t *k = s_clone_of(f, c);
    if (k && !k->ready) {
        s_clone_said(s, f, k);
        return 1;
    }
    return 0;
}

void session_fork_died(session_fork_t *s, child_t *c)
{
    fork_op_t *f = s_op_of(c);
    if (!f) return;
    clone_t *k = s_clone_of(f, c);
    if (k && !f->backup) {
        zygote_session_t *z = k->z; /* its own reap cleans it up (zygote_sessions_gone) */
        if (z) {
            s->hooks.ended(s->hooks.arg, z, "the fork failed"); /* never announced */
            z->fork = NULL;
        }
        k->z = NULL;
        k->c = NULL;
    } else if (k) { /* a backup that died: its slot is released by its reap */
        c->session = NULL;
        c->ws_dir[0] = c->ws_base[0] = '\0';
        k->c = NULL;
    } else {
        f->parent_done = 1; /* dead: nothing left to distrust */
    }
    s_fail(s, f, "ForkFailed",
           c == f->pc ? "the session's process died while forking"
                      : "the clone died while forking");
}

void session_fork_tick(session_fork_t *s)
{
    uint64_t now = clock_mono_us();
    for (fork_op_t *f = s->ops, *next; f; f = next) {
        next = f->next;
        /* the parent's own deadline (pool_watch) covers it until it answers */
        if (f->parent_done && now > f->deadline_us)
            s_fail(s, f, "ForkFailed", "the clone did not get ready in time");
    }
}
