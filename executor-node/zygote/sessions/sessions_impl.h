/* executor-node/zygote/sessions/sessions_impl.h — the state of a zygote's sessions, private to sessions.c and
 * session_fork.c (their contract with the zygote is sessions.h and session_fork.h). */
#ifndef SP_SESSIONS_IMPL_H
#define SP_SESSIONS_IMPL_H
#include "common/idmap.h"
#include "proto/wire.h"
#include "sessions.h"

/* The directory tree a session and its clones share: the base its first Landlock rule names.
 * Each session's workspace is a mount below it, and every clone's directory too (one more
 * level per fork). Removed when the last session of the lineage is gone. */
typedef struct {
    char base[WORKSPACE_PATH_MAX];
    int refs;
} lineage_t;

struct fork_op;

typedef struct zsession {
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
    int64_t cell_since_ns; /* wall clock at its current job's start: files it wrote are newer */
    uint32_t measured;     /* cells when last measured, + 1; 0: never */
    uint64_t memory_kb;
    int announced; /* ZM_SESSION up went out */
    int down_sent; /* ZM_SESSION down went out (as soon as it is ending: before any answer) */
    int ending;    /* end_reason is set; its process is being killed */
    char end_reason[WIRE_MAX_REASON + 1];
    struct fork_op *fork; /* a fork under way that it is one side of */
} zsession_t;

struct sessions {
    sessions_conf_t conf;
    sessions_io_t io;
    idmap_t *by_id; /* session id → zsession_t */
    size_t count;
    size_t ending;         /* of them, ending: their processes go, and they take no room */
    struct fork_op *forks; /* under way */
    uint64_t next_tick_us;
};

/* The session with this id, when it is tenant's (NULL tenant: anyone's); else NULL. */
zsession_t *sessions_find(sessions_t *s, const uint8_t id[ID_BYTES], const char *tenant);
/* A new session for child c (its lineage is taken over, or shared with a parent's: from). */
zsession_t *sessions_add(sessions_t *s, const uint8_t id[ID_BYTES], const char *tenant, child_t *c,
                         const zsession_t *from);
/* res->session from z. */
void sessions_describe(const sessions_t *s, const zsession_t *z, result_t *res);
/* Room for the session new_id: 0, or -1 with the refusal (the node's maximum, a duplicate). */
int sessions_room(const sessions_t *s, const uint8_t new_id[ID_BYTES], refusal_t *why);
/* ZM_SESSION up for z, once. */
void sessions_announce(sessions_t *s, zsession_t *z);
/* Answers a job with a Result made here: status, error type and message; z (may be NULL)
 * fills the session part. */
void sessions_answer(sessions_t *s, const uint8_t id[ID_BYTES], const zsession_t *z, status_t st,
                     const char *type, const char *message, const child_t *c);
/* A snapshot's answer: the process's pickles (checked again) and the workspace's files, as one
 * snapshot (proto/snapshot.h); an error answer when either cannot be had. session_results.c */
void session_snapshot_result(sessions_t *s, zsession_t *z, result_t *res);
/* An info answer: {"files": [...], "session": <what the process said>}. */
void session_info_result(sessions_t *s, zsession_t *z, result_t *res);
/* z ends with this reason: its process is killed (its reap finishes the end, sessions_gone). */
void sessions_kill(sessions_t *s, zsession_t *z, const char *reason);

#endif
