/* executor-node/python/runner_session.h — the parts of _snakepit (runner.h) that only a session
 * uses: a snapshot's variables on their way out (packed into the meta by finish) and on their way
 * back in (read from the snapshot the zygote put in the job's copy). The zygote adds the
 * workspace's files to the one and takes them out of the other (zygote_sessions.h); what passes
 * here is PROTOCOL.md §8's `variables`, `imports` and `skipped`. */
#ifndef SP_RUNNER_SESSION_H
#define SP_RUNNER_SESSION_H
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "proto/mpack.h"

/* "snapshot": {variables: {name: bin}, imports: {name: str}, skipped: [{name, reason}]} from
 * session.py's (variables, imports, skipped). Entries of the wrong types are left out. */
void runner_pack_snapshot(mpw_t *w, PyObject *snapshot);
/* ({name: bytes}, {name: str}) from a {variables, imports} map; empty dicts for NULL or a
 * malformed map (the zygote built it). NULL with a Python error only when out of memory. */
PyObject *runner_snapshot_parts(const char *data, size_t len);

#endif
