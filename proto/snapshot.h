/* proto/snapshot.h — a session's snapshot (PROTOCOL.md §8): its picklable variables, the names
 * its modules were imported under, what was left out and why, and its workspace's files. The
 * executor writes one (the session's process pickles, its zygote adds the files), the
 * front-end stores it in Redis as it came and lists it, and a restore hands it back to an
 * executor, whose zygote writes the files and passes the variables to the session's process.
 *
 *   {v: 1, variables: {name: bin}, imports: {name: str}, skipped: [{name, reason}],
 *    files: [{path, data: bin, mtime_ns: int, mode: uint}]}
 *
 * A session's process writes the first three parts alone (no `v`, no files): the decoder takes
 * that too. Decoding is a view into the bytes (nothing is copied but the files' index), bounded,
 * and refuses what a snapshot cannot hold: a file path outside the workspace rule
 * (jobspec_check_path), a duplicate path, more than the caps below. The pickles themselves are
 * opaque here: only a session's sandboxed process ever unpickles them. */
#ifndef SP_SNAPSHOT_H
#define SP_SNAPSHOT_H
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

#define SNAPSHOT_MAX_VARIABLES   4096
#define SNAPSHOT_MAX_NAME        256
#define SNAPSHOT_MAX_FILES       1024
#define SNAPSHOT_MAX_FILES_BYTES (8u << 20) /* what the workspace may hold to be snapshotted */
#define SNAPSHOT_MAX_VARS_BYTES  (5u << 20) /* pickled variables together */

typedef struct {
    char path[201]; /* JOB_MAX_PATH + 1 */
    const uint8_t *data;
    size_t len;
    int64_t mtime_ns;
    uint32_t mode; /* permission bits only */
} snapshot_file_t;

typedef struct {
    const uint8_t *variables; /* the variables map, as its msgpack bytes */
    size_t variables_len;
    const uint8_t *imports; /* the imports map, as its msgpack bytes */
    size_t imports_len;
    uint32_t n_variables, n_imports, n_skipped;
    const uint8_t *skipped; /* the skipped array, as its msgpack bytes */
    size_t skipped_len;
    snapshot_file_t *files; /* owned: snapshot_view_free */
    size_t n_files;
    size_t files_bytes;
    size_t vars_bytes; /* the pickles' bytes */
} snapshot_view_t;

/* 0, or -1 with the reason in err (the view is then empty). */
int snapshot_decode(const void *data, size_t len, snapshot_view_t *view, char *err, size_t errlen);
void snapshot_view_free(snapshot_view_t *view);

/* Calls fn for each variable name (imports: is_import 1), and for each skipped entry
 * (reason set); names are not NUL-terminated. */
typedef void(snapshot_name_fn)(void *arg, const char *name, size_t len, const char *reason,
                               size_t reason_len, int is_import);
void snapshot_each_name(const snapshot_view_t *view, snapshot_name_fn *fn, void *arg);

/* A map {variables, imports} of the view's parts: what a session's process restores from. */
void snapshot_encode_variables(const snapshot_view_t *view, buf_t *out);
/* A whole snapshot: the variables, imports and skipped list of parts (the session process's
 * own map, decoded), the files, and more skipped entries (names and reasons, n_more). */
void snapshot_encode(const snapshot_view_t *parts, const snapshot_file_t *files, size_t n_files,
                     const char *const *more_names, const char *const *more_reasons, size_t n_more,
                     buf_t *out);

#endif
