/* mcp-frontend/rpc/loglevel.c — see loglevel.h. */
#include <string.h>

#include "loglevel.h"

static const char *const s_names[LOGLEVEL_NONE] = {"debug", "info",     "notice", "warning",
                                                   "error", "critical", "alert",  "emergency"};

const char *loglevel_name(int level)
{
    return level >= 0 && level < LOGLEVEL_NONE ? s_names[level] : NULL;
}

int loglevel_parse(const char *name)
{
    for (int i = 0; name && i < LOGLEVEL_NONE; i++)
        if (strcmp(name, s_names[i]) == 0) return i;
    return -1;
}
