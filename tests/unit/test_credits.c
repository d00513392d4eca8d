/* tests/unit/test_credits.c — an executor node's slots shared as credit among the brokers it
 * serves (executor-node/node/credits.h) through the header, with a fake wire that adds up the
 * CREDIT and RECLAIM it is asked to send and a fake clock: never more credit out than slots,
 * credit goes where jobs wait (round robin between brokers that want), a finished job's slot
 * goes to a waiting broker, a broker that goes away takes nothing with it; a node that drains
 * grants nothing and is drained only when no job runs and no JOB can be on its way. (The node's
 * claims on job ids are test_claims.c's.) Linked against the node's library (libexecutor.a). */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "executor-node/node/credits.h"

/* ---- credits ---- */

typedef struct {
    uint32_t granted[CREDITS_MAX_LINKS];   /* CREDIT sent, in all */
    uint32_t reclaimed[CREDITS_MAX_LINKS]; /* RECLAIM asked, in all */
} wire_t;

static void s_wire_grant(void *arg, int link, uint32_t n)
{
    ((wire_t *)arg)->granted[link] += n;
}

static void s_wire_reclaim(void *arg, int link, uint32_t n)
{
    ((wire_t *)arg)->reclaimed[link] += n;
}

static uint64_t s_now = 1000;
static uint64_t s_clock(void)
{
    return s_now;
}

static credits_t *s_credits(uint32_t slots, int links, wire_t *w)
{
    memset(w, 0, sizeof *w);
    credits_io_t io = {s_wire_grant, s_wire_reclaim, w};
    return credits_new(slots, links, &io, s_clock);
}

static void test_free_slots_go_to_the_first_broker_that_is_up(void **state)
{
    (void)state;
    wire_t w;
    credits_t *c = s_credits(4, 2, &w);
    credits_link_up(c, 1);
    assert_int_equal(w.granted[1], 4); /* the only one up */
    credits_link_up(c, 0);
    assert_int_equal(w.granted[0], 0); /* nothing free: 1 keeps them until someone wants */
    assert_int_equal(credits_held(c, 1), 4);
    credits_destroy(&c);
}

static void test_a_broker_that_wants_gets_unused_credit_back_from_an_idle_one(void **state)
{
    (void)state;
    wire_t w;
    credits_t *c = s_credits(2, 2, &w);
    credits_link_up(c, 0);
    credits_link_up(c, 1);
    credits_want(c, 1, 5);
    assert_int_equal(w.reclaimed[0], 2); /* 0 is idle with both slots */
    credits_released(c, 0, 2);
    assert_int_equal(w.granted[1], 2);
    assert_int_equal(credits_held(c, 0), 0);
    assert_int_equal(credits_free(c) + credits_busy(c) + credits_held(c, 0) + credits_held(c, 1),
                     2);
    credits_destroy(&c);
}

static void test_credit_out_never_exceeds_the_slots_across_brokers(void **state)
{
    (void)state;
    wire_t w;
    credits_t *c = s_credits(3, 3, &w);
    for (int i = 0; i < 3; i++) credits_link_up(c, i);
    /* a reclaim answered with less than asked: the broker had used some meanwhile */
    credits_start(c, 0);
    credits_want(c, 2, 9);
    credits_start(c, 0);
    credits_released(c, 0, 1);
    uint32_t sent = 0;
    for (int i = 0; i < 3; i++) sent += w.granted[i];
    assert_true(credits_free(c) + credits_busy(c) + credits_held(c, 0) + credits_held(c, 1) +
                    credits_held(c, 2) ==
                3);
    assert_int_equal(credits_busy(c), 2);
    assert_int_equal(credits_held(c, 2), 1);
    assert_true(sent - 1 - 1 <= 3); /* granted minus what ran or came back */
    credits_destroy(&c);
}

static void test_a_finished_job_s_slot_goes_to_a_broker_that_waits(void **state)
{
    (void)state;
    wire_t w;
    credits_t *c = s_credits(1, 2, &w);
    credits_link_up(c, 0);
    credits_link_up(c, 1);
    credits_start(c, 0); /* 0's one credit is running */
    credits_want(c, 1, 3);
    assert_int_equal(credits_finish(c, 0), -1); /* answered by ANSWER: the slot moves */
    assert_int_equal(credits_held(c, 1), 1);
    assert_int_equal(w.granted[1], 1);
    credits_start(c, 1);
    assert_int_equal(credits_finish(c, 1), 1); /* nobody else waits: back by RESULT */
    credits_destroy(&c);
}

