/* mcp-frontend/state/tenants.h — who is calling, and what they may do. An API key is looked up by
 * its SHA-256 (`sp:key:<hex>` → tenant name), the tenant's quotas from `sp:t:<name>` (fields
 * rate, burst, max_concurrency, max_timeout_s, max_memory_mb, profiles, its record
 * retention record_ttl_s and record_max, for sessions max_sessions, max_session_memory_mb,
 * max_idle_timeout_s, max_snapshots, max_snapshot_mb, session_retention_s, what it may hold
 * across the farm
 * max_listen_streams, max_sse_streams, max_tasks, max_linked_mb, max_linked_files, and for network
 * egress egress (its rules, comma-separated; a list that does not parse counts as none),
 * egress_max_bytes, egress_max_conns; missing fields take the defaults below).
 * Positive lookups are cached briefly; while Redis cannot answer, a key answered within
 * --auth-stale-ms is still trusted (a failover or a Redis restart must not lock every tenant
 * out), and one never seen fails closed. Tenant objects (rpc/tenant.h) are shared by every
 * session of the tenant and refreshed in place, so a quota change reaches open sessions at the
 * next refresh. */
#ifndef SP_FE_TENANTS_H
#define SP_FE_TENANTS_H
#include <stdint.h>

#include "common/limits.h"
#include "common/loop.h"
#include "proto/job.h"
#include "mcp-frontend/rpc/tenant.h"
#include "store.h"

#define TENANT_DEFAULT_RATE            10.0
#define TENANT_DEFAULT_BURST           20
#define TENANT_DEFAULT_MAX_CONCURRENCY 4
#define TENANT_DEFAULT_MAX_TIMEOUT_S   300
#define TENANT_DEFAULT_MAX_MEMORY_MB   2048
/* sessions: how many at once, their memory together, their longest idle timeout,
 * and the snapshots kept (how many, how many MB together) */
#define TENANT_DEFAULT_MAX_SESSIONS       8
#define TENANT_DEFAULT_MAX_SESSION_MEM_MB 4096
#define TENANT_DEFAULT_MAX_IDLE_S         3600
#define TENANT_DEFAULT_MAX_SNAPSHOTS      32
#define TENANT_DEFAULT_MAX_SNAPSHOT_MB    256
/* how long a session freed by its node (idle, memory pressure, a drain) stays resumable from
 * its checkpoint in Redis; 0: such a session ends instead */
#define TENANT_DEFAULT_SESSION_RETENTION_S 86400
/* what a tenant may hold at once across the farm: open subscriptions/listen streams,
 * legacy GET streams, running tasks, and the linked files kept in Redis (MB and count) */
#define TENANT_DEFAULT_MAX_LISTEN_STREAMS 64
#define TENANT_DEFAULT_MAX_SSE_STREAMS    64
#define TENANT_DEFAULT_MAX_TASKS          256
#define TENANT_DEFAULT_MAX_LINKED_MB      64
#define TENANT_DEFAULT_MAX_LINKED_FILES   256

typedef enum {
    AUTH_OK,
    AUTH_UNKNOWN_KEY, /* no such key: 401 */
    AUTH_UNAVAILABLE, /* Redis cannot answer: fail closed, 503 */
} auth_status_t;

typedef void(tenant_fn)(void *arg, tenant_t *tenant, auth_status_t status);

typedef struct tenants tenants_t;

typedef struct {
    long auth_cache_ms; /* how long a key → tenant answer is trusted (and a removed key works) */
    long auth_stale_ms; /* how long it is still trusted while Redis cannot be asked */
} tenants_conf_t;

tenants_t *tenants_new(loop_t *loop, store_t *store, const tenants_conf_t *conf);
void tenants_destroy(tenants_t **self_p);

/* The tenant for key when a fresh cached answer exists (or, while Redis is disconnected, one
 * within --auth-stale-ms), else NULL. */
tenant_t *tenants_cached(tenants_t *self, const char *key, size_t key_len);
/* Keys let in on a stale answer while Redis could not be asked. */
uint64_t tenants_stale_auths(const tenants_t *self);
/* Asks Redis. 0: fn will be called once; -1: Redis unreachable now (fail closed). */
int tenants_lookup(tenants_t *self, const char *key, size_t key_len, tenant_fn *fn, void *arg);
/* The tenant's network egress rules and caps into out (what the executor grants a job); none
 * for a tenant without rules. out is empty before (jobspec_init). */
void tenant_egress_spec(const tenant_t *t, job_egress_t *out);
/* The same two by the key's SHA-256 (64 hex digits), the form a console sign-in keeps instead
 * of the key: each console request finds its tenant as an MCP request does, through the same
 * cache, so a key rotated or removed ends its sign-ins too. */
tenant_t *tenants_cached_hash(tenants_t *self, const char *hash);
int tenants_lookup_hash(tenants_t *self, const char *hash, tenant_fn *fn, void *arg);

/* Replaces the tenant's key whose SHA-256 is old_hash with new_key, in one script: the new key
 * names the tenant, the old one nothing (forgotten here at once; other front-ends trust their
 * cached answer for --auth-cache-ms at most). fn(arg, rc): 0 done, -1 Redis did not answer, -2
 * old_hash is no longer the tenant's key (rotated meanwhile, or the tenant removed). 0: fn will
 * be called; -1: Redis cannot be asked now. */
typedef void(tenant_key_fn)(void *arg, int rc);
int tenants_rotate_key(tenants_t *self, const char *name, const char *old_hash,
                       const char *new_key, tenant_key_fn *fn, void *arg);

/* The tenant by name (for stdio and the anonymous tenant): created with defaults, then its
 * quotas are loaded from Redis in the background and refreshed periodically. */
tenant_t *tenants_named(tenants_t *self, const char *name);

#endif
