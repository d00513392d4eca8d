/* executor-node/link/emsg.h — the messages between the node and its egress process
 * (PROTOCOL.md §9), and their one codec.
 *
 * The channel is a zchan.h socketpair (fd 3 of the egress process); the listening sockets the
 * zygotes made inside their network namespaces travel beside it, one per datagram with
 * SCM_RIGHTS, on a second socketpair (fd 4: emsg_send_fd / emsg_recv_fd), named by the
 * listener id the node gives each zygote. The node grants a job's secret when it dispatches the
 * job and revokes it when the job ends; the egress process answers a revoke with the job's
 * account (SUMMARY), says when a job went past its byte cap (OVER_CAP), and sends counters for
 * the node's metrics (STATS).
 *
 * Both sides read what the other sends as hostile input: the egress process parses what
 * sandboxed code sends, so the node trusts it no further than a zygote. Maps are
 * bounds-checked, strings capped, unknown keys skipped, trailing bytes refused. */
#ifndef SP_EMSG_H
#define SP_EMSG_H
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/ids.h"
#include "proto/result_egress.h"
#include "zchan.h"

#define EMSG_SECRET_LEN 32 /* hex characters of a job's secret (128 bits) */

typedef enum {
    EM_LISTEN = 1,   /* node → egress: a zygote's listening socket comes on fd 4 (listener) */
    EM_UNLISTEN = 2, /* node → egress: that zygote is gone: close its listener and connections */
    EM_GRANT = 3,    /* node → egress: id = job; a job may use the network (emsg_grant_t) */
    EM_REVOKE = 4,   /* node → egress: id = job; it ended: close its connections, answer */
    EM_SUMMARY = 5,  /* egress → node: id = job; its account (emsg_summary_t) */
    EM_OVER_CAP = 6, /* egress → node: id = job; past its byte cap: stop it */
    EM_STATS = 7,    /* egress → node: counters since the last STATS (emsg_stats_t) */
} emsg_type_t;

typedef struct {
    char secret[EMSG_SECRET_LEN + 1];
    char tenant[65];
    uint32_t listener;   /* the zygote's listener the job's connections must come through */
    char **rules;        /* egress_rule.h text, each valid */
    size_t n_rules;
    uint64_t max_bytes;  /* in and out together */
    uint64_t max_conns;  /* connections over the job's life */
    uint64_t wall_ms;    /* the job's own limit: a grant never outlives it by much */
} emsg_grant_t;

typedef struct {
    int over_cap;              /* the job went past its byte cap */
    result_egress_list_t dests; /* what it asked for */
} emsg_summary_t;

typedef struct {
    uint64_t allowed;         /* connections made */
    uint64_t refused;         /* refused by a rule or the deny list */
    uint64_t failed;          /* allowed but not reached (DNS, connect) */
    uint64_t unauthenticated; /* no valid job secret */
    uint64_t malformed;       /* a request head that did not parse */
    uint64_t capped;          /* refused for a job's or tenant's connection cap */
    uint64_t bytes_out;       /* from jobs */
    uint64_t bytes_in;        /* to jobs */
    uint64_t over_cap;        /* jobs stopped at their byte cap */
} emsg_stats_t;

typedef struct {
    emsg_type_t type;
    uint8_t id[ID_BYTES]; /* the job, for GRANT, REVOKE, SUMMARY, OVER_CAP */
    uint32_t listener;    /* LISTEN, UNLISTEN */
    union {
        emsg_grant_t grant;
        emsg_summary_t summary;
        emsg_stats_t stats;
    };
} emsg_t;

/* "GRANT" …; "?" for a type no row knows. */
const char *emsg_name(uint8_t type);
/* Encodes m and queues it on chan. 0, or -1 when the peer is gone. */
int emsg_send(zchan_t *chan, const emsg_t *m);
/* One received message into m (its grant rules and summary owned by m: emsg_clear). 0, or -1
 * with the reason in err. */
int emsg_decode(uint8_t type, const uint8_t id[ID_BYTES], const uint8_t *payload, size_t len,
                emsg_t *m, char *err, size_t errlen);
void emsg_clear(emsg_t *m);

/* The listening socket of listener id, on the descriptor channel (fd 4). 0, or -1. */
int emsg_send_fd(int sock, uint32_t listener, int fd);
/* One from the descriptor channel: 1 with *listener and *fd, 0 when none waits, -1 when the
 * channel is gone. A datagram without exactly one descriptor is dropped (any it carried are
 * closed). */
int emsg_recv_fd(int sock, uint32_t *listener, int *fd);

#endif
