/* executor-node/node/node_conf.h — the executor node's configuration: one struct, filled from
 * defaults (node_conf_defaults) → --config file → SNAKEPIT_* environment → flags by main.c's
 * option table. Every part of the node reads its slice from here; nothing writes to it after
 * start-up. */
#ifndef SP_NODE_CONF_H
#define SP_NODE_CONF_H
#include <limits.h>

typedef struct {
    char broker[2048]; /* the brokers' executor endpoints, comma-separated */
    char node_id[65];
    char profiles[256];      /* comma-separated services to serve */
    long slots;              /* jobs at once across all profiles, the reserve apart */
    long reserve_slots; /* more jobs at once, for tenants with nothing running (PROTOCOL.md §3) */
    long pool;               /* idle pre-forked children per zygote */
    char disable_layer[128]; /* sandbox layers switched off, by name */
    long heartbeat_ms;
    long liveness;     /* missed heartbeats before the broker counts as gone */
    long run_uid_host; /* host uid the children run as, when the node is root */
    long run_gid_host;
    char python[256];
    long output_max; /* bytes each output stream can hold */
    long recycle_jobs;
    long recycle_s;
    char log_level[16];
    char curve_server_key[1024];  /* the broker's public key, or its .key file: CURVE on */
    char curve_secret_file[1024]; /* this node's key pair (snakepit keygen NAME.key_secret) */
    char metrics[128];            /* HOST:PORT for /metrics, "off" for none */
    char redis[PATH_MAX + 16];    /* where to publish the snapshot; empty for none */
    /* sessions: node_sessions.h decides their time, zygote_sessions.h keeps them */
    long max_sessions;       /* kept at once on this node; 0: none */
    long session_pool;       /* children kept forked ahead for new sessions, per zygote */
    long session_idle_s;     /* a session's idle timeout when it names none */
    long session_max_idle_s; /* the longest one it may name */
    long session_grace_ms; /* a cell past its timeout: KeyboardInterrupt, then kill this long after
                            */
    long session_evict_free_mb; /* evict idle sessions, least recently used first, below this */
    long session_memory_mb; /* ... or while sessions hold more than this together (0: no budget) */
    long session_checkpoint_s; /* an idle session's checkpoint this long after a job (hibernate.h) */
    char packages[PATH_MAX];      /* package source (wheel directory or index URL); "" none */
    char envs_dir[PATH_MAX];      /* dependency environments (envs.h) */
    long max_env_zygotes;
    long env_idle_s;
    long build_timeout_s;
    int build_from_source;        /* let a build run sdists' own build code (in its jail) */
    /* network egress (egress_link.h): jobs whose tenant has egress rules reach the network
     * through snakepit-egress; tenants without rules never do */
    int egress;                /* run the egress process (needs the namespaces layer) */
    long egress_port;          /* its listener's port inside each zygote's namespace */
    long egress_pool;          /* children kept forked ahead for such jobs, per zygote */
    char egress_resolver[128]; /* ADDR[:PORT] names are resolved with; "" /etc/resolv.conf's */
    char egress_deny[4096];    /* the farm's endpoints besides this node's own (brokers,
                                  metrics, Redis), denied to every job */
    long egress_max_bytes;     /* a job's bytes in and out, at most (a tenant may ask fewer) */
    long egress_max_conns;     /* a job's connections over its life, at most */
    long egress_idle_s;        /* a connection with no traffic this long closes */
    long egress_tenant_open;   /* connections one tenant may have open on this node */
    long drain_grace_s; /* SIGTERM: running jobs get this long to finish (0: stop at once) */
    /* for tests only: PROFILE:MODULE pairs, each making that profile's zygote fail its warm-up
     * as a missing module would (the profile is then not served) */
    char test_missing_module[256];
} node_conf_t;

void node_conf_defaults(node_conf_t *conf);

/* Jobs that may run at once on this node: its slots and its reserve. */
static inline long node_conf_jobs(const node_conf_t *c)
{
    return c->slots + c->reserve_slots;
}

#endif
