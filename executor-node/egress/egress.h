/* executor-node/egress/egress.h — the egress process (snakepit-egress), its loop (egress.c).
 *
 * The node starts it (node/egress_link.h) with the channel on fd 3 and the descriptor channel
 * on fd 4 (link/emsg.h). It holds, for each zygote, the listening socket that zygote made on
 * 127.0.0.1 inside its own empty network namespace: the only thing a sandboxed job can connect
 * to. On each connection (conn.h) it reads an HTTP proxy request, finds the job by the secret
 * in Proxy-Authorization, judges the destination (verdict.h: the tenant's rules, the farm's
 * deny list, names resolved here by resolver.h), connects from the host's network namespace
 * and relays, counting bytes and connections per job and tenant against their caps. Its own
 * process: a bug in what parses tenants' bytes cannot take the node down, and malformed input
 * ends that one connection. */
#ifndef SP_EGRESS_H
#define SP_EGRESS_H
#include "egress_state.h"

/* The process, from main: 0 when the node closed the channel, 1 on a failure to start. */
int egress_main(const egress_conf_t *conf);

#endif
