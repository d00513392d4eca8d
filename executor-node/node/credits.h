/* executor-node/node/credits.h — one node's slots shared among the brokers it serves (PROTOCOL.md
 * §3, "Several brokers"). A broker may send a JOB only against credit; the node hands out
 * credit so that what every broker holds, plus the jobs running, never exceeds its slots:
 *
 *     free + busy + Σ held[broker] = slots          (held: credit a broker has not used yet)
 *
 * Credit goes where jobs wait. Free slots go to a broker that said WANT (it has jobs queued and
 * none of our credit; a broker repeats WANT while that lasts, so a WANT is believed for
 * CREDITS_WANT_MS only), else to the first broker that is up (front-ends try brokers in the same
 * order, so that is where the work usually is). A broker that WANTs while every slot is taken
 * gets slots back from brokers holding unused credit (RECLAIM, answered by RELEASE), and the
 * slot of each job that ends goes to a broker that WANTs rather than back to the job's own
 * (the job is answered by ANSWER, which returns no credit). A broker that goes away takes its
 * unused credit with it: it is void, and free again here.
 *
 * Draining (the node is leaving, PROTOCOL.md §3.2): no credit is granted any more, nor returned
 * with a RESULT, and WANTs are ignored; every broker holding unused credit is asked for it back
 * once (RECLAIM; a broker that heard LEAVING gives it back unasked, with the same RELEASE). The
 * node has drained when no job runs and no broker holds credit: then no JOB can be on its way
 * (a JOB in flight is counted in its broker's credit until it arrives).
 *
 * No I/O: the node carries out what credits_io_t asks; tests/unit drive it. */
#ifndef SP_EXEC_CREDITS_H
#define SP_EXEC_CREDITS_H
#include <stdint.h>

#define CREDITS_MAX_LINKS 8
#define CREDITS_WANT_MS   2500 /* a WANT holds this long: the broker repeats it every heartbeat */

typedef struct credits credits_t;

typedef struct {
    void (*grant)(void *arg, int link, uint32_t n);   /* send CREDIT n */
    void (*reclaim)(void *arg, int link, uint32_t n); /* send RECLAIM n */
    void *arg;
} credits_io_t;

/* now_ms: a monotonic clock (NULL: the real one; tests pass a fake). */
credits_t *credits_new(uint32_t slots, int n_links, const credits_io_t *io,
                       uint64_t (*now_ms)(void));
void credits_destroy(credits_t **self_p);

/* The link's broker is there (registered, connection up): it may be granted credit. */
void credits_link_up(credits_t *self, int link);
/* It is gone: the credit it held is void (free again), its wants and reclaims forgotten. */
void credits_link_down(credits_t *self, int link);
/* WANT n: the broker holds n jobs it could send here and has none of our credit. */
void credits_want(credits_t *self, int link, uint32_t n);
/* RELEASE n: the broker gave back n unused credits (an answer to RECLAIM). */
void credits_released(credits_t *self, int link, uint32_t n);
/* 1 when a JOB from link can run: it holds credit, or a slot is free. A JOB beyond that (a
 * broker sending more than it was given) is refused, never run on another broker's slot. */
int credits_can_start(const credits_t *self, int link);
/* A JOB from link starts running (credits_can_start said so): one of link's credits became a
 * busy slot. (A JOB that does not run — refused, or attached to a run already here — gives its
 * credit straight back and is not counted.) */
void credits_start(credits_t *self, int link);
/* A job from origin ended and its slot is free. Returns origin when the job's RESULT should
 * return the slot to it as credit; -1 when it should be answered with ANSWER instead (the slot
 * went to a broker that wants it, or origin is gone). */
int credits_finish(credits_t *self, int origin);

/* From now on the node drains (above). */
void credits_drain(credits_t *self);
/* 1 once draining, with no job running and no credit held by any broker. */
int credits_drained(const credits_t *self);

uint32_t credits_free(const credits_t *self);
uint32_t credits_busy(const credits_t *self);
uint32_t credits_held(const credits_t *self, int link);
int credits_is_up(const credits_t *self, int link);

#endif
