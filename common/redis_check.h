/* common/redis_check.h — is this Redis set up to keep a farm's state? What snakepit needs of a
 * Redis it does not start itself (README "Redis"): persistence (AOF, or at least RDB
 * snapshots), a maxmemory-policy that can only evict keys with a TTL (records; never tenants,
 * keys, quotas, usage or snapshots, which have none), a maxmemory so it is that policy and not
 * the kernel that decides, and hash encodings compact enough for the records' memory budget.
 *
 * The settings come from CONFIG GET (one name per call, as Redis < 7 wants), or when a managed
 * Redis refuses CONFIG, from INFO persistence; the caller fetches them (blocking in the CLI,
 * on the loop in the front-end) and this file judges. */
#ifndef SP_REDIS_CHECK_H
#define SP_REDIS_CHECK_H
#include <stddef.h>

#define REDIS_CHECK_MAX 6

/* The CONFIG names to ask for, NULL-terminated. */
extern const char *const redis_check_names[];

typedef struct {
    char appendonly[8]; /* "yes", "no"; "" when unknown */
    char save[128];     /* RDB save points; "" for none */
    int save_known;
    char policy[32];     /* maxmemory-policy; "" when unknown */
    long long maxmemory; /* bytes; 0 = none; -1 when unknown */
    long listpack_value; /* hash-max-listpack-value (or -ziplist-); -1 when unknown */
    int aof_enabled;     /* from INFO persistence when CONFIG was refused; -1 unknown */
} redis_config_t;

void redis_config_init(redis_config_t *c);
/* One CONFIG GET answer (name, value). */
void redis_config_set(redis_config_t *c, const char *name, const char *value);
/* The INFO persistence text, for a Redis that refuses CONFIG. */
void redis_config_info(redis_config_t *c, const char *info);
/* One sentence per problem, most serious first; returns how many. */
int redis_check(const redis_config_t *c, char out[][240], int max);

/* The blocking fetch, for the CLI: CONFIG GET each name, INFO persistence when refused. */
struct redisContext;
void redis_config_fetch(struct redisContext *rc, redis_config_t *c);

#endif
