/* common/tenant_ensure.c — see tenant_ensure.h. */
#include <stdio.h>
#include <string.h>

#include "tenant_ensure.h"

const char TENANT_ENSURE_LUA[] =
    "if redis.call('GET', KEYS[2]) == ARGV[1] and redis.call('SISMEMBER', KEYS[3], ARGV[1]) == 1\n"
    "   and redis.call('HGET', KEYS[1], 'key_sha256') == ARGV[2] then\n"
    "  return 0\n"
    "end\n"
    "if redis.call('EXISTS', KEYS[1]) == 0 then\n"
    "  redis.call('HSET', KEYS[1], 'created_ms', ARGV[3], unpack(ARGV, 4))\n"
    "end\n"
    "redis.call('HSET', KEYS[1], 'key_sha256', ARGV[2])\n"
    "redis.call('SET', KEYS[2], ARGV[1])\n"
    "redis.call('SADD', KEYS[3], ARGV[1])\n"
    "return 1\n";

/* the local tenant's quotas (cli/tenant.c's defaults, raised: the farm is its owner's; its
 * linked files are bounded by the farm's share of Redis, --file-share-pct, rather than by a
 * tenant's) */
static const char *const s_local_quotas[] = {
    "rate", "100",           "burst", "200", "max_concurrency", "64", "max_timeout_s",
    "300",  "max_memory_mb", "2048",  "max_linked_mb", "4096", "max_linked_files", "16384",
    NULL};

void tenant_ensure_local_args(tenant_ensure_t *e, const char *name, const char *digest,
                              uint64_t now_ms)
{
    memset(e, 0, sizeof *e);
    snprintf(e->name, sizeof e->name, "%s", name);
    snprintf(e->digest, sizeof e->digest, "%s", digest);
    snprintf(e->created, sizeof e->created, "%llu", (unsigned long long)now_ms);
    snprintf(e->keys[0], sizeof e->keys[0], "sp:t:%s", e->name);
    snprintf(e->keys[1], sizeof e->keys[1], "sp:key:%s", e->digest);
    snprintf(e->keys[2], sizeof e->keys[2], "sp:tenants");
    for (int i = 0; i < TENANT_ENSURE_NKEYS; i++) e->argv[e->argc++] = e->keys[i];
    e->argv[e->argc++] = e->name;
    e->argv[e->argc++] = e->digest;
    e->argv[e->argc++] = e->created;
    for (int i = 0; s_local_quotas[i] && e->argc < TENANT_ENSURE_ARGS; i++)
        e->argv[e->argc++] = s_local_quotas[i];
}
