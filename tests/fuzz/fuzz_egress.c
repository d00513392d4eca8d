/* tests/fuzz/fuzz_egress.c — libFuzzer target for what the network egress path reads from
 * parties it does not trust: the HTTP request heads sandboxed code sends the egress process
 * (executor-node/egress/head.c), the DNS answers its resolver gets (dns.c), the egress rules a
 * JobSpec carries (proto/egress_rule.c), and the messages the node reads from the egress
 * process (executor-node/link/emsg.c). The first byte picks which. Beyond "no crash, no
 * sanitizer report": what parses respects its caps and means one thing (a rule prints back to
 * itself; a head's target is a valid host and port; an answer's addresses fit). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "proto/egress_rule.h"
#include "executor-node/egress/dns.h"
#include "executor-node/egress/head.h"
#include "executor-node/link/emsg.h"

static void s_check(int ok)
{
    if (!ok) abort();
}

static void s_head(const uint8_t *data, size_t size)
{
    head_t h;
    char err[200];
    head_rc_t rc = head_parse((const char *)data, size, &h, err, sizeof err);
    if (rc == HEAD_BAD) s_check(err[0] != '\0');
    if (rc != HEAD_OK) return;
    s_check(h.head_len <= size && h.head_len <= HEAD_MAX);
    s_check(h.port >= 1 && h.port <= 65535 && h.host[0]);
    s_check(h.n_headers <= HEAD_MAX_HEADERS && strlen(h.secret) <= HEAD_SECRET_MAX);
    egress_addr_t a;
    char norm[256];
    s_check(h.host_is_addr ? egress_addr_parse(h.host, strlen(h.host), &a) == 0
                           : egress_name_normal(h.host, strlen(h.host), norm, sizeof norm) == 0);
    if (h.kind == HEAD_FORWARD) {
        /* what reaches the origin server is itself a request head that parses, to one host */
        buf_t out;
        buf_init(&out);
        head_forward(&h, &out);
        s_check(out.len >= 4 && !memcmp((const char *)out.data + out.len - 4, "\r\n\r\n", 4));
        for (size_t i = 0; i + 1 < out.len; i++)
            if (((const char *)out.data)[i] == '\n') s_check(i > 0 && ((const char *)out.data)[i - 1] == '\r');
        buf_free(&out);
    }
}

static void s_dns(const uint8_t *data, size_t size)
{
    egress_addr_t out[DNS_MAX_ADDRS];
    size_t n = 99;
    for (int qtype = DNS_TYPE_A; qtype <= DNS_TYPE_AAAA; qtype += DNS_TYPE_AAAA - DNS_TYPE_A) {
        dns_rc_t rc = dns_answer(data, size, size >= 2 ? (uint16_t)(data[0] << 8 | data[1]) : 0,
                                 "canary.test", qtype, out, DNS_MAX_ADDRS, &n);
        s_check(n <= DNS_MAX_ADDRS && (rc == DNS_OK) == (n > 0));
        for (size_t i = 0; i < n; i++) s_check(out[i].family == 4 || out[i].family == 6);
    }
}

static void s_rule(const uint8_t *data, size_t size)
{
    egress_rule_t r, back;
    char err[200], text[EGRESS_MAX_RULE + 32];
    if (egress_rule_parse((const char *)data, size, &r, err, sizeof err) < 0) return;
    egress_rule_format(&r, text, sizeof text);
    s_check(egress_rule_parse(text, strlen(text), &back, err, sizeof err) == 0);
    s_check(back.kind == r.kind && back.port == r.port && back.prefix == r.prefix &&
            !strcmp(back.host, r.host) && !memcmp(&back.net, &r.net, sizeof r.net));
}

static void s_emsg(const uint8_t *data, size_t size)
{
    static const uint8_t id[ID_BYTES] = {1};
    emsg_t m;
    char err[200];
    if (!size) return;
    if (emsg_decode(data[0] & 7, id, data + 1, size - 1, &m, err, sizeof err) < 0) return;
    if (m.type == EM_GRANT) s_check(m.grant.n_rules >= 1 && m.grant.n_rules <= EGRESS_MAX_RULES);
    if (m.type == EM_SUMMARY) s_check(m.summary.dests.n <= RESULT_MAX_EGRESS);
    emsg_clear(&m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!size) return 0;
    switch (data[0] % 4) {
    case 0: s_head(data + 1, size - 1); break;
    case 1: s_dns(data + 1, size - 1); break;
    case 2: s_rule(data + 1, size - 1); break;
    case 3: s_emsg(data + 1, size - 1); break;
    }
    return 0;
}