static void test_a_want_not_repeated_lapses_so_an_idle_broker_gives_its_credit_back(void **state)
{
    (void)state;
    wire_t w;
    credits_t *c = s_credits(2, 2, &w);
    credits_link_up(c, 0);
    credits_link_up(c, 1);
    credits_want(c, 1, 5); /* 1 wants: 0's idle credit comes back and goes to 1 */
    credits_released(c, 0, 2);
    assert_int_equal(credits_held(c, 1), 2);
    s_now += CREDITS_WANT_MS; /* 1's queue has drained: it stopped saying WANT */
    credits_want(c, 0, 3);
    assert_int_equal(w.reclaimed[1], 2); /* 1 counts as idle now */
    credits_released(c, 1, 2);
    assert_int_equal(credits_held(c, 0), 2);
    credits_destroy(&c);
}

static void test_a_broker_that_goes_away_takes_no_slot_with_it(void **state)
{
    (void)state;
    wire_t w;
    credits_t *c = s_credits(2, 2, &w);
    credits_link_up(c, 0);
    credits_link_up(c, 1);
    credits_start(c, 0); /* one running from 0, one credit unused at 0 */
    credits_link_down(c, 0);
    assert_int_equal(credits_held(c, 0), 0);
    assert_int_equal(credits_held(c, 1), 1);    /* the void credit went to the one left */
    assert_int_equal(credits_finish(c, 0), -1); /* 0 is gone: its job's slot too */
    assert_int_equal(credits_held(c, 1), 2);
    assert_false(credits_is_up(c, 0));
    credits_destroy(&c);
}

static void test_a_job_beyond_a_broker_s_credit_cannot_take_another_s_slot(void **state)
{
    (void)state;
    wire_t w;
    credits_t *c = s_credits(1, 2, &w);
    credits_link_up(c, 0);
    credits_link_up(c, 1);
    assert_false(credits_can_start(c, 1)); /* 0 holds the only slot */
    assert_true(credits_can_start(c, 0));
    credits_destroy(&c);
}

static void test_brokers_that_want_share_free_slots_round_robin(void **state)
{
    (void)state;
    wire_t w;
    credits_t *c = s_credits(4, 3, &w);
    for (int i = 0; i < 3; i++) credits_link_up(c, i); /* 0, the first up, holds all four */
    credits_want(c, 1, 10);
    credits_want(c, 2, 10);
    assert_int_equal(w.reclaimed[0], 4);
    credits_released(c, 0, 4);
    assert_int_equal(credits_held(c, 1), 2); /* a slot at a time, in turn */
    assert_int_equal(credits_held(c, 2), 2);
    credits_destroy(&c);
}

static void test_a_broker_is_granted_no_more_than_it_wants(void **state)
{
    (void)state;
    wire_t w;
    credits_t *c = s_credits(4, 2, &w);
    credits_link_up(c, 0);
    credits_link_up(c, 1);
    credits_want(c, 1, 1); /* one job waits there */
    credits_released(c, 0, 4);
    assert_int_equal(credits_held(c, 1), 1);
    assert_int_equal(credits_held(c, 0), 3); /* the rest back to the first broker up */
    credits_destroy(&c);
}

static void test_a_reclaim_is_not_asked_again_while_one_is_outstanding(void **state)
{
    (void)state;
    wire_t w;
    credits_t *c = s_credits(2, 2, &w);
    credits_link_up(c, 0);
    credits_link_up(c, 1);
    credits_want(c, 1, 5);
    credits_want(c, 1, 5); /* the broker repeats WANT every heartbeat */
    assert_int_equal(w.reclaimed[0], 2);
    credits_destroy(&c);
}

static void test_a_release_of_more_than_a_broker_holds_frees_only_what_it_held(void **state)
{
    (void)state;
    wire_t w;
    credits_t *c = s_credits(2, 2, &w);
    credits_link_up(c, 0);
    credits_link_up(c, 1);
    credits_want(c, 1, 1);
    credits_released(c, 0, 2); /* one to 1, which wanted one; the other back to 0 */
    assert_int_equal(credits_held(c, 1), 1);
    credits_released(c, 1, 5); /* more than it holds (a confused or hostile broker) */
    assert_int_equal(credits_held(c, 1), 0);
    assert_int_equal(credits_held(c, 0), 2); /* two slots, two credits: never more */
    credits_destroy(&c);
}

static void test_a_want_from_a_broker_that_is_not_up_is_ignored(void **state)
{
    (void)state;
    wire_t w;
    credits_t *c = s_credits(2, 2, &w);
    credits_link_up(c, 0);
    credits_want(c, 1, 5); /* before its connection is made (a stale message) */
    credits_link_up(c, 1);
    assert_int_equal(w.reclaimed[0], 0); /* its READY says nothing of jobs waiting */
    assert_int_equal(credits_held(c, 0), 2);
    credits_destroy(&c);
}

