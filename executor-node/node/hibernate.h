/* executor-node/node/hibernate.h — a session's checkpoint: its snapshot taken in its own process (a
 * session_snapshot job the node sends its zygote itself: the variables, its own functions and
 * classes by value, the workspace's files) and written to Redis (checkpoint_store.h), and then,
 * for a session the node frees, its process ended with a reason that says it is hibernated.
 *
 * A session is freed when it has been idle past its timeout, when the node runs short of memory
 * (node_sessions.h decides both), and when the node drains; instead of ending, it is hibernated
 * when the node can write checkpoints and its tenant's retention is not 0: its next cell, on any
 * executor, resumes it from the checkpoint under the same id (the front-end does that:
 * mcp-frontend/cells/resume.h). An idle session also gets a checkpoint that it keeps living after,
 * once it has been idle a while since a job: what it resumes from if its executor dies.
 *
 * While a checkpoint is taken the session's jobs wait (slots.c queues them); an idle or evicted
 * session that got a job meanwhile is not freed after all (the checkpoint stays, as its latest).
 * A checkpoint that cannot be taken or written frees the session the old way: it ends, and the
 * reason says why there is no checkpoint. This module does no I/O of its own: its io table
 * reaches the zygotes and the slots, the store reaches Redis. */
#ifndef SP_HIBERNATE_H
#define SP_HIBERNATE_H
#include <stddef.h>
#include <stdint.h>

#include "common/ids.h"
#include "checkpoint_store.h"
#include "node_sessions.h"

/* The reason a hibernated session ends with begins so (the front-end resumes such a one). */
#define HIBERNATED_PREFIX "hibernated: "

typedef struct hibernate hibernate_t;

typedef struct {
    void (*send_job)(void *arg, int zi, const uint8_t id[ID_BYTES], const uint8_t *body,
                     size_t len);
    void (*end_session)(void *arg, int zi, const uint8_t id[ID_BYTES], const char *reason);
    /* 1 when jobs of the session wait for it (queued while its checkpoint was taken) */
    int (*waiting)(void *arg, const uint8_t session[ID_BYTES]);
    /* its waiting jobs may go now (or be answered, if it has ended) */
    void (*release)(void *arg, const uint8_t session[ID_BYTES]);
    /* the profile zygote zi serves */
    const char *(*service)(void *arg, int zi);
    void *arg;
} hibernate_io_t;

/* store: where checkpoints go (owned by the caller); node: this node's name, in their meta. */
hibernate_t *hibernate_new(checkpoint_store_t *store, node_sessions_t *sessions, const char *node,
                           const hibernate_io_t *io);
void hibernate_destroy(hibernate_t **self_p);

/* Checkpoints the session due names (its what: SESSION_DUE_FREE, _CHECKPOINT or _DRAIN; it is
 * marked checkpointing already), and then frees it or not as what says. */
void hibernate_begin(hibernate_t *self, const node_sessions_end_t *due);
/* A zygote's RESULT: 1 when it answered a checkpoint's job (handled here), 0 otherwise. */
int hibernate_on_result(hibernate_t *self, const uint8_t id[ID_BYTES], const uint8_t *body,
                        size_t len);
/* Zygote zi died: its sessions' checkpoints under way fail (the sessions are gone with it). */
void hibernate_zygote_down(hibernate_t *self, int zi);
/* Checkpoints under way. */
size_t hibernate_pending(const hibernate_t *self);

#endif
