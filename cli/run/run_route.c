/* cli/run/run_route.c — see run_route.h. */
#include <stdlib.h>

#include "common/buf.h"
#include "common/pep723.h"
#include "common/pyscan.h"
#include "run_route.h"

#define MAX_DEPENDENCIES 32

/* Only what some profile has decides: anything else is for the package source or the
 * sandbox's refusal, whichever profile runs the code (the front-end's rule, jobargs.c). */
static int s_in_some_profile(const char *name)
{
    for (size_t i = 0; i < n_profiles; i++)
        if (profile_allows(&profiles[i], name) || profile_provides(&profiles[i], name)) return 1;
    return 0;
}

static int s_has_workspace(const profile_t *p, void *arg)
{
    (void)arg;
    return p->workspace;
}

const profile_t *run_route(const run_args_t *a)
{
    if (a->profile[0]) return profile_find(a->profile);
    char deps[MAX_DEPENDENCIES][PEP723_NAME];
    const char *names[MAX_DEPENDENCIES + PYSCAN_MAX];
    size_t n = 0;
    int k = pep723_dependencies(a->code, a->code_len, deps, MAX_DEPENDENCIES);
    for (int i = 0; i < k; i++)
        if (s_in_some_profile(deps[i])) names[n++] = deps[i];
    pyscan_t *scan = xmalloc(sizeof *scan);
    pyscan(a->code, a->code_len, scan);
    for (size_t i = 0; i < scan->n_modules; i++)
        if (s_in_some_profile(scan->modules[i])) names[n++] = scan->modules[i];
    const profile_t *p =
        profile_for_dependencies(names, n, a->inputs.n ? s_has_workspace : NULL, NULL);
    free(scan);
    return p ? p : profile_default();
}
