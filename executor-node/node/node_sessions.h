/* executor-node/node/node_sessions.h — the node's book of its sessions, and every decision about
 * their time: which zygote holds each (a session's jobs go there, also to a zygote being
 * recycled), when each was last used, which have been idle past their timeout, and which to
 * evict, least recently used first, when the machine runs short of memory or the sessions
 * together hold more than the node's budget. It also remembers, for a while, why each ended,
 * so the next job on that id is answered with the reason, and it collects what changed for
 * the broker's SESSIONS message (PROTOCOL.md §3).
 *
 * It does no I/O and reads no clock: the node passes the time and the free memory in, sends
 * what it is told to, and unit tests drive it the same way (tests/unit/test_node_sessions.c). */
#ifndef SP_NODE_SESSIONS_H
#define SP_NODE_SESSIONS_H
#include <stddef.h>
#include <stdint.h>

#include "common/ids.h"
#include "proto/wire.h"

typedef struct node_sessions node_sessions_t;

typedef struct {
    uint8_t id[ID_BYTES];
    int zygote; /* the index of the zygote holding it */
    char tenant[65];
    long idle_timeout_s;
    long memory_mb;        /* its limit */
    uint64_t memory_kb;    /* in use, as last measured */
    uint64_t last_used_ms; /* monotonic: when its last job ended (or it began) */
    int busy;              /* a job of it is in a slot */
    int ending;            /* asked to end; waiting for its zygote's word */
    long retention_s;      /* how long it may stay hibernated; 0: it is never hibernated */
    int checkpointing;     /* its checkpoint is being taken (hibernate.h): its jobs wait */
    int dirty;             /* a job ran since its last checkpoint (or it has none) */
} node_session_t;

typedef struct {
    long max_sessions;     /* on this node */
    int hibernate;         /* sessions are checkpointed to Redis when freed, not ended */
    long checkpoint_idle_ms; /* a session idle this long since a job is checkpointed (0: never) */
    long evict_free_mb;    /* evict idle sessions while the machine has less free than this */
    long memory_budget_mb; /* ... or while sessions hold more than this together (0: none) */
    size_t ended_kept;     /* how many ended sessions' reasons are remembered */
} node_sessions_conf_t;

node_sessions_t *node_sessions_new(const node_sessions_conf_t *conf);
void node_sessions_destroy(node_sessions_t **self_p);

node_session_t *node_sessions_get(node_sessions_t *self, const uint8_t id[ID_BYTES]);
size_t node_sessions_count(const node_sessions_t *self);
uint64_t node_sessions_memory_kb(const node_sessions_t *self); /* all of them, as measured */
int node_sessions_full(const node_sessions_t *self);

/* A zygote's news (zmsg.h's ZM_SESSION). up: a new session in zygote zi. */
void node_sessions_up(node_sessions_t *self, const uint8_t id[ID_BYTES], int zi, const char *tenant,
                      long idle_timeout_s, long memory_mb, long retention_s, uint64_t now_ms);
void node_sessions_down(node_sessions_t *self, const uint8_t id[ID_BYTES], const char *reason);
/* The session with this id when it is tenant's; NULL otherwise (another tenant's is unknown). */
node_session_t *node_sessions_of(node_sessions_t *self, const uint8_t id[ID_BYTES],
                                 const char *tenant);
void node_sessions_memory(node_sessions_t *self, const uint8_t id[ID_BYTES], uint64_t kb);
/* Every session of zygote zi ended with this reason (it died). */
void node_sessions_zygote_down(node_sessions_t *self, int zi, const char *reason);
/* A job of the session took a slot (busy), or its answer came back (it is dirty: its state
 * changed since its last checkpoint). */
void node_sessions_busy(node_sessions_t *self, const uint8_t id[ID_BYTES], int busy,
                        uint64_t now_ms);

/* Why a session of tenant that is no longer here ended, when it is remembered; else NULL
 * (also for another tenant's: to it, the id is unknown). */
const char *node_sessions_ended(const node_sessions_t *self, const uint8_t id[ID_BYTES],
                                const char *tenant);

/* The sessions to act on now, with why (out and reasons: at most max; each is marked ending or
 * checkpointing, so it is named once): idle past their timeout, then — while memory is short —
 * the least recently used idle ones, to free (hibernated when the node checkpoints and the
 * session may be kept, else ended); and idle ones with a job since their last checkpoint, to
 * checkpoint and keep. mem_free_mb: the machine's available memory. */
typedef enum {
    SESSION_DUE_END = 0,   /* end it */
    SESSION_DUE_FREE,      /* checkpoint it, then free its process (hibernated) */
    SESSION_DUE_CHECKPOINT, /* checkpoint it, and keep it */
    SESSION_DUE_DRAIN       /* checkpoint it, then free it whatever waits (the node leaves) */
} node_sessions_due_t;
typedef struct {
    uint8_t id[ID_BYTES];
    int zygote;
    node_sessions_due_t what;
    char reason[WIRE_MAX_REASON + 1];
} node_sessions_end_t;
size_t node_sessions_due(node_sessions_t *self, uint64_t now_ms, long mem_free_mb,
                         node_sessions_end_t *out, size_t max);

/* The node leaves: every idle session, each named once (marked checkpointing: SESSION_DUE_DRAIN
 * when checkpoints can be taken (hibernate) and its tenant keeps hibernated sessions, else
 * ending: SESSION_DUE_END). A busy one is named once its job is over. */
size_t node_sessions_leave(node_sessions_t *self, int hibernate, node_sessions_end_t *out,
                           size_t max);

/* What changed since the last call, for SESSIONS: ups and downs (with reasons), drained. */
typedef struct {
    uint8_t (*up)[ID_BYTES];
    size_t n_up;
    uint8_t (*down)[ID_BYTES];
    const char **reasons;
    size_t n_down;
} node_sessions_changes_t;
/* 1 when there was something; changes point into the book until the next call. */
int node_sessions_changes(node_sessions_t *self, node_sessions_changes_t *out);
/* Every live session's id (for READY), into ids (at most max): how many. */
size_t node_sessions_ids(const node_sessions_t *self, uint8_t (*ids)[ID_BYTES], size_t max);

#endif
