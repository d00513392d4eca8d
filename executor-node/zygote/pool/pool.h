/* executor-node/zygote/pool/pool.h — a zygote's children: the slots, the fork of each pooled child
 * (with its job area, wake socket, and for workspace profiles its directory and Landlock ruleset),
 * the reaping, the kill, and the wall-clock deadline timer.
 *
 * A child waits in the pool, every job-independent layer in place, until dispatch (dispatch.h)
 * hands it a job and pool_start wakes it. It ends in one of two ways the pool watches: a byte on
 * its wake socket once its result is complete (pool_on_done: answer now, then SIGKILL), or its
 * exit (pool_on_sigchld, with wait4's status and rusage). Either way the zygote hears it once,
 * through the finished hook; the slot is freed only when the child is reaped. A running child
 * past its deadline is SIGKILLed with its whole process group (pool_on_timer). */
#ifndef SP_POOL_H
#define SP_POOL_H
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "common/ids.h"
#include "proto/job.h"
#include "executor-node/area/jobarea.h"
#include "executor-node/child/child.h"
#include "executor-node/sandbox/workspace.h"
#include "outcome.h"

/* IDLE: pooled, waiting for a first job. RUNNING: a job is in it. KEPT: a session's process
 * between its jobs (zygote_sessions.h). */
typedef enum { CHILD_FREE = 0, CHILD_IDLE, CHILD_RUNNING, CHILD_KEPT } child_state_t;

struct zygote_session; /* zygote_sessions.h */

/* One slot: a pooled child and, from dispatch on, its job. */
typedef struct {
    child_state_t state;
    pid_t pid;
    int sock; /* our end of its socketpair: wake byte out, done byte in */
    area_t area;
    uintptr_t area_seen_at; /* where the child maps its area, when not where we do (a clone) */
    char ws_dir[WORKSPACE_PATH_MAX];  /* its workspace directory; "" in other profiles */
    char ws_base[WORKSPACE_PATH_MAX]; /* pooled for a session: the directory its Landlock rule
                                         names, with ws_dir mounted inside it (zygote_sessions.h) */
    int landlock_fd;          /* its own Landlock ruleset until forked (workspace profiles) */
    int session_capable;      /* pooled for a session (pool_fork_session) */
    int egress;               /* pooled for jobs with network egress (pool_fork_egress) */
    pid_t holder;             /* its lineage's pid namespace holder (pidns.h); 0: none */
    struct zygote_session *session; /* its session while it is one's process; the session owns its
                                 directories then, and hears of its end (pool_conf_t) */
    /* its job, set by dispatch */
    uint8_t id[ID_BYTES];
    int kind;                        /* JOB_EXEC or JOB_VALIDATE */
    char tenant[JOB_MAX_TENANT + 1]; /* for the audit log and the priority (dispatch.h) */
    int lowered;                     /* started at JOB_EXTRA_NICE (dispatch.h) */
    limits_t limits;                 /* effective */
    jobspec_t *inputs; /* its input files, the zygote's private copy (jobcopy.h), or NULL */
    uint64_t start_us; /* dispatch, monotonic */
    uint64_t deadline_us;
    kill_reason_t killed;
    int interrupted;      /* a session's cell got SIGINT at its deadline; SIGKILL after a grace */
    int answered;         /* its result is sent; only the reaping is left */
    int muted;            /* wrote its socket before finishing: no longer listened to */
    uint32_t streamed[2]; /* stdout/stderr bytes already sent as progress */
    int running_sent;
} child_t;

typedef struct pool pool_t;

/* A running child's job is over: answer it. ru is NULL when the child signalled on its done
 * byte (it is still exiting) and wstatus 0 then. */
typedef void(pool_finished_fn)(void *arg, child_t *c, int wstatus, const struct rusage *ru);
/* A session's process is gone (reaped); its job, if one ran, was answered already. */
typedef void(pool_session_gone_fn)(void *arg, child_t *c, int wstatus);
/* What a new child runs, with child_main's arguments (child.h); it must not return. */
typedef void(pool_child_fn)(const child_env_t *env, area_t *area, int wake_fd, const char *ws_dir,
                            int landlock_fd, int session, int egress);

typedef struct {
    size_t slots;           /* running + answered-not-yet-reaped + pooled, with room */
    uint32_t job_cap;       /* each area's job region */
    uint32_t stream_cap;    /* each area's output streams */
    const child_env_t *env; /* what every child needs after fork */
    workspace_t *ws;        /* where workspace profiles' directories go; NULL otherwise */
    pool_finished_fn *on_finished;
    pool_session_gone_fn *on_session_gone;
    long interrupt_grace_ms; /* a session's cell past its deadline: SIGINT, then this long */
    void *arg;
    pool_child_fn *child_main; /* NULL: child.h's child_main (tests/unit fork their own) */
} pool_conf_t;

