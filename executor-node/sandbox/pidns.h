/* executor-node/sandbox/pidns.h — the pid namespace a session's lineage lives in: a session and
 * every fork of it, all one tenant's (a session's forks inside the pid namespace each child has).
 *
 * A job's child is pid 1 of a pid namespace of its own (pool.c). A session's process cannot be:
 * fork_session is a clone(CLONE_PARENT) from it, and the kernel refuses CLONE_PARENT to the init
 * of a pid namespace (EINVAL: an init's siblings would have no reaper inside). Nor can the
 * session give its clone a namespace of its own: that takes CAP_SYS_ADMIN, which no process that
 * ran tenant code holds. So the zygote makes one namespace per lineage, whose pid 1 is a
 * holder — a clone of the zygote that shares its memory (CLONE_VM: no page tables to copy) and
 * only waits, every signal blocked — and forks the session's pooled child into it (setns on the
 * holder for that one fork, and back): the session is pid 2 and the zygote's own child, and its
 * forks land beside it (pid 3, 4, …), the zygote's children too (CLONE_PARENT). A lineage sees
 * its own processes and its holder; no other job, session or tenant. The holder is killed when
 * the last process of its lineage is gone (as pid 1 its death would end them all, which is also
 * what the zygote's death does: it is pid 1 of the namespace around every holder). */
#ifndef SP_PIDNS_H
#define SP_PIDNS_H
#include <stddef.h>
#include <sys/types.h>

typedef struct pidns pidns_t;

/* Zygote, with the namespaces layer (it holds CAP_SYS_ADMIN in its user namespace). NULL with
 * errno when its own namespace cannot be named. */
pidns_t *pidns_new(void);
/* Kills every holder (and so every lineage). */
void pidns_destroy(pidns_t **self_p);
/* A new holder, with one reference: its pid names the lineage. -1 with errno. */
pid_t pidns_hold(pidns_t *self);
/* fork() into holder's namespace: the child's pid (-1 with errno), and 0 in the child. */
pid_t pidns_fork(pidns_t *self, pid_t holder);
/* One more process of the lineage (a fork), or one fewer (reaped): at none, its holder is
 * killed. */
void pidns_ref(pidns_t *self, pid_t holder);
void pidns_unref(pidns_t *self, pid_t holder);
/* A reaped pid that was a holder: forgotten (its stack freed). 1 when it was one. */
int pidns_reaped(pidns_t *self, pid_t pid);
int pidns_is_holder(const pidns_t *self, pid_t pid);
size_t pidns_holders(const pidns_t *self); /* alive: processes of the zygote's uid */

#endif
