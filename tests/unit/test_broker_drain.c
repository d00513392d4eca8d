/* tests/unit/test_broker_drain.c — an executor that drains (LEAVING, PROTOCOL.md §3.2), through
 * sched.h with a fake clock and fake I/O: its credit goes back at once and it gets no job any
 * more, while what it runs finishes there and is never requeued; queued work goes to the
 * others; it counts as serving nothing; what it still runs when it finally goes is handled as for
 * any executor that goes. */
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

static void s_leaving(sched_t *s, executor_t *ex, uint32_t grace_ms)
{
    leaving_t m = {.grace_ms = grace_ms, .running = (uint32_t)ex->n_leases};
    snprintf(m.reason, sizeof m.reason, "SIGTERM");
    sched_executor_leaving(s, ex, &m);
}

static service_t *s_basic(sched_t *s)
{
    return services_get(sched_services(s), "python.basic");
}

/* The jobs sent to ex so far. */
static size_t s_sent_to(const executor_t *ex)
{
    size_t n = 0;
    for (size_t i = 0; i < F->n_sent; i++) n += F->sent[i].ex == ex;
    return n;
}

static void test_leaving_gives_back_the_credit_and_no_job_goes_there_any_more(void **state)
{
    (void)state;
    sched_t *s = s_sched(NULL);
    client_t *c = s_client(s, "fe");
    executor_t *a = s_executor(s, "a", 4, 4), *b = s_executor(s, "b", 4, 0);
    assert_int_equal(s_basic(s)->executors, 2);
    s_leaving(s, a, 60000);
    assert_true(a->draining);
    assert_int_equal(a->credit, 0);
    assert_int_equal(F->released, 4); /* answered with RELEASE of all it held */
    assert_int_equal(s_basic(s)->executors, 1);
    assert_int_equal(s_basic(s)->slots, 4);
    for (unsigned i = 0; i < 6; i++) assert_int_equal(s_submit(s, c, "t", i), 0);
    sched_dispatch(s);
    assert_int_equal(F->n_sent, 0); /* b has no credit yet: the jobs wait */
    sched_executor_credit(s, a, 4); /* a late CREDIT from the leaving one counts for nothing */
    assert_int_equal(a->credit, 0);
    sched_dispatch(s);
    assert_int_equal(F->n_sent, 0);
    sched_executor_credit(s, b, 4); /* queued work goes to the other */
    sched_dispatch(s);
    assert_int_equal(F->n_sent, 4);
    assert_int_equal(s_sent_to(b), 4);
    assert_int_equal(s_sent_to(a), 0);
    s_done(&s);
}

static void test_a_draining_executor_is_not_asked_for_credit(void **state)
{
    (void)state;
    sched_t *s = s_sched(NULL);
    client_t *c = s_client(s, "fe");
    executor_t *a = s_executor(s, "a", 4, 0);
    s_executor(s, "b", 4, 0);
    s_leaving(s, a, 60000);
    for (unsigned i = 0; i < 3; i++) s_submit(s, c, "t", i);
    sched_dispatch(s);
    assert_int_equal(F->n_wants, 1); /* b only */
    assert_int_equal(F->wanted, 3);
    s_done(&s);
}

static void test_its_running_jobs_finish_there_and_nothing_is_requeued(void **state)
{
    (void)state;
    sched_t *s = s_sched(NULL);
    client_t *c = s_client(s, "fe");
    executor_t *a = s_executor(s, "a", 2, 2);
    for (unsigned i = 0; i < 2; i++) s_submit(s, c, "t", i);
    sched_dispatch(s);
    assert_int_equal(s_sent_to(a), 2);
    executor_t *b = s_executor(s, "b", 2, 0);
    for (unsigned i = 2; i < 5; i++) s_submit(s, c, "t", i);
    s_leaving(s, a, 60000);
    assert_int_equal(F->released, 0); /* it had no credit left: RELEASE 0 */
    assert_int_equal(a->n_leases, 2);
    /* its RESULTs come back and are forwarded; they return no credit to it */
    assert_int_equal(s_result(s, a, s_num(F->sent[0].id)), 1);
    assert_int_equal(a->credit, 0);
    sched_dispatch(s);
    assert_int_equal(s_sent_to(a), 2);
    assert_int_equal(s_result(s, a, s_num(F->sent[1].id)), 1);
    assert_int_equal(a->n_leases, 0);
    /* then it goes: nothing to requeue, nothing answered */
    sched_executor_gone(s, a, "it said DISCONNECT");
    assert_int_equal(s_basic(s)->count.requeued, 0);
    assert_int_equal(s_basic(s)->count.lost, 0);
    assert_int_equal(F->n_answers, 0);
    assert_int_equal(s_basic(s)->executors, 1); /* counted out once, at LEAVING */
    assert_int_equal(sched_stats(s)->executors_drained, 1);
    assert_int_equal(sched_stats(s)->executors_lost, 1);
    sched_executor_credit(s, b, 2); /* the queued ones run on b */
    sched_dispatch(s);
    assert_int_equal(s_sent_to(b), 2);
    for (size_t i = 2; i < F->n_sent; i++) assert_int_equal(F->sent[i].attempt, 0);
    s_done(&s);
}

