/* executor-node/landlock.h — the Landlock layer: no filesystem access but reading the profile's
 * read-only paths (and, in workspace profiles, making and changing regular files and directories
 * in the child's own directory); no TCP from ABI 4; no signals or abstract sockets outside the
 * job's own domain from ABI 6. A ruleset is built in the zygote — one for every child, or in
 * workspace profiles one per child for its own directory, since a ruleset cannot be copied — and
 * each child enters its own before it waits for a job. */
#ifndef SP_LANDLOCK_H
#define SP_LANDLOCK_H
#include <stddef.h>

#include "../common/profiles.h"

/* The kernel's Landlock ABI version, or -1 with errno when it has none. */
int landlock_abi(void);
/* A ruleset fd for profile (and workspace, when not NULL) under this ABI; -1 with the reason. */
int landlock_ruleset(int abi, const profile_t *profile, const char *workspace, char *err,
                     size_t errlen);
/* Child: restricts itself to the ruleset and closes it. nnp_first: set no_new_privs before,
 * which Landlock needs from a process without CAP_SYS_ADMIN in its namespace. 0, or -1 with
 * errno. */
int landlock_enter(int ruleset, int nnp_first);

#endif
