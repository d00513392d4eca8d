/* mcp-frontend/state/redis_upkeep.h — what the front-end does each time its store connects to a
 * Redis (the first time, after a restart of Redis, after a Sentinel failover): puts back the
 * tenant it owns (with --local-key-file: `local`, the key in that file, as `snakepit up`
 * created it; common/tenant_ensure.h), and checks that the server will keep the farm's state
 * (common/redis_check.h), logging each problem loudly (event=redis_config_warning). */
#ifndef SP_FE_REDIS_UPKEEP_H
#define SP_FE_REDIS_UPKEEP_H
#include <stddef.h>

#include "store.h"

typedef struct redis_upkeep redis_upkeep_t;

/* key_file: "" for none; a file that cannot be read is said in err (NULL returned). */
redis_upkeep_t *redis_upkeep_new(store_t *store, const char *key_file, char *err, size_t errlen);
void redis_upkeep_destroy(redis_upkeep_t **self_p);

#endif