static void test_what_outlives_the_grace_is_requeued_as_for_any_executor_that_goes(void **state)
{
    (void)state;
    sched_t *s = s_sched(NULL);
    client_t *c = s_client(s, "fe");
    executor_t *a = s_executor(s, "a", 2, 1);
    s_submit(s, c, "t", 7);
    sched_dispatch(s);
    executor_t *b = s_executor(s, "b", 2, 2);
    s_leaving(s, a, 1000);
    assert_int_equal(F->released, 0);                /* its one credit went with the job */
    sched_executor_gone(s, a, "it said DISCONNECT"); /* the job still ran there */
    assert_int_equal(s_basic(s)->count.requeued, 1);
    sched_dispatch(s);
    assert_int_equal(F->n_sent, 2);
    assert_ptr_equal(F->sent[1].ex, b);
    assert_int_equal(F->sent[1].attempt, 1);
    assert_int_equal(F->n_answers, 0);
    s_done(&s);
}

static void test_a_service_served_only_by_a_draining_executor_waits_its_grace(void **state)
{
    (void)state;
    sched_t *s = s_sched(NULL);
    client_t *c = s_client(s, "fe");
    s_now += 20000; /* past the start-up grace */
    executor_t *a = s_executor(s, "a", 2, 0);
    s_leaving(s, a, 60000);
    assert_int_equal(s_basic(s)->executors, 0);
    assert_int_equal(s_submit(s, c, "t", 1), 0); /* queued: another may come within the grace */
    s_now += 5000;
    sched_executor(s, "a", 1); /* it heartbeats, and so does the client */
    s_client(s, "fe");
    sched_housekeep(s);
    assert_int_equal(F->n_answers, 0);
    executor_t *b = s_executor(s, "b", 2, 2); /* the replacement registers */
    sched_dispatch(s);
    assert_int_equal(F->n_sent, 1);
    assert_ptr_equal(F->sent[0].ex, b);
    /* with none coming, a job is refused once the grace is over */
    s_leaving(s, b, 60000);
    assert_int_equal(s_submit(s, c, "t", 2), 0);
    s_now += 11000;
    sched_executor(s, "a", 1);
    sched_executor(s, "b", 1);
    s_client(s, "fe");
    sched_housekeep(s);
    const answer_t *ans = s_answer_for(2);
    assert_non_null(ans);
    assert_int_equal(ans->status, ST_REJECTED);
    assert_int_equal(s_submit(s, c, "t", 3), -1);
    s_done(&s);
}

static void test_a_second_leaving_changes_nothing(void **state)
{
    (void)state;
    sched_t *s = s_sched(NULL);
    executor_t *a = s_executor(s, "a", 3, 3);
    s_executor(s, "b", 3, 0);
    s_leaving(s, a, 60000);
    s_leaving(s, a, 60000);
    assert_int_equal(F->released, 3);
    assert_int_equal(s_basic(s)->executors, 1);
    assert_int_equal(sched_stats(s)->executors_drained, 1);
    s_done(&s);
}

static void test_a_draining_node_registering_again_is_counted_once(void **state)
{
    (void)state;
    sched_t *s = s_sched(NULL);
    executor_t *a = s_executor(s, "a", 2, 2);
    s_leaving(s, a, 60000);
    assert_int_equal(s_basic(s)->executors, 0);
    /* its connection dropped: READY on a new one, then LEAVING again */
    ready_t r = {0};
    snprintf(r.node, sizeof r.node, "a");
    snprintf(r.services[0], sizeof r.services[0], "python.basic");
    r.n_services = 1;
    r.slots = 2;
    executor_t *again = sched_executor_ready(s, "a2", 2, &r, NULL);
    assert_non_null(again);
    assert_int_equal(s_basic(s)->executors, 1);
    s_leaving(s, again, 60000);
    assert_int_equal(s_basic(s)->executors, 0);
    assert_int_equal(s_basic(s)->slots, 0);
    s_done(&s);
}

int main(void)
{
    log_init("test", LOG_OFF);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_leaving_gives_back_the_credit_and_no_job_goes_there_any_more),
        cmocka_unit_test(test_a_draining_executor_is_not_asked_for_credit),
        cmocka_unit_test(test_its_running_jobs_finish_there_and_nothing_is_requeued),
        cmocka_unit_test(test_what_outlives_the_grace_is_requeued_as_for_any_executor_that_goes),
        cmocka_unit_test(test_a_service_served_only_by_a_draining_executor_waits_its_grace),
        cmocka_unit_test(test_a_second_leaving_changes_nothing),
        cmocka_unit_test(test_a_draining_node_registering_again_is_counted_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
