/* broker/relay.h — the broker's I/O half: it reads the two ROUTER sockets (submitters on the
 * client channel, executor nodes on the worker channel; PROTOCOL.md), hands what arrives to
 * the scheduler (sched.h), and sends what the scheduler asks for through its sched_io_t.
 *
 * Every send is ZMQ_DONTWAIT on a ZMQ_ROUTER_MANDATORY socket, so a slow or vanished peer
 * costs a counted failure, never a blocked loop. Malformed input is dropped, counted by
 * channel and reason, and logged at most ten lines a second (ratelog.h); a malformed SUBMIT
 * that names a service and a job id still gets a REJECT saying what was wrong. */
#ifndef SP_RELAY_H
#define SP_RELAY_H
#include <stdint.h>

#include "common/loop.h"
#include "broker/sched/sched.h"

typedef enum { CH_CLIENT = 0, CH_WORKER = 1 } channel_t;

/* Why a message was dropped as malformed: the `reason` label of the counter. */
typedef enum {
    BAD_TOO_MANY_FRAMES = 0,
    BAD_UNKNOWN_VERSION, /* a tag other than SPC1/SPW1 */
    BAD_UNKNOWN_COMMAND,
    BAD_UNEXPECTED, /* a command that flows the other way */
    BAD_OVERSIZED,
    BAD_ROUTE,
    BAD_READY,
    BAD_CREDIT,
    BAD_FRAMING, /* frame count, service name, job id */
    BAD__COUNT
} bad_reason_t;

typedef enum { SEND_UNREACHABLE = 0, SEND_WOULD_BLOCK, SEND__COUNT } send_failure_t;

typedef struct {
    uint64_t received[2]; /* messages, per channel */
    uint64_t malformed[2][BAD__COUNT];
    uint64_t send_failed[2][SEND__COUNT];
    uint64_t unregistered[2];        /* worker: messages from unknown executors (sent DISCONNECT) */
    uint64_t cancels;                /* CANCEL requests */
    uint64_t refused[REFUSE__COUNT]; /* SUBMITs refused at admission, by reason */
    uint64_t rejected_malformed;     /* malformed SUBMITs answered REJECT */
} relay_stats_t;

typedef struct relay relay_t;

/* A relay over the broker's two bound ROUTER sockets, which stay the caller's. curve: they
 * authenticate peers through ZAP, which names each connection's key (logged with READY). */
relay_t *relay_new(void *clients, void *executors, int curve);
void relay_destroy(relay_t **self_p);
/* The scheduler and the relay call each other: relay_io is the table to build the scheduler
 * with, and relay_serve hands that scheduler to the relay, before the loop runs. */
sched_io_t relay_io(relay_t *self);
void relay_serve(relay_t *self, sched_t *sched);

/* loop_io_fn for each socket (arg: the relay): reads what is waiting, a bounded number per
 * turn, so one busy channel cannot starve the other. */
void relay_on_clients(loop_t *loop, short revents, void *arg);
void relay_on_executors(loop_t *loop, short revents, void *arg);

/* HEARTBEAT to every executor, busy or idle (PROTOCOL.md §3); one that cannot be reached is
 * dropped on the spot. */
void relay_heartbeat(relay_t *self);
/* DISCONNECT to every executor: the broker is stopping, they register with whoever is next. */
void relay_disconnect_all(relay_t *self);
/* Sums up the log lines held back in a second that is over (ratelog_flush). */
void relay_flush_logs(relay_t *self);

const relay_stats_t *relay_stats(const relay_t *self);
const char *relay_bad_reason_name(bad_reason_t r);

#endif
