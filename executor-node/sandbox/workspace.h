/* executor-node/sandbox/workspace.h — the per-job scratch directory of profiles with a workspace.
 *
 * Landlock is applied while a child waits in the pool, before its job is known, so each
 * pooled child gets its directory when it is forked: a random name under the zygote's
 * workspace root, with a size-capped tmpfs of its own mounted on it (with the namespaces
 * layer; without it, a plain directory under a private host directory). At dispatch the
 * zygote writes the job's input files into it; once the job is answered it collects what the
 * job wrote; when the child is reaped, the directory is unmounted and removed, which wipes it.
 *
 * Everything in the directory may have been made by hostile code: collection opens each
 * component with O_NOFOLLOW, takes regular files only and caps count and bytes. Input paths
 * are validated before anything is written (relative, no "..", no empty or "." component, no
 * control characters, bounded depth, no duplicates), so a bad request changes nothing. */
#ifndef SP_WORKSPACE_H
#define SP_WORKSPACE_H
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/profiles.h"
#include "proto/job.h"
#include "proto/result.h"

#define WORKSPACE_PATH_MAX  128           /* the directory's own path */
#define WORKSPACE_DEPTH     JOB_MAX_DEPTH /* components in a file's path */
#define WORKSPACE_OUT_FILES 32            /* files returned per job */
#define WORKSPACE_OUT_BYTES (8u << 20)    /* their bytes together */

typedef struct {
    char root[WORKSPACE_PATH_MAX - 24]; /* "/work" in the sandbox's mount view */
    int mounts;   /* 1: one tmpfs per directory (namespaces layer); 0: plain directories */
    long size_mb; /* per directory (tmpfs size; the per-file RLIMIT_FSIZE is the same) */
    uid_t uid;    /* the owner a child's files get: the uid children run as */
    gid_t gid;
} workspace_t;

/* Zygote, before the filesystem is sealed when mounts: the root's parent is prepared by
 * sandbox_seal_filesystem; without mounts this makes a private host directory. */
int workspace_init(workspace_t *ws, const profile_t *p, int mounts, uid_t uid, gid_t gid, char *err,
                   size_t errlen);
/* Zygote, before forking a pooled child: its directory into dir (WORKSPACE_PATH_MAX). */
int workspace_make(const workspace_t *ws, char *dir, char *err, size_t errlen);
/* Zygote, after the child is reaped: unmount and remove (or wipe) the directory. */
void workspace_remove(const workspace_t *ws, const char *dir);
/* A child pooled for a session: a lineage's base directory (its Landlock rule names it) into
 * base, and its workspace mounted as base/w into dir (zygote_sessions.h puts its clones' workspaces
 * below the base too). */
int workspace_make_lineage(const workspace_t *ws, char *base, char *dir, char *err, size_t errlen);
/* dir (made here, mode 0700) becomes a workspace: its own tmpfs, or a plain directory owned by
 * the children's uid. 0, or -1 with the reason (dir removed again). */
int workspace_mount(const workspace_t *ws, const char *dir, char *err, size_t errlen);
/* Removes a directory tree made of plain directories (a lineage once its last session is
 * gone), without following links. */
void workspace_remove_tree(const workspace_t *ws, const char *dir);

/* Every path (jobspec_check_path) of the job's files, and the set as a whole (duplicates, a file
 * that is also another's directory). 0, or -1 with the reason. */
int workspace_check_files(const jobspec_t *job, char *err, size_t errlen);
/* Zygote, at dispatch: the job's files into dir (already checked). replace: a session's
 * workspace, where a file of that name may exist and is overwritten. 0, or -1 with the reason. */
int workspace_put(const workspace_t *ws, const char *dir, const jobspec_t *job, int replace,
                  char *err, size_t errlen);
/* A session's cell returns the files it wrote, told by their modification times. The kernel
 * stamps those from its coarse clock (measured here: up to 7 ms behind the real time; finer
 * only for a file looked at since it last changed), so a cell's start must be read from that
 * same clock, workspace_now_ns: a file written as the cell began is then never older than its
 * start. The price is that cells in quick succession share a coarse time: the marks say which
 * files earlier collections returned that were stamped at or after their own coarse time (by
 * path, time and size), so that a later cell leaves out those still as they were. */
#define WORKSPACE_MARKS 64
typedef struct {
    size_t n;
    struct {
        uint64_t key;   /* path, modification time and size */
        int64_t  mtime; /* kept while a later cell could start at or before it */
    } mark[WORKSPACE_MARKS];
} workspace_marks_t;

/* The file-time clock (CLOCK_REALTIME_COARSE), in ns. */
int64_t workspace_now_ns(void);
/* Zygote, once the job is answered: the regular files in dir that are not an unchanged input
 * into res->files, capped (files_truncated set when some were left out). since_ns: only those
 * modified at or after it, by workspace_now_ns (a session's cell returns what it wrote, not the
 * whole workspace); 0 for all. marks (a session's; NULL for a one-off job): files earlier
 * collections returned that are unchanged are left out, and the marks brought up to date. */
void workspace_collect(const char *dir, const jobspec_t *inputs, int64_t since_ns,
                       workspace_marks_t *marks, result_t *res);

#endif
