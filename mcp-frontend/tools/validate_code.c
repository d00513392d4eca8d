/* mcp-frontend/tools/validate_code.c — see validate_code.h. */
#define _GNU_SOURCE
#include <stdlib.h>

#include "common/buf.h"
#include "mcp-frontend/cells/session_records.h"
#include "mcp-frontend/farm/execution.h"
#include "mcp-frontend/render/outcome.h"
#include "mcp-frontend/rpc/fe.h"
#include "jobargs.h"
#include "validate_code.h"

#define VALIDATE_WALL_MS 10000

static void s_validate(call_t *c, json_t *args, const profile_t *p);

typedef struct {
    call_t *call;
    json_t *args;
} pending_t;

/* With session_id: the code is checked in the session's profile (in a sandbox of its own:
 * parsing untrusted code is never done in the session). */
static void s_on_session(void *arg, session_record_status_t st, const session_record_t *s)
{
    pending_t *p = arg;
    const profile_t *prof = st == SESSION_RECORD_FOUND ? profile_find(s->profile) : NULL;
    if (prof)
        s_validate(p->call, p->args, prof);
    else
        call_reply(p->call, tool_result(st == SESSION_RECORD_UNAVAILABLE
                                            ? "the session store is unreachable right now"
                                            : "no such session for your tenant",
                                        NULL, 1));
    call_release(p->call);
    json_decref(p->args);
    free(p);
}

void validate_code_run(call_t *c, json_t *args, const tool_task_t *task)
{
    (void)task; /* the row takes no tasks */
    const char *sid = json_string_value(json_object_get(args, "session_id"));
    if (sid) {
        pending_t *p = xcalloc(1, sizeof *p);
        *p = (pending_t){c, json_incref(args)};
        call_hold(c);
        session_records_lookup(c->fe->session_records, c->tenant, sid, s_on_session, p);
        return;
    }
    const profile_t *p = jobargs_profile(c, args);
    if (p) s_validate(c, args, p);
}

static void s_validate(call_t *c, json_t *args, const profile_t *p)
{
    jobspec_t spec;
    jobspec_init(&spec);
    if (jobargs_code(c, args, &spec) < 0 ||
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
