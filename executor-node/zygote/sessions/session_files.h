/* executor-node/zygote/sessions/session_files.h — a session's workspace as a whole, done by the
 * zygote while the session's process is idle: copied into a clone's new workspace (fork_session),
 * read into a snapshot's files (path, content, mtime, mode), and made to hold exactly a snapshot's
 * files again (restore: files not in it deleted, changed ones rewritten, missing ones recreated,
 * mtimes and modes restored).
 *
 * The tree was made by the tenant's code: every component is opened beneath its parent with
 * O_NOFOLLOW, only regular files and directories are looked at (Landlock lets the code make
 * nothing else), and walks are bounded (entries, depth, bytes). */
#ifndef SP_SESSION_FILES_H
#define SP_SESSION_FILES_H
#include <stddef.h>

#include "proto/snapshot.h"
#include "executor-node/sandbox/workspace.h"

/* What a snapshot could not take: its path (or "file:" + a name) and why. */
typedef struct {
    char name[220];
    char reason[160];
} files_skip_t;

/* A workspace read for a snapshot: the files (their data owned here), and what was left out. */
typedef struct {
    snapshot_file_t *files;
    size_t n, cap, bytes;
    files_skip_t *skipped;
    size_t n_skipped;
} files_read_t;

/* Copies the tree under src into dst (an empty workspace), with modes and mtimes, owned by
 * the workspace's uid. 0, or -1 with the reason. */
int session_files_copy(const workspace_t *ws, const char *src, const char *dst, char *err,
                       size_t errlen);
/* Every regular file under dir whose path the snapshot format allows, up to the snapshot's
 * caps; -1 with the reason when the workspace holds more than a snapshot may (nothing is
 * half-saved). */
int session_files_read(const char *dir, files_read_t *out, char *err, size_t errlen);
void session_files_free(files_read_t *files); /* zeroes the data first (scrub.h) */
/* The regular files under dir as a JSON array [{path, bytes, mtime_ns}] appended to out (names
 * that are not printable UTF-8 are left out). */
void session_files_list(const char *dir, buf_t *out);
/* dir holds exactly files afterwards. 0, or -1 with the reason. */
int session_files_restore(const workspace_t *ws, const char *dir, const snapshot_file_t *files,
                          size_t n, char *err, size_t errlen);

#endif
