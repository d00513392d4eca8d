/* executor-node/zygote/pool/outcome_meta.h — the runner's meta, the msgpack a child writes into
 * its area about its job, read as the hostile input it is (the job's code ran in the process
 * that wrote it): the part of a finished child's Result (outcome.h) that the child itself says,
 * bounded by the zygote's own caps. */
#ifndef SP_OUTCOME_META_H
#define SP_OUTCOME_META_H
#include <stddef.h>
#include <stdint.h>

#include "proto/result.h"

/* What a job may return as figures (the runner caps the same way; these hold against a child
 * that does not). */
#define OUTCOME_MAX_IMAGES       8
#define OUTCOME_MAX_IMAGE        (2u << 20)
#define OUTCOME_MAX_IMAGES_BYTES (4u << 20)
/* Rich outputs (display() and the trailing expression, rich.py): representations, each and
 * all together. */
#define OUTCOME_MAX_OUTPUTS       64
#define OUTCOME_MAX_OUTPUT        (1u << 20)
#define OUTCOME_MAX_OUTPUTS_BYTES (3u << 20)

/* The runner's meta into res and flags (may be NULL): status — only the outcomes code can
 * report (ok, error, syntax_error, memory_limit, output_limit, internal_error); anything else
 * becomes error — result, variables, validation, error, images (PNGs only, sized from their own
 * headers, capped), and a session's summary and snapshot parts (the snapshot's bytes as they
 * came: zygote_sessions.h checks them). 0, or -1 when malformed. */
typedef struct {
    int denied;    /* the code ended on a PermissionError of the audit hook's (policy.h) */
    int exit_code; /* the status the code exited with (sys.exit), 0..255 */
} meta_flags_t;
int outcome_read_meta(const uint8_t *meta, size_t len, result_t *res, meta_flags_t *flags);

#endif
