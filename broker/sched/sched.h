/* broker/sched/sched.h — the broker's decisions, with no sockets in sight: admission against the
 * caps, per-service fair queues, dispatch by credit, leases, deadlines, cancels, executor
 * and client liveness. The broker's relay (relay.h) feeds it parsed messages and carries out
 * what it asks through sched_io_t; unit tests drive it the same way with a fake clock and
 * fake I/O. Its parts, in broker/sched/, stand on each other in one order (internal.h).
 *
 * Sessions: a job whose route names a session goes to the executor holding it and
 * waits, behind the session's earlier jobs, for that executor's credit (sched_sessions.c); a
 * job making a new session goes where memory is freest (executors.h).
 *
 * Exactly one final answer per admitted job (PROTOCOL.md §1): a job leaves the scheduler
 * either through io->answer (an answer the broker makes: timeout, lost, cancelled, rejected)
 * or through sched_result + sched_finish (the executor's RESULT, forwarded by the caller),
 * and once it has left, nothing refers to it any more. */
#ifndef SP_SCHED_H
#define SP_SCHED_H
#include <stddef.h>
#include <stdint.h>

#include "common/prom.h"
#include "proto/status.h"
#include "proto/wire.h"
#include "broker/tables/clients.h"
#include "broker/tables/executors.h"
#include "broker/tables/job.h"
#include "broker/tables/services.h"
#include "broker/tables/tenants.h"

typedef struct sched sched_t;

typedef struct {
    size_t max_queue;            /* jobs queued, all services together */
    size_t max_queue_per_tenant; /* jobs one tenant may have queued, all services */
    size_t max_queue_bytes;      /* JobSpec bytes queued */
    size_t max_executors;
    size_t max_clients;
    uint64_t heartbeat_ms;     /* PROTOCOL.md §3: 1000 */
    unsigned liveness;         /* silent heartbeats before a peer counts as gone: 3 */
    uint64_t service_grace_ms; /* queued jobs of a service nobody serves wait this long */
    uint64_t lease_grace_ms;   /* a leased job is answered `timeout` this long past its deadline */
    unsigned quantum;          /* DRR: jobs per tenant per turn */
    uint64_t (*mono_ms)(void); /* clocks; NULL for the real ones (tests pass fakes) */
    uint64_t (*wall_ms)(void);
} sched_conf_t;

void sched_conf_defaults(sched_conf_t *conf);

/* What the scheduler asks of the relay. */
typedef struct {
    /* Sends JOB to ex (job->route.attempt is set). 0, or -1 when ex cannot be reached: the
     * scheduler then puts the job back and drops the executor. */
    int (*send_job)(void *arg, executor_t *ex, job_t *job);
    /* Sends the job's client a final answer made by the broker (REJECT with a Result). */
    void (*answer)(void *arg, const job_t *job, status_t status, const char *type,
                   const char *message);
    /* Sends CANCEL for a job id to an executor. */
    void (*cancel)(void *arg, executor_t *ex, const uint8_t id[ID_BYTES]);
    /* Several brokers (PROTOCOL.md §3.1): WANT n, RELEASE n, PROBE for a resubmitted job. */
    void (*want)(void *arg, executor_t *ex, uint32_t n);
    void (*release)(void *arg, executor_t *ex, uint32_t n);
    void (*probe)(void *arg, executor_t *ex, const job_t *job);
    void *arg;
} sched_io_t;

/* Why a SUBMIT was refused; also the `reason` label of the rejection counter. */
typedef enum {
    REFUSE_QUEUE_FULL = 0,    /* the global job cap */
    REFUSE_QUEUE_BYTES,       /* the global byte cap */
    REFUSE_TENANT_QUEUE_FULL, /* the tenant's queue cap */
    REFUSE_INFLIGHT_QUOTA,    /* the tenant is at its in-flight quota and its queue is full */
    REFUSE_NO_EXECUTOR,       /* no executor serves the service (past the grace) */
    REFUSE_DUPLICATE,         /* a job with this id is already in the broker */
    REFUSE_EXPIRED,           /* its deadline had passed on arrival (answered `timeout`) */
    REFUSE_OVERLOAD,          /* too many client connections or services */
    REFUSE_MALFORMED,         /* a SUBMIT whose route or body broke the protocol */
    REFUSE_SESSION_UNKNOWN,   /* a job on a session no executor holds */
    REFUSE_SESSION_LOST,      /* a job on a session whose executor went away */
    REFUSE_SESSION_ENDED,     /* a job on a session that ended (closed, expired, ...) */
    REFUSE__COUNT
} refusal_t;

typedef struct {
    refusal_t reason;
    status_t status;   /* rejected, or timeout for REFUSE_EXPIRED */
    char message[240]; /* for the Result's error.message */
} sched_refusal_t;

const char *refusal_name(refusal_t r);

typedef struct {
    uint64_t rejected[REFUSE__COUNT];
    uint64_t stale_results; /* RESULTs for jobs the broker no longer held */
    uint64_t executors_registered;
    uint64_t executors_lost;
    uint64_t executors_drained; /* LEAVINGs accepted: executors that drained */
    uint64_t resubmitted;   /* SUBMITs marked resubmit: probed before they may run */
    uint64_t probe_running; /* ...found running on an executor: attached to it */
    uint64_t probe_done;    /* ...found already run: answered `lost` */
    uint64_t wants, releases;
    uint64_t reserve_dispatched; /* jobs that took an executor's reserve (executors.h) */
    prom_hist_t queue_wait; /* seconds from admission to first dispatch */
} sched_stats_t;

