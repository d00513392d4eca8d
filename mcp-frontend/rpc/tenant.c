/* mcp-frontend/rpc/tenant.c — see tenant.h. */
#include <string.h>

#include "tenant.h"

int tenant_allows_profile(const tenant_t *t, const char *profile)
{
    if (!t->profiles[0]) return 1;
    size_t n = strlen(profile);
    const char *p = t->profiles;
    while (*p) {
        while (*p == ' ' || *p == ',') p++;
        const char *e = p;
        while (*e && *e != ',') e++;
        const char *end = e;
        while (end > p && end[-1] == ' ') end--;
        if ((size_t)(end - p) == n && strncmp(p, profile, n) == 0) return 1;
        p = e;
    }
    return 0;
}

limits_t tenant_limits(const tenant_t *t)
{
    return (limits_t){.wall_ms = t->max_timeout_s * 1000,
                      .cpu_ms = t->max_timeout_s * 1000,
                      .memory_mb = t->max_memory_mb};
}
