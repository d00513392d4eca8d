/* mcp-frontend/state/filestore.h — the files an execution wrote that were too large to return
 * inline (rich.h's links), kept in Redis for resources/read, within bounds: no tenant can fill
 * Redis with them and evict another's records .
 *
 *   sp:exec:<id>:files         hash {path: bytes}, expiring --file-ttl-s after it was kept
 *                              (PEXPIREAT, the same instant the accounting below uses)
 *   sp:t:{<tenant>}:linked     zset: the tenant's kept files, "<id>/<n>:<bytes>", scored by
 *                              when they expire (Redis's clock, ms)
 *   sp:t:{<tenant>}:linked_bytes  their bytes together
 *   sp:linked, sp:linked_bytes the same for the whole farm ("<tenant>/<id>/<n>:<bytes>")
 *
 * Before an execution's answer is rendered, one script (filestore_keep) prunes what expired,
 * then admits its linked files one by one against the tenant's max_linked_files and
 * max_linked_mb and against the farm's share of Redis: linked files together may take at most
 * --file-share-pct of maxmemory, each counted at its bytes and a quarter more (what Redis's
 * allocator may round a large string up to), so records and everything else always keep the
 * rest and volatile-lru never has to evict a record to make room for a file. Only then are
 * the admitted files' bytes sent, in one idempotent script through the store's journal, just
 * before the final record (whose acknowledgement therefore covers them). Files not admitted
 * are never sent: the answer says why in a note instead of a link (execution.c, rich.h).
 *
 * The accounting keys have no TTL — they must not be evicted, or the bounds would lapse under
 * memory pressure, just when they matter — and clean themselves: each admission drops the
 * members whose time has passed (a tenant's, and the farm's), and a set left empty goes with
 * its total. A file deleted sooner (its record trimmed by count) stays counted until its time:
 * the bound errs strict. What one execution can store is bounded by the executor's caps on
 * returned files (32 files, 8 MiB in all). Only the record's own tenant reads them: one Lua call
 * checks the record's tenant and returns the file, so there is no window between the check and
 * the read. */
#ifndef SP_FE_FILESTORE_H
#define SP_FE_FILESTORE_H
#include <stdint.h>

#include "proto/result.h"
#include "mcp-frontend/rpc/call.h"
#include "mcp-frontend/rpc/tenant.h"
#include "store.h"

typedef struct filestore filestore_t;

typedef struct {
    long ttl_s;     /* how long kept files stay readable (--file-ttl-s) */
    long share_pct; /* of Redis's maxmemory, for every tenant's linked files together */
} filestore_conf_t;

/* Why a linked file was not kept (the metrics' outcome label: filestore_outcome_name). */
typedef enum {
    FILE_KEPT,
    FILE_OVER_TENANT_MB,    /* the tenant's max_linked_mb */
    FILE_OVER_TENANT_FILES, /* the tenant's max_linked_files */
    FILE_OVER_FARM_SHARE,   /* --file-share-pct of maxmemory, all tenants together */
    FILE_UNAVAILABLE,       /* Redis could not be asked */
    FILE__COUNT
} file_outcome_t;

typedef struct {
    uint64_t files[FILE__COUNT]; /* linked files, by what became of them */
    uint64_t kept_bytes;
} filestore_stats_t;

/* A linked file not kept: its index in the Result's files, and the note the answer carries. */
typedef struct {
    size_t index;
    file_outcome_t why;
    char note[480];
} file_unkept_t;

/* Called once, with the files not kept (n may be 0), after the kept ones' write was queued. */
typedef void(filestore_kept_fn)(void *arg, const file_unkept_t *unkept, size_t n);

filestore_t *filestore_new(store_t *store, const filestore_conf_t *conf);
void filestore_destroy(filestore_t **self_p);
const filestore_stats_t *filestore_stats(const filestore_t *self);
const char *filestore_outcome_name(file_outcome_t why);

/* 1 when res has a file answered as a link (rich.h). */
int filestore_has_links(const result_t *res);
/* Keeps res's linked files for execution id, tenant t's, within the bounds above; fn may be
 * called before this returns. res must stay as it is until fn is called. */
void filestore_keep(filestore_t *self, const tenant_t *t, const char *id, const result_t *res,
                    filestore_kept_fn *fn, void *arg);

/* resources/read of a file URI: tail is what follows "sandbox://executions/<id>/files/"; the
 * call is answered (contents, or -32002 for a file that is not the tenant's, or gone). */
void filestore_read(call_t *c, const char *id, const char *tail);

#endif
