/* executor-node/egress/egress_state.h — what the parts of the egress process (egress.h) share:
 * its configuration, the listeners it was handed, its connections, grants and counters. The
 * loop (egress.c) owns it; a connection (conn.h) reads it and tells the loop that a job went
 * past its byte cap through the over_cap hook. */
#ifndef SP_EGRESS_STATE_H
#define SP_EGRESS_STATE_H
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
    /* a job went past its byte cap: the node hears it once (it stops the job) */
    void (*over_cap)(struct egress *eg, grant_t *g);
} egress_t;

#endif
