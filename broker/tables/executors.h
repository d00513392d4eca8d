/* broker/tables/executors.h — the executor nodes registered on the worker channel, their credits
 * and the choice of where a job goes.
 *
 * Credits (PROTOCOL.md §3): an executor's credit is the JOBs it can take now. CREDIT adds,
 * each JOB takes one, each RESULT gives one back; the broker never lets credit exceed the
 * slots the executor declared in READY, so a confused or hostile executor cannot talk the
 * broker into flooding it. A job goes to the executor serving its service with the most free
 * credit; ties go to the one least recently used, which spreads a trickle of jobs across
 * idle executors instead of piling it on the first. A new session goes where memory is
 * freest, since it holds memory for as long as it lives, and a slot only while it runs.
 *
 * The reserve (READY's `reserve`, PROTOCOL.md §3): of an executor's slots, that many are kept
 * for jobs whose tenant has nothing running. Credit beyond what the reserve still keeps is
 * open to any job; the rest only to such a job, which is then counted as running on the
 * reserve until its lease ends — so a tenant that floods the farm fills the open slots and no
 * more, and a tenant that sends one call at a time does not wait behind the flood for one.
 *
 * Draining (LEAVING, PROTOCOL.md §3.2): an executor that is leaving keeps its registration and
 * its leases until it says DISCONNECT, but its credit is gone and stays 0 (CREDIT and RESULT
 * refund nothing), so no pick ever returns it. */
#ifndef SP_EXECUTORS_H
#define SP_EXECUTORS_H
#include <stddef.h>
#include <stdint.h>

#include "proto/wire.h"
#include "job.h"
#include "queue.h"

#define EXECUTOR_MAX_IDENTITY 255

struct executor {
    uint8_t identity[EXECUTOR_MAX_IDENTITY]; /* ROUTER routing id of its connection */
    size_t identity_len;
    char node[65];     /* the name it registered with */
    char key_name[65]; /* the allowlisted CURVE key it authenticated with, or "" */
    char services[WIRE_MAX_SERVICES][65];
    int n_services;
    uint64_t service_mask; /* bit i: it serves the broker's service number i */
    char python[32];
    uint32_t slots;         /* from READY, the reserve included */
    uint32_t reserve;       /* from READY: of the slots, kept for tenants with nothing running */
    uint32_t reserve_used;  /* its leased jobs that took the reserve */
    uint32_t credit;        /* JOBs it can take now */
    uint64_t registered_ms; /* monotonic */
    uint64_t last_seen_ms;  /* monotonic, any message */
    uint64_t last_used;     /* dispatch stamp: lower = used less recently */
    uint64_t wanted_ms;     /* monotonic: when it was last sent WANT */
    job_t *leases;          /* jobs it runs, linked through job->prev/next */
    size_t n_leases;
    uint64_t results; /* RESULTs received, for logs */
    size_t index;     /* position in the registry's array */
    /* sessions (affinity.h): the heads of the lines of its sessions that may run now, with
     * tenants taking turns; what it said of its memory and sessions (READY, SESSIONS) */
    queue_t *pinned;
    int pinned_last; /* its last job came from pinned: a waiting service job goes next */
    uint32_t mem_free_mb;
    uint32_t max_sessions; /* 0: it keeps none */
    uint32_t sessions;
    /* draining (LEAVING): no job goes to it any more; its running jobs finish */
    int draining;
    uint64_t drain_since_ms; /* monotonic: when it said LEAVING */
    uint32_t drain_grace_ms; /* the grace it gave its running jobs */
};

typedef struct executors executors_t;

/* quantum: the DRR quantum of each executor's pinned queue. */
executors_t *executors_new(size_t max, unsigned quantum);
void executors_destroy(executors_t **self_p); /* frees executors; leases must be empty */

/* Registers a connection; NULL when the registry is full or the identity is taken. Credit
 * starts at 0: the executor sends CREDIT after READY. */
executor_t *executors_add(executors_t *self, const void *identity, size_t len, const ready_t *ready,
                          uint64_t service_mask, uint64_t now_ms);
executor_t *executors_get(const executors_t *self, const void *identity, size_t len);
executor_t *executors_find_node(const executors_t *self, const char *node);
void executors_remove(executors_t *self, executor_t **ex_p); /* leases must be empty */

/* Credit any job may take: what the reserve does not keep. */
uint32_t executor_open_credit(const executor_t *ex);

/* The executor for a job of service number `service`, or NULL when none has credit: open
 * credit, or with `reserve` any credit (for a job whose tenant has nothing running). */
executor_t *executors_pick(const executors_t *self, unsigned service, int reserve);
/* The executor for a new session of service number `service`: of those with credit (as
 * executors_pick counts it) and room for a session, the one with the most free memory (in
 * steps of 256 MB, so noise does not decide), then the most free credit, then the least
 * recently used. NULL when none. */
executor_t *executors_pick_for_session(const executors_t *self, unsigned service, int reserve);
/* A JOB went out to ex: one credit taken, from the reserve when no open credit was left
 * (1 returned then: the job's lease gives it back, executors_unreserve). */
int executors_charge(executors_t *self, executor_t *ex);
void executors_unreserve(executor_t *ex);
void executors_refund(executor_t *ex, uint32_t n); /* RESULT or CREDIT; none when draining */
/* LEAVING: ex drains from now on. Returns the credit it held, which is dropped (0 when it was
 * draining already). */
uint32_t executors_drain(executor_t *ex, uint64_t now_ms, uint32_t grace_ms);

size_t executors_count(const executors_t *self);
executor_t *executors_at(const executors_t *self, size_t i); /* for iteration, 0..count-1 */

#endif
