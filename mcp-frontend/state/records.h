/* mcp-frontend/state/records.h — what the front-end writes to Redis about executions:
 *
 *   sp:exec:<id>                 hash, TTL (the tenant's record_ttl_s, else --record-ttl-s):
 *                                tenant, status, profile, profile_reason (why there), tool,
 *                                code (a head of --code-cap
 *                                bytes; code_sha256 and code_bytes always), created/started/
 *                                finished ms, queue/wall/cpu ms, max_rss_kb, exit_*, stdout/
 *                                stderr heads (--head-cap), error_*, executor, attempt (fields
 *                                whose value is 0 or "" are left out), `result_repr`, and — only
 *                                when those fields cannot say all of it (variables, figures,
 *                                files, a traceback, long output) — `result`: the Result itself,
 *                                base64 of its msgpack (PROTOCOL.md §5), whole up to
 *                                --result-cap bytes, else cut (outputs to their heads, no image
 *                                or file bodies; `result_cut` = 1). Either way
 *                                get_execution, the resource and tasks/result render again
 *                                (history.c); task_* fields for tasks.
 *   sp:t:<tenant>:execs          zset of ids by created ms: the tenant's newest record_max
 *                                (else --record-max) within the TTL; older records are deleted.
 *   sp:t:<tenant>:tasks          the same for task-augmented calls (tasks/list).
 *   sp:t:<tenant>:use:<yyyymmdd> hash, no TTL: executions, status:<status>, cpu_ms, wall_ms;
 *                                a session's cells: cells, session_memory_mb_cells; sessions
 *                                started and snapshots saved (cells/session_records.c counts
 *                                those); pruned after --usage-days. get_usage reads them.
 *   --export-stream KEY          optional: every final record, XADDed (MAXLEN ~ --export-maxlen)
 *                                for operators who keep everything elsewhere.
 *
 * A record is written when the job ends, by one idempotent script (record_scripts.h) the store
 * may replay — sent the first time, when it needs none of the script's upkeep, as the same work
 * in plain commands (store_write_first: cheaper for Redis); a job still running after --record-queued-after-ms (or a task, whose id leaves at
 * once) has it written when it is submitted too (status `queued`, so that it can be looked up
 * while it runs), and the end then writes only the final fields. The fields of the submission
 * are taken from the JobSpec as the job starts (record_submit_new) and kept until one of those
 * writes. Writes are pipelined and journalled (bounded) while Redis is away. The final one is
 * the exception that makes the others safe to pipeline: its caller can be told when Redis has
 * it (record_finished), so that an answer leaves only once any front-end would read the final
 * record (execution.c).
 *
 * Upkeep is spread over writes: a tenant's index is trimmed (by age and count, its TTL renewed)
 * every keep/16 + 1 writes of this front-end, at most 64, and at least every ttl/16, at most a
 * minute — so it holds at most keep + keep/16 entries per front-end; the old usage days are
 * deleted at this front-end's first count of a tenant's day. */
#ifndef SP_FE_RECORDS_H
#define SP_FE_RECORDS_H
#include <stdint.h>

#include "proto/job.h"
#include "proto/result.h"
#include "store.h"

#define RECORD_REPR_MAX 1024 /* a result's repr kept as a flat field up to this */

typedef struct records records_t;

typedef struct {
    long ttl_s;              /* records live this long, unless their tenant says otherwise */
    long keep;               /* records kept per tenant, unless their tenant says otherwise */
    long code_cap;           /* bytes of code kept in a record (a head) */
    long head_cap;           /* bytes of stdout/stderr kept as the record's flat heads */
    long result_cap;         /* bytes of the encoded Result kept whole (else cut) */
    long usage_days;         /* usage hashes older than this are deleted */
    char export_stream[128]; /* "" or the stream every final record is added to */
    long export_maxlen;      /* its approximate length cap */
} records_conf_t;

/* The front-end's defaults (its --record-* flags); bench/record_fill.c measures with them. */
#define RECORDS_CONF_DEFAULTS                                                                     \
    {.ttl_s = 7 * 86400,                                                                          \
     .keep = 10000,                                                                               \
     .code_cap = 16 << 10,                                                                        \
     .head_cap = 8 << 10,                                                                         \
     .result_cap = 256 << 10,                                                                     \
     .usage_days = 90,                                                                            \
     .export_maxlen = 1000000}

/* instance: this front-end's name, written into each record it makes. */
records_t *records_new(store_t *store, const records_conf_t *conf, const char *instance);
void records_destroy(records_t **self_p);
long records_ttl_ms(const records_t *self); /* how long a record (and so a task) lives */

/* The execution a record is about. */
typedef struct {
    const char *id; /* execution id */
    const char *tenant;
    const char *profile;
    const char *profile_reason; /* why there ("inferred from imports pandas"), or NULL */
    const char *tool;
    uint64_t created_ms;
    long ttl_s; /* the tenant's retention: 0 = the farm's */
    long keep;
    int task; /* task-augmented: task_* fields too */
    long task_ttl_ms;
    int task_cancelled;
} record_about_t;

/* The tenant's usage hash of the UTC day of ms (sp:t:<tenant>:use:<yyyymmdd>), into out. */
#define RECORD_USAGE_KEY_MAX 112
const char *record_usage_key(char out[RECORD_USAGE_KEY_MAX], const char *tenant, uint64_t ms);

/* The record's fields at submission, taken from spec (which need not outlive this call). */
typedef struct record_submit record_submit_t;
record_submit_t *record_submit_new(records_t *self, const record_about_t *r, const jobspec_t *spec);
void record_submit_destroy(record_submit_t **self_p);
int record_submit_written(const record_submit_t *sub); /* record_submitted has written it */
/* Writes the submitted record now (status `queued`). */
void record_submitted(records_t *self, const record_about_t *r, record_submit_t *sub);
/* Writes the final record — with sub's fields and the index too when record_submitted never
 * wrote them (sub NULL: only the final fields). Returns 1 when landed will be called once Redis
 * has answered the write (with NULL, or an error reply, when it failed); 0 when no answer will
 * come: Redis is away or backed up and the write waits in the bounded buffer (or was dropped,
 * counted). */
int record_finished(records_t *self, const record_about_t *r, const record_submit_t *sub,
                    const result_t *res, store_reply_fn *landed, void *arg);
/* A running execution became a task (2026-07-28: the server decides, while it runs): its task
 * fields and the tenant's task index. landed is called once Redis has them (as for
 * record_finished), since a task id may be handed out only once any front-end can read it;
 * 0 when no answer will come (Redis away: the write waits in the journal). */
int record_task_started(records_t *self, const record_about_t *r, store_reply_fn *landed,
                        void *arg);
/* Only the task status changes (tasks/cancel before the result is in). */
void record_task_status(records_t *self, const char *id, const char *task_status);

#endif
