/* executor-node/zygote/dispatch.c — see dispatch.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include "common/log.h"
#include "proto/job.h"
#include "executor-node/area/jobcopy.h"
#include "executor-node/area/scrub.h"
#include "executor-node/zygote/sessions/zygote_sessions.h"
#include "dispatch.h"

static child_t *s_refuse(refusal_t *why, status_t status, const char *type, const char *message)
{
    why->status = status;
    why->type = type;
    snprintf(why->message, sizeof why->message, "%s", message);
    return NULL;
}

/* The one place a job's limits are resolved: a limit left at 0 takes the profile's default,
 * then the profile's maximum and the node's own caps lower it. */
static void s_limits(const dispatch_t *d, limits_t *l)
{
    profile_apply_limits(d->profile, l);
    limits_cap(l, &d->caps);
}

/* 0 when this zygote can run the job as asked; -1 with the refusal. */
static int s_check(const dispatch_t *d, const jobspec_t *job, refusal_t *why)
{
    char err[256];
    if (strcmp(job->service, d->profile->name) != 0) {
        snprintf(err, sizeof err, "this zygote serves %s, not %s", d->profile->name, job->service);
        s_refuse(why, ST_REJECTED, "WrongService", err);
        return -1;
    }
    if (!job->n_files) return 0;
    if (!d->ws) {
        char where[128];
        profiles_join(where, sizeof where, " or ", profile_has_workspace);
        snprintf(err, sizeof err, "profile %s has no workspace for files; use %s", d->profile->name,
                 where);
    }
    if (!d->ws || workspace_check_files(job, err, sizeof err) < 0) {
        s_refuse(why, ST_REJECTED, "BadFiles", err);
        return -1;
    }
    return 0;
}

/* A job whose tenant already has a job running here goes to the back of the CPU queue (see
 * dispatch.h). Lowering is all a process may do to its child's priority without CAP_SYS_NICE,
 * and all that is needed: each child runs one job and dies. A failure costs fairness, never the
 * job. */
static void s_lower(child_t *c)
{
    if (setpriority(PRIO_PROCESS, c->pid, JOB_EXTRA_NICE) < 0) {
        log_warn("event=setpriority_failed pid=%d error=\"%s\"", (int)c->pid, strerror(errno));
        return;
    }
    c->lowered = 1;
}

/* A child with the job in place, not yet woken; NULL with the refusal. */
static child_t *s_place(const dispatch_t *d, const uint8_t id[ID_BYTES], const jobspec_t *job,
                        const char *proxy, refusal_t *why)
{
    char err[256];
    int extra = pool_tenant_running(d->pool, job->tenant) > 0;
    child_t *c = pool_take(d->pool, extra, proxy != NULL);
    if (!c)
        return s_refuse(why, ST_INTERNAL_ERROR, "ForkFailed",
                        "the executor could not start a sandbox");
    if (job->n_files && workspace_put(d->ws, c->ws_dir, job, 0, err, sizeof err) < 0) {
        pool_discard(d->pool, c); /* that child's directory is spoilt: it goes */
        return s_refuse(why, ST_INTERNAL_ERROR, "WorkspaceError", err);
    }
    area_hdr_t *h = area_hdr(&c->area);
    if (!jobcopy_put(job, JOBCOPY_RUN, area_job(&c->area), c->area.job_cap)) {
        pool_discard(d->pool, c);
        return s_refuse(why, ST_INTERNAL_ERROR, "JobTooLarge",
                        "the job does not fit its sandbox's area");
    }
    h->job_len = (uint32_t)jobcopy_size(job, JOBCOPY_RUN);
    h->out_limit = (uint32_t)job->limits.output_bytes;
    snprintf(h->egress_proxy, sizeof h->egress_proxy, "%s", proxy ? proxy : "");
    /* Its inputs, to tell them from its outputs; without them every file comes back. */
    if (job->n_files && d->ws && !(c->inputs = jobcopy_private(job, JOBCOPY_FILES)))
        log_warn("event=inputs_not_kept files=%zu", job->n_files);
    memcpy(c->id, id, ID_BYTES);
    c->kind = job->kind;
    c->limits = job->limits;
    snprintf(c->tenant, sizeof c->tenant, "%s", job->tenant);
    if (extra) s_lower(c); /* before the wake: the job never runs at the old priority */
    return c;
}

int dispatch_job(const dispatch_t *d, const uint8_t id[ID_BYTES], const uint8_t *body, size_t len,
                 const char *proxy, refusal_t *why)
{
    jobspec_t job;
    char err[256];
    /* a restore's snapshot comes on top of the job area's 8 MiB: its files go to the
     * workspace, not to the area */
    if (len > DISPATCH_JOB_CAP + JOB_MAX_SNAPSHOT)
        return refusal_fill(why, ST_REJECTED, "JobTooLarge",
                            "the JobSpec exceeds what the executor takes");
    if (jobspec_decode(body, len, &job, err, sizeof err) < 0) {
        log_warn("event=bad_jobspec error=\"%s\"", err);
        return refusal_fill(why, ST_REJECTED, "BadJob", "%s", err);
    }
    int rc = -1;
    s_limits(d, &job.limits);
    if (s_check(d, &job, why) == 0) {
        if (job.has_session || job_kind_is_session(job.kind)) {
            rc = d->sessions ? zygote_sessions_job(d->sessions, id, &job, proxy, why)
                             : refusal_fill(why, ST_REJECTED, "SessionsOff",
                                            "this executor keeps no sessions");
        } else if (len > DISPATCH_JOB_CAP) {
            refusal_fill(why, ST_REJECTED, "JobTooLarge",
                         "the JobSpec exceeds the executor's 8 MiB job area");
        } else {
            child_t *c = s_place(d, id, &job, proxy, why);
            if (c) pool_start(d->pool, c);
            rc = c ? 0 : -1;
        }
    }
    scrub_jobspec(&job);
    return rc;
}
