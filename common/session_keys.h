/* common/session_keys.h — the Redis keys of sessions and snapshots, for every
 * component that reads or writes them: the front-end keeps them, the executor node marks the
 * sessions it ends (expired, evicted) there. Each key carries the tenant as a hash tag, so a
 * tenant's keys share a Redis Cluster slot (the front-end's scripts touch several at once),
 * and a key is only ever built from the caller's own tenant: another tenant's id is simply
 * not there. They are named apart from the legacy MCP sessions' keys (sp:t:{T}:sess:<id>,
 * sp:t:{T}:sessions: mcp-frontend/legacy/mcp_session_store.h), which a sandbox session has nothing
 * to do with: one zset for both would count each against the other's cap, and the admission script,
 * which drops every member scored below now, would throw out every legacy session.
 *
 *   sp:t:{T}:psess:<id>    hash: a session's record (tenant, profile, state, reason, times, cells,
 *                          memory, limits, parent, executor)
 *   sp:t:{T}:psessions     zset: the tenant's live sessions, scored by when they expire (ms)
 *   sp:t:{T}:psessions_ended  zset: sessions that left the live set, by when (ms): whose
 *                          records to delete once old (none of these keys has a TTL)
 *   sp:t:{T}:snap:<id>     hash: a snapshot (meta JSON, blob, bytes, session, created_ms)
 *   sp:t:{T}:snaps         zset: the tenant's snapshots by created ms
 *   sp:t:{T}:snap_bytes    string: the bytes of all of them (the quota's count)
 *   sp:t:{T}:ckpt:<id>     hash: a session's latest checkpoint, written by its executor node
 *                          (blob: a snapshot, PROTOCOL.md §8; meta JSON: profile, limits, the cell
 *                          it followed, why, when; expires_ms), what it resumes from
 *   sp:t:{T}:ckpts         zset: the tenant's checkpoints by when they expire (ms): the
 *                          tenant's session retention after they were taken */
#ifndef SP_SESSION_KEYS_H
#define SP_SESSION_KEYS_H
#include <stdio.h>

#define SESSION_KEY_MAX 160

#define session_record_key(out, tenant, id)                                                        \
    snprintf(out, SESSION_KEY_MAX, "sp:t:{%s}:psess:%s", tenant, id)
#define session_records_key(out, tenant)                                                           \
    snprintf(out, SESSION_KEY_MAX, "sp:t:{%s}:psessions", tenant)
#define session_records_ended_key(out, tenant)                                                     \
    snprintf(out, SESSION_KEY_MAX, "sp:t:{%s}:psessions_ended", tenant)
#define snapshot_key(out, tenant, id)                                                              \
    snprintf(out, SESSION_KEY_MAX, "sp:t:{%s}:snap:%s", tenant, id)
#define snapshots_key(out, tenant) snprintf(out, SESSION_KEY_MAX, "sp:t:{%s}:snaps", tenant)
#define snapshot_bytes_key(out, tenant)                                                            \
    snprintf(out, SESSION_KEY_MAX, "sp:t:{%s}:snap_bytes", tenant)
#define checkpoint_key(out, tenant, id)                                                            \
    snprintf(out, SESSION_KEY_MAX, "sp:t:{%s}:ckpt:%s", tenant, id)
#define checkpoints_key(out, tenant) snprintf(out, SESSION_KEY_MAX, "sp:t:{%s}:ckpts", tenant)

#endif
