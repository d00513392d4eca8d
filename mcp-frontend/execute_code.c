/* mcp-frontend/execute_code.c — see execute_code.h. */
#define _GNU_SOURCE
#include <string.h>

#include "../common/buf.h"
#include "envelope.h"
#include "execute_code.h"
#include "execution.h"
#include "fe.h"
#include "jobargs.h"
#include "outcome.h"

void execute_code_run(call_t *c, json_t *args, const tool_task_t *task)
{
    jobspec_t spec;
    jobspec_init(&spec);
    const profile_t *p = NULL;
    if (jobargs_code(c, args, &spec) < 0 || !(p = jobargs_profile(c, args)) ||
        jobargs_limits(c, args, p, &spec.limits) < 0 ||
        jobargs_names(c, args, "allowed_imports", p, &spec.allowed_imports,
                      &spec.n_allowed_imports) < 0 ||
        jobargs_names(c, args, "inspect_variables", NULL, &spec.inspect, &spec.n_inspect) < 0 ||
        jobargs_files(c, args, p, &spec) < 0 || jobargs_dependencies(c, args, &spec) < 0)
        goto out;
    json_t *v = json_object_get(args, "stdin");
    if (json_is_string(v)) {
        if (json_string_length(v) > JOB_MAX_STDIN) {
            tool_bad(c, "stdin must be a string of at most %u bytes", JOB_MAX_STDIN);
            goto out;
        }
        spec.stdin_data = xstrndup(json_string_value(v), json_string_length(v));
        spec.stdin_len = json_string_length(v);
    }
    v = json_object_get(args, "capture_output");
    spec.capture_output = v ? json_is_true(v) : 1;
    spec.kind = JOB_EXEC;
    spec.tenant = xstrdup(c->tenant->name);
    spec.service = xstrdup(p->name);
    execution_opts_t opts = {.tool = "execute_code",
                             .render = outcome_execute,
                             .record = 1,
                             .task = task->wanted,
                             .task_ttl_ms = task->ttl_ms,
                             .may_become_task =
                                 c->modern && envelope_has_extension(c->caps, EXT_TASKS)};
    execution_start(c->fe->executions, c, &spec, &opts);
out:
    jobspec_clear(&spec);
}
