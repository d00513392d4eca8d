/* mcp-frontend/tools/jobargs.h — a JobSpec from the arguments of execute_code and validate_code.
 * tools.c has checked the arguments' JSON types already; these check what the types cannot
 * say (sizes, names, paths, the profile's modules, the tenant's profiles) and answer the call
 * with an argument error naming the argument when something is wrong (tools.h's tool_bad_arg;
 * then they return -1, or NULL). */
#ifndef SP_FE_JOBARGS_H
#define SP_FE_JOBARGS_H
#include <jansson.h>

#include "common/profiles.h"
#include "proto/job.h"
#include "mcp-frontend/rpc/call.h"

/* code → spec->code. */
int jobargs_code(call_t *c, json_t *args, jobspec_t *spec);
#define JOBARGS_WHY 320 /* room for why a profile was chosen */

/* Where the call runs: the profile it names — refused (answered, NULL) when the table has no
 * such profile, the tenant may not use it or the farm serves it not (farm/served.h) — or,
 * without one, the first profile of the table (the smallest) that the tenant may use, the farm
 * serves, and that has what the code needs: the modules it imports (common/pyscan.h) and that
 * allowed_imports names, the distributions of its PEP 723 block and `dependencies`, a
 * workspace for `files`. When none has all of it the smallest one runs it, and the sandbox
 * says what it refuses. why gets the reason, for the answer and the record ("named by the
 * call", "inferred from imports pandas", ...). */
const profile_t *jobargs_place(call_t *c, json_t *args, char *why, size_t whylen);
/* The same without the reason. */
const profile_t *jobargs_profile(call_t *c, json_t *args);
/* A list of names (inspect_variables; allowed_imports when p is given, each one a module of p). */
int jobargs_names(call_t *c, json_t *args, const char *key, const profile_t *p, char ***out,
                  size_t *n);
/* timeout and memory_limit, filled from the profile's defaults, then capped by the tenant's
 * maxima and the profile's (common/limits.h). */
int jobargs_limits(call_t *c, json_t *args, const profile_t *p, limits_t *l);
/* The same; a limit asked for above a maximum is lowered as ever, and said in adjusted (an
 * object, or NULL): {name: {requested, used, unit, why}}. */
int jobargs_limits_noted(call_t *c, json_t *args, const profile_t *p, limits_t *l,
                         json_t *adjusted);
/* dependencies (the argument's and the PEP 723 block's requirement strings, for the node to
 * resolve) and figure_format. */
int jobargs_dependencies(call_t *c, json_t *args, jobspec_t *spec);
/* files → the job's workspace (profiles that have one). */
int jobargs_files(call_t *c, json_t *args, const profile_t *p, jobspec_t *spec);
/* network: the tenant's egress rules and caps into the JobSpec (what the executor grants),
 * unless the call says network: false; a tenant without rules has no network either way. */
int jobargs_egress(call_t *c, json_t *args, jobspec_t *spec);

#endif
