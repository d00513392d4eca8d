/* executor-node/zygote/pool/outcome.h — a finished job's child, turned into its Result (the
 * zygote's assembly of every answer it sends), and the lines it logs about it.
 *
 * Everything in the child's area is hostile (the job's code ran there): lengths are clamped to
 * the zygote's own capacities and the runner's meta goes through the bounds-checked reader.
 * The zygote's and the kernel's account of what happened outrank the child's. */
#ifndef SP_OUTCOME_H
#define SP_OUTCOME_H
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>

#include "proto/job.h"
#include "proto/result.h"
#include "executor-node/area/jobarea.h"
#include "executor-node/sandbox/workspace.h"
#include "outcome_meta.h"

/* KILL_EGRESS: the node said the job went past its network byte cap (egress.h). */
typedef enum { KILL_NONE = 0, KILL_TIMEOUT, KILL_CANCEL, KILL_EGRESS } kill_reason_t;

typedef struct {
    const area_t        *area;
    limits_t             limits;   /* the job's effective limits */
    kill_reason_t        killed;   /* what the zygote did to it */
    kill_reason_t        interrupted; /* a session's cell: SIGINT for this reason (pool.h) */
    int                  wstatus;  /* from wait4; 0 when ru is NULL */
    const struct rusage *ru;       /* NULL: answering on the done byte, the child still exits */
    uint64_t             start_us; /* dispatch, monotonic */
    /* the job, for the files it wrote and the log lines */
    const uint8_t       *id;       /* ID_BYTES */
    const char          *tenant;
    const char          *profile;
    int                  kind;     /* JOB_EXEC or JOB_VALIDATE */
    const char          *ws_dir;   /* its workspace directory; NULL or "" when none */
    const jobspec_t     *inputs;   /* its input files (the zygote's own copy), or NULL */
    int64_t              files_since_ns; /* a session's cell: files modified since (the file
                                            clock, workspace_now_ns) */
    workspace_marks_t   *files_marks;    /* a session's: what its previous cell returned */
} outcome_t;

/* The Result of a finished job: what the zygote, the kernel and the child's area say, in that
 * order of trust, and then the files it wrote in its workspace. */
void outcome_result(const outcome_t *o, result_t *res);
/* The job's log lines: an audit line for a security violation; at debug level where
 * its time went (minflt: its page faults, -1 when unknown). */
void outcome_log(const outcome_t *o, const result_t *res, long minflt);

#endif
