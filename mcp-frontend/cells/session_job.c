/* mcp-frontend/cells/session_job.c — see session_job.h. */
#define _GNU_SOURCE
#include <string.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/log.h"
#include "mcp-frontend/farm/jobs.h"
#include "mcp-frontend/rpc/fe.h"
#include "session_job.h"

typedef struct {
    call_t *call;
    session_job_fn *fn;
    void *arg;
} session_job_t;

static void s_on_accepted(void *owner)
{
    (void)owner;
}

static void s_on_progress(void *owner, const uint8_t *chunk, size_t len)
{
    (void)owner, (void)chunk, (void)len;
}

static void s_on_finished(void *owner, const uint8_t *body, size_t len)
{
    session_job_t *j = owner;
    result_t res;
    char err[160];
    if (result_decode(body, len, &res, err, sizeof err) < 0) {
        log_warn("event=bad_result tool=session error=\"%s\"", err);
        result_init(&res);
        res.status = ST_INTERNAL_ERROR;
        res.error.present = 1;
        res.error.type = xstrdup("InternalError");
        res.error.message = xstrdup("the farm sent a result the front-end could not read");
    }
    j->fn(j->arg, j->call, &res);
    result_clear(&res);
    call_release(j->call);
    free(j);
}

static const job_events_t s_events = {s_on_accepted, s_on_progress, s_on_finished};

void session_job_submit(call_t *c, jobspec_t *spec, session_job_fn *fn, void *arg)
{
    session_job_t *j = xcalloc(1, sizeof *j);
    *j = (session_job_t){c, fn, arg};
    call_hold(c);
    id_new(spec->id);
    free(spec->tenant);
    spec->tenant = xstrdup(c->tenant->name);
    spec->submitted_ms = clock_wall_ms();
    if (!spec->limits.wall_ms) spec->limits.wall_ms = SESSION_JOB_WALL_MS;
    if (!spec->code) spec->code = xstrdup("");
    jobs_submit(c->fe->jobs, spec, c->tenant->max_concurrency, &s_events, j);
}

int session_job_gone(const result_t *res)
{
    const char *t = res->error.present ? res->error.type : NULL;
    return t && (!strcmp(t, "SessionUnknown") || !strcmp(t, "SessionEnded") ||
                 !strcmp(t, "SessionLost"));
}
