/* cli/tenant.h — tenants and their API keys in Redis; the `snakepit tenant`
 * command is tenant_cmd.c:
 *   sp:tenants            set of tenant names
 *   sp:t:{tenant}         hash: rate, burst, max_concurrency, max_timeout_s, max_memory_mb,
 *                         profiles, created_ms, key_sha256, and its record retention when set:
 *                         record_ttl_s, record_max; and the session quotas
 *                         max_sessions, max_session_memory_mb, max_idle_timeout_s,
 *                         max_snapshots, max_snapshot_mb; and what it may hold across the farm
 *                         max_listen_streams, max_sse_streams, max_tasks,
 *                         max_linked_mb, max_linked_files — absent: the front-end's defaults;
 *                         network egress: egress (its rules, comma-separated, each as
 *                         proto/egress_rule.h writes it; absent: no network),
 *                         egress_max_bytes, egress_max_conns (absent: the executor's caps)
 *   sp:key:{sha256(key)}  string: tenant name
 * Keys are shown once and stored only as their SHA-256. */
#ifndef SP_TENANT_H
#define SP_TENANT_H
#include <hiredis/hiredis.h>
#include <stddef.h>

typedef struct {
    char   rate[32];     /* requests per second, e.g. "10" or "0.5" */
    long   burst;
    long   max_concurrency;
    long   max_timeout_s;
    long   max_memory_mb;
    char   profiles[256];
    long   record_ttl_s; /* its records' lifetime; 0: the farm's (the front-end's --record-ttl-s) */
    long   record_max;   /* its records kept; 0: the farm's (--record-max) */
    /* session quotas: 0 leaves the stored value (or the front-end's default) alone */
    long   max_sessions;
    long   max_session_memory_mb;
    long   max_idle_timeout_s;
    long   max_snapshots;
    long   max_snapshot_mb;
    long   session_retention_s; /* how long a hibernated session is kept; 0: never hibernated;
                                   -1 leaves the stored value (or the front-end's default) */
    /* what it may hold across the farm: the same (0: left alone) */
    long   max_listen_streams;
    long   max_sse_streams;
    long   max_tasks;
    long   max_linked_mb;
    long   max_linked_files;
    /* network egress: the rules (comma-separated; "" none), and per job caps (0: the
     * executor's). On the command line: --egress RULE (repeatable) replaces the rules,
     * --no-egress removes them. */
    char   egress[4096];
    int    no_egress;
    long   egress_max_bytes;
    long   egress_max_conns;
} tenant_quota_t;

void tenant_quota_defaults(tenant_quota_t *q);
/* Makes a new random key: "sp_" + 64 hex characters. */
void tenant_new_key(char out[68]);
/* Creates or updates the tenant and gives it `key` (replacing any previous key). */
int  tenant_store(redisContext *c, const char *name, const tenant_quota_t *q, const char *key,
                  char *err, size_t errlen);
/* Creates or updates the tenant's quotas, its key untouched. */
int  tenant_quota_write(redisContext *c, const char *name, const tenant_quota_t *q, char *err,
                        size_t errlen);
/* For `snakepit up`: the local tenant exists and its key (kept in key_file, mode 0600) maps to
 * it; creates either when missing. The key is written to key_out. */
int  tenant_ensure_local(redisContext *c, const char *key_file, char key_out[68], char *err,
                         size_t errlen);
/* The tenant `name` exists, is in sp:tenants, and the key whose SHA-256 hex is digest maps to
 * it (common/tenant_ensure.h's script): the part of tenant_ensure_local that `snakepit up`
 * repeats whenever its Redis may have lost it. 1 when something had to be re-created, 0 when
 * all was there, -1 with err. */
int  tenant_ensure_named(redisContext *c, const char *name, const char *digest, char *err,
                         size_t errlen);
/* The tenant's quotas as stored (defaults where a field is missing). 0, or -1. */
int  tenant_quota_read(redisContext *c, const char *name, tenant_quota_t *q);
/* What the tenant holds across the farm now, as the front-ends count it against its caps
 * (mcp-frontend/state/holds.h, filestore.h). */
typedef struct {
    long      listen_streams, sse_streams, tasks, linked_files;
    long long linked_bytes;
} tenant_holding_t;
int  tenant_holding_read(redisContext *c, const char *name, tenant_holding_t *h);
int  tenant_exists(redisContext *c, const char *name);
/* Deletes the tenant and its key. 0, or -1 with the reason in err. */
int  tenant_remove(redisContext *c, const char *name, char *err, size_t errlen);
/* `snakepit tenant` (tenant_cmd.c). */
int  tenant_main(int argc, char **argv);

#endif
