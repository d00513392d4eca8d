/* executor-node/egress/grants.h — the jobs that may use the network now, each under the secret
 * the node granted it (PROTOCOL.md §9), and what each did: its connections and bytes, per
 * destination, against its caps; and the connections each tenant has open on this node.
 *
 * A grant lives from the node's GRANT (the job was dispatched) to its REVOKE (the job ended),
 * when its account goes back to the node for the job's Result. One the node never revokes
 * lapses GRANT_GRACE_MS after the job's own wall-clock limit. */
#ifndef SP_EGRESS_GRANTS_H
#define SP_EGRESS_GRANTS_H
#include <stddef.h>
#include <stdint.h>

#include "proto/egress_rule.h"
#include "common/ids.h"
#include "executor-node/link/emsg.h"
#include "proto/result_egress.h"

#define GRANT_GRACE_MS   60000
#define GRANT_MAX_DESTS  RESULT_MAX_EGRESS /* the last one sums the rest ("*") */
#define GRANT_MAX_REASON 400

typedef enum { DEST_ALLOWED = 0, DEST_REFUSED, DEST_FAILED } dest_verdict_t;

/* One destination's account in a job: by host as the job named it, port and verdict. */
typedef struct {
    char host[EGRESS_MAX_HOST + 1];
    int port;
    dest_verdict_t verdict;
    char reason[GRANT_MAX_REASON];
    uint64_t conns, bytes_out, bytes_in;
} grant_dest_t;

typedef struct grant {
    uint8_t job[ID_BYTES];
    char secret[EMSG_SECRET_LEN + 1];
    char tenant[65];
    uint32_t listener;    /* its connections come through this zygote's listener only */
    egress_rule_t *rules; /* parsed once, owned */
    size_t n_rules;
    uint64_t max_bytes, max_conns;
    uint64_t expires_ms;  /* monotonic: lapses unrevoked */
    uint64_t bytes;       /* in and out so far */
    uint64_t conns;       /* connections it asked for (each counts against max_conns) */
    long open;            /* connections open now */
    int over_cap;         /* went past max_bytes: its connections are stalled */
    grant_dest_t dests[GRANT_MAX_DESTS];
    size_t n_dests;
    struct grant *next;
} grant_t;

typedef struct grants grants_t;

grants_t *grants_new(void);
void grants_destroy(grants_t **self_p);
/* A grant from the node's message (its rules parsed here; an existing grant of the same job is
 * replaced). NULL with the reason in err. */
grant_t *grants_add(grants_t *self, const uint8_t job[ID_BYTES], const emsg_grant_t *m,
                    uint64_t default_bytes, uint64_t default_conns, char *err, size_t errlen);
/* The grant whose secret this is, on this listener; NULL when none (every grant is compared,
 * in constant time each, so timing tells nothing of the secrets). */
grant_t *grants_by_secret(grants_t *self, const char *secret, uint32_t listener);
grant_t *grants_by_job(grants_t *self, const uint8_t job[ID_BYTES]);
/* Grants past their expiry, one at a time (NULL: none). */
grant_t *grants_expired(grants_t *self, uint64_t now_ms);
/* Its account as a Result's egress list (owned by the caller), then the grant is gone. */
void grants_remove(grants_t *self, grant_t *g, result_egress_list_t *account);

/* The account of one destination (made on first use; past GRANT_MAX_DESTS the last entry,
 * host "*", sums the rest). reason may be NULL. */
grant_dest_t *grant_dest(grant_t *g, const char *host, int port, dest_verdict_t verdict,
                         const char *reason);

/* Connections tenant has open on this node, after adding delta. */
long grants_tenant_open(grants_t *self, const char *tenant, long delta);

#endif