sched_t *sched_new(const sched_conf_t *conf, const sched_io_t *io);
/* Frees everything without answering anyone (see sched_shutdown). */
void sched_destroy(sched_t **self_p);
/* Answers every job `lost` with the reason: the broker is stopping. */
void sched_shutdown(sched_t *self, const char *why);

/* ---- client channel */
/* The client behind a routing id, marked seen (and as a heartbeating one when ping). NULL
 * when the client table is full. */
client_t *sched_client(sched_t *self, const void *identity, size_t len, int ping);
/* Admits a job (the scheduler takes it) and returns 0, or refuses it (-1, the job stays the
 * caller's, *why says why). */
int sched_submit(sched_t *self, client_t *c, const char *service, job_t *job, sched_refusal_t *why);
/* CANCEL from c: 0 when the job was c's and is now cancelled or being cancelled, -1 when
 * no such job is c's (unknown, finished, or someone else's). */
int sched_cancel(sched_t *self, const client_t *c, const uint8_t id[ID_BYTES]);
/* The client cannot be reached any more: its jobs are dropped (and cancelled where they
 * run). Not from inside a sched_io_t callback: there, set c->gone and let sched_housekeep
 * drop them. */
void sched_client_gone(sched_t *self, client_t *c);
/* 1 when a job with this id is in the broker (for answering malformed duplicates). */
int sched_knows(const sched_t *self, const uint8_t id[ID_BYTES]);

/* ---- worker channel */
/* READY: registers the connection (ending any previous registration of it or of the same
 * node). NULL when the executor table is full. */
executor_t *sched_executor_ready(sched_t *self, const void *identity, size_t len,
                                 const ready_t *ready, const char *key_name);
/* The registered executor behind a routing id, marked seen; NULL when unknown. */
executor_t *sched_executor(sched_t *self, const void *identity, size_t len);
void sched_executor_credit(sched_t *self, executor_t *ex, uint32_t n);
/* SESSIONS from ex: the sessions that began and ended there, its free memory. */
void sched_executor_sessions(sched_t *self, executor_t *ex, const sessions_msg_t *m);
/* DISCONNECT, or unreachable: its leases are requeued or answered, it is forgotten. */
void sched_executor_gone(sched_t *self, executor_t *ex, const char *why);
/* LEAVING from ex (PROTOCOL.md §3.2): it drains. Its unused credit is given back at once
 * (RELEASE, even of 0), and from now on no job goes to it, it counts as serving nothing, and
 * no WANT asks it for credit; its leased jobs stay leased, and their RESULTs are forwarded as
 * usual. Whatever it still runs when it finally goes (its grace was not enough) is requeued or
 * answered by sched_executor_gone, as for any executor that goes. */
void sched_executor_leaving(sched_t *self, executor_t *ex, const leaving_t *m);
/* RESULT (credit 1) or ANSWER (credit 0) from ex (NULL: an unregistered connection). Returns
 * the credit and, when the job is still held, detaches it and returns it: the caller forwards
 * the Result to job->client and then calls sched_finish. The first answer for a job wins
 * wherever it comes from; a later one (or one for an unknown job) returns NULL. */
job_t *sched_result(sched_t *self, executor_t *ex, const uint8_t id[ID_BYTES], int credit);
/* RECLAIM n from ex: up to n of its unused credit is given back (RELEASE, even of 0). */
void sched_executor_reclaim(sched_t *self, executor_t *ex, uint32_t n);
/* HELD from ex for a probed job (sched_probe.c). */
void sched_held(sched_t *self, executor_t *ex, const uint8_t id[ID_BYTES], unsigned state);
void sched_finish(sched_t *self, job_t **job_p);
/* The job a PROGRESS from ex is about, when it is still leased to ex; else NULL. */
job_t *sched_progress(sched_t *self, executor_t *ex, const uint8_t id[ID_BYTES]);

/* ---- time and dispatch */
void sched_dispatch(sched_t *self);  /* sends every job that has an executor with credit */
void sched_expire(sched_t *self);    /* deadlines: cheap, run often (every ~50 ms) */
void sched_housekeep(sched_t *self); /* liveness and service grace: once per heartbeat */
/* Milliseconds until the earliest deadline, or -1 when none. */
long sched_next_deadline_ms(const sched_t *self);

/* ---- views for metrics, snapshots and tests */
const sched_stats_t *sched_stats(const sched_t *self);
const services_t *sched_services(const sched_t *self);
const executors_t *sched_executors(const sched_t *self);
size_t sched_queued(const sched_t *self);
size_t sched_queued_bytes(const sched_t *self);
size_t sched_inflight(const sched_t *self);
size_t sched_jobs(const sched_t *self);
size_t sched_tenants(const sched_t *self);
size_t sched_clients(const sched_t *self);
size_t sched_sessions(const sched_t *self); /* sessions the broker knows of */
const tenant_t *sched_tenant(const sched_t *self, const char *name); /* NULL when idle */

#endif
