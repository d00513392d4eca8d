/* executor-node/node/metrics.h — the executor node's counters and its Prometheus /metrics (the
 * Redis snapshot, snapshot.h, reads the same counters). Zygotes report each finished job with a
 * small summary (zmsg.h ZM_STATS) so the node counts jobs without decoding Result bodies. No
 * tenant or job id is ever a label. */
#ifndef SP_EXEC_METRICS_H
#define SP_EXEC_METRICS_H
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/prom.h"
#include "proto/status.h"
#include "executor-node/link/emsg.h"
#include "executor-node/link/zmsg.h"

#define METRICS_MAX_PROFILES 8
#define METRICS_MAX_SYSCALLS 64
#define METRICS_SESSION_ENDS 10

typedef struct {
    char        name[65];
    uint64_t    jobs[ST__COUNT];
    uint64_t    cells;        /* jobs that ran in a session as its next cell */
    uint64_t    validations;
    uint64_t    lowered;      /* jobs run at JOB_EXTRA_NICE (dispatch.h) */
    uint64_t    forks;        /* summed from the zygotes' per-job deltas */
    long        pool;         /* idle children ready */
    uint64_t    zygote_restarts;
    uint64_t    zygote_recycles;
    prom_hist_t wall;         /* seconds */
    prom_hist_t cpu;          /* seconds */
    prom_hist_t rss;          /* bytes */
} profile_stats_t;

typedef struct {
    char     syscall[64];
    uint64_t count;
} kill_stat_t;

/* A profile the node was asked to serve (--profiles): whether its zygote came up, and why not
 * (its FATAL: "warm import of sklearn.base: No module named 'sklearn.base'"). */
typedef struct {
    char name[65];
    int  served;
    char reason[256];
} profile_served_t;

typedef struct {
    const char     *node;
    const char     *layers;
    long            slots;
    long            reserve; /* --reserve-slots */
    long            busy;
    int             broker_connected; /* brokers the node is connected to */
    uint64_t        reconnects;
    uint64_t        malformed;       /* bad messages from the broker */
    uint64_t        refused;         /* jobs answered without running (no slot, unknown service) */
    uint64_t        duplicates;      /* JOBs for a job that runs or ran here (claims.h) */
    uint64_t        probes;          /* PROBEs answered */
    double          start_wall_s;
    profile_stats_t profiles[METRICS_MAX_PROFILES];
    int             n_profiles;
    kill_stat_t     kills[METRICS_MAX_SYSCALLS];
    int             n_kills;
    uint64_t        kills_other;     /* past the syscall table */
    /* sessions: held now, their memory as measured, and how they ended (by the first word of
     * their reason: closed, expired, evicted, memory_limit, ...) */
    long            sessions;
    uint64_t        session_memory_kb;
    uint64_t        sessions_started;
    uint64_t        sessions_ended[METRICS_SESSION_ENDS];
    /* network egress (egress_link.h): what the egress process counted, and whether it runs */
    emsg_stats_t    egress;
    int             egress_up;
    uint64_t        egress_restarts;
    /* the profiles asked for, served or not */
    profile_served_t asked[METRICS_MAX_PROFILES];
    int             n_asked;
    /* draining (PROTOCOL.md §3.2): since when (wall clock, 0: not draining), and its grace */
    double          drain_since_s;
    long            drain_grace_s;
} exec_metrics_t;

void             exec_metrics_init(exec_metrics_t *m, const char *node, const char *layers, long slots,
                                   long reserve);
profile_stats_t *exec_metrics_profile(exec_metrics_t *m, const char *profile);
/* A zygote's ZM_STATS message. */
void             exec_metrics_job(exec_metrics_t *m, const char *profile, const zmsg_stats_t *stats);
void             exec_metrics_render(void *arg, buf_t *out); /* metrics_render_fn */
/* The egress process's counters since its last STATS. */
void             exec_metrics_egress(exec_metrics_t *m, const emsg_stats_t *delta);
/* A session ended with this reason (counted by its kind, exec_metrics_end_kind). */
void             exec_metrics_session_end(exec_metrics_t *m, const char *reason);
const char      *exec_metrics_end_kind(int i); /* the label of sessions_ended[i] */
/* Profile asked for: served or not, and why not. */
void             exec_metrics_served(exec_metrics_t *m, const char *profile, int served,
                                     const char *reason);

#endif
