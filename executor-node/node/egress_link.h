/* executor-node/node/egress_link.h — the node's side of its egress process (snakepit-egress,
 * executor-node/egress/egress.h): started with the node, restarted with backoff when it dies,
 * spoken to in link/emsg.h's messages.
 *
 * Each zygote makes a listening socket on 127.0.0.1 inside its own network namespace and hands
 * it to the node (zygotes.h); the node keeps a copy, passes it on (egress_link_listen), and
 * passes it again to a restarted egress process. A job whose JobSpec carries egress rules is
 * granted a fresh secret when it is sent to its zygote (egress_link_grant; the zygote gives the
 * job its proxy URL with it), and when its Result comes back the grant is revoked and the
 * account of its connections is added to the Result (egress_link_finish) before it goes to the
 * broker. A job past its byte cap is reported (on_over_cap) so the node stops it.
 *
 * The deny list the egress process enforces for every job starts with this node's own
 * endpoints: its brokers, its /metrics, its Redis, and --egress-deny (what `snakepit up` knows
 * of the farm's front-ends and other ports). */
#ifndef SP_EGRESS_LINK_H
#define SP_EGRESS_LINK_H
#include <stddef.h>
#include <stdint.h>

#include "common/ids.h"
#include "common/loop.h"
#include "proto/job.h"
#include "executor-node/link/emsg.h"
#include "metrics.h"
#include "node_conf.h"

typedef struct egress_link egress_link_t;

typedef struct {
    /* A finished job's Result, its account added when it had a grant: to send on. */
    void (*on_done)(void *arg, const uint8_t job[ID_BYTES], const uint8_t *body, size_t len);
    /* A running job went past its network byte cap: stop it. */
    void (*on_over_cap)(void *arg, const uint8_t job[ID_BYTES]);
    void *arg;
} egress_link_hooks_t;

/* Starts the egress process; NULL (logged) when egress is off or cannot run here (no binary, or
 * no namespaces layer): jobs then have no network, whatever their rules. */
egress_link_t *egress_link_new(const node_conf_t *conf, unsigned layers, loop_t *loop,
                               exec_metrics_t *metrics, const egress_link_hooks_t *hooks);
/* Stops the process and forgets every listener. */
void egress_link_destroy(egress_link_t **self_p);

/* A zygote's listening socket (taken): its listener id, never 0; 0 when it cannot be kept. */
uint32_t egress_link_listen(egress_link_t *self, int fd);
/* That zygote is gone: the egress process closes its listener and its connections. */
void egress_link_unlisten(egress_link_t *self, uint32_t listener);
/* Grants the job its network (e: its JobSpec's egress, with rules) through listener: its secret
 * into secret (EMSG_SECRET_LEN hex and a NUL). 0, or -1 when it cannot be granted now (the
 * job then runs without network). */
int egress_link_grant(egress_link_t *self, const uint8_t job[ID_BYTES], uint32_t listener,
                      const char *tenant, const job_egress_t *e, long wall_ms,
                      char secret[EMSG_SECRET_LEN + 1]);
/* A granted job's Result (self not NULL: it was granted): on_done gets it once its account is
 * added (soon after; at once when the egress process is down, without one). */
void egress_link_finish(egress_link_t *self, const uint8_t job[ID_BYTES], const uint8_t *body,
                        size_t len);
/* A granted job that ended without a Result to complete (answered elsewhere): its grant goes. */
void egress_link_forget(egress_link_t *self, const uint8_t job[ID_BYTES]);

#endif
