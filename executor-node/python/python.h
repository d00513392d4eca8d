/* executor-node/python/python.h — the embedded CPython of a zygote and of its children.
 *
 * The zygote calls py_init once: isolated interpreter (-I -S equivalent), the profile's
 * modules imported, the runner (runner.py, with its C half runner.h) loaded, the audit hook
 * (audit.h) installed but not armed, gc.freeze() so children do not dirty the zygote's
 * objects when they collect. A child calls py_after_fork right after fork and py_run_job once
 * its sandbox is in place; py_run_job arms the audit hook and never returns control to
 * anything but _exit. */
#ifndef SP_PYTHON_H
#define SP_PYTHON_H
#include <stddef.h>

#include "common/profiles.h"
#include "proto/job.h"
#include "executor-node/area/jobarea.h"

/* policy: the Python layer is on (the builtins a job's __main__ starts with). env_host: a
 * dependency environment's site-packages on the host (envprofile.h), whose distributions'
 * metadata (never their code) the zygote reads for their versions; NULL for none. */
int         py_init(const profile_t *profile, const char *program, int policy,
                    const char *env_host, char *err, size_t errlen);
const char *py_version(void);  /* "3.11.2" */
const char *py_versions(void); /* JSON {package: version} of the profile's packages */
void        py_after_fork(void);
/* Runs the job (exec or validate) in this process; results go to the area. policy: the
 * Python layer (import allowlist, restricted builtins, audit hook) is on; workspace: the job's
 * directory (its cwd, and where tempfile puts its files), "" or NULL when it has none. */
void        py_run_job(const jobspec_t *job, const profile_t *profile, area_t *area, int policy,
                       const char *workspace);
/* The same in a session's process (session.py): first starts the session (and restores when
 * job is a restore); later jobs are cells, snapshots, restores and info. */
void        py_session_job(const jobspec_t *job, const profile_t *profile, area_t *area,
                           int policy, const char *workspace, int first);
/* Runs and drops whatever a signal left pending (a late SIGINT), before a session's next job. */
void        py_drop_signals(void);

#endif