/* Blocks SIGCHLD into a signalfd and makes the deadline timerfd. NULL with the reason in err. */
pool_t *pool_new(const pool_conf_t *conf, char *err, size_t errlen);
void pool_destroy(pool_t **self_p);

/* One more idle child; NULL (logged) when it cannot be made. */
child_t *pool_fork(pool_t *self);
/* One more idle child pooled for a session: its directory is a lineage's base with its
 * workspace mounted inside (zygote_sessions.h), and its RLIMIT_NPROC keeps its hard limit. */
child_t *pool_fork_session(pool_t *self);
/* One more idle child for jobs with network egress: the same layers as any other's, and the
 * TCP client's calls to the egress port (child.h). Jobs without egress never get one. */
child_t *pool_fork_egress(pool_t *self);
/* A free slot for a clone of parent's process, which zygote_sessions.h fills (it shares parent's
 * pid namespace, pidns.h); NULL when the table is full. */
child_t *pool_free_slot(pool_t *self, const child_t *parent);
/* An idle child for a job: one that is ready when there is one, else any idle one, else a new
 * one (the pool ran dry); NULL when none can be had. extra: the job's tenant has another job
 * running here (pool_tenant_running), so the last ready child is left to a tenant that has
 * none, and this job takes one still warming up, or its own new one. pool_take_session: one
 * pooled for a session. */
child_t *pool_take(pool_t *self, int extra, int egress);
child_t *pool_take_session(pool_t *self, int egress);
/* c's job is in its area and its fields are set: wake it and watch its deadline. */
void pool_start(pool_t *self, child_t *c);
/* c cannot take its job (its directory is spoilt): it goes, unanswered by the hook. */
void pool_discard(pool_t *self, child_t *c);
child_t *pool_find_job(pool_t *self, const uint8_t id[ID_BYTES]);
/* SIGKILL to c's process group; the reason shapes its answer. Once only. */
void pool_kill(child_t *c, kill_reason_t why);
/* A session's running job: SIGINT (KeyboardInterrupt), then SIGKILL if it has not answered
 * within the grace. why says what the answer reports. */
void pool_interrupt(pool_t *self, child_t *c, kill_reason_t why);
/* c wrote its socket before its job finished: no longer listened to for this job. */
void pool_mute(pool_t *self, child_t *c);
/* A session's job is answered and its process lives on: it waits for the next one. */
void pool_kept(pool_t *self, child_t *c);
/* c runs something that is not a woken job (a fork_session): watched, killed past wall_ms. */
void pool_watch(pool_t *self, child_t *c, long wall_ms);
/* A slot whose process never was (a clone that did not come): freed as it is. */
void pool_forget(pool_t *self, child_t *c);
child_t *pool_find_pid(pool_t *self, pid_t pid);
/* Sessions' pid namespace holders (pidns.h): whether pid is one, and how many live. */
int pool_is_holder(const pool_t *self, pid_t pid);
size_t pool_holders(const pool_t *self);

/* What the zygote's loop polls, and what it calls when they are ready. */
int pool_sig_fd(const pool_t *self);
int pool_timer_fd(const pool_t *self);
void pool_on_sigchld(pool_t *self);
void pool_on_timer(pool_t *self);
void pool_on_done(pool_t *self, child_t *c); /* c's socket is readable */

size_t pool_slots(const pool_t *self);
child_t *pool_child(pool_t *self, size_t i);
/* Jobs of this tenant running now: not yet answered nor killed (a session's kept process
 * between cells is not running). */
size_t pool_tenant_running(const pool_t *self, const char *tenant);
size_t pool_count(const pool_t *self, child_state_t state);
size_t pool_ready(const pool_t *self); /* idle children waiting for a job, layers in place */
/* idle ones of a kind (pool_idle: without egress) */
size_t pool_idle(const pool_t *self, int session_capable);
size_t pool_idle_egress(const pool_t *self);
/* How long a refill should wait: 0, or 10 ms doubling to 1 s once three pooled children in a
 * row died before they were ready (a layer failing in every child), until one is ready again. */
int pool_refill_delay_ms(const pool_t *self);
uint64_t pool_forks(const pool_t *self);                   /* since start */
uint64_t pool_muted(const pool_t *self); /* children muted for a premature byte, since start */

#endif
