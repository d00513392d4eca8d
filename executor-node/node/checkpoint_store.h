/* executor-node/node/checkpoint_store.h — where the node writes its sessions' checkpoints: Redis,
 * the keys of common/session_keys.h (sp:t:{T}:ckpt:<id>, sp:t:{T}:ckpts), and when the session is
 * freed, its record (state hibernated, why, the cell the checkpoint followed) and its place in
 * the tenant's live set until the checkpoint expires, so that the tenant's quotas keep counting
 * it and any front-end resumes it on its next cell.
 *
 * One connection (common/redis_dial.h: direct or through Sentinel), hiredis's async API on the
 * node's loop: the loop never waits for Redis. Each write is one script (all the keys share the
 * tenant's hash tag), answered once: done(ok, why). A write that no connection can take, or that
 * gets no answer within CHECKPOINT_WRITE_MS, is answered failed: the node then ends the session
 * as it would have without checkpoints. */
#ifndef SP_CHECKPOINT_STORE_H
#define SP_CHECKPOINT_STORE_H
#include <stddef.h>
#include <stdint.h>

#include "common/loop.h"

typedef struct checkpoint_store checkpoint_store_t;

/* A checkpoint as written: the session, whose, the snapshot's bytes and what it resumes with. */
typedef struct {
    const char *tenant;
    const char *session; /* its id, canonical text */
    const uint8_t *blob; /* the snapshot (PROTOCOL.md §8) */
    size_t len;
    const char *meta;    /* JSON: profile, memory_mb, idle_timeout_s, retention_s, cells,
                            created_ms, executor, reason */
    uint32_t cells;      /* the cell it followed */
    uint64_t now_ms;     /* wall clock */
    uint64_t expires_ms; /* now + the session's retention */
    int freed;           /* the session's process goes: its record says hibernated */
    const char *reason;  /* why, when freed */
} checkpoint_t;

typedef void(checkpoint_done_fn)(void *arg, int ok, const char *why);

/* NULL with the reason in err (a bad URL). The first connection attempt is made at once. */
checkpoint_store_t *checkpoint_store_new(loop_t *loop, const char *redis_url, char *err,
                                         size_t errlen);
/* Answers every write still under way (failed) first. */
void checkpoint_store_destroy(checkpoint_store_t **self_p);
/* Writes c (its bytes are copied); done is called exactly once (at once, failed, when too many
 * writes wait already). */
void checkpoint_store_put(checkpoint_store_t *self, const checkpoint_t *c, checkpoint_done_fn *done,
                          void *arg);
int checkpoint_store_connected(const checkpoint_store_t *self);

#endif
