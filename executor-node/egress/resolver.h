/* executor-node/egress/resolver.h — the egress process's own DNS resolver: names a job asks for
 * are resolved here, outside the sandbox, by asking one recursive resolver (--resolver, else
 * the first nameserver of /etc/resolv.conf) over UDP, never through the system's resolver
 * library, so that the answer the policy judges is the address the connection then uses (no
 * second lookup a rebinding name could answer differently), and tests can control names.
 *
 * Each lookup asks A and AAAA at once from a connected socket of its own (a random source port
 * and random ids; answers from elsewhere the kernel drops), retries once, and gives up after
 * RESOLVER_TIMEOUT_MS. The answer is read by dns.h. */
#ifndef SP_EGRESS_RESOLVER_H
#define SP_EGRESS_RESOLVER_H
#include <stddef.h>

#include "common/loop.h"
#include "dns.h"

#define RESOLVER_TIMEOUT_MS 3000
#define RESOLVER_MAX        256 /* lookups at once; more fail at once */

typedef struct resolver resolver_t;
typedef struct resolver_lookup resolver_lookup_t;

/* rc DNS_OK with n addresses (IPv4 first), DNS_NONE, or DNS_FAILED (why says what). Called from
 * the loop, never from within resolver_lookup; the lookup is over once it is called. */
typedef void(resolver_fn)(void *arg, dns_rc_t rc, const egress_addr_t *addrs, size_t n,
                          const char *why);

/* server: "ADDR[:PORT]"; NULL or "" reads /etc/resolv.conf (127.0.0.1 when it names none).
 * NULL with the reason in err. */
resolver_t *resolver_new(loop_t *loop, const char *server, char *err, size_t errlen);
void resolver_destroy(resolver_t **self_p);
/* "ADDR:PORT" of the resolver asked, for the start-up log line. */
const char *resolver_server(const resolver_t *self);
/* Starts a lookup of name (normalised); NULL when it cannot start (fn is not called). */
resolver_lookup_t *resolver_lookup(resolver_t *self, const char *name, resolver_fn *fn, void *arg);
/* Abandons a lookup: fn will not be called. */
void resolver_cancel(resolver_t *self, resolver_lookup_t *l);
/* Retries and timeouts, from a periodic tick. */
void resolver_tick(resolver_t *self);

#endif