static void test_the_slot_of_a_job_whose_broker_went_away_goes_to_one_still_up(void **state)
{
    (void)state;
    wire_t w;
    credits_t *c = s_credits(1, 2, &w);
    credits_link_up(c, 0);
    credits_link_up(c, 1);
    credits_start(c, 0);
    credits_link_down(c, 0);
    assert_int_equal(credits_finish(c, 0), -1); /* no RESULT to a broker that is gone */
    assert_int_equal(credits_held(c, 1), 1);
    assert_int_equal(w.granted[1], 1);
    credits_destroy(&c);
}

/* ---- draining ---- */

static void test_a_draining_node_grants_nothing_and_asks_for_unused_credit_back_once(void **state)
{
    (void)state;
    wire_t w;
    credits_t *c = s_credits(4, 2, &w);
    credits_link_up(c, 0);
    credits_link_up(c, 1);
    credits_start(c, 0); /* a job runs: link 0 holds 3 more */
    credits_drain(c);
    assert_int_equal(w.reclaimed[0], 3);
    assert_int_equal(w.reclaimed[1], 0);
    credits_drain(c); /* once */
    assert_int_equal(w.reclaimed[0], 3);
    credits_want(c, 1, 4); /* ignored */
    credits_released(c, 0, 3);
    assert_int_equal(credits_held(c, 0), 0);
    assert_int_equal(credits_held(c, 1), 0);
    assert_int_equal(w.granted[1], 0);
    assert_int_equal(credits_free(c), 3);
    assert_false(credits_drained(c));           /* the job still runs */
    assert_int_equal(credits_finish(c, 0), -1); /* its answer returns no credit */
    assert_int_equal(credits_free(c), 4);
    assert_true(credits_drained(c));
    credits_link_down(c, 1);
    credits_link_up(c, 1); /* a broker that comes back gets nothing either */
    assert_int_equal(w.granted[1], 0);
    assert_int_equal(w.granted[0], 4);
    credits_destroy(&c);
}

static void test_a_job_on_its_way_keeps_the_drain_open_until_it_has_run(void **state)
{
    (void)state;
    wire_t w;
    credits_t *c = s_credits(2, 1, &w);
    assert_false(credits_drained(c)); /* not draining at all */
    credits_link_up(c, 0);
    credits_drain(c);
    assert_int_equal(w.reclaimed[0], 2);
    credits_released(c, 0, 1); /* it had sent a JOB with the other credit before LEAVING */
    assert_int_equal(credits_held(c, 0), 1);
    assert_false(credits_drained(c));
    assert_true(credits_can_start(c, 0)); /* the JOB arrives: it runs */
    credits_start(c, 0);
    assert_false(credits_drained(c));
    assert_int_equal(credits_finish(c, 0), -1);
    assert_true(credits_drained(c));
    credits_destroy(&c);
}

static void test_a_broker_that_goes_away_during_the_drain_holds_it_open_no_longer(void **state)
{
    (void)state;
    wire_t w;
    credits_t *c = s_credits(3, 2, &w);
    credits_link_up(c, 0);
    credits_drain(c);
    assert_false(credits_drained(c)); /* link 0 holds 3 and does not answer */
    credits_link_down(c, 0);
    assert_true(credits_drained(c));
    credits_destroy(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_free_slots_go_to_the_first_broker_that_is_up),
        cmocka_unit_test(test_a_broker_that_wants_gets_unused_credit_back_from_an_idle_one),
        cmocka_unit_test(test_credit_out_never_exceeds_the_slots_across_brokers),
        cmocka_unit_test(test_a_finished_job_s_slot_goes_to_a_broker_that_waits),
        cmocka_unit_test(test_a_want_not_repeated_lapses_so_an_idle_broker_gives_its_credit_back),
        cmocka_unit_test(test_a_broker_that_goes_away_takes_no_slot_with_it),
        cmocka_unit_test(test_a_job_beyond_a_broker_s_credit_cannot_take_another_s_slot),
        cmocka_unit_test(test_brokers_that_want_share_free_slots_round_robin),
        cmocka_unit_test(test_a_broker_is_granted_no_more_than_it_wants),
        cmocka_unit_test(test_a_reclaim_is_not_asked_again_while_one_is_outstanding),
        cmocka_unit_test(test_a_release_of_more_than_a_broker_holds_frees_only_what_it_held),
        cmocka_unit_test(test_a_want_from_a_broker_that_is_not_up_is_ignored),
        cmocka_unit_test(test_the_slot_of_a_job_whose_broker_went_away_goes_to_one_still_up),
        cmocka_unit_test(test_a_draining_node_grants_nothing_and_asks_for_unused_credit_back_once),
        cmocka_unit_test(test_a_job_on_its_way_keeps_the_drain_open_until_it_has_run),
        cmocka_unit_test(test_a_broker_that_goes_away_during_the_drain_holds_it_open_no_longer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
