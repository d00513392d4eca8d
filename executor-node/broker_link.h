/* executor-node/broker_link.h — the node's one connection to the broker (PROTOCOL.md §3).
 *
 * A ZeroMQ DEALER, with CURVE when configured (the broker's public key and this node's key
 * pair, read at each connect). At every (re)connect the link registers with READY and its
 * free slots as CREDIT; the broker then sends JOBs against credits, and each RESULT returns
 * one. Heartbeats go out every --heartbeat-ms; a broker silent for --liveness of them, or one
 * that says DISCONNECT, gets a fresh socket and a fresh READY (and requeues what it had leased).
 * What arrives is handed up through hooks; the link knows nothing of zygotes. */
#ifndef SP_BROKER_LINK_H
#define SP_BROKER_LINK_H
#include <stddef.h>
#include <stdint.h>

#include "../common/ids.h"
#include "../common/loop.h"
#include "../proto/status.h"
#include "../proto/wire.h"
#include "metrics.h"
#include "node_conf.h"

typedef struct broker_link broker_link_t;

typedef struct {
    /* What READY says (services, slots, python, layers, free memory, the sessions held, which go
     * into ids: n of them, the hook's storage) and the credit to grant after it. */
    void (*fill_ready)(void *arg, ready_t *ready, uint64_t *credit, const uint8_t (**ids)[ID_BYTES],
                       size_t *n);
    void (*on_job)(void *arg, const worker_msg_t *job);
    void (*on_cancel)(void *arg, const uint8_t id[ID_BYTES]);
    void *arg;
} broker_link_hooks_t;

/* Creates the ZeroMQ context (so: after the zygotes are started) and connects at once. The
 * link counts its connection state, reconnects and malformed messages in metrics. */
broker_link_t *broker_link_new(loop_t *loop, const node_conf_t *conf, exec_metrics_t *metrics,
                               const broker_link_hooks_t *hooks);
/* Shutting down: says DISCONNECT, so the broker requeues at once instead of waiting out the
 * heartbeat. Sent some time before the destroy: with linger 0, closing drops what is queued. */
void broker_link_disconnect(broker_link_t *self);
void broker_link_destroy(broker_link_t **self_p);

/* A job's Result: it also returns the job's credit. */
void broker_link_send_result(broker_link_t *self, const uint8_t id[ID_BYTES], const void *body,
                             size_t len);
/* A Result made here (status, error type and message) for a job the node cannot run. */
void broker_link_send_simple(broker_link_t *self, const uint8_t id[ID_BYTES], status_t status,
                             const char *type, const char *message);
void broker_link_send_progress(broker_link_t *self, const uint8_t id[ID_BYTES], const void *chunk,
                               size_t len);
/* SESSIONS (PROTOCOL.md §3): a body made by sessions_encode. */
void broker_link_send_sessions(broker_link_t *self, const void *body, size_t len);

#endif
