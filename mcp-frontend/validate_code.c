/* mcp-frontend/validate_code.c — see validate_code.h. */
#define _GNU_SOURCE

#include "../common/buf.h"
#include "execution.h"
#include "fe.h"
#include "jobargs.h"
#include "outcome.h"
#include "validate_code.h"

#define VALIDATE_WALL_MS 10000

void validate_code_run(call_t *c, json_t *args, const tool_task_t *task)
{
    (void)task; /* the row takes no tasks */
    jobspec_t spec;
    jobspec_init(&spec);
    const profile_t *p = NULL;
    if (jobargs_code(c, args, &spec) < 0 || !(p = jobargs_profile(c, args)) ||
        jobargs_names(c, args, "allowed_imports", p, &spec.allowed_imports,
                      &spec.n_allowed_imports) < 0)
        goto out;
    profile_apply_limits(p, &spec.limits);
    limits_t cap = {.wall_ms = VALIDATE_WALL_MS};
    limits_cap(&spec.limits, &cap);
    spec.kind = JOB_VALIDATE;
    spec.tenant = xstrdup(c->tenant->name);
    spec.service = xstrdup(p->name);
    execution_opts_t opts = {.tool = "validate_code", .render = outcome_validate};
    execution_start(c->fe->executions, c, &spec, &opts);
out:
    jobspec_clear(&spec);
}
