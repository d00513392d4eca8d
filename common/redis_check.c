/* common/redis_check.c — see redis_check.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "redis_check.h"

const char *const redis_check_names[] = {
    "appendonly", "save", "maxmemory-policy", "maxmemory", "hash-max-listpack-value", NULL};

void redis_config_init(redis_config_t *c)
{
    memset(c, 0, sizeof *c);
    c->maxmemory = -1;
    c->listpack_value = -1;
    c->aof_enabled = -1;
}

void redis_config_set(redis_config_t *c, const char *name, const char *value)
{
    if (!name || !value) return;
    if (strcmp(name, "appendonly") == 0)
        snprintf(c->appendonly, sizeof c->appendonly, "%s", value);
    else if (strcmp(name, "save") == 0)
        snprintf(c->save, sizeof c->save, "%s", value), c->save_known = 1;
    else if (strcmp(name, "maxmemory-policy") == 0)
        snprintf(c->policy, sizeof c->policy, "%s", value);
    else if (strcmp(name, "maxmemory") == 0)
        c->maxmemory = strtoll(value, NULL, 10);
    else if (strcmp(name, "hash-max-listpack-value") == 0 ||
             strcmp(name, "hash-max-ziplist-value") == 0)
        c->listpack_value = strtol(value, NULL, 10);
}

void redis_config_info(redis_config_t *c, const char *info)
{
    const char *p = info ? strstr(info, "aof_enabled:") : NULL;
    if (p) c->aof_enabled = atoi(p + strlen("aof_enabled:"));
}

static int s_add(char out[][240], int n, int max, const char *text)
{
    if (n < max) snprintf(out[n], 240, "%s", text);
    return n < max ? n + 1 : n;
}

int redis_check(const redis_config_t *c, char out[][240], int max)
{
    int n = 0;
    int aof = strcmp(c->appendonly, "yes") == 0 || c->aof_enabled == 1;
    int aof_off = strcmp(c->appendonly, "no") == 0 || c->aof_enabled == 0;
    if (aof_off && c->save_known && !c->save[0])
        n = s_add(out, n, max,
                  "persistence is off (appendonly no, no save points): a Redis restart loses "
                  "every tenant, key, quota, record and usage counter; set appendonly yes, "
                  "appendfsync everysec");
    else if (aof_off)
        n = s_add(out, n, max,
                  "only RDB snapshots (appendonly no): a crash loses what changed since the last "
                  "one; set appendonly yes, appendfsync everysec");
    else if (!aof && !c->appendonly[0])
        n = s_add(out, n, max,
                  "cannot tell whether Redis persists (CONFIG and INFO refused): make sure "
                  "appendonly is yes");
    if (strncmp(c->policy, "allkeys-", 8) == 0)
        n = s_add(out, n, max,
                  "maxmemory-policy is allkeys-*: a full Redis may evict tenants, keys, quotas "
                  "and usage; use volatile-lru (only keys with a TTL, the records, are evicted)");
    else if (c->maxmemory == 0)
        n = s_add(out, n, max,
                  "no maxmemory: records grow until the machine runs out of memory; set "
                  "maxmemory and maxmemory-policy volatile-lru");
    else if (c->maxmemory > 0 && strcmp(c->policy, "noeviction") == 0)
        n = s_add(out, n, max,
                  "maxmemory-policy noeviction: a full Redis refuses new records; volatile-lru "
                  "lets the oldest records go instead");
    if (c->listpack_value >= 0 && c->listpack_value < 1024)
        n = s_add(out, n, max,
                  "hash-max-listpack-value below 1024: each record takes about twice the memory "
                  "(README \"Redis\" states the budget with 4096)");
    return n;
}

void redis_config_fetch(struct redisContext *rc, redis_config_t *c)
{
    redis_config_init(c);
    int refused = 0;
    for (int i = 0; redis_check_names[i]; i++) {
        redisReply *r = redisCommand(rc, "CONFIG GET %s", redis_check_names[i]);
        if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
            r->element[1]->type == REDIS_REPLY_STRING)
            redis_config_set(c, r->element[0]->str, r->element[1]->str);
        else
            refused = 1;
        if (r) freeReplyObject(r);
    }
    if (!refused) return;
    redisReply *r = redisCommand(rc, "INFO persistence");
    if (r && r->type == REDIS_REPLY_STRING) redis_config_info(c, r->str);
    if (r) freeReplyObject(r);
}
