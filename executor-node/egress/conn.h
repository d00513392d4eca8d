/* executor-node/egress/conn.h — one connection from a sandboxed job, from accept to close:
 *
 *   HEAD     reading the request head (head.h), at most HEAD_MAX bytes within the connect time
 *   RESOLVE  the job's secret found, the destination's name allowed: asking the resolver
 *   CONNECT  connecting to the first allowed address (the next one on failure)
 *   RELAY    bytes both ways, counted against the job's cap; idle ones close
 *   REPLY    an error answer (400, 403, 407, 429, 502, 504) being written, then close
 *
 * Every refusal is an HTTP answer whose reason phrase is the message the job's Python error
 * will carry (http.client puts it in "Tunnel connection failed: 403 …", urllib in
 * "HTTP Error 403: …"), logged and counted. The connection is the job's only: a failure here
 * closes it and nothing else. */
#ifndef SP_EGRESS_CONN_H
#define SP_EGRESS_CONN_H
#include <stdint.h>

#include "egress_state.h"

/* A connection accepted on listener; takes fd. */
void conn_accept(egress_t *eg, uint32_t listener, int fd);
/* Deadlines and idle connections, from the periodic tick. */
void conn_tick(egress_t *eg);
/* Closes every connection of grant g (its job ended), or, with g NULL, every one that came
 * through listener (its zygote is gone). */
void conn_close_all(egress_t *eg, const grant_t *g, uint32_t listener);
/* g went past its byte cap: its connections move no more bytes (the node stops the job). */
void conn_stall(egress_t *eg, const grant_t *g);

#endif
