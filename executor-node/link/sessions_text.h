/* executor-node/link/sessions_text.h — words the node and its zygotes both answer with, so that an
 * answer does not tell which of them gave it (another tenant's session must read exactly like
 * an unknown one, wherever the job was stopped). */
#ifndef SP_SESSIONS_TEXT_H
#define SP_SESSIONS_TEXT_H

#define SESSION_UNKNOWN_FMT "no session %s on this executor"
#define SESSION_ENDED_FMT   "session %s ended: %s"
/* A session's cell (or a new session) whose dependencies go beyond its profile's packages, on a
 * node with a package source: a session lives in its profile's own zygote, and an environment
 * is built only for a call without session_id (executor-node/README.md). */
#define SESSION_DEPENDENCIES_MSG                                                              \
    "a session runs in its profile's own environment, and these dependencies go beyond it; "  \
    "run the code without session_id (each such call gets an environment with them), or in a " \
    "session of a profile that has them"

#endif
