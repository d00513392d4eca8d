/* proto/result_egress.h — the `egress` list of a Result (PROTOCOL.md §5): each destination a
 * job asked the network for, with the egress process's verdict and the bytes that went each
 * way. The zygote never writes it: the node adds it to the zygote's Result (result_egress_add)
 * from the egress process's account of the job, so what a sandboxed child could have forged
 * never reaches it. */
#ifndef SP_RESULT_EGRESS_H
#define SP_RESULT_EGRESS_H
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "mpack.h"

#define RESULT_MAX_EGRESS      64  /* destinations listed per job; more are summed as "…" */
#define RESULT_MAX_EGRESS_HOST 253
#define RESULT_MAX_EGRESS_WHY  400
#define RESULT_EGRESS_MAX_EVENTS 16 /* result.h's RESULT_MAX_EVENTS (asserted in result.c) */

/* One destination: host as the job named it (a name or an address literal) and port. */
typedef struct {
    char    *host;
    uint32_t port;
    char    *verdict;     /* "allowed", "refused" or "failed" (allowed, but not reached) */
    char    *reason;      /* why it was refused or failed; NULL when allowed */
    uint64_t connections; /* attempts with this verdict */
    uint64_t bytes_out;   /* from the job */
    uint64_t bytes_in;    /* to the job */
} result_egress_t;

typedef struct {
    result_egress_t *list;
    size_t           n;
} result_egress_list_t;

void result_egress_clear(result_egress_list_t *l);
/* The list as a msgpack array (the value of the `egress` key). */
void result_egress_write(mpw_t *w, const result_egress_list_t *l);
/* The value of an `egress` key, bounds-checked, into l (empty before). 0, or -1 (r->err). */
int  result_egress_read(mpr_t *r, result_egress_list_t *l);
/* body (a Result) with `egress` set to l, into out: the map's first key, so a decoder that keeps
 * the first of two keys keeps the node's. Each refused destination joins the Result's
 * security_events too (operation "connect", target "host:port", layer "egress"), after the
 * zygote's own entries, within RESULT_EGRESS_MAX_EVENTS. 0, or -1 when body is not a Result's map. */
int  result_egress_add(const uint8_t *body, size_t len, const result_egress_list_t *l, buf_t *out);

#endif
