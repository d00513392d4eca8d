/* executor-node/node/claims.h — which job ids this node has taken and from which broker, so that a
 * job is never run twice however often it is sent (PROTOCOL.md §3, "Several brokers").
 *
 * A front-end that loses its broker sends each job it was waiting for to another broker, once,
 * marked `resubmit`. That broker first PROBEs every executor: one running the job answers
 * `running` (and will ANSWER that broker too), one that ran it answers `done`, the others
 * `none` — and each of those remembers that the job now belongs to the prober, so that the
 * first broker, should it still be alive and send the job after all, is refused. Only once
 * every executor has answered `none` does the prober run the job. Here, the books for that:
 *
 *   none → a JOB runs (RUNNING, its broker the origin); a PROBE makes it DISCLAIMED for the
 *          prober
 *   RUNNING → another JOB for it attaches (its broker gets the answer too; no second run);
 *          a PROBE attaches the prober and answers `running`
 *   DONE (kept a minute) → a JOB is refused (`lost`: it ran, its answer went to the broker
 *          that sent it first); a PROBE answers `done`
 *   DISCLAIMED (kept until the job's deadline) → a JOB from that broker runs, from another
 *          is refused
 *
 * Bounded by entries: past the cap, DONE and DISCLAIMED are not remembered (counted). */
#ifndef SP_EXEC_CLAIMS_H
#define SP_EXEC_CLAIMS_H
#include <stddef.h>
#include <stdint.h>

#include "common/ids.h"

typedef struct claims claims_t;

typedef enum {
    CLAIM_RUN,          /* run it: it is recorded RUNNING for this broker */
    CLAIM_ATTACH,       /* already running here: answer this broker too, no second run */
    CLAIM_REFUSE_DONE,  /* it ran here already */
    CLAIM_REFUSE_OWNED, /* another broker has claimed it (a resubmission) */
} claim_verdict_t;

/* What a PROBE is answered (HELD's state, PROTOCOL.md §3). */
typedef enum { HELD_NONE = 0, HELD_RUNNING = 1, HELD_DONE = 2 } held_t;

typedef struct {
    uint64_t dropped; /* DONE or DISCLAIMED not remembered: the table was full */
} claims_stats_t;

/* max: entries at most; done_keep_ms: how long a finished job is remembered. */
claims_t *claims_new(size_t max, uint64_t done_keep_ms);
void claims_destroy(claims_t **self_p);

/* A JOB from link. expires_ms (monotonic, 0 = none) bounds how long it may be remembered. */
claim_verdict_t claims_on_job(claims_t *self, const uint8_t id[ID_BYTES], int link,
                              uint64_t expires_ms, uint64_t now_ms);
/* A PROBE from link. */
held_t claims_on_probe(claims_t *self, const uint8_t id[ID_BYTES], int link, uint64_t expires_ms,
                       uint64_t now_ms);
/* The job ended here. Returns the links attached to it (bit i: link i), which get an ANSWER
 * (its origin is answered by the node as usual). */
unsigned claims_on_done(claims_t *self, const uint8_t id[ID_BYTES], uint64_t now_ms);
/* A JOB that was refused after all (no slot): as if it had never come. */
void claims_forget(claims_t *self, const uint8_t id[ID_BYTES]);
/* Forgets what has expired. */
void claims_expire(claims_t *self, uint64_t now_ms);
size_t claims_count(const claims_t *self);
const claims_stats_t *claims_stats(const claims_t *self);

#endif
