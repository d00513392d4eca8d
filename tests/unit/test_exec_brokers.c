/* tests/unit/test_exec_brokers.c — an executor node serving several brokers, through the
 * headers: its slots shared as credit (executor-node/node/credits.h: never more out than it has,
 * credit follows the work, a broker that goes away takes nothing with it) and its claims on
 * job ids (executor-node/node/claims.h: a job resubmitted to another broker never runs twice).
 * Linked against the node's library (libexecutor.a). */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "executor-node/node/claims.h"
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

/* ---- claims ---- */

static const uint8_t X[ID_BYTES] = {1, 2, 3}, Y[ID_BYTES] = {4, 5, 6};

static void test_a_job_sent_twice_runs_once_and_answers_both(void **state)
{
    (void)state;
    claims_t *c = claims_new(100, 60000);
    assert_int_equal(claims_on_job(c, X, 0, 0, 0), CLAIM_RUN);
    assert_int_equal(claims_on_job(c, X, 1, 0, 0), CLAIM_ATTACH);
    assert_int_equal(claims_on_done(c, X, 10), 1u << 1);
    assert_int_equal(claims_on_job(c, X, 1, 0, 20), CLAIM_REFUSE_DONE);
    claims_destroy(&c);
}

static void test_a_probe_disclaims_so_the_first_broker_cannot_run_it_later(void **state)
{
    (void)state;
    claims_t *c = claims_new(100, 60000);
    assert_int_equal(claims_on_probe(c, X, 1, 5000, 0), HELD_NONE);
    assert_int_equal(claims_on_job(c, X, 0, 0, 1), CLAIM_REFUSE_OWNED); /* the old broker */
    assert_int_equal(claims_on_job(c, X, 1, 0, 2), CLAIM_RUN);          /* the prober */
    claims_destroy(&c);
}

static void test_a_probe_finds_a_running_or_finished_job(void **state)
{
    (void)state;
    claims_t *c = claims_new(100, 60000);
    claims_on_job(c, X, 0, 0, 0);
    assert_int_equal(claims_on_probe(c, X, 1, 0, 1), HELD_RUNNING);
    assert_int_equal(claims_on_done(c, X, 2), 1u << 1); /* the prober gets an ANSWER */
    assert_int_equal(claims_on_probe(c, X, 2, 0, 3), HELD_DONE);
    claims_destroy(&c);
}

static void test_claims_are_forgotten_when_they_expire_and_bounded(void **state)
{
    (void)state;
    claims_t *c = claims_new(1, 100);
    claims_on_job(c, X, 0, 0, 0);
    claims_on_done(c, X, 0);
    assert_int_equal(claims_on_probe(c, Y, 0, 0, 0), HELD_NONE); /* full: not remembered */
    assert_int_equal(claims_stats(c)->dropped, 1);
    claims_expire(c, 99);
    assert_int_equal(claims_count(c), 1);
    claims_expire(c, 100);
    assert_int_equal(claims_count(c), 0);
    assert_int_equal(claims_on_job(c, X, 0, 0, 101), CLAIM_RUN);
    claims_destroy(&c);
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
        cmocka_unit_test(test_a_job_sent_twice_runs_once_and_answers_both),
        cmocka_unit_test(test_a_probe_disclaims_so_the_first_broker_cannot_run_it_later),
        cmocka_unit_test(test_a_probe_finds_a_running_or_finished_job),
        cmocka_unit_test(test_claims_are_forgotten_when_they_expire_and_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
