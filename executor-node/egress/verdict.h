/* executor-node/egress/verdict.h — whether a job may reach a destination: its tenant's rules
 * (proto/egress_rule.h), and the farm's deny list, which no rule overrides.
 *
 * A destination the job names by host name is judged twice: the name against the rules, then
 * every address it resolves to (DNS rebinding: a name the tenant may reach that resolves to the
 * farm's Redis is refused). One it names by address is judged once, as an address. An address:
 *   - on the deny list (the farm's own endpoints: Redis, brokers, metrics, front-ends, as the
 *     node's configuration and `snakepit up` name them; any port of this machine a listener on
 *     0.0.0.0 or [::] serves): refused, whatever the rules say;
 *   - link-local, cloud metadata (169.254.0.0/16, fe80::/10, fd00:ec2::254, 100.100.100.200),
 *     unspecified, multicast, reserved: refused, whatever the rules say;
 *   - loopback and private (127/8, 10/8, 172.16/12, 192.168/16, 100.64/10, 198.18/15, ::1,
 *     fc00::/7): only when a rule names that exact address (and the port);
 *   - anything else: when the name's rule allowed it, or, named by address, when a rule's
 *     block holds it. */
#ifndef SP_EGRESS_VERDICT_H
#define SP_EGRESS_VERDICT_H
#include <stddef.h>

#include "proto/egress_rule.h"

typedef struct verdict_deny verdict_deny_t;

/* The farm's deny list from a comma-separated list of rules (egress_rule.h syntax; a host name
 * is resolved now, with the system's resolver, and matched by name as well; 0.0.0.0:PORT or
 * [::]:PORT means every address of this machine on that port). NULL with the reason in err. */
verdict_deny_t *verdict_deny_new(const char *list, char *err, size_t errlen);
void verdict_deny_destroy(verdict_deny_t **self_p);
/* Entries, for the start-up log line. */
size_t verdict_deny_count(const verdict_deny_t *self);

/* Whether the name (normalised) may be asked for on port: 0, or -1 with why. */
int verdict_name(const egress_rule_t *rules, size_t n, const verdict_deny_t *deny,
                 const char *name, int port, char *why, size_t whylen);
/* Whether the address may be connected to on port; by_name: it is what a name the rules
 * allowed resolved to (name then says which, for the message). 0, or -1 with why. */
int verdict_addr(const egress_rule_t *rules, size_t n, const verdict_deny_t *deny,
                 const egress_addr_t *a, int port, const char *name, char *why, size_t whylen);

#endif
