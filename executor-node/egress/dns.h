/* executor-node/egress/dns.h — DNS messages (RFC 1035 §4) as the egress process's own resolver
 * writes its questions and reads the answers: one question, A or AAAA, over UDP.
 *
 * The answer is hostile input (whoever answers the resolver's port may lie, and a name a job
 * asks for may be served by a resolver its owner controls): the reader checks the id and the
 * question echoed, follows compression pointers only backwards and at most a few times, takes
 * only A and AAAA records of the name asked (or of a CNAME chain the answer itself starts from
 * that name), caps how many it keeps, and never reads past the message. Whatever it returns is
 * checked again against the policy by the caller: a lie can only name an address, never allow
 * one. A truncated answer (TC) is a failure: no TCP retry. */
#ifndef SP_EGRESS_DNS_H
#define SP_EGRESS_DNS_H
#include <stddef.h>
#include <stdint.h>

#include "proto/egress_rule.h"

#define DNS_MAX_MSG   1232 /* a UDP answer we read (the EDNS-safe size; we send no OPT) */
#define DNS_MAX_ADDRS 16
#define DNS_TYPE_A    1
#define DNS_TYPE_AAAA 28

typedef enum {
    DNS_OK = 0,          /* addresses found (*n > 0) */
    DNS_NONE = 1,        /* the name exists but has no such record, or does not exist */
    DNS_FAILED = 2,      /* the resolver failed (SERVFAIL, REFUSED, truncated…) */
    DNS_MALFORMED = -1,  /* not an answer to our question */
} dns_rc_t;

/* The question (name: a normal name, egress_rule.h) as a message into out; its length, or 0
 * when it does not fit. Recursion desired. */
size_t dns_query(uint16_t id, const char *name, int qtype, uint8_t *out, size_t cap);
/* The answer msg[0..len) to question (id, name, qtype): addresses into out (at most max, *n
 * set). */
dns_rc_t dns_answer(const uint8_t *msg, size_t len, uint16_t id, const char *name, int qtype,
                    egress_addr_t *out, size_t max, size_t *n);

#endif
