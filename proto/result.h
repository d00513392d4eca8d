/* proto/result.h — the Result body (PROTOCOL.md §5): what happened to one job. Built by the
 * zygote (or by the broker for jobs that never ran: rejected, lost, timeout in queue),
 * carried opaque through the broker, decoded by the front-end and the CLI. */
#ifndef SP_RESULT_H
#define SP_RESULT_H
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/ids.h"
#include "result_egress.h"
#include "status.h"

#define RESULT_MAX_STREAM (64u << 20) /* decoder cap per stream; operators cap far lower */
#define RESULT_MAX_TEXT   (8u << 20)  /* result repr, variables JSON, traceback */
#define RESULT_MAX_IMAGES 16
#define RESULT_MAX_IMAGE  (8u << 20)
#define RESULT_MAX_FILES  64
#define RESULT_MAX_SNAPSHOT (15u << 20) /* a snapshot's msgpack map, within the 16 MiB body */
#define RESULT_MAX_OUTPUTS 64
#define RESULT_MAX_CLONES  64 /* session.clones: a fork_session's sessions (JOB_MAX_FORKS) */
#define RESULT_MAX_EVENTS  16

typedef struct {
    char    *mime;
    uint32_t width, height;
    char    *data;
    size_t   len;
} result_image_t;

typedef struct {
    char  *path;
    char  *data;
    size_t len;
} result_file_t;

/* One representation of a rich output (display() or the trailing expression), as a notebook
 * keeps them: a DataFrame comes as text/plain, text/html and application/json, three entries
 * with the same index. */
typedef struct {
    char    *kind;  /* "display" or "result" */
    uint32_t index; /* the output it belongs to, in order of appearance */
    char    *mime;
    char    *data;
    size_t   len;
} result_output_t;

/* An operation a sandbox layer refused while the job ran (PROTOCOL.md §5 security_events):
 * one entry per operation and target, however often the code tried it. Whether the refusal
 * ended the job is the status's to say (security_violation): code that catches one and carries
 * on ends as its code does. */
typedef struct {
    char    *operation; /* the audit event ("subprocess.Popen", "open") or the syscall ("socket") */
    char    *target;    /* what it was aimed at (a path, a command, a pid); NULL when none */
    char    *layer;     /* the layer that refused it by name (link/layers.c): python, seccomp */
    uint32_t count;     /* times it was refused */
} result_event_t;

typedef struct {
    status_t status;
    char    *out;           /* stdout bytes as written (may end mid UTF-8 sequence when capped) */
    size_t   out_len;
    int      out_truncated;
    char    *err;           /* stderr */
    size_t   err_len;
    int      err_truncated;
    char    *result;        /* repr of the trailing expression or of `result`; NULL if none */
    char    *variables;     /* JSON object text {name: value}; NULL when none were asked for */
    char    *validation;    /* JSON object text, for validate jobs */
    struct {
        int   present;
        char *type;
        char *message;
        char *traceback;
        long  line;         /* line in the user's code, 0 when unknown */
    } error;
    double   queue_ms, wall_ms, cpu_ms;
    long     max_rss_kb;
    struct {
        char *reason;       /* "exit", "signal", "timeout", "seccomp", "audit", "output_limit", ... */
        int   signal;
        char *syscall;      /* the syscall or audit event that was refused */
        int   code;         /* the process's exit status as the code chose it (sys.exit(42): 42) */
    } exit;
    result_image_t *images;
    size_t          n_images;
    int             images_truncated;
    result_file_t  *files;
    size_t          n_files;
    int             files_truncated;
    result_output_t *outputs;
    size_t          n_outputs;
    int             outputs_truncated;
    result_event_t *events;   /* security_events: refusals, caught or not */
    size_t          n_events;
    int             events_truncated; /* more distinct refusals than were kept */
    char           *executor; /* node id that ran it */
    uint32_t        attempt;
    /* A job on a session (PROTOCOL.md §5): the session after it. */
    struct {
        int      present;
        uint8_t  id[ID_BYTES];
        uint32_t cell;           /* this cell's number (1, 2, ...); 0 for other session jobs */
        int      alive;          /* the session lives on after this job */
        char    *end_reason;     /* why it ended, when !alive */
        uint64_t memory_kb;      /* memory in use: its proportional share (Pss) */
        long     memory_mb;      /* its limit */
        long     idle_timeout_s;
        long     forks_left;     /* forks it may still make */
        char    *summary;        /* JSON text: what session_info and session_restore report */
        int      atomic;         /* the cell was atomic (PROTOCOL.md §5) ... */
        int      rolled_back;    /* ... and did not end ok: the session is as before it */
        uint8_t (*clones)[ID_BYTES]; /* session_fork: every session it made, in order */
        size_t   n_clones;       /* at most JOB_MAX_FORKS */
        /* never on the wire: what a front-end adds when it resumed the session for the call
         * (JSON text of {from_cell, reason, checkpointed_at, not_restored}, and a sentence) */
        char    *resumed;
        char    *resumed_note;
    } session;
    char           *snapshot;     /* session_snapshot: a msgpack map (PROTOCOL.md §8) */
    size_t          snapshot_len;
    result_egress_list_t egress;  /* the destinations it asked for (the node adds these) */
} result_t;

void result_init(result_t *res);
void result_clear(result_t *res);
void result_encode(const result_t *res, buf_t *out);
int  result_decode(const void *data, size_t len, result_t *res, char *err, size_t errlen);

/* A result for a job that did not run: status plus an error type and message. Used by the
 * broker (rejected, lost, timeout) and by clients on local failures. */
void result_encode_simple(buf_t *out, status_t status, const char *type, const char *message);

#endif
