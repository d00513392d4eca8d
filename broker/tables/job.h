/* broker/tables/job.h — one submitted job as the broker holds it, from SUBMIT to its one final
 * answer. A job is always in exactly one place: its tenant's FIFO in a service queue
 * (JOB_QUEUED), an executor's lease list (JOB_LEASED), the scheduler's probing list
 * (JOB_PROBING), or in the hands of whoever is answering it (JOB_DETACHED). The JobSpec body stays
 * an opaque ZeroMQ message, kept until the answer so a lost lease can be dispatched again without
 * the client resending it. */
#ifndef SP_BROKER_JOB_H
#define SP_BROKER_JOB_H
#include <stddef.h>
#include <stdint.h>
#include <zmq.h>

#include "common/ids.h"
#include "proto/wire.h"

typedef struct job job_t;
typedef struct service service_t;
typedef struct tenant tenant_t;
typedef struct client client_t;
typedef struct executor executor_t;
typedef struct broker_session broker_session_t;

/* JOB_PROBING: a resubmitted job waiting for every executor to say whether it holds it
 * (sched_probe.c) before it may be queued. */
typedef enum { JOB_DETACHED = 0, JOB_QUEUED, JOB_LEASED, JOB_PROBING } job_state_t;

#define JOB_NOT_IN_HEAP ((size_t)-1)

struct job {
    uint8_t id[ID_BYTES];
    job_state_t state;
    route_t route;        /* tenant, deadline, quota; attempt is the broker's (0 = first run) */
    service_t *service;   /* set on admission */
    tenant_t *tenant;     /* set on admission; counts this job as queued or in flight */
    client_t *client;     /* the connection that submitted it; its answers go there */
    executor_t *executor; /* while leased */
    zmq_msg_t body;       /* the JobSpec, never decoded here */
    size_t body_len;
    uint64_t queued_ms;  /* monotonic, first admission: the queue-wait histogram's start */
    uint64_t expires_ms; /* monotonic deadline from route.deadline_ms; 0 = none */
    uint64_t due_ms;     /* deadline-heap key: expires_ms, plus the lease grace when leased */
    size_t heap_index;   /* position in the deadline heap, JOB_NOT_IN_HEAP when absent */
    int cancelled;       /* CANCEL was forwarded: if the lease is lost, answer `cancelled` */
    int attached;        /* leased to an executor already running it for another broker: no
                            credit was taken, its answer comes as ANSWER */
    int on_reserve;      /* leased on its executor's reserve (executors.h): the lease's end
                            gives it back */
    executor_t **probe_wait; /* JOB_PROBING: executors whose HELD is awaited */
    size_t n_probe_wait, probe_cap;
    job_t *prev, *next; /* links in the tenant FIFO, the executor's lease list, or the
                           scheduler's list of probing jobs */
    /* A job on a session (route.session): it waits in its session's own line (affinity.h)
     * rather than in the service's queue, and only its head sits in the holding executor's
     * pinned queue, whose tenant FIFOs the links above serve then. */
    broker_session_t *session;
    job_t *s_prev, *s_next; /* links in the session's line */
    int pinned;             /* the head, in its executor's pinned queue */
};

/* A new detached job. The body is moved out of *body (which is left empty but valid). */
job_t *job_new(const uint8_t id[ID_BYTES], const route_t *route, zmq_msg_t *body);
/* Same, copying len bytes: for tests and tools that hold no zmq_msg_t. */
job_t *job_new_copy(const uint8_t id[ID_BYTES], const route_t *route, const void *body, size_t len);
void job_destroy(job_t **self_p);

#endif
