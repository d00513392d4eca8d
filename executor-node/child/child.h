/* executor-node/child/child.h — a job's process, from the fork to _exit.
 *
 * The zygote's pool forks each child ahead of its job. The child puts every layer that does not
 * depend on the job in place, in the order docs/sandbox.md gives, while it waits; when its wake byte comes
 * it lowers its limits to the job's and runs the job, whose copy (jobcopy.h) the zygote put
 * in its area; then it reports on its wake socket and exits. child.c holds that whole
 * sequence on one screen (child_main), so a reader checks every layer in order in one place;
 * what each layer does is in sandbox.h, the Python layer in python.h. */
#ifndef SP_CHILD_H
#define SP_CHILD_H
#include "executor-node/area/jobarea.h"
#include "child_env.h"

/* In a pooled child right after fork: area is its job area, wake_fd its end of the wake
 * socket, ws_dir its workspace directory ("" in profiles without one) and landlock_fd the
 * Landlock ruleset the zygote made for that directory. session: pooled for a session, whose
 * first job hands it to session_child.h for good. egress: pooled for jobs with network egress
 * (the TCP client's calls in its seccomp prologue, prologue.h; the egress ruleset,
 * landlock.h). Never returns. */
_Noreturn void child_main(const child_env_t *env, area_t *area, int wake_fd, const char *ws_dir,
                          int landlock_fd, int session, int egress);

#endif
