/* tests/unit/test_broker_resubmit.c — the scheduler with several brokers in the farm
 * (PROTOCOL.md §3.1), through sched.h with the fakes of sched_fakes.h: a resubmitted job is
 * probed before it may run and runs nowhere twice, an ANSWER returns no credit, WANT goes out
 * when jobs wait without credit, RECLAIM gives back only unused credit. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "common/log.h"
#include "broker/sched/sched.h"
#include "sched_fakes.h"

/* Submits job n marked resubmit. */
static int s_resubmit(sched_t *s, client_t *c, unsigned n)
{
    return s_resubmit_on(s, c, n, NULL);
}

static void test_a_resubmitted_job_runs_only_once_every_executor_said_none(void **state)
{
    (void)state;
    sched_t *s = s_sched(NULL);
    s_now += 60000; /* long after start */
    client_t *c = s_client(s, "fe");
    executor_t *a = s_executor(s, "a", 2, 2), *b = s_executor(s, "b", 2, 2);
    assert_int_equal(s_resubmit(s, c, 1), 0);
    sched_dispatch(s);
    assert_int_equal(F->n_probes, 2); /* both asked */
    assert_int_equal(F->n_sent, 0);   /* nothing runs yet */
    assert_int_equal(sched_queued(s), 1);
    s_held(s, a, 1, HELD_STATE_NONE);
    sched_dispatch(s);
    assert_int_equal(F->n_sent, 0); /* b has not answered */
    s_held(s, b, 1, HELD_STATE_NONE);
    sched_dispatch(s);
    assert_int_equal(F->n_sent, 1);
    assert_int_equal(sched_stats(s)->resubmitted, 1);
    s_done(&s);
}

static void test_a_resubmitted_job_still_running_elsewhere_is_attached_not_run_again(void **state)
{
    (void)state;
    sched_t *s = s_sched(NULL);
    s_now += 60000;
    client_t *c = s_client(s, "fe");
    executor_t *a = s_executor(s, "a", 2, 2), *b = s_executor(s, "b", 2, 2);
    s_resubmit(s, c, 7);
    s_held(s, b, 7, HELD_STATE_NONE);
    s_held(s, a, 7, HELD_STATE_RUNNING);
    sched_dispatch(s);
    assert_int_equal(F->n_sent, 0);
    assert_int_equal(sched_inflight(s), 1);
    assert_int_equal(a->credit, 2); /* attached: no credit taken */
    uint8_t id[ID_BYTES];
    s_id(id, 7);
    job_t *job = sched_result(s, a, id, 0); /* its ANSWER */
    assert_non_null(job);
    sched_finish(s, &job);
    assert_int_equal(a->credit, 2); /* and none returned */
    assert_int_equal(sched_stats(s)->probe_running, 1);
    s_done(&s);
}

static void test_a_resubmitted_job_that_already_ran_is_answered_lost(void **state)
{
    (void)state;
    sched_t *s = s_sched(NULL);
    s_now += 60000;
    client_t *c = s_client(s, "fe");
    executor_t *a = s_executor(s, "a", 2, 2);
    s_resubmit(s, c, 3);
    s_held(s, a, 3, HELD_STATE_DONE);
    const answer_t *ans = s_answer_for(3);
    assert_non_null(ans);
    assert_int_equal(ans->status, ST_LOST);
    assert_string_equal(ans->type, "BrokerLost");
    assert_int_equal(sched_queued(s), 0);
    s_done(&s);
}

static void test_probes_wait_out_the_start_window_and_ask_executors_that_come_back(void **state)
{
    (void)state;
    sched_t *s = s_sched(NULL); /* just started: executors may still be re-registering */
    client_t *c = s_client(s, "fe");
    s_resubmit(s, c, 1);
    sched_dispatch(s);
    assert_int_equal(F->n_probes, 0);
    executor_t *a = s_executor(s, "a", 1, 1);
    assert_int_equal(F->n_probes, 1); /* asked as it registered */
    s_held(s, a, 1, HELD_STATE_NONE);
    sched_dispatch(s);
    assert_int_equal(F->n_sent, 0); /* the window is not over */
    s_now += 3000;
    sched_housekeep(s);
    sched_dispatch(s);
    assert_int_equal(F->n_sent, 1);
    s_done(&s);
}

static void test_an_executor_lost_while_probed_counts_as_an_answer(void **state)
{
    (void)state;
    sched_t *s = s_sched(NULL);
    s_now += 60000;
    client_t *c = s_client(s, "fe");
    executor_t *a = s_executor(s, "a", 1, 1), *b = s_executor(s, "b", 1, 1);
    s_resubmit(s, c, 1);
    s_held(s, a, 1, HELD_STATE_NONE);
    sched_executor_gone(s, b, "test");
    sched_dispatch(s);
    assert_int_equal(F->n_sent, 1);
    assert_ptr_equal(F->sent[0].ex, a);
    s_done(&s);
}

static void test_want_goes_to_executors_without_credit_while_jobs_wait(void **state)
{
    (void)state;
    sched_t *s = s_sched(NULL);
    client_t *c = s_client(s, "fe");
    executor_t *a = s_executor(s, "a", 4, 0);
    for (unsigned i = 0; i < 3; i++) s_submit(s, c, "t", i);
    sched_dispatch(s);
    assert_int_equal(F->n_wants, 1);
    assert_int_equal(F->wanted, 3);
    sched_dispatch(s);
    assert_int_equal(F->n_wants, 1); /* not again within WANT_EVERY_MS */
    s_now += 200;
    sched_dispatch(s);
    assert_int_equal(F->n_wants, 2);
    sched_executor_credit(s, a, 3);
    sched_dispatch(s);
    assert_int_equal(F->n_sent, 3);
    s_now += 200;
    sched_dispatch(s);
    assert_int_equal(F->n_wants, 2); /* nothing waits any more */
    s_done(&s);
}

static void test_reclaim_gives_back_only_unused_credit(void **state)
{
    (void)state;
    sched_t *s = s_sched(NULL);
    client_t *c = s_client(s, "fe");
    executor_t *a = s_executor(s, "a", 4, 4);
    s_submit(s, c, "t", 1);
    sched_dispatch(s);
    sched_executor_reclaim(s, a, 4);
    assert_int_equal(F->released, 3); /* one went out with the job */
    assert_int_equal(a->credit, 0);
    s_done(&s);
}

int main(void)
{
    log_init("test", LOG_OFF);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_resubmitted_job_runs_only_once_every_executor_said_none),
        cmocka_unit_test(test_a_resubmitted_job_still_running_elsewhere_is_attached_not_run_again),
        cmocka_unit_test(test_a_resubmitted_job_that_already_ran_is_answered_lost),
        cmocka_unit_test(test_probes_wait_out_the_start_window_and_ask_executors_that_come_back),
        cmocka_unit_test(test_an_executor_lost_while_probed_counts_as_an_answer),
        cmocka_unit_test(test_want_goes_to_executors_without_credit_while_jobs_wait),
        cmocka_unit_test(test_reclaim_gives_back_only_unused_credit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
