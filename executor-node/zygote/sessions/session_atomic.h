/* executor-node/zygote/sessions/session_atomic.h — an atomic cell's two copies of what the session
 * was before it: its process (a backup clone, session_fork_backup) and its workspace's files.
 * zygote_sessions.c decides when (the cell starts, ends ok, ends otherwise); this module does
 * the work on the copies.
 *
 * The session's own process runs the cell, so a cell that ends ok leaves nothing to do but
 * throw the copies away (commit). Otherwise (rollback) its process goes and the backup, which
 * ran nothing meanwhile, becomes the session's process; its files are put back in place: each
 * file rewritten in its own inode (a descriptor the backup holds on it, reopened at the fork,
 * sees what it saw), files and directories the cell made removed, modes and mtimes restored.
 *
 * The files are copied into a directory of the zygote's own under the workspace root, out of
 * every session's Landlock rule (a lineage's rule names its own base), with a tmpfs of its
 * own: the cell can neither see nor change the copy. An empty workspace is not copied: its
 * rollback is emptying it. */
#ifndef SP_SESSION_ATOMIC_H
#define SP_SESSION_ATOMIC_H
#include <stddef.h>

#include "executor-node/sandbox/workspace.h"
#include "executor-node/zygote/pool/pool.h"
#include "zygote_session.h"

/* Before the cell (z idle, its input files not yet written): z's workspace kept aside. 0, or
 * -1 with why (nothing kept). Without a workspace (ws NULL) there is nothing to do. */
int session_atomic_save_files(const workspace_t *ws, zygote_session_t *z, char *err, size_t errlen);
/* The cell did not end ok: z's workspace holds exactly what was kept again. 0, or -1 with why
 * (what could be put back is). The copy is dropped either way. */
int session_atomic_restore_files(const workspace_t *ws, zygote_session_t *z, char *err,
                                 size_t errlen);
/* The copy of the files goes (the cell ended ok, or the session ends). */
void session_atomic_drop_files(const workspace_t *ws, zygote_session_t *z);

/* The cell ended ok: the backup's process is killed and its slot freed by its reap. */
void session_atomic_commit(pool_t *pool, zygote_session_t *z);
/* The cell did not end ok: z's process (alive: killed; reaped already: reaped) stops being
 * z's, and the backup becomes it. 0, or -1 when there is no backup (it died meanwhile). */
int session_atomic_rollback(pool_t *pool, zygote_session_t *z, int reaped);

#endif
