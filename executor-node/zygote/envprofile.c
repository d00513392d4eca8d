/* executor-node/zygote/envprofile.c — see envprofile.h. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "envprofile.h"

static size_t s_count(const char *const *list)
{
    size_t n = 0;
    while (list && list[n]) n++;
    return n;
}

/* first (may be NULL), then the NULL-terminated list, then more (a comma-separated string,
 * split in place), as one NULL-terminated list. */
static const char **s_join(const char *first, const char *const *list, char *more)
{
    size_t n = s_count(list), extra = 0;
    for (const char *c = more; c && *c; c++) extra += *c == ',';
    const char **out = xcalloc(n + extra + 3, sizeof *out);
    size_t o = 0;
    if (first) out[o++] = first;
    for (size_t i = 0; i < n; i++) out[o++] = list[i];
    for (char *save = NULL, *m = more ? strtok_r(more, ",", &save) : NULL; m; m = strtok_r(NULL, ",", &save))
        out[o++] = m;
    out[o] = NULL;
    return out;
}

const profile_t *envprofile_new(const profile_t *base, const char *site, const char *modules,
                                char *err, size_t errlen)
{
    if (!site[0] || site[0] != '/' || strstr(site, "/..")) {
        snprintf(err, errlen, "environment %s is not an absolute path", site);
        return NULL;
    }
    for (const char *c = modules; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
              *c == '_' || *c == ',')) {
            snprintf(err, errlen, "environment modules '%.100s' are not module names", modules);
            return NULL;
        }
    profile_t *p = xcalloc(1, sizeof *p);
    *p = *base;
    char *site_copy = xstrdup(site);
    p->env_site = site_copy;
    p->ro_paths = s_join(site_copy, base->ro_paths, NULL);
    p->env_modules = s_join(NULL, NULL, xstrdup(modules));
    p->modules = s_join(NULL, base->modules, xstrdup(modules));
    return p;
}
