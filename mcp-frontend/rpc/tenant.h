/* mcp-frontend/rpc/tenant.h — who a request comes from, as every request carries it (call.h,
 * and the MCP session it belongs to): the tenant's name and quotas, and what this process counts
 * of it. The tenants are looked up by API key and kept fresh from Redis by state/tenants.h; a
 * request only reads its own. */
#ifndef SP_FE_TENANT_H
#define SP_FE_TENANT_H
#include <stdint.h>

#include "common/limits.h"

typedef struct tenant {
    char name[65];
    double rate; /* requests per second */
    long burst;
    long max_concurrency;
    long max_timeout_s;
    long max_memory_mb;
    char profiles[512]; /* comma list; empty = every profile */
    long record_ttl_s;  /* its records' lifetime; 0 = the farm's --record-ttl-s */
    long record_max;    /* its records kept; 0 = the farm's --record-max */
    long max_sessions;
    long max_session_memory_mb;
    long max_idle_timeout_s;
    long max_snapshots;
    long max_snapshot_mb;
    long session_retention_s; /* how long a hibernated session of it is kept (0: never hibernated) */
    /* what it may hold at once across the farm: state/holds.h, state/filestore.h */
    long max_listen_streams;
    long max_sse_streams; /* legacy sessions' GET streams */
    long max_tasks;       /* tasks still running */
    long max_linked_mb;   /* linked files kept in Redis, their bytes together */
    long max_linked_files;
    /* network egress: its rules as stored (egress_rule.h, comma-separated; "" none: no network),
     * and the caps on a job's traffic (0: the executor's own) */
    char egress[4096];
    long egress_max_bytes;
    long egress_max_conns;
    long inflight;       /* this process's jobs in flight for the tenant */
    long sessions;       /* this process's open sessions of the tenant */
    double local_tat_ms; /* the local limiter's GCRA state */
    /* permits leased from the shared (Redis) limiter, spent here without a round trip */
    long permits;
    uint64_t permits_expire_ms;   /* monotonic; unspent permits lapse (the limit errs low) */
    int refilling;                /* a lease request is in flight */
    struct limit_waiter *waiters; /* checks waiting for that lease, oldest first */
    struct tenant *next;
} tenant_t;

/* 1 when the tenant may use the profile. */
int tenant_allows_profile(const tenant_t *t, const char *profile);
/* The tenant's maxima (timeout, memory) as a cap on a job's limits (common/limits.h). */
limits_t tenant_limits(const tenant_t *t);

#endif
