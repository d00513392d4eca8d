/* tests/unit/test_egress_parsers.c — what the egress process reads: tenants' rules
 * (proto/egress_rule.h), the request heads sandboxed code sends (executor-node/egress/head.h),
 * the DNS answers its resolver gets (dns.h), and the verdicts on destinations (verdict.h). One
 * behaviour per test, through the headers. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/egress_rule.h"
#include "executor-node/egress/dns.h"
#include "executor-node/egress/head.h"
#include "executor-node/egress/verdict.h"

static egress_rule_t s_rule(const char *text)
{
    egress_rule_t r;
    char err[200];
    if (egress_rule_parse(text, strlen(text), &r, err, sizeof err) < 0) fail_msg("%s", err);
    return r;
}

static int s_bad_rule(const char *text)
{
    egress_rule_t r;
    char err[200];
    return egress_rule_parse(text, strlen(text), &r, err, sizeof err) < 0;
}

static egress_addr_t s_addr(const char *text)
{
    egress_addr_t a;
    assert_int_equal(egress_addr_parse(text, strlen(text), &a), 0);
    return a;
}

/* ---- rules ---------------------------------------------------------------------------------- */

static void test_rules_of_every_form_parse_and_print_back(void **state)
{
    (void)state;
    const char *forms[] = {"example.com", "pypi.org:443", "*.example.com:443", "203.0.113.7:80",
                           "10.0.0.0/8:5432", "[2001:db8::1]:443", "2001:db8::/32",
                           "[2001:db8::/32]:443", "127.0.0.1"};
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        egress_rule_t r = s_rule(forms[i]);
        char back[320];
        egress_rule_format(&r, back, sizeof back);
        assert_string_equal(back, forms[i]);
    }
}

static void test_a_block_starts_at_its_first_address(void **state)
{
    (void)state;
    egress_rule_t r = s_rule("10.1.2.3/8");
    char back[64];
    egress_rule_format(&r, back, sizeof back);
    assert_string_equal(back, "10.0.0.0/8");
}

