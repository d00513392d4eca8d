/* executor-node/egress/dns.c — see dns.h. */
#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "dns.h"

#define HDR        12
#define MAX_PTRS   16 /* compression pointers followed in one name */
#define MAX_CHAIN  8  /* CNAMEs followed */
#define MAX_RRS    64 /* answer records looked at */
#define CLASS_IN   1
#define TYPE_CNAME 5

static uint16_t s_u16(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}

size_t dns_query(uint16_t id, const char *name, int qtype, uint8_t *out, size_t cap)
{
    size_t n = strlen(name);
    if (cap < HDR + n + 2 + 4) return 0;
    memset(out, 0, HDR);
    out[0] = (uint8_t)(id >> 8), out[1] = (uint8_t)id;
    out[2] = 0x01; /* RD: the resolver recurses for us */
    out[5] = 1;    /* one question */
    size_t at = HDR;
    for (const char *p = name; *p;) {
        size_t l = strcspn(p, ".");
        if (!l || l > 63) return 0;
        out[at++] = (uint8_t)l;
        memcpy(out + at, p, l);
        at += l;
        p += l;
        if (*p == '.') p++;
    }
    out[at++] = 0;
    out[at++] = 0, out[at++] = (uint8_t)qtype;
    out[at++] = 0, out[at++] = CLASS_IN;
    return at;
}

/* The name at *at in msg, as lower-case text into out (cap ≥ 256); *at moves past it in the
 * record (not past what a pointer led to). 0, or -1 when it is malformed: a pointer that does
 * not point backwards, too many pointers, a label type other than 0 and pointer, a name over
 * 253 bytes, or a label byte a host name could not hold. */
static int s_name(const uint8_t *msg, size_t len, size_t *at, char *out, size_t cap)
{
    size_t p = *at, o = 0, ptrs = 0, limit = p; /* a pointer must point before limit */
    int jumped = 0;
    for (;;) {
        if (p >= len) return -1;
        uint8_t l = msg[p];
        if ((l & 0xc0) == 0xc0) {
            if (p + 1 >= len || ++ptrs > MAX_PTRS) return -1;
            size_t to = (size_t)((l & 0x3f) << 8 | msg[p + 1]);
            if (to >= limit) return -1; /* strictly backwards: no loop can form */
            if (!jumped) *at = p + 2;
            jumped = 1;
            limit = to;
            p = to;
            continue;
        }
        if (l & 0xc0) return -1; /* 0x40, 0x80: extended label types, not used */
        if (!l) {
            if (!jumped) *at = p + 1;
            break;
        }
        if (p + 1 + l > len || o + l + 1 > 253 || o + l + 1 >= cap) return -1;
        if (o) out[o++] = '.';
        for (size_t i = 0; i < l; i++) {
            uint8_t c = msg[p + 1 + i];
            if (c <= 0x20 || c >= 0x7f || c == '.') return -1;
            out[o++] = (char)tolower(c);
        }
        p += 1 + (size_t)l;
    }
    out[o] = '\0';
    return 0;
}

typedef struct {
    size_t owner;   /* where the record's name starts */
    uint16_t type;
    size_t rdata;
    uint16_t rdlen;
} rr_t;

dns_rc_t dns_answer(const uint8_t *msg, size_t len, uint16_t id, const char *name, int qtype,
                    egress_addr_t *out, size_t max, size_t *n)
{
    *n = 0;
    if (len < HDR || len > 65535 || s_u16(msg) != id) return DNS_MALFORMED;
    uint8_t f1 = msg[2], f2 = msg[3];
    if (!(f1 & 0x80) || (f1 & 0x78)) return DNS_MALFORMED; /* not a response, or not QUERY */
    if (f1 & 0x02) return DNS_FAILED;                     /* truncated: no TCP retry */
    int rcode = f2 & 0x0f;
    if (s_u16(msg + 4) != 1) return DNS_MALFORMED;
    size_t at = HDR;
    char qname[256];
    if (s_name(msg, len, &at, qname, sizeof qname) < 0 || at + 4 > len) return DNS_MALFORMED;
    if (strcasecmp(qname, name) != 0 || s_u16(msg + at) != qtype || s_u16(msg + at + 2) != CLASS_IN)
        return DNS_MALFORMED; /* an answer to another question */
    at += 4;
    if (rcode == 3) return DNS_NONE; /* NXDOMAIN */
    if (rcode != 0) return DNS_FAILED;
    size_t an = s_u16(msg + 6);
    if (an > MAX_RRS) an = MAX_RRS;
    rr_t rrs[MAX_RRS];
    size_t k = 0;
    for (size_t i = 0; i < an; i++) {
        char owner[256];
        size_t start = at;
        if (s_name(msg, len, &at, owner, sizeof owner) < 0 || at + 10 > len) return DNS_MALFORMED;
        uint16_t type = s_u16(msg + at), klass = s_u16(msg + at + 2), rdlen = s_u16(msg + at + 8);
        at += 10;
        if (at + rdlen > len) return DNS_MALFORMED;
        if (klass == CLASS_IN) rrs[k++] = (rr_t){start, type, at, rdlen};
        at += rdlen;
    }
    /* the chain of names the answer leads from the question through CNAMEs */
    char chain[MAX_CHAIN + 1][256];
    size_t links = 1;
    memcpy(chain[0], qname, sizeof qname);
    for (int grew = 1; grew && links <= MAX_CHAIN;) {
        grew = 0;
        for (size_t i = 0; i < k && !grew; i++) {
            char owner[256], target[256];
            size_t o = rrs[i].owner, t = rrs[i].rdata;
            if (rrs[i].type != TYPE_CNAME || s_name(msg, len, &o, owner, sizeof owner) < 0 ||
                strcmp(owner, chain[links - 1]) != 0)
                continue;
            if (s_name(msg, len, &t, target, sizeof target) < 0 || t != rrs[i].rdata + rrs[i].rdlen)
                return DNS_MALFORMED;
            for (size_t c = 0; c < links; c++)
                if (!strcmp(chain[c], target)) return DNS_FAILED; /* a CNAME loop */
            memcpy(chain[links++], target, sizeof target);
            grew = 1;
        }
    }
    size_t want = qtype == DNS_TYPE_A ? 4 : 16;
    for (size_t i = 0; i < k && *n < max; i++) {
        char owner[256];
        size_t o = rrs[i].owner;
        if (rrs[i].type != qtype || s_name(msg, len, &o, owner, sizeof owner) < 0) continue;
        if (rrs[i].rdlen != want) return DNS_MALFORMED;
        int in_chain = 0;
        for (size_t c = 0; c < links && !in_chain; c++) in_chain = !strcmp(owner, chain[c]);
        if (!in_chain) continue; /* a record the question did not lead to: ignored */
        egress_addr_t *a = &out[(*n)++];
        memset(a, 0, sizeof *a);
        a->family = want == 4 ? 4 : 6;
        memcpy(a->b, msg + rrs[i].rdata, want);
        static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
        if (a->family == 6 && !memcmp(a->b, mapped, 12)) { /* judged as the IPv4 it is */
            memmove(a->b, a->b + 12, 4);
            memset(a->b + 4, 0, 12);
            a->family = 4;
        }
    }
    return *n ? DNS_OK : DNS_NONE;
}
