/* cli/run/run_route.c — see run_route.h. */
#include "common/pep723.h"
#include "run_route.h"

#define MAX_DEPENDENCIES 32

const profile_t *run_route(const run_args_t *a)
{
    if (a->profile[0]) return profile_find(a->profile);
    char deps[MAX_DEPENDENCIES][PEP723_NAME];
    const char *names[MAX_DEPENDENCIES];
    int n = pep723_dependencies(a->code, a->code_len, deps, MAX_DEPENDENCIES);
    for (int i = 0; i < n; i++) names[i] = deps[i];
    const profile_t *p = n > 0 ? profile_for_dependencies(names, (size_t)n, NULL, NULL) : NULL;
    return p ? p : profile_default();
}
