/* executor-node/zygote/sessions/session_fork_plan.h — the zygote's reading of a session's
 * descriptors and shared mappings, before fork_session, as the plan its clone applies
 * (child/fork_plan.h). Read through the zygote's own /proc (mem/procfs.h) while the session
 * waits in its C loop, so nothing changes under the reading. */
#ifndef SP_SESSION_FORK_PLAN_H
#define SP_SESSION_FORK_PLAN_H
#include <stddef.h>
#include <sys/types.h>

/* The plan for a clone of pid, whose workspace is cwd ("" without one), into plan (cap bytes);
 * [skip_start, skip_end) is a mapping the clone does not inherit (its job area). 0, or -1 with
 * why in err. */
int session_fork_plan(int procfd, pid_t pid, const char *cwd, uintptr_t skip_start,
                      uintptr_t skip_end, void *plan, size_t cap, char *err, size_t errlen);

#endif
