/* mcp-frontend/cells/session_records.h — sandbox sessions as the front-end keeps them:
 * their records in Redis (common/session_keys.h), so that any front-end serves any call on any
 * session, and a small cache of what never changes about one (its tenant, profile and limits),
 * so that a cell goes to the farm without a Redis round trip first.
 *
 * (Not the MCP session of mcp_session.h: these are the sandboxes create_session makes, named by
 * explicit ids, independent of any MCP session or protocol era.)
 *
 * A session's record is written when it starts, after each of its cells (last used, cells,
 * state), and when it ends; the set of a tenant's live sessions is scored by when each
 * expires, which is what the quotas count (admission is one script: no two front-ends can
 * both take the last place). Every lookup is by the caller's tenant: another tenant's id is,
 * here too, an id that does not exist. */
#ifndef SP_FE_SESSION_RECORDS_H
#define SP_FE_SESSION_RECORDS_H
#include <jansson.h>
#include <stdint.h>

#include "common/ids.h"
#include "common/loop.h"
#include "proto/result.h"
#include "mcp-frontend/state/store.h"
#include "mcp-frontend/state/tenants.h"

typedef struct session_records session_records_t;

typedef struct {
    char id[ID_STR_LEN + 1];
    char profile[65];
    long memory_mb;
    long idle_timeout_s;
    int ended;
    char end_reason[256];
    uint64_t created_ms;
    uint64_t last_used_ms;
    long cells;
    uint64_t memory_kb;
    char parent[ID_STR_LEN + 1];        /* the session it was forked from, or "" */
    char restored_from[ID_STR_LEN + 1]; /* the snapshot it was restored from, or "" */
    char last_snapshot[ID_STR_LEN + 1]; /* the latest snapshot made of it, or "" */
    int atomic;                         /* its cells are atomic unless a call says otherwise */
    int network;                        /* made with network egress: it resumes with it too */
    int hibernated;                     /* its node freed it; it resumes from its checkpoint */
    long checkpoint_cell;               /* its latest checkpoint followed this cell (0: none) */
    uint64_t checkpoint_ms;
} session_record_t;

typedef enum {
    SESSION_RECORD_FOUND,
    SESSION_RECORD_NOT_FOUND,
    SESSION_RECORD_UNAVAILABLE
} session_record_status_t;

/* s is valid during the call only. */
typedef void(session_record_fn)(void *arg, session_record_status_t st, const session_record_t *s);
/* ok: the session may start; else why (a quota, or Redis away). */
typedef void(session_record_admit_fn)(void *arg, int ok, const char *why);
/* sessions: a JSON array of list_sessions' entries (stolen), or NULL when Redis is away. */
typedef void(session_record_list_fn)(void *arg, json_t *sessions);
/* Why a session the farm does not hold ended: status (lost or rejected), error type, reason. */
typedef void(session_record_explain_fn)(void *arg, status_t st, const char *type,
                                        const char *reason);

/* Once the session writes made so far have reached Redis (or the wait for them is over). */
typedef void(session_record_landed_fn)(void *arg);

/* record_wait_ms: how long session_records_landed waits for Redis (--record-wait-ms). */
session_records_t *session_records_new(loop_t *loop, store_t *store, long record_wait_ms);
void session_records_destroy(session_records_t **self_p);

void session_records_lookup(session_records_t *self, const tenant_t *t, const char *id,
                            session_record_fn *fn, void *arg);
/* The cached part (profile, limits) when this front-end has it: no round trip; else NULL. */
const session_record_t *session_records_cached(session_records_t *self, const tenant_t *t,
                                               const char *id);

/* A place for a new session (memory_mb, idle_s): within the tenant's max_sessions and
 * max_session_memory_mb, taken at once. */
void session_records_admit(session_records_t *self, const tenant_t *t, const char *id,
                           long memory_mb, long idle_s, session_record_admit_fn *fn, void *arg);
/* The same for n sessions at once (a fan-out's clones): all of them, or none. */
void session_records_admit_n(session_records_t *self, const tenant_t *t,
                             const char (*ids)[ID_STR_LEN + 1], size_t n, long memory_mb,
                             long idle_s, session_record_admit_fn *fn, void *arg);
/* An admitted session that did not start: its place is free again. */
void session_records_release(session_records_t *self, const tenant_t *t, const char *id);
/* It started (from the farm's answer): the record, the live set, the cache. */
void session_records_opened(session_records_t *self, const tenant_t *t, const session_record_t *s);
/* One of its jobs ended (res.session says how it stands): last used, cells, memory, its place
 * in the live set; or its end. */
void session_records_used(session_records_t *self, const tenant_t *t, const char *id,
                          const result_t *res, int cell);
void session_records_ended(session_records_t *self, const tenant_t *t, const char *id,
                           const char *reason);
/* fn once every session write made before this call has reached Redis (writes keep their
 * order: one acknowledged command after them answers for all), after record_wait_ms at most,
 * or at once when they could only be buffered (Redis away). An answer that makes or ends a
 * session leaves only then: the client's next call may go to another front-end, which reads
 * the record (a session still "starting" there is no session, one not yet ended still is). */
void session_records_landed(session_records_t *self, session_record_landed_fn *fn, void *arg);
void session_records_snapshotted(session_records_t *self, const tenant_t *t, const char *id,
                                 const char *snapshot_id);

void session_records_list(session_records_t *self, const tenant_t *t, session_record_list_fn *fn,
                          void *arg);
/* The tenant's session as list_sessions shows it (a new object). */
json_t *session_record_json(const session_record_t *s);
/* ISO 8601 UTC of a wall-clock ms, into out (32 bytes). */
const char *session_record_iso(uint64_t ms, char out[32]);
/* Why the farm no longer holds the session: its record's reason, else expired by its own
 * clock, else lost with its executor (naming its latest snapshot). The record is marked
 * ended with that reason — but for a session its node hibernated (type SessionHibernated) or
 * checkpointed before it went away (SessionCheckpointed): those may be resumed (resume.h). */
void session_records_explain(session_records_t *self, const tenant_t *t, const char *id,
                             session_record_explain_fn *fn, void *arg);

/* Checkpoints (executor-node/node/hibernate.h): the right to resume a session from its latest
 * checkpoint, one front-end at a time. lost: its node went away (the record still says active)
 * rather than freed it (hibernated). fn gets 1 with the checkpoint's blob and meta (JSON text),
 * valid during the call; 0 when there is none to resume from (expired, or the session ended);
 * 2 when another front-end is resuming it; -1 when Redis is away. */
typedef void(session_record_claim_fn)(void *arg, int st, const char *blob, size_t len,
                                      const char *meta);
void session_records_claim(session_records_t *self, const tenant_t *t, const char *id, int lost,
                           session_record_claim_fn *fn, void *arg);
/* It lives again (s: its record as it resumed: cells, limits, last used now). */
void session_records_resumed(session_records_t *self, const tenant_t *t, const session_record_t *s);
/* The resume failed: the claim goes, the session is as it was. */
void session_records_unclaim(session_records_t *self, const tenant_t *t, const char *id, int lost);

#endif
