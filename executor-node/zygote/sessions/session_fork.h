/* executor-node/zygote/sessions/session_fork.h — fork_session, on the zygote's side (session_child.h has the
 * session's). A clone of a live session in one fork(): copy-on-write memory, the interpreter's
 * whole state, and a copy of its workspace.
 *
 * The zygote prepares everything the clone will need, then lets the session's own C loop do
 * the one thing only it can, the clone(CLONE_PARENT | SIGCHLD) of its process:
 *   1. a slot for the clone, its job area (a memfd) and socket; in workspace profiles its
 *      directory under the session's spare one, with a tmpfs of its own holding a copy of the
 *      session's workspace (modes and mtimes kept), and a new spare directory for the session;
 *   2. two Landlock rulesets: the session's next layer (its own workspace and its new spare
 *      directory) and the clone's (its own directory): each side then reaches only its own;
 *   3. RLIMIT_NPROC's soft limit raised on the idle session with prlimit(2), just enough for
 *      one process more (the count is per uid, and every child of this zygote has the same);
 *   4. 'f' with those descriptors to the session; it clones, takes its next layer and answers
 *      'F' with the clone's pid; the limit goes back to 0 at once;
 *   5. the clone takes its layer, maps its area, moves into its directory and says 'R' on its
 *      own socket, where the kernel attaches its real pid (SO_PASSCRED); the zygote checks it
 *      is its child, makes it a process group of its own and sets its RLIMIT_NPROC to 0.
 * Then the job is answered with the new session, and any child of the zygote it does not know
 * (a clone nobody asked for) is killed. A session forks at most as deep as Landlock stacks
 * layers (16, one taken by the pool): beyond that fork_session is refused with a clear reason
 * (a snapshot restored into a new session starts from a fresh sandbox). Forks need the seccomp
 * layer (it keeps the clone to that one call site) and Landlock with signal scoping (ABI 6:
 * the two sides must not signal each other); without them they are refused. */
#ifndef SP_SESSION_FORK_H
#define SP_SESSION_FORK_H
#include "sessions_impl.h"

/* Starts a fork of parent for the job id (its new_session names the clone). 0 when under way
 * (the job is answered later), -1 with why. */
int session_fork_start(sessions_t *s, zsession_t *parent, const uint8_t id[ID_BYTES],
                       const jobspec_t *job, refusal_t *why);
/* c's socket is readable and c is a side of a fork: 1 when it was the fork's to read. */
int session_fork_on_io(sessions_t *s, child_t *c);
/* A side of a fork died (reaped) or was killed: the fork fails, and is answered. */
void session_fork_died(sessions_t *s, child_t *c);
/* Forks past their deadline fail (from sessions_tick). */
void session_fork_tick(sessions_t *s);

#endif
