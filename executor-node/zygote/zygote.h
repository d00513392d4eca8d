/* executor-node/zygote/zygote.h — one warm CPython per profile that forks a child per job.
 *
 * The node process starts a zygote with clone(2) into fresh namespaces and execs this binary
 * with --zygote, so the zygote never inherits a live ZeroMQ context: it has one thread and no
 * zmq at all. It talks to the node over fd 3, a SOCK_SEQPACKET socket (zchan.h), in the
 * messages of zmsg.h. Inside, a job goes dispatch.h → pool.h → child.h, and comes back
 * through outcome.h. */
#ifndef SP_ZYGOTE_H
#define SP_ZYGOTE_H

typedef struct {
    char profile[64];
    unsigned layers;       /* LAYER_* bits to enforce */
    long     slots;        /* most jobs at once (the node never sends more) */
    long     pool;         /* idle children kept forked ahead of jobs */
    long     run_uid;      /* uid/gid children drop to, inside the user namespace */
    long     run_gid;
    int      drop_uid;     /* 0: only one uid is mapped, children keep it (caps dropped) */
    long     recycle_jobs; /* retire after this many jobs (0: never) */
    long     recycle_s;    /* or after this many seconds */
    char     python[256];  /* program name CPython computes its prefix from */
    long     stream_cap;   /* bytes of each output stream area */
    char     node[65];     /* the node's name, reported in every Result */
    /* sessions (zygote_sessions.h) */
    long     max_sessions;    /* kept at once; 0: no sessions here */
    long     session_pool;    /* children kept forked ahead for new sessions */
    long     session_idle_s;  /* a session's idle timeout when it names none */
    long     session_max_idle_s;
    long     session_grace_ms; /* a cell's KeyboardInterrupt, then SIGKILL this long after */
    char     env_site[4096];    /* a dependency environment's site-packages (envs.h); "" none */
    char     env_modules[4096]; /* the top-level modules it adds, comma-separated */
    /* network egress (the node's egress process, egress.h) */
    long     egress_port;  /* its listener in our namespace; 0: no job here has egress */
    long     egress_pool;  /* children kept forked ahead for jobs with egress */
    char     test_missing[128]; /* tests only: a module its warm-up imports first (and fails on) */
} zygote_conf_t;

/* Runs the zygote on fd 3 until the node closes the channel. Returns the exit status. */
int zygote_main(const zygote_conf_t *conf);

#endif
