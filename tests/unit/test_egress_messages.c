/* tests/unit/test_egress_messages.c — what carries network egress between processes: the node ⇄
 * egress process messages (executor-node/link/emsg.h) and their descriptor channel, the
 * JobSpec's egress (proto/job.h) and the Result's destinations the node adds (proto/
 * result_egress.h). One behaviour per test, through the headers. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proto/job.h"
#include "proto/mpack.h"
#include "proto/result.h"
#include "executor-node/link/emsg.h"

static const uint8_t s_id[ID_BYTES] = {9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 1, 2, 3, 4, 5, 6};

typedef struct {
    emsg_t *back;
    int rc;
} got_t;

static void s_on(void *arg, uint8_t type, const uint8_t id[ID_BYTES], const uint8_t *p, size_t len)
{
    got_t *got = arg;
    char err[160];
    got->rc = emsg_decode(type, id, p, len, got->back, err, sizeof err);
}

/* m sent over a socketpair's zchan and decoded at the other end into back. */
static int s_cross(const emsg_t *m, emsg_t *back)
{
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
    zchan_t *a = zchan_new(sv[0]), *b = zchan_new(sv[1]);
    assert_int_equal(emsg_send(a, m), 0);
    got_t got = {back, -2};
    assert_int_equal(zchan_read(b, s_on, &got), 0);
    zchan_destroy(&a);
    zchan_destroy(&b);
    return got.rc;
}

static void test_a_grant_crosses_whole(void **state)
{
    (void)state;
    char *rules[] = {"127.0.0.1:8080", "*.example.com:443"};
    emsg_t m = {.type = EM_GRANT}, back;
    memcpy(m.id, s_id, ID_BYTES);
    snprintf(m.grant.secret, sizeof m.grant.secret, "0123456789abcdef0123456789abcdef");
    snprintf(m.grant.tenant, sizeof m.grant.tenant, "acme");
    m.grant.listener = 7;
    m.grant.rules = rules;
    m.grant.n_rules = 2;
    m.grant.max_bytes = 1000;
    m.grant.max_conns = 3;
    m.grant.wall_ms = 5000;
    assert_int_equal(s_cross(&m, &back), 0);
    assert_int_equal(back.type, EM_GRANT);
    assert_memory_equal(back.id, s_id, ID_BYTES);
    assert_string_equal(back.grant.secret, m.grant.secret);
    assert_string_equal(back.grant.tenant, "acme");
    assert_int_equal(back.grant.listener, 7);
    assert_int_equal(back.grant.n_rules, 2);
    assert_string_equal(back.grant.rules[1], "*.example.com:443");
    assert_int_equal(back.grant.max_bytes, 1000);
    emsg_clear(&back);
}

static void test_a_grant_with_a_bad_rule_or_no_secret_is_refused(void **state)
{
    (void)state;
    char *bad[] = {"http://example.com"};
    emsg_t m = {.type = EM_GRANT}, back;
    snprintf(m.grant.secret, sizeof m.grant.secret, "0123456789abcdef0123456789abcdef");
    snprintf(m.grant.tenant, sizeof m.grant.tenant, "acme");
    m.grant.rules = bad;
    m.grant.n_rules = 1;
    assert_int_equal(s_cross(&m, &back), -1);
    char *good[] = {"example.com"};
    m.grant.rules = good;
    m.grant.secret[0] = '\0';
    assert_int_equal(s_cross(&m, &back), -1);
}

static void test_a_summary_and_stats_cross_whole(void **state)
{
    (void)state;
    result_egress_t dest = {"canary.test", 8080, "refused", "no rule", 2, 0, 0};
    emsg_t m = {.type = EM_SUMMARY}, back;
    memcpy(m.id, s_id, ID_BYTES);
    m.summary.over_cap = 1;
    m.summary.dests = (result_egress_list_t){&dest, 1};
    assert_int_equal(s_cross(&m, &back), 0);
    assert_true(back.summary.over_cap);
    assert_int_equal(back.summary.dests.n, 1);
    assert_string_equal(back.summary.dests.list[0].reason, "no rule");
    assert_int_equal(back.summary.dests.list[0].connections, 2);
    emsg_clear(&back);
    emsg_t s = {.type = EM_STATS, .stats = {.allowed = 3, .bytes_in = 1 << 20, .over_cap = 1}};
    assert_int_equal(s_cross(&s, &back), 0);
    assert_int_equal(back.stats.allowed, 3);
    assert_int_equal(back.stats.bytes_in, 1 << 20);
    assert_int_equal(back.stats.over_cap, 1);
}

