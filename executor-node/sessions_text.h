/* executor-node/sessions_text.h — words the node and its zygotes both answer with, so that an
 * answer does not tell which of them gave it (another tenant's session must read exactly like
 * an unknown one, wherever the job was stopped). */
#ifndef SP_SESSIONS_TEXT_H
#define SP_SESSIONS_TEXT_H

#define SESSION_UNKNOWN_FMT "no session %s on this executor"
#define SESSION_ENDED_FMT   "session %s ended: %s"

#endif
