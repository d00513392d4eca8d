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
#include "executor-node/child/session_child.h"
#include "executor-node/mem/procfs.h"
#include "executor-node/sandbox/landlock.h"
#include "session_files.h"
#include "session_fork.h"
#include "session_fork_plan.h"

#define FORK_WAIT_MS 10000 /* from 'f' to the clone's 'R' */
#define MAX_STRAYS   256

struct session_fork {
    session_fork_conf_t conf;
    session_fork_hooks_t hooks;
    struct fork_op *ops; /* under way */
};

typedef struct fork_op {
    uint8_t job[ID_BYTES];
    zygote_session_t *parent, *clone;
    child_t *pc, *cc;                    /* their slots */
    int parent_done;                     /* 'F' came: the session is idle again */
    int clone_ready;                     /* 'R' came, from a checked pid */
    char clone_dir[WORKSPACE_PATH_MAX];  /* under the parent's spare ("" without a workspace) */
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

void session_fork_destroy(session_fork_t **self_p)
{
    session_fork_t *s = *self_p;
    if (!s) return;
    while (s->ops) { /* the zygote is ending: their processes go with it */
        struct fork_op *f = s->ops;
        s->ops = f->next;
        free(f);
    }
    free(s);
    *self_p = NULL;
}

int session_fork_busy(const session_fork_t *s)
{
    return s->ops != NULL;
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
 * RLIMIT_NPROC counts them all, so the session's soft limit is this plus one. */
static rlim_t s_nproc_count(session_fork_t *s)
{
    /* the zygote itself and the lineages' pid namespace holders (pidns.h), when children keep
     * its uid */
    rlim_t n = s->conf.env->sb->drop_uid ? 0 : 1 + (rlim_t)pool_holders(s->conf.pool);
    for (size_t i = 0; i < pool_slots(s->conf.pool); i++) n += pool_child(s->conf.pool, i)->pid > 0;
    return n;
}

/* Kills every child of the zygote that no slot knows: a clone nobody asked for (the holders of
 * the lineages' pid namespaces are the zygote's own). */
static void s_sweep(session_fork_t *s)
{
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
    if (f->clone) f->clone->fork = NULL;
}

/* A clone that never got a process: everything made for it goes. */
static void s_drop_clone(session_fork_t *s, fork_op_t *f)
{
    zygote_session_t *z = f->clone;
    f->clone = NULL;
    if (!z) return;
    z->fork = NULL;
    if (z->child->pid > 0) { /* it exists: its reap cleans up (zygote_sessions_gone) */
        s->hooks.kill(s->hooks.arg, z, "the fork it came from failed");
        return;
    }
    if (z->cwd[0] && s->conf.ws) workspace_remove(s->conf.ws, z->cwd);
    if (f->clone_dir[0]) rmdir(f->clone_dir);
    child_t *c = z->child;
    s->hooks.forget(s->hooks.arg, z); /* its lineage the parent holds still */
    c->session = NULL;
    c->ws_dir[0] = '\0';
    pool_forget(s->conf.pool, c);
}

static void s_fail(session_fork_t *s, fork_op_t *f, const char *type, const char *why)
{
    char idstr[ID_STR_LEN + 1];
    id_format(f->parent->id, idstr);
    log_warn("event=session_fork_failed session=%s error=\"%s\"", idstr, why);
    s_unlink_op(s, f);
    s_nproc(f->pc->pid, 0);
    s_drop_clone(s, f);
    if (f->next_spare[0]) rmdir(f->next_spare);
    s->hooks.answer(s->hooks.arg, f->job, f->parent->ending ? NULL : f->parent, ST_INTERNAL_ERROR,
                    type, why, f->pc);
    if (!f->parent_done && !f->parent->ending) /* it may be cloning still: it cannot be trusted */
        s->hooks.kill(s->hooks.arg, f->parent, "the session did not complete a fork");
    s_sweep(s);
    free(f);
}

static void s_complete(session_fork_t *s, fork_op_t *f)
{
    zygote_session_t *p = f->parent, *c = f->clone;
    char pid_str[ID_STR_LEN + 1], cid_str[ID_STR_LEN + 1];
    s_unlink_op(s, f);
    p->layers++;
    c->layers = p->layers;
    pool_kept(s->conf.pool, f->cc); /* ready for its first cell */
    if (f->next_spare[0]) snprintf(p->spare, sizeof p->spare, "%s", f->next_spare);
    s_sweep(s);
    s->hooks.announce(s->hooks.arg, c);
    log_info("event=session_forked session=%s clone=%s us=%llu",
             (id_format(p->id, pid_str), pid_str), (id_format(c->id, cid_str), cid_str),
             (unsigned long long)(clock_mono_us() - f->started_us));
    s->hooks.answer(s->hooks.arg, f->job, c, ST_OK, NULL, NULL, f->pc);
    free(f);
}

/* ---- preparing ----------------------------------------------------------------------------- */

/* The clone's directory (under the parent's spare) with its workspace, a copy of the parent's,
 * and the parent's next spare. */
static int s_dirs(session_fork_t *s, fork_op_t *f, char *cwd, char *err, size_t errlen)
{
    const zygote_session_t *p = f->parent;
    if (snprintf(f->clone_dir, sizeof f->clone_dir, "%s/f", p->spare) >= (int)sizeof f->clone_dir ||
        snprintf(f->next_spare, sizeof f->next_spare, "%s/s", p->spare) >=
            (int)sizeof f->next_spare ||
        snprintf(cwd, WORKSPACE_PATH_MAX, "%s/w", f->clone_dir) >= WORKSPACE_PATH_MAX) {
        snprintf(err, errlen, "the session's directories are nested too deep");
        f->clone_dir[0] = f->next_spare[0] = '\0';
        return -1;
    }
    if (mkdir(f->clone_dir, 0711) < 0 && errno != EEXIST) { /* EEXIST: a failed fork's, empty */
        snprintf(err, errlen, "mkdir %s: %s", f->clone_dir, strerror(errno));
        f->clone_dir[0] = f->next_spare[0] = '\0';
        return -1;
    }
    if (mkdir(f->next_spare, 0711) < 0 && errno != EEXIST) {
        snprintf(err, errlen, "mkdir %s: %s", f->next_spare, strerror(errno));
        return -1;
    }
    if (workspace_mount(s->conf.ws, cwd, err, errlen) < 0) {
        cwd[0] = '\0';
        return -1;
    }
    return session_files_copy(s->conf.ws, p->cwd, cwd, err, errlen);
}

/* The two new Landlock layers: the parent keeps its workspace and its next spare; the clone
 * gets its own directory. Without a workspace both are the profile's plain ruleset: their
 * point is that each side is in a domain of its own (no signals across, ABI 6 scoping). */
static int s_rulesets(session_fork_t *s, fork_op_t *f, int ll[2], char *err, size_t errlen)
{
    const sandbox_t *sb = s->conf.env->sb;
    const char *parent_dirs[2] = {f->parent->cwd, f->next_spare};
    const char *clone_dirs[1] = {f->clone_dir};
    int ws = s->conf.ws != NULL;
    /* a session with network keeps it on both sides: each new layer allows the egress port */
    int port = f->pc->egress ? sb->egress_port : 0;
    ll[0] = landlock_ruleset_egress(sb->landlock_abi, s->conf.env->profile, parent_dirs,
                                    ws ? 2 : 0, port, err, errlen);
    ll[1] = ll[0] < 0 ? -1
                      : landlock_ruleset_egress(sb->landlock_abi, s->conf.env->profile, clone_dirs,
                                                ws ? 1 : 0, port, err, errlen);
    return ll[1] < 0 ? -1 : 0;
}

/* What the clone must redo so that it shares nothing with the parent (child/fork_plan.h),
 * written into the clone's own area, where it reads it first. */
static int s_plan(session_fork_t *s, fork_op_t *f, char *err, size_t errlen)
{
    const child_t *pc = f->pc;
    uintptr_t area = pc->area_seen_at ? pc->area_seen_at : (uintptr_t)pc->area.base;
    return session_fork_plan(s->conf.procfd, pc->pid, f->parent->cwd, area, area + pc->area.size,
                             area_job(&f->cc->area), f->cc->area.job_cap, err, errlen);
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

int session_fork_start(session_fork_t *s, zygote_session_t *parent, const uint8_t id[ID_BYTES],
                       const jobspec_t *job, refusal_t *why)
{
    child_t *pc = parent->child;
    char err[256] = "", cwd[WORKSPACE_PATH_MAX] = "";
    if (!s->conf.fork_ok)
        return refusal_fill(why, ST_REJECTED, "ForkUnavailable",
                            "fork_session needs the seccomp and landlock layers (Landlock ABI 6 or "
                            "later) on the executor, and one of them is off");
    if (parent->fork || pc->state != CHILD_KEPT)
        return refusal_fill(why, ST_REJECTED, "SessionBusy", "the session is running another job");
    if (parent->layers >= LANDLOCK_MAX_LAYERS)
        return refusal_fill(
            why, ST_REJECTED, "ForkLimit",
            "this session is a fork %d deep, as deep as Landlock's %d layers allow; "
            "save it with create_state_snapshot and restore that into a new session, "
            "which starts from a fresh sandbox",
            parent->layers - 1, LANDLOCK_MAX_LAYERS);
    if (s->hooks.room(s->hooks.arg, job->new_session, why) < 0) return -1;
    child_t *cc = pool_free_slot(s->conf.pool, pc);
    if (!cc)
        return refusal_fill(why, ST_INTERNAL_ERROR, "ForkFailed", "no room for another sandbox");
    fork_op_t *f = xcalloc(1, sizeof *f);
    memcpy(f->job, id, ID_BYTES);
    f->parent = parent, f->pc = pc, f->cc = cc;
    f->started_us = clock_mono_us();
    int memfd = -1, sv[2] = {-1, -1}, ll[2] = {-1, -1}, cwd_fd = -1, on = 1, rc = -1;
    cc->session_capable = 1;
    cc->egress = pc->egress; /* its seccomp prologue is its parent's, so is its network */
    if (area_map_memfd(&cc->area, pc->area.job_cap, pc->area.stream_cap, &memfd) < 0 ||
        socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0 ||
        setsockopt(sv[1], SOL_SOCKET, SO_PASSCRED, &on, sizeof on) < 0)
        snprintf(err, sizeof err, "area or socket: %s", strerror(errno));
    else if (s->conf.ws && s_dirs(s, f, cwd, err, sizeof err) < 0)
        ;
    else if (s_rulesets(s, f, ll, err, sizeof err) < 0)
        ;
    else if (cwd[0] && (cwd_fd = open(cwd, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
        snprintf(err, sizeof err, "open %s: %s", cwd, strerror(errno));
    else if (s_plan(s, f, err, sizeof err) < 0)
        ;
    else
        rc = 0;
    /* the clone's session, sharing the parent's lineage, its process still to come */
    snprintf(cc->ws_dir, sizeof cc->ws_dir, "%s", cwd);
    cc->sock = sv[1];
    cc->state = CHILD_KEPT;
    cc->answered = 1;
    f->clone = s->hooks.add(s->hooks.arg, job->new_session, parent->tenant, cc, parent);
    snprintf(f->clone->spare, sizeof f->clone->spare, "%s", f->clone_dir);
    f->next = s->ops;
    s->ops = f;
    parent->fork = f->clone->fork = f;
    if (rc == 0) {
        fork_msg_t msg = {pc->area.job_cap, pc->area.stream_cap, ""};
        snprintf(msg.cwd, sizeof msg.cwd, "%s", cwd);
        int fds[SESSION_FORK_FDS] = {sv[0], memfd, ll[0], ll[1], cwd_fd};
        s_nproc(pc->pid, s_nproc_count(s) + 1); /* room for exactly one more process */
        if (s_send(pc->sock, &msg, fds, cwd_fd >= 0 ? 5 : 4) < 0) {
            snprintf(err, sizeof err, "sending the fork: %s", strerror(errno));
            rc = -1;
        }
    }
    int closing[] = {sv[0], memfd, ll[0], ll[1], cwd_fd};
    for (size_t i = 0; i < sizeof closing / sizeof closing[0]; i++)
        if (closing[i] >= 0) close(closing[i]);
    if (rc < 0) {
        f->parent_done = 1; /* it was never asked: nothing to distrust */
        s_fail(s, f, "ForkFailed", err);
        return 0; /* answered */
    }
    area_reset(&pc->area, 0, 0); /* so its deadline kills rather than interrupts */
    memcpy(pc->id, id, ID_BYTES);
    pc->kind = JOB_SESSION_FORK;
    pool_watch(s->conf.pool, pc, FORK_WAIT_MS);
    f->deadline_us = f->started_us + FORK_WAIT_MS * 1000u;
    return 0;
}

/* ---- answers ------------------------------------------------------------------------------ */

/* 'F' + pid, or 'E' + value, from the parent. */
static void s_parent_said(session_fork_t *s, fork_op_t *f)
{
    char b[16];
    ssize_t n = read(f->pc->sock, b, sizeof b);
    if (n <= 0) return; /* gone: its reap fails the fork */
    int32_t v = 0;
    if (n == 5) memcpy(&v, b + 1, sizeof v);
    s_nproc(f->pc->pid, 0);
    f->parent_done = 1;
    pool_kept(s->conf.pool, f->pc);
    if (n == 5 && b[0] == 'F') {
        if (f->clone_ready) s_complete(s, f);
        return;
    }
    char why[160];
    snprintf(why, sizeof why, "the session could not fork: %s",
             n == 5 && b[0] == 'E' && v < 0 ? strerror(-v) : "it answered something else");
    s_fail(s, f, "ForkFailed", why);
}

/* 'R' + where it mapped its area, from the clone, with the kernel's word for its pid. */
static void s_clone_said(session_fork_t *s, fork_op_t *f)
{
    char b[16];
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(sizeof(struct ucred))];
    } ctl;
    struct iovec iov = {b, sizeof b};
    struct msghdr mh = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf, .msg_controllen = sizeof ctl.buf};
    ssize_t n = recvmsg(f->cc->sock, &mh, MSG_CMSG_CLOEXEC);
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
    f->cc->pid = cred.pid;
    uint64_t at;
    memcpy(&at, b + 1, sizeof at);
    f->cc->area_seen_at = (uintptr_t)at; /* only ever written into its own area's copies */
    if (setpgid(cred.pid, cred.pid) < 0) /* its own group: kill(0) and our kills reach it alone */
        log_warn("event=setpgid_failed pid=%d error=\"%s\"", (int)cred.pid, strerror(errno));
    s_nproc(cred.pid, 0);
    f->clone_ready = 1;
    if (f->parent_done) s_complete(s, f);
}

int session_fork_on_io(session_fork_t *s, child_t *c)
{
    fork_op_t *f = c->session->fork;
    if (c == f->pc && !f->parent_done) {
        s_parent_said(s, f);
        return 1;
    }
    if (c == f->cc && !f->clone_ready) {
        s_clone_said(s, f);
        return 1;
    }
    return 0;
}

void session_fork_died(session_fork_t *s, child_t *c)
{
    fork_op_t *f = c->session->fork;
    if (c == f->cc) {
        zygote_session_t *z = f->clone; /* its own reap cleans it up (zygote_sessions_gone) */
        s->hooks.ended(s->hooks.arg, z, "the fork failed"); /* never announced: nobody to tell */
        z->fork = NULL;
        f->clone = NULL;
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
