/* mcp-frontend/state/filestore.h — the files an execution wrote that were too large to return
 * inline (rich.h's links), kept in Redis for resources/read.
 *
 * sp:exec:<id>:files is a hash {path: bytes} beside the record, written by records.c in the
 * same pipeline just before the final record (whose acknowledgement therefore covers it), by
 * one script that gives it its TTL (--file-ttl-s, much sooner than the record's: Redis memory
 * is the constraint; and a record key, evictable under volatile-lru, never one without a TTL). What
 * one execution can store is bounded by the executor's caps on returned files (32 files, 8 MiB in
 * all). Only the record's own tenant reads them: one Lua call checks the record's tenant and
 * returns the file, so there is no window between the check and the read. */
#ifndef SP_FE_FILESTORE_H
#define SP_FE_FILESTORE_H
#include "proto/result.h"
#include "mcp-frontend/rpc/call.h"
#include "store.h"

/* resources/read of a file URI: tail is what follows "sandbox://executions/<id>/files/"; the
 * call is answered (contents, or -32002 for a file that is not the tenant's, or gone). */
void filestore_read(call_t *c, const char *id, const char *tail);

#endif
