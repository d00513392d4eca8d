/* cli/run/run_route.h — the profile a `snakepit run` runs in: the one --profile names; else the
 * first profile (the smallest) whose modules include every module the code imports and every
 * dependency its PEP 723 block declares, with a workspace when --file-in brings files (the
 * front-end's rule: common/pyscan.c and common/pep723.c read the names, common/profiles.h's
 * profile_for_dependencies chooses); else the default. Over HTTP the front-end routes by
 * itself (it knows which profiles the tenant may use and the farm serves) and this only sizes
 * the wait for the answer; straight to a broker, this is the route. */
#ifndef SP_RUN_ROUTE_H
#define SP_RUN_ROUTE_H
#include "common/profiles.h"
#include "run_args.h"

/* NULL when --profile names no profile. */
const profile_t *run_route(const run_args_t *a);

#endif
