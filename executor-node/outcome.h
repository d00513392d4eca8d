/* executor-node/outcome.h — a finished job's child, turned into its Result.
 *
 * Everything in the child's area is hostile (the job's code ran there): lengths are clamped to
 * the zygote's own capacities and the runner's meta goes through the bounds-checked reader.
 * The zygote's and the kernel's account of what happened outrank the child's. */
#ifndef SP_OUTCOME_H
#define SP_OUTCOME_H
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>

#include "../proto/job.h"
#include "../proto/result.h"
#include "jobarea.h"

/* What a job may return as figures (the runner caps the same way; these hold against a child
 * that does not). */
#define OUTCOME_MAX_IMAGES       8
#define OUTCOME_MAX_IMAGE        (2u << 20)
#define OUTCOME_MAX_IMAGES_BYTES (4u << 20)

typedef enum { KILL_NONE = 0, KILL_TIMEOUT, KILL_CANCEL } kill_reason_t;

typedef struct {
    const area_t        *area;
    limits_t             limits;  /* the job's effective limits */
    kill_reason_t        killed;  /* what the zygote did to it */
    int                  wstatus; /* from wait4; 0 when ru is NULL */
    const struct rusage *ru;      /* NULL: answering on the done byte, the child still exits */
    double               wall_ms; /* dispatch to now */
} outcome_t;

void outcome_result(const outcome_t *o, result_t *res);
/* The runner's meta (msgpack the child wrote) into res: status — only the outcomes code can
 * report (ok, error, syntax_error, memory_limit, output_limit, internal_error); anything
 * else becomes error — result, variables, validation, error, images (PNGs only, sized from
 * their own headers, capped). 0, or -1 when malformed. */
int outcome_read_meta(const uint8_t *meta, size_t len, result_t *res);

#endif
