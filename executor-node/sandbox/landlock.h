/* executor-node/sandbox/landlock.h — the Landlock layer: no filesystem access but reading the
 * profile's read-only paths (and, in workspace profiles, making and changing regular files and
 * directories in the child's own directory); no TCP from ABI 4 (a child for jobs with network
 * egress: connect to the egress port only); no signals or abstract sockets
 * outside the job's own domain from ABI 6. A ruleset is built in the zygote — one for every child,
 * or in workspace profiles one per child for its own directory, since a ruleset cannot be copied —
 * and each child enters its own before it waits for a job. A session adds one more layer at each
 * fork (session_fork.h), so it and its clone each keep to their own directories; Landlock
 * stacks at most 16 layers, which bounds the forks of one lineage. */
#define LANDLOCK_MAX_LAYERS 16
#ifndef SP_LANDLOCK_H
#define SP_LANDLOCK_H
#include <stddef.h>

#include "common/profiles.h"

/* The kernel's Landlock ABI version, or -1 with errno when it has none. */
int landlock_abi(void);
/* A ruleset fd for profile (and workspace, when not NULL) under this ABI; -1 with the reason. */
int landlock_ruleset(int abi, const profile_t *profile, const char *workspace, char *err,
                     size_t errlen);
/* The same with n writable directories (a session's layer at a fork: its workspace and where
 * its next fork will go, zygote_sessions.h); n may be 0. */
int landlock_ruleset_dirs(int abi, const profile_t *profile, const char *const *dirs, size_t n,
                          char *err, size_t errlen);
/* The same for a child that may use the network (egress_port > 0; 0 is landlock_ruleset_dirs):
 * TCP connect to that port only (the egress process's listener in the zygote's namespace; ABI
 * 4, or no network rule at all before it), still no bind, and reading the system's CA
 * certificates (egress_ro_paths, profiles.h). */
int landlock_ruleset_egress(int abi, const profile_t *profile, const char *const *dirs, size_t n,
                            int egress_port, char *err, size_t errlen);
/* Child: restricts itself to the ruleset and closes it. nnp_first: set no_new_privs before,
 * which Landlock needs from a process without CAP_SYS_ADMIN in its namespace. 0, or -1 with
 * errno. */
int landlock_enter(int ruleset, int nnp_first);

#endif
