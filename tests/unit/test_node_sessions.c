/* tests/unit/test_node_sessions.c — the node's book of its sessions (executor-node/
 * node_sessions.c), driven with the time and free memory passed in: idle expiry, eviction
 * least recently used first under memory pressure or over the budget (never a busy session),
 * a tenant sees only its own sessions and their end reasons, and the changes for SESSIONS. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "executor-node/node/node_sessions.h"

static void s_id(uint8_t id[ID_BYTES], unsigned n)
{
    memset(id, 0x5a, ID_BYTES);
    memcpy(id, &n, sizeof n);
}

static node_sessions_t *s_book(long evict_free_mb, long budget_mb)
{
    node_sessions_conf_t c = {.max_sessions = 3,
                              .evict_free_mb = evict_free_mb,
                              .memory_budget_mb = budget_mb,
                              .ended_kept = 8};
    return node_sessions_new(&c);
}

/* Session n of tenant, up at now with this idle timeout, measured at mb. */
static void s_up(node_sessions_t *b, unsigned n, const char *tenant, long idle_s, uint64_t now,
                 long mb)
{
    uint8_t id[ID_BYTES];
    s_id(id, n);
    node_sessions_up(b, id, 0, tenant, idle_s, 256, 0, now);
    node_sessions_memory(b, id, (uint64_t)mb << 10);
}

static unsigned s_num(const uint8_t id[ID_BYTES])
{
    unsigned n;
    memcpy(&n, id, sizeof n);
    return n;
}

static void test_an_idle_session_expires_and_a_busy_one_does_not(void **state)
{
    (void)state;
    node_sessions_t *b = s_book(0, 0);
    s_up(b, 1, "t", 10, 0, 1);
    s_up(b, 2, "t", 10, 0, 1);
    uint8_t id[ID_BYTES];
    s_id(id, 2);
    node_sessions_busy(b, id, 1, 5000); /* a cell runs in 2 */
    node_sessions_end_t out[4];
    assert_int_equal(node_sessions_due(b, 9999, 100000, out, 4), 0);
    assert_int_equal(node_sessions_due(b, 10000, 100000, out, 4), 1);
    assert_int_equal(s_num(out[0].id), 1);
    assert_string_equal(out[0].reason, "session expired after 10 s idle");
    assert_int_equal(node_sessions_due(b, 10000, 100000, out, 4), 0); /* named once */
    node_sessions_busy(b, id, 0, 60000); /* its cell ended: idle from then on */
    assert_int_equal(node_sessions_due(b, 69999, 100000, out, 4), 0);
    assert_int_equal(node_sessions_due(b, 70000, 100000, out, 4), 1);
    node_sessions_destroy(&b);
}

static void test_memory_pressure_evicts_the_least_recently_used_idle_one_per_reading(void **state)
{
    (void)state;
    node_sessions_t *b = s_book(500, 0);
    s_up(b, 1, "t", 600, 3000, 50); /* used last */
    s_up(b, 2, "t", 600, 1000, 50); /* least recently used */
    s_up(b, 3, "u", 600, 2000, 50);
    uint8_t id[ID_BYTES];
    s_id(id, 2);
    node_sessions_end_t out[4];
    assert_int_equal(node_sessions_due(b, 4000, 800, out, 4), 0); /* enough free memory */
    node_sessions_busy(b, id, 1, 4000); /* the oldest is running a cell: spared */
    assert_int_equal(node_sessions_due(b, 4000, 100, out, 4), 1);
    assert_int_equal(s_num(out[0].id), 3);
    assert_non_null(strstr(out[0].reason, "evicted: node memory pressure"));
    assert_int_equal(node_sessions_due(b, 4000, 100, out, 4), 1); /* the next reading: the next */
    assert_int_equal(s_num(out[0].id), 1);
    node_sessions_destroy(&b);
}

static void test_over_the_budget_as_many_as_bring_it_under(void **state)
{
    (void)state;
    node_sessions_t *b = s_book(0, 100);
    s_up(b, 1, "t", 600, 1000, 60);
    s_up(b, 2, "t", 600, 2000, 60);
    s_up(b, 3, "t", 600, 3000, 60);
    node_sessions_end_t out[4];
    assert_int_equal(node_sessions_due(b, 4000, 100000, out, 4), 2); /* 180 → 60 MB */
    assert_int_equal(s_num(out[0].id), 1);
    assert_int_equal(s_num(out[1].id), 2);
    assert_non_null(strstr(out[0].reason, "budget 100 MB"));
    assert_int_equal(node_sessions_memory_kb(b), 60 << 10);
    node_sessions_destroy(&b);
}

static void test_a_tenant_sees_only_its_own_sessions_and_their_ends(void **state)
{
    (void)state;
    node_sessions_t *b = s_book(0, 0);
    s_up(b, 1, "alice", 600, 0, 1);
    uint8_t id[ID_BYTES];
    s_id(id, 1);
    assert_non_null(node_sessions_of(b, id, "alice"));
    assert_null(node_sessions_of(b, id, "mallory"));
    node_sessions_down(b, id, "closed by the client");
    assert_null(node_sessions_of(b, id, "alice"));
    assert_string_equal(node_sessions_ended(b, id, "alice"), "closed by the client");
    assert_null(node_sessions_ended(b, id, "mallory"));
    node_sessions_destroy(&b);
}

static void test_changes_carry_ups_and_downs_once(void **state)
{
    (void)state;
    node_sessions_t *b = s_book(0, 0);
    s_up(b, 1, "t", 600, 0, 1);
    s_up(b, 2, "t", 600, 0, 1);
    assert_int_equal(node_sessions_full(b), 0);
    s_up(b, 3, "t", 600, 0, 1);
    assert_int_equal(node_sessions_full(b), 1);
    uint8_t id[ID_BYTES];
    s_id(id, 2);
    node_sessions_down(b, id, "memory_limit: a cell needed more than the session's 256 MB");
    node_sessions_changes_t c;
    assert_int_equal(node_sessions_changes(b, &c), 1);
    assert_int_equal(c.n_up, 3);
    assert_int_equal(c.n_down, 1);
    assert_int_equal(s_num(c.down[0]), 2);
    assert_non_null(strstr(c.reasons[0], "memory_limit"));
    assert_int_equal(node_sessions_changes(b, &c), 0); /* drained */
    uint8_t ids[4][ID_BYTES];
    assert_int_equal(node_sessions_ids(b, ids, 4), 2);
    node_sessions_zygote_down(b, 0, "its zygote died");
    assert_int_equal(node_sessions_count(b), 0);
    s_id(id, 1);
    assert_string_equal(node_sessions_ended(b, id, "t"), "its zygote died");
    assert_int_equal(node_sessions_changes(b, &c), 1);
    assert_int_equal(c.n_down, 2);
    node_sessions_destroy(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_an_idle_session_expires_and_a_busy_one_does_not),
        cmocka_unit_test(test_memory_pressure_evicts_the_least_recently_used_idle_one_per_reading),
        cmocka_unit_test(test_over_the_budget_as_many_as_bring_it_under),
        cmocka_unit_test(test_a_tenant_sees_only_its_own_sessions_and_their_ends),
        cmocka_unit_test(test_changes_carry_ups_and_downs_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
