/* executor-node/zygote/sessions/zygote_session.h — one session as the zygote holds it: its
 * process's slot, its workspace and lineage, what it has done, how it is ending, and the fork it is
 * a side of. Shared by the table of sessions (zygote_sessions.c), forks (session_fork.c) and the
 * answers the zygote completes (session_results.c); the zygote itself knows sessions only through
 * zygote_sessions.h. */
#ifndef SP_ZYGOTE_SESSION_H
#define SP_ZYGOTE_SESSION_H
#include <stdint.h>

#include "common/ids.h"
#include "proto/job.h"
#include "proto/wire.h"
#include "executor-node/sandbox/workspace.h"
#include "executor-node/zygote/pool/pool.h"

/* The directory tree a session and its clones share: the base its first Landlock rule names.
 * Each session's workspace is a mount below it, and every clone's directory too (one more
 * level per fork). Removed when the last session of the lineage is gone. */
typedef struct {
    char base[WORKSPACE_PATH_MAX];
    int refs;
} lineage_t;

struct fork_op;

typedef struct zygote_session {
    uint8_t id[ID_BYTES];
    char tenant[JOB_MAX_TENANT + 1];
    child_t *child;                 /* its process's slot in the pool */
    lineage_t *lineage;             /* NULL in profiles without a workspace */
    char cwd[WORKSPACE_PATH_MAX];   /* its workspace (a mount of its own) */
    char spare[WORKSPACE_PATH_MAX]; /* the directory its next clone's goes under */
    int layers;                     /* Landlock layers its process holds */
    long memory_mb;
    long idle_timeout_s;
    uint32_t cells;
    int64_t cell_since_ns; /* the file clock at its current job's start (workspace_now_ns):
                              files it wrote are not older */
    workspace_marks_t files_marks; /* files its last cell returned in that cell's last tick */
    uint32_t measured;     /* cells when last measured, + 1; 0: never */
    uint64_t memory_kb;
    uint64_t rest_cpu_ms; /* its process's CPU when it last went back to waiting, + 1; 0 unknown */
    int announced; /* ZM_SESSION up went out */
    int down_sent; /* ZM_SESSION down went out (as soon as it is ending: before any answer) */
    int ending;    /* end_reason is set; its process is being killed */
    char end_reason[WIRE_MAX_REASON + 1];
    struct fork_op *fork; /* a fork under way that it is one side of */
    /* an atomic cell (session_atomic.h) */
    int atomic;                          /* its running (or starting) cell is atomic */
    child_t *backup;                     /* its process as it was before the cell, waiting */
    char backup_dir[WORKSPACE_PATH_MAX]; /* its workspace's files as they were ("" : empty) */
    int files_kept;                      /* backup_dir (or the empty workspace) stands */
    long retention_s;                    /* how long it may stay hibernated (proto/job.h) */
} zygote_session_t;

#endif
