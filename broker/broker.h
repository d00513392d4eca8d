/* broker/broker.h — the broker process (DESIGN.md §4): one thread, one loop (common/loop.h)
 * over two ROUTER sockets — submitters on the client channel, executor nodes on the worker
 * channel (PROTOCOL.md) — plus the ZAP handler, the /metrics server and the Redis snapshot
 * publisher. This file is the I/O half: it parses frames, hands decisions to sched.h and
 * sends what sched asks for. Every send is ZMQ_DONTWAIT on a ZMQ_ROUTER_MANDATORY socket, so a
 * slow or vanished peer costs a counted failure, never a blocked loop. */
#ifndef SP_BROKER_H
#define SP_BROKER_H
#include <stddef.h>
#include <stdint.h>

#include "sched.h"
#include "zap.h"

typedef struct {
    char clients[256];   /* client channel endpoint to bind */
    char executors[256]; /* worker channel endpoint to bind */
    char metrics[128];   /* HOST:PORT for /metrics, "" or "off" for none */
    char redis[512];     /* URL for snapshots, "" for none */
    char instance[65];   /* name in sp:metrics:broker:{instance} */
    long max_queue;
    long max_queue_per_tenant;
    long max_queue_mb;
    long max_executors;
    long max_clients;
    long heartbeat_ms;
    long liveness;
    long service_grace_ms;
    long lease_grace_ms;
    long quantum;
    long hwm;                     /* per-peer ZeroMQ queue, messages */
    char curve_secret_file[1024]; /* the broker's key pair: turns CURVE on */
    char curve_allow_dir[1024];   /* public keys allowed to connect */
    int allow_plain_remote;       /* permit plain TCP on non-loopback addresses */
    char log_level[16];
} broker_conf_t;

void broker_conf_defaults(broker_conf_t *conf);

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
    uint64_t unregistered[2]; /* worker: messages from unknown executors (sent DISCONNECT) */
    uint64_t cancels;         /* CANCEL requests */
} broker_io_stats_t;

typedef struct broker broker_t;

/* Builds everything (ZAP handler first, then the sockets). NULL with the reason in err. */
broker_t *broker_new(const broker_conf_t *conf, char *err, size_t errlen);
/* Runs until SIGTERM/SIGINT (or broker_stop), then answers every held job and says
 * DISCONNECT to executors. 0, or 1 when the loop failed. */
int broker_run(broker_t *self);
void broker_stop(broker_t *self);
void broker_destroy(broker_t **self_p);

const sched_t *broker_sched(const broker_t *self);
const broker_io_stats_t *broker_io_stats(const broker_t *self);
const zap_t *broker_zap(const broker_t *self); /* NULL when CURVE is off */
double broker_started(const broker_t *self);   /* wall seconds */
const char *broker_bad_reason_name(bad_reason_t r);

/* 1 when binding plain (unencrypted) to this endpoint stays on the machine: ipc://, inproc://,
 * or TCP on a loopback address. */
int broker_endpoint_is_local(const char *endpoint);

#endif