static void test_malformed_rules_are_refused(void **state)
{
    (void)state;
    const char *bad[] = {"", " ", "example.com:0", "example.com:65536", "example.com:http",
                         "*.", "a.*.example.com", "exa mple.com", "-bad.com", "bad-.com",
                         "10.0.0.0/33", "[::1", "[::1]443", "127.1", "999.1.1.1",
                         "http://example.com", "example.com/path", "a..b"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (!s_bad_rule(bad[i])) fail_msg("accepted: '%s'", bad[i]);
}

static void test_a_wildcard_matches_below_the_domain_only(void **state)
{
    (void)state;
    egress_rule_t r = s_rule("*.example.com:443");
    assert_true(egress_rule_allows_name(&r, "a.example.com", 443));
    assert_true(egress_rule_allows_name(&r, "a.b.example.com", 443));
    assert_false(egress_rule_allows_name(&r, "example.com", 443));
    assert_false(egress_rule_allows_name(&r, "badexample.com", 443));
    assert_false(egress_rule_allows_name(&r, "a.example.com", 80));
}

static void test_names_compare_without_case_or_final_dot(void **state)
{
    (void)state;
    egress_rule_t r = s_rule("Example.COM.");
    char name[256];
    assert_int_equal(egress_name_normal("EXAMPLE.com.", 12, name, sizeof name), 0);
    assert_true(egress_rule_allows_name(&r, name, 1234));
}

static void test_a_block_holds_its_addresses_and_an_exact_rule_names_one(void **state)
{
    (void)state;
    egress_rule_t net = s_rule("10.0.0.0/8:5432"), one = s_rule("10.1.2.3:5432");
    egress_addr_t a = s_addr("10.1.2.3"), b = s_addr("11.0.0.1");
    assert_true(egress_rule_allows_addr(&net, &a, 5432));
    assert_false(egress_rule_allows_addr(&net, &b, 5432));
    assert_false(egress_rule_names_addr(&net, &a, 5432));
    assert_true(egress_rule_names_addr(&one, &a, 5432));
    assert_false(egress_rule_names_addr(&one, &a, 5433));
}

static void test_an_ipv4_mapped_address_is_the_ipv4_one(void **state)
{
    (void)state;
    egress_addr_t a = s_addr("::ffff:169.254.169.254");
    assert_int_equal(a.family, 4);
    char text[64];
    egress_addr_format(&a, text, sizeof text);
    assert_string_equal(text, "169.254.169.254");
}

static void test_a_rule_list_splits_on_commas_and_caps_its_count(void **state)
{
    (void)state;
    egress_rule_t *rules;
    size_t n;
    char err[200];
    assert_int_equal(egress_rules_parse("a.com, *.b.com:443,10.0.0.0/8", &rules, &n, err, sizeof err), 0);
    assert_int_equal(n, 3);
    free(rules);
    assert_int_equal(egress_rules_parse("", &rules, &n, err, sizeof err), 0);
    assert_int_equal(n, 0);
    assert_null(rules);
    char many[2048] = "";
    for (int i = 0; i <= EGRESS_MAX_RULES; i++) strcat(many, "a.com,");
    assert_int_equal(egress_rules_parse(many, &rules, &n, err, sizeof err), -1);
}

/* ---- request heads -------------------------------------------------------------------------- */

static head_rc_t s_head(const char *text, head_t *h)
{
    char err[200];
    return head_parse(text, strlen(text), h, err, sizeof err);
}

/* base64("job:0123456789abcdef0123456789abcdef") */
#define AUTH "Proxy-Authorization: Basic am9iOjAxMjM0NTY3ODlhYmNkZWYwMTIzNDU2Nzg5YWJjZGVm\r\n"

static void test_a_connect_head_names_its_target_and_secret(void **state)
{
    (void)state;
    head_t h;
    assert_int_equal(s_head("CONNECT Example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n" AUTH
                            "\r\nTLS",
                            &h),
                     HEAD_OK);
    assert_int_equal(h.kind, HEAD_CONNECT);
    assert_string_equal(h.host, "example.com");
    assert_int_equal(h.port, 443);
    assert_false(h.host_is_addr);
    assert_string_equal(h.secret, "0123456789abcdef0123456789abcdef");
    assert_int_equal(h.head_len, strlen("CONNECT Example.com:443 HTTP/1.1\r\nHost: "
                                        "example.com:443\r\n" AUTH "\r\n"));
}

static void test_an_absolute_request_is_forwarded_in_origin_form_without_proxy_headers(void **state)
{
    (void)state;
    head_t h;
    const char *req = "GET http://[::1]:8080/a?b=1 HTTP/1.1\r\nHost: evil\r\n" AUTH
                      "Proxy-Connection: keep-alive\r\nAccept: */*\r\n\r\n";
    assert_int_equal(s_head(req, &h), HEAD_OK);
    assert_int_equal(h.kind, HEAD_FORWARD);
    assert_true(h.host_is_addr);
    assert_string_equal(h.host, "::1");
    buf_t out;
    buf_init(&out);
    head_forward(&h, &out);
    buf_append(&out, "", 1);
    assert_string_equal(out.data, "GET /a?b=1 HTTP/1.1\r\nHost: [::1]:8080\r\nAccept: */*\r\n"
                                  "Connection: close\r\n\r\n");
    buf_free(&out);
}

static void test_a_uri_without_a_port_or_path_is_port_80_and_slash(void **state)
{
    (void)state;
    head_t h;
    assert_int_equal(s_head("HEAD http://example.org HTTP/1.0\r\n\r\n", &h), HEAD_OK);
    assert_int_equal(h.port, 80);
    assert_int_equal(h.path.len, 1);
}

static void test_an_incomplete_head_asks_for_more(void **state)
{
    (void)state;
    head_t h;
    assert_int_equal(s_head("CONNECT a.com:443 HTTP/1.1\r\nHost: a", &h), HEAD_PARTIAL);
    assert_int_equal(s_head("CONNECT a.com:443 HTTP/1.1\r\n\r", &h), HEAD_PARTIAL);
}

static void test_heads_a_server_could_read_otherwise_are_refused(void **state)
{
    (void)state;
    const char *bad[] = {
        "CONNECT a.com:443 HTTP/1.1\n\n",                    /* bare LF */
        "CONNECT a.com:443 HTTP/1.1\r\nX: a\rb\r\n\r\n",     /* a CR inside */
        "CONNECT a.com:443 HTTP/1.1\r\nX: a\r\n b\r\n\r\n",  /* obsolete folding */
        "CONNECT a.com HTTP/1.1\r\n\r\n",                    /* no port */
        "CONNECT a.com:99999 HTTP/1.1\r\n\r\n",
        "CONNECT user@a.com:443 HTTP/1.1\r\n\r\n",
        "GET https://a.com/ HTTP/1.1\r\n\r\n",               /* https goes through CONNECT */
        "GET /relative HTTP/1.1\r\n\r\n",
        "GET http://a.com/#frag HTTP/1.1\r\n\r\n",
        "GET http://a.com/ HTTP/2.0\r\n\r\n",
        "GET http://127.1/ HTTP/1.1\r\n\r\n",                 /* an address a resolver reads its way */
        "G@T http://a.com/ HTTP/1.1\r\n\r\n",
        "CONNECT a.com:443 HTTP/1.1\r\nBad Name: x\r\n\r\n",
        "CONNECT a.com:443 HTTP/1.1\r\nX: a\x01\r\n\r\n",
        "CONNECT a.com:443 HTTP/1.1\r\nProxy-Authorization: Bearer x\r\n\r\n",
        "\r\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        head_t h;
        if (s_head(bad[i], &h) != HEAD_BAD) fail_msg("accepted: %s", bad[i]);
    }
    char nul[] = "CONNECT a.com:443 HTTP/1.1\r\nX: a\0b\r\n\r\n";
    head_t h;
    char err[100];
    assert_int_equal(head_parse(nul, sizeof nul - 1, &h, err, sizeof err), HEAD_BAD);
}

static void test_a_head_over_its_cap_is_refused(void **state)
{
    (void)state;
    size_t n = HEAD_MAX + 10;
    char *big = malloc(n);
    memcpy(big, "CONNECT a.com:443 HTTP/1.1\r\n", 28);
    for (size_t i = 28; i < n; i++) big[i] = 'x';
    head_t h;
    char err[100];
    assert_int_equal(head_parse(big, n, &h, err, sizeof err), HEAD_BAD);
    free(big);
}

/* ---- DNS answers ------------------------------------------------------------------------------ */

/* An answer to (id, name, qtype) with the given answer records appended raw. */
static size_t s_answer(uint8_t *out, uint16_t id, const char *name, int qtype, int rcode,
                       const uint8_t *records, size_t rlen, int ancount)
{
    size_t n = dns_query(id, name, qtype, out, 512);
    out[2] |= 0x80; /* a response */
    out[3] = (uint8_t)(0x80 | rcode);
    out[7] = (uint8_t)ancount;
    if (rlen) memcpy(out + n, records, rlen); /* records may be NULL with none */
    return n + rlen;
}

static void test_a_records_of_the_name_asked_are_read(void **state)
{
    (void)state;
    /* name: pointer to the question (offset 12); A, IN, ttl, 4 bytes */
    const uint8_t rr[] = {0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 127, 0, 0, 1,
                          0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 10, 9, 9, 9};
    uint8_t msg[512];
    size_t len = s_answer(msg, 0x1234, "canary.test", DNS_TYPE_A, 0, rr, sizeof rr, 2);
    egress_addr_t a[4];
    size_t n;
    assert_int_equal(dns_answer(msg, len, 0x1234, "canary.test", DNS_TYPE_A, a, 4, &n), DNS_OK);
    assert_int_equal(n, 2);
    assert_int_equal(a[1].b[0], 10);
}

static void test_an_answer_to_another_question_or_id_is_malformed(void **state)
{
    (void)state;
    const uint8_t rr[] = {0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 127, 0, 0, 1};
    uint8_t msg[512];
    size_t len = s_answer(msg, 7, "other.test", DNS_TYPE_A, 0, rr, sizeof rr, 1);
    egress_addr_t a[4];
    size_t n;
    assert_int_equal(dns_answer(msg, len, 7, "canary.test", DNS_TYPE_A, a, 4, &n), DNS_MALFORMED);
    assert_int_equal(dns_answer(msg, len, 8, "other.test", DNS_TYPE_A, a, 4, &n), DNS_MALFORMED);
}

static void test_records_of_other_names_are_ignored_and_a_cname_chain_followed(void **state)
{
    (void)state;
    uint8_t rr[128];
    size_t r = 0;
    /* canary.test CNAME x.canary.test (rdata: "x" + pointer to the question) */
    const uint8_t cname[] = {0xc0, 12, 0, 5, 0, 1, 0, 0, 0, 60, 0, 4, 1, 'x', 0xc0, 12};
    memcpy(rr + r, cname, sizeof cname), r += sizeof cname;
    /* an A record of an unrelated name "evil" (inline name) */
    const uint8_t other[] = {4, 'e', 'v', 'i', 'l', 0, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 169, 254, 169, 254};
    memcpy(rr + r, other, sizeof other), r += sizeof other;
    uint8_t msg[512];
    size_t base = dns_query(9, "canary.test", DNS_TYPE_A, msg, sizeof msg);
    /* x.canary.test A 1.2.3.4: owner is a pointer to the CNAME's target (its rdata) */
    uint8_t target_ptr = (uint8_t)(base + 12);
    const uint8_t a_rec[] = {0xc0, target_ptr, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 1, 2, 3, 4};
    memcpy(rr + r, a_rec, sizeof a_rec), r += sizeof a_rec;
    size_t len = s_answer(msg, 9, "canary.test", DNS_TYPE_A, 0, rr, r, 3);
    egress_addr_t a[4];
    size_t n;
    assert_int_equal(dns_answer(msg, len, 9, "canary.test", DNS_TYPE_A, a, 4, &n), DNS_OK);
    assert_int_equal(n, 1);
    assert_int_equal(a[0].b[0], 1);
}

static void test_a_pointer_loop_and_a_forward_pointer_are_malformed(void **state)
{
    (void)state;
    uint8_t msg[512];
    const uint8_t loop_rr[] = {0xc0, 200, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 1, 1, 1, 1};
    size_t len = s_answer(msg, 3, "a.test", DNS_TYPE_A, 0, loop_rr, sizeof loop_rr, 1);
    egress_addr_t a[4];
    size_t n;
    assert_int_equal(dns_answer(msg, len, 3, "a.test", DNS_TYPE_A, a, 4, &n), DNS_MALFORMED);
    /* a pointer to itself */
    size_t at = dns_query(4, "a.test", DNS_TYPE_A, msg, sizeof msg);
    const uint8_t self_rr[] = {0xc0, (uint8_t)at, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 1, 1, 1, 1};
    len = s_answer(msg, 4, "a.test", DNS_TYPE_A, 0, self_rr, sizeof self_rr, 1);
    assert_int_equal(dns_answer(msg, len, 4, "a.test", DNS_TYPE_A, a, 4, &n), DNS_MALFORMED);
}

static void test_nxdomain_truncation_and_servfail_say_so(void **state)
{
    (void)state;
    uint8_t msg[512];
    egress_addr_t a[4];
    size_t n;
    size_t len = s_answer(msg, 5, "no.test", DNS_TYPE_A, 3, NULL, 0, 0);
    assert_int_equal(dns_answer(msg, len, 5, "no.test", DNS_TYPE_A, a, 4, &n), DNS_NONE);
    len = s_answer(msg, 5, "no.test", DNS_TYPE_A, 2, NULL, 0, 0);
    assert_int_equal(dns_answer(msg, len, 5, "no.test", DNS_TYPE_A, a, 4, &n), DNS_FAILED);
    len = s_answer(msg, 5, "no.test", DNS_TYPE_A, 0, NULL, 0, 0);
    msg[2] |= 0x02;
    assert_int_equal(dns_answer(msg, len, 5, "no.test", DNS_TYPE_A, a, 4, &n), DNS_FAILED);
}

static void test_every_truncation_of_an_answer_is_refused_safely(void **state)
{
    (void)state;
    const uint8_t rr[] = {0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 127, 0, 0, 1};
    uint8_t msg[512];
    size_t len = s_answer(msg, 6, "a.test", DNS_TYPE_A, 0, rr, sizeof rr, 1);
    for (size_t cut = 0; cut < len; cut++) {
        uint8_t *copy = malloc(cut ? cut : 1);
        memcpy(copy, msg, cut);
        egress_addr_t a[4];
        size_t n;
        dns_rc_t rc = dns_answer(copy, cut, 6, "a.test", DNS_TYPE_A, a, 4, &n);
        assert_true(rc == DNS_MALFORMED || rc == DNS_NONE);
        free(copy);
    }
}

/* ---- verdicts ------------------------------------------------------------------------------- */

static void test_a_loopback_address_needs_a_rule_naming_it_exactly(void **state)
{
    (void)state;
    egress_rule_t rules[] = {s_rule("127.0.0.1:8080"), s_rule("127.0.0.0/8")};
    egress_addr_t lo = s_addr("127.0.0.1");
    char why[400];
    assert_int_equal(verdict_addr(rules, 1, NULL, &lo, 8080, NULL, why, sizeof why), 0);
    assert_int_equal(verdict_addr(rules, 2, NULL, &lo, 8081, NULL, why, sizeof why), -1);
    assert_non_null(strstr(why, "loopback"));
}

static void test_metadata_and_link_local_are_denied_whatever_the_rules(void **state)
{
    (void)state;
    egress_rule_t rules[] = {s_rule("169.254.169.254:80"), s_rule("0.0.0.0/0"), s_rule("::/0")};
    const char *denied[] = {"169.254.169.254", "fd00:ec2::254", "fe80::1", "100.100.100.200",
                            "::ffff:169.254.169.254", "64:ff9b::a9fe:a9fe", "0.0.0.0", "224.0.0.1"};
    for (size_t i = 0; i < sizeof denied / sizeof denied[0]; i++) {
        egress_addr_t a = s_addr(denied[i]);
        char why[400];
        if (verdict_addr(rules, 3, NULL, &a, 80, NULL, why, sizeof why) == 0)
            fail_msg("allowed: %s", denied[i]);
        assert_non_null(strstr(why, "denied to every tenant"));
    }
}

static void test_the_farms_endpoints_are_denied_even_to_an_exact_rule(void **state)
{
    (void)state;
    char err[200], why[400];
    verdict_deny_t *deny = verdict_deny_new("127.0.0.1:6379,redis.internal:6380", err, sizeof err);
    assert_non_null(deny);
    egress_rule_t rules[] = {s_rule("127.0.0.1:6379"), s_rule("redis.internal:6380")};
    egress_addr_t lo = s_addr("127.0.0.1");
    assert_int_equal(verdict_addr(rules, 2, deny, &lo, 6379, NULL, why, sizeof why), -1);
    assert_non_null(strstr(why, "farm's own endpoints"));
    assert_int_equal(verdict_name(rules, 2, deny, "redis.internal", 6380, why, sizeof why), -1);
    verdict_deny_destroy(&deny);
}

static void test_a_name_resolving_to_a_private_address_is_refused_naming_both(void **state)
{
    (void)state;
    egress_rule_t rules[] = {s_rule("*.rebind.test")};
    char why[400];
    assert_int_equal(verdict_name(rules, 1, NULL, "a.rebind.test", 80, why, sizeof why), 0);
    egress_addr_t priv = s_addr("10.9.9.9"), pub = s_addr("203.0.113.9");
    assert_int_equal(verdict_addr(rules, 1, NULL, &priv, 80, "a.rebind.test", why, sizeof why), -1);
    assert_non_null(strstr(why, "a.rebind.test resolves to 10.9.9.9"));
    assert_int_equal(verdict_addr(rules, 1, NULL, &pub, 80, "a.rebind.test", why, sizeof why), 0);
}

static void test_a_public_address_needs_a_rule_holding_it(void **state)
{
    (void)state;
    egress_rule_t rules[] = {s_rule("203.0.113.0/24:443"), s_rule("example.com")};
    egress_addr_t in = s_addr("203.0.113.9"), out = s_addr("198.51.100.1");
    char why[400];
    assert_int_equal(verdict_addr(rules, 2, NULL, &in, 443, NULL, why, sizeof why), 0);
    assert_int_equal(verdict_addr(rules, 2, NULL, &in, 80, NULL, why, sizeof why), -1);
    assert_int_equal(verdict_addr(rules, 2, NULL, &out, 443, NULL, why, sizeof why), -1);
    assert_int_equal(verdict_name(rules, 2, NULL, "other.com", 443, why, sizeof why), -1);
    assert_non_null(strstr(why, "no egress rule"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rules_of_every_form_parse_and_print_back),
        cmocka_unit_test(test_a_block_starts_at_its_first_address),
        cmocka_unit_test(test_malformed_rules_are_refused),
        cmocka_unit_test(test_a_wildcard_matches_below_the_domain_only),
        cmocka_unit_test(test_names_compare_without_case_or_final_dot),
        cmocka_unit_test(test_a_block_holds_its_addresses_and_an_exact_rule_names_one),
        cmocka_unit_test(test_an_ipv4_mapped_address_is_the_ipv4_one),
        cmocka_unit_test(test_a_rule_list_splits_on_commas_and_caps_its_count),
        cmocka_unit_test(test_a_connect_head_names_its_target_and_secret),
        cmocka_unit_test(test_an_absolute_request_is_forwarded_in_origin_form_without_proxy_headers),
        cmocka_unit_test(test_a_uri_without_a_port_or_path_is_port_80_and_slash),
        cmocka_unit_test(test_an_incomplete_head_asks_for_more),
        cmocka_unit_test(test_heads_a_server_could_read_otherwise_are_refused),
        cmocka_unit_test(test_a_head_over_its_cap_is_refused),
        cmocka_unit_test(test_a_records_of_the_name_asked_are_read),
        cmocka_unit_test(test_an_answer_to_another_question_or_id_is_malformed),
        cmocka_unit_test(test_records_of_other_names_are_ignored_and_a_cname_chain_followed),
        cmocka_unit_test(test_a_pointer_loop_and_a_forward_pointer_are_malformed),
        cmocka_unit_test(test_nxdomain_truncation_and_servfail_say_so),
        cmocka_unit_test(test_every_truncation_of_an_answer_is_refused_safely),
        cmocka_unit_test(test_a_loopback_address_needs_a_rule_naming_it_exactly),
        cmocka_unit_test(test_metadata_and_link_local_are_denied_whatever_the_rules),
        cmocka_unit_test(test_the_farms_endpoints_are_denied_even_to_an_exact_rule),
        cmocka_unit_test(test_a_name_resolving_to_a_private_address_is_refused_naming_both),
        cmocka_unit_test(test_a_public_address_needs_a_rule_holding_it),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
