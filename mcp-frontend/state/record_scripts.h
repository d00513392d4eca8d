/* mcp-frontend/state/record_scripts.h — the Lua scripts every execution record is written with
 * (records.c). Each runs atomically in Redis and is idempotent, because the store's journal
 * sends a write again after any reconnect (store_journal.h): running one twice leaves Redis as
 * running it once did.
 *
 * RECORD_SUBMIT_LUA  KEYS: record, the tenant's execs index, its tasks index
 *                    ARGV: ttl_s, created_ms, id, keep, is_task, field, value, ...
 *   Writes the fields (status only if none is there yet: a replayed submit never turns a
 *   finished record back into `queued`), sets the record's TTL, and indexes it: the id goes
 *   into the execs zset (and the tasks zset for a task). With keep > 0 (records.c passes it
 *   every so many writes) entries older than ttl_s leave the index, and past `keep` the oldest
 *   leave it AND their records are deleted — count retention bounds memory, not just
 *   listings — and the index's TTL is renewed.
 *
 * RECORD_FINISH_LUA  KEYS: record, the tenant's execs index (or "" when RECORD_SUBMIT_LUA
 *                    indexed it), the day's usage hash, the export stream (or ""), then usage
 *                    hashes old enough to delete
 *                    ARGV: ttl_s, created_ms, id, keep, status, cpu_ms, wall_ms, is_cell,
 *                    session_memory_mb, export_maxlen, field, value, ...
 *   Writes the fields and the TTL; with an index, indexes the record as RECORD_SUBMIT_LUA does
 *   (a job that ended before its submitted record was written has this one write, with every
 *   field). Only when a field was new — the record was not final yet — does it count usage
 *   (executions, status:<s>, cpu_ms, wall_ms; for a session's cell, cells and
 *   session_memory_mb_cells too), delete the old usage hashes given (usage has no TTL — what
 *   must never be evicted may not have one, README "Redis" — so it is pruned: records.c passes
 *   them at its first count of a tenant's day) and, with an export stream, XADD the whole record
 *   to it (MAXLEN ~ export_maxlen): a replay counts and exports nothing twice. Returns 1 when
 *   it counted, 0 for a replay.
 *
 * RECORD_TASK_LUA    KEYS: record, the tenant's tasks index
 *                    ARGV: ttl_s, created_ms, id, keep, task_ttl_ms, now_ms
 *   A running execution became a task (2026-07-28), or a legacy task wants to know its record
 *   is in: the task fields, and the id in the tasks index. task_status is set only when there
 *   is none yet, so a replay never turns a cancelled or finished task back into `working`.
 *
 * RECORD_TASK_STATUS_LUA  KEYS: record  ARGV: task_status, now_ms
 *   tasks/cancel before the result is in: only a record still `queued` changes (a replay after
 *   the final record, or onto a record gone, writes nothing — nor a key without a TTL). */
#ifndef SP_FE_RECORD_SCRIPTS_H
#define SP_FE_RECORD_SCRIPTS_H

extern const char RECORD_SUBMIT_LUA[];
extern const char RECORD_FINISH_LUA[];
extern const char RECORD_TASK_LUA[];
extern const char RECORD_TASK_STATUS_LUA[];

#endif
