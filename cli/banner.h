/* cli/banner.h — what `snakepit up` prints on stdout once its probe job has run: the MCP
 * endpoint and its key, client configurations to paste, and for a hub how executors on other
 * machines join. Scripts read ready.json (farm.h) instead. */
#ifndef SP_BANNER_H
#define SP_BANNER_H
#include "cli/farm/farm.h"

/* keys_dir: the hub's keys (hub.h), NULL when the farm is not a hub. */
void banner_print(const farm_info_t *farm, const char *keys_dir, long broker_pid);

#endif
