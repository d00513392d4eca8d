/* tests/unit/test_claims.c — an executor node's claims on job ids (executor-node/node/claims.h)
 * through the header: a job sent twice, or resubmitted to another broker, never runs twice; a
 * probe disclaims for the broker that asks; claims expire and are bounded.
 * Linked against the node's library (libexecutor.a). */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "executor-node/node/claims.h"

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
        cmocka_unit_test(test_a_job_sent_twice_runs_once_and_answers_both),
        cmocka_unit_test(test_a_probe_disclaims_so_the_first_broker_cannot_run_it_later),
        cmocka_unit_test(test_a_probe_finds_a_running_or_finished_job),
        cmocka_unit_test(test_claims_are_forgotten_when_they_expire_and_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
