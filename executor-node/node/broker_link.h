/* executor-node/node/broker_link.h — the node's connection to one broker (PROTOCOL.md §3); a node
 * serving several brokers has one link each (node.c), numbered in the order of --broker.
 *
 * A ZeroMQ DEALER, with CURVE when configured (the broker's public key and this node's key
 * pair, read at each connect). At every (re)connect the link sends READY; once the connection
 * is made (ZeroMQ's handshake, seen by a socket monitor) the link is up and the node may grant
 * it credit; the broker then sends JOBs against credits. Heartbeats go out every
 * --heartbeat-ms; a broker silent for --liveness of them, one that says DISCONNECT, or a
 * connection that drops (a broker killed is seen at once) makes the link go down and start
 * again with a fresh socket and a fresh READY (the broker requeues what it had leased). What
 * arrives is handed up through hooks; the link knows nothing of zygotes or credit policy. */
#ifndef SP_BROKER_LINK_H
#define SP_BROKER_LINK_H
#include <stddef.h>
#include <stdint.h>

#include "common/ids.h"
#include "common/loop.h"
#include "proto/status.h"
#include "proto/wire.h"
#include "metrics.h"
#include "node_conf.h"

typedef struct broker_link broker_link_t;

typedef struct {
    /* What READY says (services, slots, python, layers, free memory, and the sessions held,
     * which go into ids: n of them, the hook's storage). No credit: credits.h grants it on up. */
    void (*fill_ready)(void *arg, ready_t *ready, const uint8_t (**ids)[ID_BYTES], size_t *n);
    void (*on_up)(void *arg, int link);            /* registered: it may be given credit */
    void (*on_down)(void *arg, int link);          /* gone: the credit it held is void */
    void (*on_job)(void *arg, int link, const worker_msg_t *job);
    void (*on_cancel)(void *arg, int link, const uint8_t id[ID_BYTES]);
    void (*on_want)(void *arg, int link, uint32_t n);
    void (*on_release)(void *arg, int link, uint32_t n);
    void (*on_probe)(void *arg, int link, const worker_msg_t *probe);
    void *arg;
} broker_link_hooks_t;

/* One link, number `link`, to endpoint; connects at once. ctx: the node's ZeroMQ context
 * (created after the zygotes are started). The link counts its connection state, reconnects
 * and malformed messages in metrics. */
broker_link_t *broker_link_new(loop_t *loop, void *ctx, const node_conf_t *conf,
                               const char *endpoint, int link, exec_metrics_t *metrics,
                               const broker_link_hooks_t *hooks);
/* Shutting down: says DISCONNECT, so the broker requeues at once (what a drain left running)
 * instead of waiting out the heartbeat. What is queued on the link by then (the last answers,
 * DISCONNECT) is given up to 500 ms to get out when the link is destroyed. */
void broker_link_disconnect(broker_link_t *self);
/* LEAVING (PROTOCOL.md §3.2): the node drains. */
void broker_link_send_leaving(broker_link_t *self, const leaving_t *m);
void broker_link_destroy(broker_link_t **self_p);
int broker_link_up(const broker_link_t *self);
const char *broker_link_endpoint(const broker_link_t *self);

/* A job's Result: RESULT returns the job's credit (credit 1), ANSWER does not (credit 0). */
void broker_link_send_result(broker_link_t *self, const uint8_t id[ID_BYTES], const void *body,
                             size_t len, int credit);
/* A Result made here (status, error type and message) for a job the node does not run; as a
 * RESULT, it returns the JOB's credit. */
void broker_link_send_simple(broker_link_t *self, const uint8_t id[ID_BYTES], status_t status,
                             const char *type, const char *message);
void broker_link_send_progress(broker_link_t *self, const uint8_t id[ID_BYTES], const void *chunk,
                               size_t len);
/* SESSIONS (PROTOCOL.md §3): a body made by sessions_encode. */
void broker_link_send_sessions(broker_link_t *self, const void *body, size_t len);
void broker_link_send_credit(broker_link_t *self, uint32_t n);
void broker_link_send_reclaim(broker_link_t *self, uint32_t n);
void broker_link_send_held(broker_link_t *self, const uint8_t id[ID_BYTES], unsigned state);

#endif
