/* executor-node/egress/egress.h — the egress process (snakepit-egress): what its parts share.
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
#include <stdint.h>

#include "common/loop.h"
#include "executor-node/link/emsg.h"
#include "executor-node/link/zchan.h"
#include "grants.h"
#include "resolver.h"
#include "verdict.h"

typedef struct {
    char resolver[128]; /* ADDR[:PORT]; "" /etc/resolv.conf's */
    char deny[4096];    /* the farm's own endpoints, egress_rule.h syntax, comma-separated */
    long idle_s;        /* a connection with no byte either way this long is closed */
    long connect_s;     /* resolving and connecting, together */
    long max_open;      /* connections open on this node at once */
    long tenant_open;   /* connections one tenant has open on this node at once */
    long max_bytes;     /* a job's bytes, in and out together, unless it asks for fewer */
    long max_conns;     /* a job's connections over its life, unless it asks for fewer */
    long run_uid, run_gid; /* started as root: drop to these (0: stay) */
    char node[65];
    char log_level[16];
} egress_conf_t;

typedef struct listener {
    uint32_t id;
    int fd;
    struct listener *next;
} listener_t;

typedef struct conn conn_t;

typedef struct egress {
    const egress_conf_t *conf;
    loop_t *loop;
    zchan_t *chan;        /* to the node */
    int fd_sock;          /* the descriptor channel */
    resolver_t *resolver;
    verdict_deny_t *deny;
    grants_t *grants;
    listener_t *listeners;
    conn_t *conns;        /* every connection, newest first */
    long n_conns;
    emsg_stats_t stats;   /* since the last STATS */
} egress_t;

/* The process, from main: 0 when the node closed the channel, 1 on a failure to start. */
int egress_main(const egress_conf_t *conf);
/* A job went past its byte cap: the node hears it once (it stops the job). */
void egress_over_cap(egress_t *eg, grant_t *g);

#endif
