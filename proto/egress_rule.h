/* proto/egress_rule.h — one rule of a tenant's egress policy, as an operator writes it
 * (`snakepit tenant set NAME --egress RULE`), as Redis and the JobSpec carry it (text), and as
 * the node's egress process matches destinations against it.
 *
 *   HOST[:PORT]        example.com, pypi.org:443          the name itself (case-insensitive)
 *   *.DOMAIN[:PORT]    *.example.com:443                  any name below DOMAIN, not DOMAIN
 *   ADDR[:PORT]        203.0.113.7:80, [2001:db8::1]:443  that address
 *   CIDR[:PORT]        10.0.0.0/8:5432, [2001:db8::/32]   any address in the block
 *
 * No port means every port. An IPv6 address or block with a port is written in brackets; one
 * without may be written bare. A policy is a list of rules, joined by commas when stored; no
 * rule means no network. Whether a destination a rule allows is reached at all is for the farm
 * deny list to say (executor-node/egress/verdict.h): loopback and private addresses, for one,
 * only when a rule names the exact address. */
#ifndef SP_EGRESS_RULE_H
#define SP_EGRESS_RULE_H
#include <stddef.h>
#include <stdint.h>

#define EGRESS_MAX_RULES 64  /* per tenant, per JobSpec */
#define EGRESS_MAX_RULE  300 /* bytes of one rule's text */
#define EGRESS_MAX_HOST  253 /* a DNS name (RFC 1035 §2.3.4, without the final dot) */

typedef enum { EGRESS_RULE_HOST = 1, EGRESS_RULE_DOMAIN, EGRESS_RULE_NET } egress_rule_kind_t;

/* An IP address, IPv4 as 4 bytes (family 4) or IPv6 as 16 (family 6). */
typedef struct {
    int family; /* 4 or 6 */
    uint8_t b[16];
} egress_addr_t;

typedef struct {
    egress_rule_kind_t kind;
    char host[EGRESS_MAX_HOST + 1]; /* HOST: the name; DOMAIN: the part after "*."; lower case */
    egress_addr_t net;              /* NET: the block's first address */
    int prefix;                     /* NET: its length in bits (32 or 128: one address) */
    int port;                       /* 1-65535; 0: every port */
} egress_rule_t;

/* One rule from text (len bytes, not NUL-terminated). 0, or -1 with the reason in err. */
int egress_rule_parse(const char *text, size_t len, egress_rule_t *out, char *err, size_t errlen);
/* A comma-separated list (empty: none) into a new array (*out, freed by the caller; NULL when
 * there is none). 0, or -1 with the first bad rule's reason in err. */
int egress_rules_parse(const char *list, egress_rule_t **out, size_t *n, char *err, size_t errlen);
/* The rule as an operator would write it, into out. */
void egress_rule_format(const egress_rule_t *r, char *out, size_t cap);

/* A name as rules compare them: lower case, without a final dot; 0, or -1 when it is not a
 * DNS name (RFC 1123 labels; '_' allowed, as service names use it). */
int egress_name_normal(const char *name, size_t len, char *out, size_t cap);
/* An address literal (dotted IPv4, or IPv6 with or without brackets) into a; 0, or -1. An
 * IPv4-mapped IPv6 address (::ffff:a.b.c.d) becomes the IPv4 address it is. */
int egress_addr_parse(const char *text, size_t len, egress_addr_t *a);
void egress_addr_format(const egress_addr_t *a, char *out, size_t cap);
/* 1 when a lies in the block of prefix bits starting at net (same family). */
int egress_addr_in(const egress_addr_t *a, const egress_addr_t *net, int prefix);

/* Whether the rule allows the name (normalised) on port; NET rules never match a name. */
int egress_rule_allows_name(const egress_rule_t *r, const char *name, int port);
/* Whether the rule allows the address on port; name rules never match an address. */
int egress_rule_allows_addr(const egress_rule_t *r, const egress_addr_t *a, int port);
/* Whether the rule names exactly this address (a /32 or /128) with a port that allows port. */
int egress_rule_names_addr(const egress_rule_t *r, const egress_addr_t *a, int port);

#endif
