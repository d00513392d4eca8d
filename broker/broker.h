/* broker/broker.h — the broker process: one thread, one loop (common/loop.h)
 * over two ROUTER sockets — submitters on the client channel, executor nodes on the worker
 * channel (PROTOCOL.md) — plus the ZAP handler, the /metrics server and the Redis snapshot
 * publisher. The broker builds and owns the parts: the relay (relay.h) reads and writes the
 * sockets, the scheduler (sched.h) makes every decision, metrics.h shows them. */
#ifndef SP_BROKER_H
#define SP_BROKER_H
#include <stddef.h>

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

typedef struct broker broker_t;

/* Builds everything (ZAP handler first, then the sockets). NULL with the reason in err. */
broker_t *broker_new(const broker_conf_t *conf, char *err, size_t errlen);
/* Runs until SIGTERM/SIGINT (or broker_stop), then answers every held job and says
 * DISCONNECT to executors. 0, or 1 when the loop failed. */
int broker_run(broker_t *self);
void broker_stop(broker_t *self);
void broker_destroy(broker_t **self_p);

#endif
