/* cli/run/run_route.h — the profile a `snakepit run` runs in: the one --profile names; else, when
 * the code has a PEP 723 block, the first profile whose modules include every dependency it
 * declares (the front-end's rule: common/pep723.c reads the names, common/profiles.h's
 * profile_for_dependencies chooses); else the default. Over HTTP the front-end routes by
 * itself, also by the modules the code imports (it knows which profiles the tenant may use and
 * the farm serves) and this only sizes the wait for the answer; straight to a broker, this is
 * the route. */
#ifndef SP_RUN_ROUTE_H
#define SP_RUN_ROUTE_H
#include "common/profiles.h"
#include "run_args.h"

/* NULL when --profile names no profile. */
const profile_t *run_route(const run_args_t *a);

#endif
