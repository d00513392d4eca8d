/* proto/job.h — the JobSpec body (PROTOCOL.md §4): what to run and within which limits.
 * Encoded by whoever submits (front-end, CLI, bench), decoded by the executor node, its
 * zygote and the job's child. The broker never decodes it; it reads the small route header
 * (route.h) instead. */
#ifndef SP_JOB_H
#define SP_JOB_H
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "proto/egress_rule.h"
#include "common/ids.h"
#include "common/limits.h"

/* Caps a decoder enforces whatever the operator configures: beyond them a JobSpec is
 * malformed, not merely over quota. */
#define JOB_MAX_CODE      (1u << 20) /* 1 MiB of source */
#define JOB_MAX_STDIN     (1u << 20)
#define JOB_MAX_NAMES     64         /* inspect_variables, allowed_imports */
#define JOB_MAX_NAME      128
#define JOB_MAX_FILES     64
#define JOB_MAX_FILE      (4u << 20)
#define JOB_MAX_PATH      200
#define JOB_MAX_DEPTH     8          /* components in a file's path */
#define JOB_MAX_TENANT    64
#define JOB_MAX_SERVICE   64
#define JOB_MAX_SNAPSHOT  (14u << 20) /* a session snapshot to restore (PROTOCOL.md §8) */
#define JOB_MAX_IDLE_S    (7L * 24 * 3600)
#define JOB_MAX_DEPS      32         /* dependencies (requirement strings) */
#define JOB_MAX_DEP       200
#define JOB_MAX_FORKS     64         /* clones one session_fork makes (new_session + more) */
#define JOB_MAX_RETENTION_S (366L * 24 * 3600) /* how long a hibernated session's checkpoint
                                                  is kept (the tenant's session retention) */
#define JOB_MAX_EGRESS_BYTES (1ULL << 40) /* an egress byte cap beyond this is malformed */
#define JOB_MAX_EGRESS_CONNS 65536

/* What a job does. exec and validate run code (exec in a session when `session` is set: the
 * session's next cell); the session_* kinds act on a session (PROTOCOL.md §4 "Sessions"). */
typedef enum {
    JOB_EXEC = 0,
    JOB_VALIDATE = 1,
    JOB_SESSION_NEW,      /* new_session: a sandbox kept for later cells */
    JOB_SESSION_FORK,     /* session → new_session: a copy-on-write clone of it */
    JOB_SESSION_CLOSE,    /* session: ends it */
    JOB_SESSION_SNAPSHOT, /* session: its variables and workspace files, as a snapshot */
    JOB_SESSION_RESTORE,  /* snapshot into session, or into a new one (new_session) */
    JOB_SESSION_INFO,     /* session: a summary of its variables and files */
    JOB__KINDS
} job_kind_t;
typedef enum { FIGURES_PNG = 0, FIGURES_SVG = 1 } figure_format_t;

/* "exec", "session_new", ...; NULL for an unknown kind. */
const char *job_kind_name(job_kind_t kind);
/* 1 for the kinds that act on (or make) a session. */
int job_kind_is_session(job_kind_t kind);

typedef struct {
    char  *path;       /* relative, validated by the executor before use */
    char  *data;
    size_t len;
} job_file_t;

/* What a job may reach on the network (PROTOCOL.md §4 `egress`): its tenant's rules, each a
 * valid egress_rule.h rule, and the caps on its traffic; no rule means no network. */
typedef struct {
    char      **rules;
    size_t      n_rules;
    uint64_t    max_bytes; /* in and out together; 0: the executor's default */
    uint64_t    max_conns; /* connections over the job's life; 0: the executor's default */
} job_egress_t;

typedef struct {
    uint8_t     id[ID_BYTES];
    job_kind_t  kind;
    char       *tenant;
    char       *service;
    char       *code;
    size_t      code_len;
    limits_t    limits;
    char      **inspect;          /* variable names to return */
    size_t      n_inspect;
    char      **allowed_imports;  /* narrows the profile's allowlist; empty = the profile's */
    size_t      n_allowed_imports;
    char       *stdin_data;       /* NULL when none */
    size_t      stdin_len;
    int         capture_output;   /* 0: discard what the code prints */
    job_file_t *files;
    size_t      n_files;
    uint64_t    submitted_ms;     /* wall clock at the front-end */
    /* sessions (PROTOCOL.md §4): the one acted on, the one made (new or fork), its idle
     * timeout (session_new, and restore into a new session), a snapshot to restore */
    int         has_session;
    uint8_t     session[ID_BYTES];
    int         has_new_session;
    uint8_t     new_session[ID_BYTES];
    long        idle_timeout_s;   /* 0: the executor's default */
    char       *snapshot;         /* msgpack map (PROTOCOL.md §8), snapshot_len bytes */
    size_t      snapshot_len;
    figure_format_t figure_format; /* how figures come back (rich outputs) */
    char      **dependencies;     /* PEP 508 requirements beyond the profile's (the argument and
                                     the PEP 723 block), resolved by the node; NULL when none */
    size_t      n_dependencies;
    /* a session's cell that either commits or leaves the session as it was (exec with session) */
    int         atomic;
    /* session_fork: the clones after new_session, made in the same job (fan-out); at most
     * JOB_MAX_FORKS - 1, none equal to another or to new_session */
    uint8_t   (*more_sessions)[ID_BYTES];
    size_t      n_more_sessions;
    /* session_new, session_fork, session_restore into a new session: how long the session may
     * stay hibernated (its checkpoint kept) once its process is freed; 0: it is never
     * hibernated, it ends */
    long        retention_s;
    /* session_restore into a new session that resumes a hibernated one: the cells it had run,
     * so that its next cell is numbered on from there */
    uint32_t    resume_cells;
    job_egress_t egress;          /* its network, when the tenant has one (n_rules > 0) */
} jobspec_t;

void jobspec_init(jobspec_t *job);
void jobspec_clear(jobspec_t *job);
void jobspec_encode(const jobspec_t *job, buf_t *out);
/* 0, or -1 with the reason in err. The id is not in the body (it travels in its own frame):
 * callers copy it in. */
int jobspec_decode(const void *data, size_t len, jobspec_t *job, char *err, size_t errlen);
/* Only the dependencies of a JobSpec, for a node that routes by them without decoding the
 * rest: 0 with *n strings in *out (the caller frees them with jobspec_free_names; NULL when
 * none), or -1 when the body is malformed there. */
int  jobspec_peek_dependencies(const void *data, size_t len, char ***out, size_t *n);
void jobspec_free_names(char **names, size_t n);
/* Only the egress part of a JobSpec, for the node that grants it: 0 (out->n_rules 0 when the
 * job has none; free with jobspec_free_egress), or -1 when the body is malformed there. */
int  jobspec_peek_egress(const void *data, size_t len, job_egress_t *out);
void jobspec_free_egress(job_egress_t *e);
/* A file's path as PROTOCOL.md §4 allows it: relative, no "..", "." or empty component, no
 * control character or backslash, at most JOB_MAX_DEPTH components and JOB_MAX_PATH bytes.
 * The front-end checks it to answer early, the executor to be safe. 0, or -1 with the reason. */
int jobspec_check_path(const char *path, char *err, size_t errlen);

#endif