static void test_every_truncation_of_a_grant_is_refused(void **state)
{
    (void)state;
    char *rules[] = {"127.0.0.1:8080"};
    emsg_t m = {.type = EM_GRANT};
    snprintf(m.grant.secret, sizeof m.grant.secret, "0123456789abcdef0123456789abcdef");
    snprintf(m.grant.tenant, sizeof m.grant.tenant, "acme");
    m.grant.rules = rules;
    m.grant.n_rules = 1;
    buf_t b;
    buf_init(&b);
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
    zchan_t *a = zchan_new(sv[0]);
    assert_int_equal(emsg_send(a, &m), 0);
    uint8_t dgram[65536];
    ssize_t n = recv(sv[1], dgram, sizeof dgram, 0);
    assert_true(n > 24);
    for (size_t cut = 0; cut < (size_t)n - 24; cut++) {
        emsg_t back;
        char err[160];
        assert_int_equal(emsg_decode(EM_GRANT, s_id, dgram + 24, cut, &back, err, sizeof err), -1);
    }
    zchan_destroy(&a);
    close(sv[1]);
    buf_free(&b);
}

static void test_a_listener_crosses_the_descriptor_channel_and_strays_are_closed(void **state)
{
    (void)state;
    int sv[2], pipefd[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
    assert_int_equal(pipe(pipefd), 0);
    assert_int_equal(emsg_send_fd(sv[0], 42, pipefd[0]), 0);
    uint32_t id = 0;
    int fd = -1;
    assert_int_equal(emsg_recv_fd(sv[1], &id, &fd), 1);
    assert_int_equal(id, 42);
    assert_true(fd >= 0 && fd != pipefd[0]);
    close(fd);
    /* a datagram without a descriptor is dropped, not believed */
    uint32_t bare = 5;
    assert_int_equal(send(sv[0], &bare, sizeof bare, 0), (ssize_t)sizeof bare);
    assert_int_equal(emsg_recv_fd(sv[1], &id, &fd), 0);
    close(pipefd[0]);
    close(pipefd[1]);
    close(sv[0]);
    close(sv[1]);
}

static void test_a_jobspecs_egress_round_trips_and_the_peek_sees_it(void **state)
{
    (void)state;
    jobspec_t job, back;
    jobspec_init(&job);
    job.tenant = "acme";
    job.service = "python.basic";
    job.code = "print(1)";
    job.code_len = 8;
    char *rules[] = {"127.0.0.1:8080", "10.0.0.0/8:5432"};
    job.egress = (job_egress_t){rules, 2, 5000, 7};
    buf_t b;
    buf_init(&b);
    jobspec_encode(&job, &b);
    char err[200];
    assert_int_equal(jobspec_decode(b.data, b.len, &back, err, sizeof err), 0);
    assert_int_equal(back.egress.n_rules, 2);
    assert_string_equal(back.egress.rules[1], "10.0.0.0/8:5432");
    assert_int_equal(back.egress.max_bytes, 5000);
    jobspec_clear(&back);
    job_egress_t e;
    assert_int_equal(jobspec_peek_egress(b.data, b.len, &e), 0);
    assert_int_equal(e.n_rules, 2);
    assert_int_equal(e.max_conns, 7);
    jobspec_free_egress(&e);
    buf_free(&b);
}

static void test_a_jobspec_with_a_rule_that_does_not_parse_is_malformed(void **state)
{
    (void)state;
    jobspec_t job, back;
    jobspec_init(&job);
    job.tenant = "acme";
    job.service = "python.basic";
    job.code = "1";
    job.code_len = 1;
    char *rules[] = {"exa mple.com"};
    job.egress = (job_egress_t){rules, 1, 0, 0};
    buf_t b;
    buf_init(&b);
    jobspec_encode(&job, &b);
    char err[200];
    assert_int_equal(jobspec_decode(b.data, b.len, &back, err, sizeof err), -1);
    job_egress_t e;
    assert_int_equal(jobspec_peek_egress(b.data, b.len, &e), -1);
    buf_free(&b);
}

static void test_the_nodes_destinations_come_first_in_the_result(void **state)
{
    (void)state;
    result_t res, back;
    result_init(&res);
    res.status = ST_OK;
    /* a zygote that tried to put destinations in itself: the node's are the ones read */
    result_egress_t forged = {"forged", 1, "allowed", NULL, 1, 1, 1};
    res.egress = (result_egress_list_t){&forged, 1};
    buf_t body, out;
    buf_init(&body);
    buf_init(&out);
    result_encode(&res, &body);
    result_egress_t real = {"127.0.0.1", 8080, "allowed", NULL, 1, 120, 185};
    result_egress_list_t l = {&real, 1};
    assert_int_equal(result_egress_add(body.data, body.len, &l, &out), 0);
    char err[200];
    assert_int_equal(result_decode(out.data, out.len, &back, err, sizeof err), 0);
    assert_int_equal(back.egress.n, 1);
    assert_string_equal(back.egress.list[0].host, "127.0.0.1");
    assert_int_equal(back.egress.list[0].bytes_in, 185);
    result_clear(&back);
    buf_free(&body);
    buf_free(&out);
}

/* Each refused destination is a security event of layer egress, after the zygote's own events;
 * the rest of the Result passes as it was. */
static void s_result_with_events(result_t *res, result_event_t *events, size_t n)
{
    result_init(res);
    res->status = ST_OK;
    res->out = "printed\n";
    res->out_len = 8;
    res->events = events;
    res->n_events = n;
}

static void test_refused_destinations_join_the_security_events(void **state)
{
    (void)state;
    result_event_t own[2] = {{"open", "/etc/shadow", "python", 1}, {"socket", "AF_PACKET", "python", 3}};
    result_t res, back;
    s_result_with_events(&res, own, 2);
    buf_t body, out;
    buf_init(&body);
    buf_init(&out);
    result_encode(&res, &body);
    result_egress_t dests[3] = {{"127.0.0.1", 8080, "allowed", NULL, 1, 120, 185},
                                {"169.254.169.254", 80, "refused", "link-local", 2, 0, 0},
                                {"example.com", 443, "refused", "no rule", 1, 0, 0}};
    result_egress_list_t l = {dests, 3};
    assert_int_equal(result_egress_add(body.data, body.len, &l, &out), 0);
    char err[200];
    assert_int_equal(result_decode(out.data, out.len, &back, err, sizeof err), 0);
    assert_int_equal(back.egress.n, 3);
    assert_int_equal(back.n_events, 4);
    assert_string_equal(back.events[0].operation, "open");
    assert_string_equal(back.events[1].target, "AF_PACKET");
    assert_string_equal(back.events[2].operation, "connect");
    assert_string_equal(back.events[2].target, "169.254.169.254:80");
    assert_string_equal(back.events[2].layer, "egress");
    assert_int_equal(back.events[2].count, 2);
    assert_string_equal(back.events[3].target, "example.com:443");
    assert_int_equal(back.out_len, 8);
    assert_memory_equal(back.out, "printed\n", 8);
    result_clear(&back);

    /* a Result without events of its own gets the key; one already full keeps its own */
    result_event_t full[RESULT_MAX_EVENTS];
    for (size_t i = 0; i < RESULT_MAX_EVENTS; i++) full[i] = (result_event_t){"open", "/x", "python", 1};
    size_t counts[] = {0, RESULT_MAX_EVENTS}, want[] = {2, RESULT_MAX_EVENTS};
    for (size_t c = 0; c < 2; c++) {
        s_result_with_events(&res, counts[c] ? full : NULL, counts[c]);
        body.len = out.len = 0;
        result_encode(&res, &body);
        assert_int_equal(result_egress_add(body.data, body.len, &l, &out), 0);
        assert_int_equal(result_decode(out.data, out.len, &back, err, sizeof err), 0);
        assert_int_equal(back.n_events, want[c]);
        assert_string_equal(back.events[0].layer, counts[c] ? "python" : "egress");
        result_clear(&back);
    }
    /* not a Result: refused, nothing written */
    body.len = out.len = 0;
    buf_append(&body, "\x91\x01", 2);
    assert_int_equal(result_egress_add(body.data, body.len, &l, &out), -1);
    assert_int_equal(out.len, 0);
    buf_free(&body);
    buf_free(&out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_grant_crosses_whole),
        cmocka_unit_test(test_a_grant_with_a_bad_rule_or_no_secret_is_refused),
        cmocka_unit_test(test_a_summary_and_stats_cross_whole),
        cmocka_unit_test(test_every_truncation_of_a_grant_is_refused),
        cmocka_unit_test(test_a_listener_crosses_the_descriptor_channel_and_strays_are_closed),
        cmocka_unit_test(test_a_jobspecs_egress_round_trips_and_the_peek_sees_it),
        cmocka_unit_test(test_a_jobspec_with_a_rule_that_does_not_parse_is_malformed),
        cmocka_unit_test(test_the_nodes_destinations_come_first_in_the_result),
        cmocka_unit_test(test_refused_destinations_join_the_security_events),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
