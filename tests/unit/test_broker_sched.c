/* tests/unit/test_broker_sched.c — the scheduler (broker/sched_*.c) through sched.h, with a
 * fake clock and fake I/O: admission against the caps, dispatch by credit, fairness between
 * tenants, in-flight quotas, leases (requeue once, then `lost`), deadlines, cancels, and the
 * exactly-one-answer rule under a random storm of events. */
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


/* ---- admission and dispatch -------------------------------------------------------------- */

static void test_submit_dispatches_to_executor_with_credit(void **state)
{
    (void)state;
    sched_t *s = s_sched(NULL);
    client_t *c = s_client(s, "fe");
    executor_t *ex = s_executor(s, "n1", 2, 0);
    for (unsigned i = 0; i < 3; i++) assert_int_equal(s_submit(s, c, "t", i), 0);
    sched_dispatch(s);
    assert_int_equal(F->n_sent, 0); /* READY without CREDIT: nothing goes out */
    sched_executor_credit(s, ex, 2);
    sched_dispatch(s);
    assert_int_equal(F->n_sent, 2);
    assert_int_equal(sched_queued(s), 1);
    assert_int_equal(sched_inflight(s), 2);
    assert_int_equal(ex->credit, 0);
    assert_int_equal(s_result(s, ex, s_num(F->sent[0].id)), 1); /* returns one credit */
    sched_dispatch(s);
    assert_int_equal(F->n_sent, 3);
    assert_int_equal(F->sent[2].attempt, 0);
    assert_int_equal(sched_queued(s), 0);
    assert_int_equal(F->n_answers, 0);
    s_done(&s);
}

static void test_dispatch_prefers_most_free_credit(void **state)
{
    (void)state;
    sched_t *s = s_sched(NULL);
    client_t *c = s_client(s, "fe");
    executor_t *a = s_executor(s, "a", 4, 1), *b = s_executor(s, "b", 4, 4);
    for (unsigned i = 0; i < 5; i++) s_submit(s, c, "t", i);
    sched_dispatch(s);
    assert_int_equal(F->n_sent, 5);
    size_t to_b = 0;
    for (size_t i = 0; i < 3; i++) to_b += F->sent[i].ex == b;
    assert_int_equal(to_b, 3); /* b had 4 to a's 1: the first three go to b */
    assert_int_equal(a->credit + b->credit, 0);
    s_done(&s);
}

static void test_unknown_service_rejected_once_start_grace_is_over(void **state)
{
    (void)state;
    sched_t *s = s_sched(NULL);
    client_t *c = s_client(s, "fe");
    sched_refusal_t why;
    /* just started: a known profile waits for executors; an unknown name does not */
    assert_int_equal(s_submit_ex(s, c, "python.basic", "t", 1, 0, 0, &why), 0);
    assert_int_equal(s_submit_ex(s, c, "no.such", "t", 2, 0, 0, &why), -1);
    assert_int_equal(why.reason, REFUSE_NO_EXECUTOR);
    assert_non_null(strstr(why.message, "no.such"));
    s_now += 11000;
    sched_housekeep(s); /* the waiting job is answered when the grace ends */
    const answer_t *a = s_answer_for(1);
    assert_non_null(a);
    assert_int_equal(a->status, ST_REJECTED);
    assert_non_null(strstr(a->message, "no executor serves service 'python.basic'"));
    assert_int_equal(s_submit_ex(s, c, "python.basic", "t", 3, 0, 0, &why), -1);
    assert_int_equal(why.reason, REFUSE_NO_EXECUTOR);
    assert_int_equal(sched_stats(s)->rejected[REFUSE_NO_EXECUTOR], 1);
    s_done(&s);
}

static void test_last_executor_leaving_gives_its_service_a_grace(void **state)
{
    (void)state;
    sched_t *s = s_sched(NULL);
    client_t *c = s_client(s, "fe");
    s_now += 60000; /* long after start */
    executor_t *ex = s_executor(s, "n1", 1, 1);
    sched_executor_gone(s, ex, "test");
    sched_refusal_t why;
    assert_int_equal(s_submit_ex(s, c, "python.basic", "t", 1, 0, 0, &why), 0); /* within grace */
    s_now += 2000;
    s_executor(s, "n2", 1, 1); /* a new executor arrives in time and takes it */
    sched_dispatch(s);
    assert_int_equal(F->n_sent, 1);
    assert_int_equal(F->n_answers, 0);
    s_done(&s);
}

static void test_caps_refuse_at_once_with_the_reason(void **state)
{
    (void)state;
    sched_conf_t conf;
    sched_conf_defaults(&conf);
    conf.max_queue = 10;
    conf.max_queue_per_tenant = 4;
    conf.max_queue_bytes = 1000;
    sched_t *s = s_sched(&conf);
    client_t *c = s_client(s, "fe");
    sched_refusal_t why;
    for (unsigned i = 0; i < 4; i++) assert_int_equal(s_submit(s, c, "a", i), 0);
    assert_int_equal(s_submit_ex(s, c, "python.basic", "a", 4, 0, 0, &why), -1);
    assert_int_equal(why.reason, REFUSE_TENANT_QUEUE_FULL);
    assert_int_equal(why.status, ST_REJECTED);
    assert_non_null(strstr(why.message, "tenant 'a'"));
    for (unsigned i = 0; i < 4; i++) assert_int_equal(s_submit(s, c, "b", 10 + i), 0);
    for (unsigned i = 0; i < 2; i++) assert_int_equal(s_submit(s, c, "c", 20 + i), 0);
    assert_int_equal(s_submit_ex(s, c, "python.basic", "d", 30, 0, 0, &why), -1);
    assert_int_equal(why.reason, REFUSE_QUEUE_FULL);
    assert_non_null(strstr(why.message, "queue is full"));
    assert_int_equal(sched_queued(s), 10);
    assert_int_equal(sched_queued_bytes(s), 70);
    s_done(&s);

    sched_conf_defaults(&conf);
    conf.max_queue_bytes = 10; /* one 7-byte JobSpec fits, two do not */
    s = s_sched(&conf);
    c = s_client(s, "fe");
    assert_int_equal(s_submit(s, c, "a", 1), 0);
    assert_int_equal(s_submit_ex(s, c, "python.basic", "a", 2, 0, 0, &why), -1);
    assert_int_equal(why.reason, REFUSE_QUEUE_BYTES);
    s_done(&s);
}

static void test_duplicate_id_and_past_deadline_refused(void **state)
{
    (void)state;
    sched_t *s = s_sched(NULL);
    client_t *c = s_client(s, "fe");
    sched_refusal_t why;
    assert_int_equal(s_submit(s, c, "a", 1), 0);
    assert_int_equal(s_submit_ex(s, c, "python.basic", "b", 1, 0, 0, &why), -1);
    assert_int_equal(why.reason, REFUSE_DUPLICATE);
    assert_int_equal(s_submit_ex(s, c, "python.basic", "a", 2, s_wall() - 1, 0, &why), -1);
    assert_int_equal(why.reason, REFUSE_EXPIRED);
    assert_int_equal(why.status, ST_TIMEOUT);
    assert_int_equal(sched_jobs(s), 1);
    s_done(&s);
}

/* ---- fairness and quotas ----------------------------------------------------------------- */

static void test_small_tenant_overtakes_flooding_tenants_backlog(void **state)
{
    (void)state;
    sched_t *s = s_sched(NULL);
    client_t *c = s_client(s, "fe");
    executor_t *ex = s_executor(s, "n1", 4, 4);
    for (unsigned i = 0; i < 2000; i++) assert_int_equal(s_submit(s, c, "A", i), 0);
    sched_dispatch(s);
    for (unsigned i = 0; i < 20; i++) assert_int_equal(s_submit(s, c, "B", 100000 + i), 0);
    /* The executor finishes jobs in the order they were sent, one at a time. */
    size_t done = 0, last_b = 0, a_done_when_b_finished = 0, b_done = 0;
    while (done < F->n_sent) {
        unsigned n = s_num(F->sent[done].id);
        assert_int_equal(s_result(s, ex, n), 1);
        done++;
        if (n >= 100000) {
            b_done++;
            last_b = done;
            if (b_done == 20) a_done_when_b_finished = done - 20;
        }
        sched_dispatch(s);
    }
    assert_int_equal(done, 2020);
    assert_int_equal(b_done, 20);
    /* B's last job finishes within 4 (in flight) + 2 × 20 completions of its submission,
     * while nearly all of A's 2,000 still wait. */
    assert_true(last_b <= 4 + 2 * 20);
    assert_true(a_done_when_b_finished <= 4 + 20);
    s_done(&s);
}

static void test_tenant_at_inflight_quota_waits_while_others_run(void **state)
{
    (void)state;
    sched_conf_t conf;
    sched_conf_defaults(&conf);
    conf.max_queue_per_tenant = 3;
    sched_t *s = s_sched(&conf);
    client_t *c = s_client(s, "fe");
    executor_t *ex = s_executor(s, "n1", 8, 8);
    sched_refusal_t why;
    for (unsigned i = 0; i < 2; i++)
        assert_int_equal(s_submit_ex(s, c, "python.basic", "q", i, 0, 2, &why), 0);
    for (unsigned i = 0; i < 3; i++) assert_int_equal(s_submit(s, c, "free", 100 + i), 0);
    sched_dispatch(s);
    assert_int_equal(F->n_sent, 5); /* q: 2 (its quota), free: 3 */
    for (unsigned i = 2; i < 5; i++)
        assert_int_equal(s_submit_ex(s, c, "python.basic", "q", i, 0, 2, &why), 0);
    sched_dispatch(s);
    assert_int_equal(F->n_sent, 5); /* q waits at its quota though credit is left */
    assert_int_equal(sched_tenant(s, "q")->inflight, 2);
    assert_int_equal(sched_tenant(s, "q")->queued, 3);
    /* over its quota with a full queue: refused, and the reason says why */
    assert_int_equal(s_submit_ex(s, c, "python.basic", "q", 9, 0, 2, &why), -1);
    assert_int_equal(why.reason, REFUSE_INFLIGHT_QUOTA);
    assert_non_null(strstr(why.message, "in-flight quota"));
    assert_int_equal(ex->credit, 3); /* credit left, but q may not use it */
    assert_int_equal(s_result(s, ex, 0), 1);
    sched_dispatch(s);
    assert_int_equal(F->n_sent, 6);
    assert_int_equal(s_num(F->sent[5].id), 2);
    assert_int_equal(sched_tenant(s, "q")->inflight, 2);
    s_done(&s);
}

static void test_reserve_goes_only_to_tenants_with_nothing_running(void **state)
{
    (void)state;
    sched_t *s = s_sched(NULL);
    client_t *c = s_client(s, "fe");
    executor_t *ex = s_executor_reserve(s, "n1", 3, 1, 3); /* 2 slots and 1 reserved */
    for (unsigned i = 0; i < 10; i++) assert_int_equal(s_submit(s, c, "flood", i), 0);
    sched_dispatch(s);
    assert_int_equal(F->n_sent, 2); /* the flood fills the open slots, not the reserve */
    assert_int_equal(ex->credit, 1);
    assert_int_equal(F->n_wants, 1); /* credit the reserve keeps counts as none */
    /* a tenant with nothing running goes at once, on the reserve, past the flood's turn */
    assert_int_equal(s_submit(s, c, "quiet", 100), 0);
    sched_dispatch(s);
    assert_int_equal(F->n_sent, 3);
    assert_int_equal(s_num(F->sent[2].id), 100);
    assert_int_equal(ex->reserve_used, 1);
    assert_int_equal(sched_stats(s)->reserve_dispatched, 1);
    /* ...its second job, while the first runs, is an ordinary one: it waits for a slot */
    assert_int_equal(s_submit(s, c, "quiet", 101), 0);
    sched_dispatch(s);
    assert_int_equal(F->n_sent, 3);
    /* flood jobs end: their slots are open again, to the round — the flood's turn, then quiet's */
    assert_int_equal(s_result(s, ex, s_num(F->sent[0].id)), 1);
    sched_dispatch(s);
    assert_int_equal(F->n_sent, 4);
    assert_true(s_num(F->sent[3].id) < 10);
    assert_int_equal(s_result(s, ex, s_num(F->sent[1].id)), 1);
    sched_dispatch(s);
    assert_int_equal(F->n_sent, 5);
    assert_int_equal(s_num(F->sent[4].id), 101);
    /* quiet's reserved job ends: the reserve is kept again, the flood does not get it */
    assert_int_equal(s_result(s, ex, 100), 1);
    sched_dispatch(s);
    assert_int_equal(F->n_sent, 5);
    assert_int_equal(ex->reserve_used, 0);
    assert_int_equal(ex->credit, 1);
    /* its other job ends: an open slot, for the flood */
    assert_int_equal(s_result(s, ex, 101), 1);
    sched_dispatch(s);
    assert_int_equal(F->n_sent, 6);
    assert_true(s_num(F->sent[5].id) < 10);
    assert_int_equal(sched_stats(s)->reserve_dispatched, 1);
    s_done(&s);
}

static void test_reserved_lease_lost_with_its_executor_returns_the_reserve(void **state)
{
    (void)state;
    sched_t *s = s_sched(NULL);
    client_t *c = s_client(s, "fe");
    executor_t *ex = s_executor_reserve(s, "n1", 2, 1, 2);
    assert_int_equal(s_submit(s, c, "a", 1), 0);
    assert_int_equal(s_submit(s, c, "b", 2), 0);
    sched_dispatch(s);
    assert_int_equal(F->n_sent, 2); /* a: the open slot, b: the reserve */
    assert_int_equal(ex->reserve_used, 1);
    /* re-registering ends its leases: both jobs go back to the queue, the reserve is whole */
    ex = s_executor_reserve(s, "n1", 2, 1, 0);
    assert_int_equal(ex->reserve_used, 0);
    assert_int_equal(sched_queued(s), 2);
    sched_executor_credit(s, ex, 2);
    sched_dispatch(s);
    assert_int_equal(F->n_sent, 4); /* each tenant had nothing running: both run again */
    assert_int_equal(ex->reserve_used, 1);
    s_done(&s);
}

/* ---- leases ------------------------------------------------------------------------------ */

static void test_lost_executor_jobs_requeued_once_then_lost(void **state)
{
    (void)state;
    sched_t *s = s_sched(NULL);
    client_t *c = s_client(s, "fe");
    executor_t *a = s_executor(s, "a", 2, 2);
    s_submit(s, c, "t", 1);
    s_submit(s, c, "t", 2);
    s_submit(s, c, "t", 3); /* waits behind them */
    sched_dispatch(s);
    assert_int_equal(F->n_sent, 2);
    sched_executor_gone(s, a, "test");
    assert_int_equal(sched_queued(s), 3);
    assert_int_equal(F->n_answers, 0);
    executor_t *b = s_executor(s, "b", 1, 1);
    sched_dispatch(s);
    assert_int_equal(F->n_sent, 3);
    assert_int_equal(s_num(F->sent[2].id), 1); /* the oldest requeued job goes first */
    assert_int_equal(F->sent[2].attempt, 1);
    s_now += 3001; /* b falls silent; the client does not */
    s_client(s, "fe");
    sched_housekeep(s);
    const answer_t *ans = s_answer_for(1);
    assert_non_null(ans);
    assert_int_equal(ans->status, ST_LOST);
    assert_int_equal(F->n_answers, 1);
    assert_int_equal(sched_queued(s), 2); /* 2 (requeued once) and 3 (never ran) */
    (void)b;
    s_done(&s);
}

static void test_unreachable_executor_does_not_cost_an_attempt(void **state)
{
    (void)state;
    sched_t *s = s_sched(NULL);
    client_t *c = s_client(s, "fe");
    executor_t *a = s_executor(s, "a", 4, 4);
    F->unreachable = a;
    s_submit(s, c, "t", 1);
    sched_dispatch(s);
    assert_int_equal(executors_count(sched_executors(s)), 0);
    assert_int_equal(sched_queued(s), 1);
    F->unreachable = NULL;
    s_executor(s, "b", 1, 1);
    sched_dispatch(s);
    assert_int_equal(F->n_sent, 1);
    assert_int_equal(F->sent[0].attempt, 0);
    s_done(&s);
}

static void test_late_result_from_first_executor_wins(void **state)
{
    (void)state;
    sched_t *s = s_sched(NULL);
    client_t *c = s_client(s, "fe");
    executor_t *a = s_executor(s, "a", 1, 1);
    s_submit(s, c, "t", 1);
    sched_dispatch(s);
    sched_executor_gone(s, a, "test");
    executor_t *b = s_executor(s, "b", 1, 1);
    sched_dispatch(s); /* the retry runs on b */
    /* a comes back on a new connection and delivers the first run's result */
    executor_t *a2 = s_executor(s, "a", 1, 0);
    assert_int_equal(s_result(s, a2, 1), 1);
    assert_int_equal(a2->credit, 1);
    assert_int_equal(F->n_cancels, 1); /* b's copy is cancelled */
    assert_ptr_equal(F->cancels[0].ex, b);
    assert_int_equal(s_result(s, b, 1), 0); /* b's answer is stale, but returns its credit */
    assert_int_equal(b->credit, 1);
    assert_int_equal(sched_stats(s)->stale_results, 1);
    assert_int_equal(sched_jobs(s), 0);
    s_done(&s);
}

static void test_reregistration_ends_leases(void **state)
{
    (void)state;
    sched_t *s = s_sched(NULL);
    client_t *c = s_client(s, "fe");
    executor_t *a = s_executor(s, "a", 1, 1);
    s_submit(s, c, "t", 1);
    sched_dispatch(s);
    (void)a;
    a = s_executor(s, "a", 1, 1); /* READY again on the same connection */
    sched_dispatch(s);
    assert_int_equal(F->n_sent, 2);
    assert_int_equal(F->sent[1].attempt, 1);
    s_done(&s);
}

/* ---- deadlines and cancels --------------------------------------------------------------- */

static void test_queued_job_past_deadline_answered_timeout(void **state)
{
    (void)state;
    sched_t *s = s_sched(NULL);
    client_t *c = s_client(s, "fe");
    s_submit_ex(s, c, "python.basic", "t", 1, s_wall() + 500, 0, NULL);
    s_submit_ex(s, c, "python.basic", "t", 2, s_wall() + 5000, 0, NULL);
    assert_int_equal(sched_next_deadline_ms(s), 500);
    s_now += 499;
    sched_expire(s);
    assert_int_equal(F->n_answers, 0);
    s_now += 1;
    sched_expire(s);
    assert_int_equal(F->n_answers, 1);
    assert_int_equal(F->answers[0].status, ST_TIMEOUT);
    assert_int_equal(s_num(F->answers[0].id), 1);
    assert_int_equal(sched_queued(s), 1);
    s_done(&s);
}

static void test_leased_job_past_deadline_and_grace_answered_and_cancelled(void **state)
{
    (void)state;
    sched_t *s = s_sched(NULL);
    client_t *c = s_client(s, "fe");
    executor_t *ex = s_executor(s, "n1", 1, 1);
    s_submit_ex(s, c, "python.basic", "t", 1, s_wall() + 1000, 0, NULL);
    sched_dispatch(s);
    s_now += 1000 + 2999;
    sched_expire(s);
    assert_int_equal(F->n_answers, 0); /* the executor gets the lease grace to answer */
    s_now += 1;
    sched_expire(s);
    assert_int_equal(F->n_answers, 1);
    assert_int_equal(F->answers[0].status, ST_TIMEOUT);
    assert_int_equal(F->n_cancels, 1);
    assert_int_equal(ex->credit, 0); /* the slot stays busy until the executor answers */
    assert_int_equal(s_result(s, ex, 1), 0);
    assert_int_equal(ex->credit, 1);
    s_done(&s);
}

static void test_cancel_only_by_submitter(void **state)
{
    (void)state;
    sched_t *s = s_sched(NULL);
    client_t *c = s_client(s, "fe"), *other = s_client(s, "other");
    executor_t *ex = s_executor(s, "n1", 1, 1);
    s_submit(s, c, "t", 1);
    s_submit(s, c, "t", 2);
    sched_dispatch(s); /* 1 runs, 2 waits */
    uint8_t id[ID_BYTES];
    s_id(id, 2);
    assert_int_equal(sched_cancel(s, other, id), -1);
    assert_int_equal(sched_cancel(s, c, id), 0);
    assert_int_equal(F->n_answers, 1);
    assert_int_equal(F->answers[0].status, ST_CANCELLED);
    s_id(id, 1);
    assert_int_equal(sched_cancel(s, c, id), 0);
    assert_int_equal(F->n_cancels, 1); /* forwarded; the executor answers */
    assert_ptr_equal(F->cancels[0].ex, ex);
    assert_int_equal(sched_cancel(s, c, id), 0);
    assert_int_equal(F->n_cancels, 1); /* once */
    sched_executor_gone(s, ex, "test");
    assert_int_equal(F->n_answers, 2); /* cancelled, not requeued */
    assert_int_equal(F->answers[1].status, ST_CANCELLED);
    assert_int_equal(sched_jobs(s), 0);
    s_done(&s);
}

static void test_silent_client_jobs_dropped(void **state)
{
    (void)state;
    sched_t *s = s_sched(NULL);
    client_t *c = s_client(s, "fe");
    executor_t *ex = s_executor(s, "n1", 1, 1);
    s_submit(s, c, "t", 1);
    s_submit(s, c, "t", 2);
    sched_dispatch(s);
    s_now += 3001;
    sched_executor(s, "n1", 2); /* the executor keeps talking */
    sched_housekeep(s);
    assert_int_equal(sched_jobs(s), 0);
    assert_int_equal(F->n_cancels, 1);
    assert_ptr_equal(F->cancels[0].ex, ex);
    assert_int_equal(F->n_answers, 2); /* answered in case it is merely slow */
    s_now += 3001;
    sched_executor(s, "n1", 2);
    sched_housekeep(s);
    assert_int_equal(sched_clients(s), 0);
    s_done(&s);
}

static void test_shutdown_answers_everything_lost(void **state)
{
    (void)state;
    sched_t *s = s_sched(NULL);
    client_t *c = s_client(s, "fe");
    s_executor(s, "n1", 1, 1);
    for (unsigned i = 0; i < 3; i++) s_submit(s, c, "t", i);
    sched_dispatch(s);
    sched_shutdown(s, NULL);
    assert_int_equal(F->n_answers, 3);
    for (size_t i = 0; i < 3; i++) assert_int_equal(F->answers[i].status, ST_LOST);
    s_done(&s);
}

static void test_unreachable_client_during_answers_loses_the_rest_quietly(void **state)
{
    (void)state;
    sched_t *s = s_sched(NULL);
    client_t *c = s_client(s, "fe");
    s_executor(s, "n1", 2, 2);
    for (unsigned i = 0; i < 5; i++) s_submit(s, c, "t", i);
    sched_dispatch(s);
    F->gone_on_answer = 1; /* the first answer fails: the other four are not even tried */
    sched_shutdown(s, NULL);
    assert_int_equal(F->n_answers, 1);
    assert_int_equal(sched_jobs(s), 0);
    assert_int_equal(sched_inflight(s), 0);
    s_done(&s);
}

static void test_unreachable_client_jobs_dropped_at_housekeeping(void **state)
{
    (void)state;
    sched_t *s = s_sched(NULL);
    client_t *c = s_client(s, "fe");
    executor_t *ex = s_executor(s, "n1", 1, 1);
    s_submit(s, c, "t", 1);
    s_submit(s, c, "t", 2);
    sched_dispatch(s);
    c->gone = 1; /* a send to it failed with EHOSTUNREACH */
    sched_housekeep(s);
    assert_int_equal(sched_jobs(s), 0);
    assert_int_equal(F->n_answers, 0); /* nothing is sent to a client that is gone */
    assert_int_equal(F->n_cancels, 1);
    assert_ptr_equal(F->cancels[0].ex, ex);
    s_done(&s);
}

/* ---- exactly one answer ------------------------------------------------------------------ */

static void test_every_admitted_job_answered_exactly_once_under_chaos(void **state)
{
    (void)state;
    enum { JOBS = 3000 };
    static int answers[JOBS], results[JOBS], admitted[JOBS];
    memset(answers, 0, sizeof answers);
    memset(results, 0, sizeof results);
    memset(admitted, 0, sizeof admitted);
    s_results = results;
    srandom(42);
    sched_conf_t conf;
    sched_conf_defaults(&conf);
    conf.max_queue = 400;
    conf.max_queue_per_tenant = 150;
    sched_t *s = s_sched(&conf);
    const char *clients[3] = {"c0", "c1", "c2"}; /* looked up per message, as the reactor does */
    executor_t *ex[4] = {0};
    char names[4][8] = {"e0", "e1", "e2", "e3"};
    size_t seen_answers = 0;
    unsigned next = 0;
    for (int step = 0; step < 60000 || sched_jobs(s); step++) {
        if (step > 200000) fail_msg("did not drain");
        int r = (int)(random() % 100);
        if (r < 30 && next < JOBS) {
            const char *tenants[] = {"a", "b", "c", "d"};
            uint64_t deadline = random() % 4 ? 0 : s_wall() + 50 + (uint64_t)(random() % 3000);
            int rc =
                s_submit_ex(s, s_client(s, clients[random() % 3]), "python.basic",
                            tenants[random() % 4], next, deadline, (uint32_t)(random() % 3), NULL);
            admitted[next++] = rc == 0;
        } else if (r < 60) {
            /* an executor answers one of its leases (or a stale one) */
            int k = (int)(random() % 4);
            if (ex[k] && ex[k]->leases) {
                job_t *j = ex[k]->leases;
                if (random() % 2 && j->next) j = j->next;
                s_result(s, ex[k], s_num(j->id));
            } else if (ex[k] && next) {
                s_result(s, ex[k], (unsigned)(random() % next));
            }
        } else if (r < 64) {
            int k = (int)(random() % 4);
            if (ex[k]) {
                sched_executor_gone(s, ex[k], "chaos");
                ex[k] = NULL;
            } else {
                uint32_t slots = 1 + (uint32_t)(random() % 8);
                ex[k] = s_executor_reserve(s, names[k], slots, (uint32_t)(random() % 2), 8);
            }
        } else if (r < 70 && next) {
            uint8_t id[ID_BYTES];
            s_id(id, (unsigned)(random() % next));
            sched_cancel(s, s_client(s, clients[random() % 3]), id);
        } else if (r < 72) {
            /* some executor falls silent, the rest keep talking */
            for (int k = 0; k < 4; k++)
                if (ex[k] && random() % 4) sched_executor(s, names[k], 2);
            s_now += 1100;
            sched_client(s, "c0", 2, 1);
            sched_client(s, "c1", 2, 1);
            if (random() % 3) sched_client(s, "c2", 2, 1); /* c2 sometimes falls silent */
            sched_housekeep(s);
            for (int k = 0; k < 4; k++)
                if (ex[k] && !executors_get(sched_executors(s), names[k], 2)) ex[k] = NULL;
        } else {
            s_now += (uint64_t)(random() % 20);
            sched_expire(s);
        }
        if (step >= 60000) { /* drain: make sure some executor exists */
            if (!ex[0]) ex[0] = s_executor(s, names[0], 8, 8);
            sched_executor(s, names[0], 2);
        }
        sched_dispatch(s);
        for (; seen_answers < F->n_answers; seen_answers++)
            answers[s_num(F->answers[seen_answers].id)]++;
    }
    /* Every admitted job left exactly once, through an answer of the broker's or a RESULT;
     * a refused one never entered. (c2's abandoned jobs count: the broker answers them in
     * case c2 is merely slow.) */
    s_results = NULL;
    size_t n_admitted = 0, n_results = 0;
    for (unsigned i = 0; i < next; i++) {
        assert_int_equal(answers[i] + results[i], admitted[i]);
        n_admitted += (size_t)admitted[i];
        n_results += (size_t)results[i];
    }
    assert_true(n_admitted > 1000);
    assert_true(n_results > 500);
    assert_int_equal(sched_jobs(s), 0);
    assert_int_equal(sched_queued(s), 0);
    assert_int_equal(sched_inflight(s), 0);
    assert_int_equal(sched_tenants(s), 0);
    for (int k = 0; k < 4; k++)
        if (ex[k]) assert_int_equal(ex[k]->reserve_used, 0); /* every reserved lease gave it back */
    assert_true(sched_stats(s)->reserve_dispatched > 0);
    s_done(&s);
}

int main(void)
{
    log_init("test", LOG_OFF);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_submit_dispatches_to_executor_with_credit),
        cmocka_unit_test(test_dispatch_prefers_most_free_credit),
        cmocka_unit_test(test_unknown_service_rejected_once_start_grace_is_over),
        cmocka_unit_test(test_last_executor_leaving_gives_its_service_a_grace),
        cmocka_unit_test(test_caps_refuse_at_once_with_the_reason),
        cmocka_unit_test(test_duplicate_id_and_past_deadline_refused),
        cmocka_unit_test(test_small_tenant_overtakes_flooding_tenants_backlog),
        cmocka_unit_test(test_tenant_at_inflight_quota_waits_while_others_run),
        cmocka_unit_test(test_reserve_goes_only_to_tenants_with_nothing_running),
        cmocka_unit_test(test_reserved_lease_lost_with_its_executor_returns_the_reserve),
        cmocka_unit_test(test_lost_executor_jobs_requeued_once_then_lost),
        cmocka_unit_test(test_unreachable_executor_does_not_cost_an_attempt),
        cmocka_unit_test(test_late_result_from_first_executor_wins),
        cmocka_unit_test(test_reregistration_ends_leases),
        cmocka_unit_test(test_queued_job_past_deadline_answered_timeout),
        cmocka_unit_test(test_leased_job_past_deadline_and_grace_answered_and_cancelled),
        cmocka_unit_test(test_cancel_only_by_submitter),
        cmocka_unit_test(test_silent_client_jobs_dropped),
        cmocka_unit_test(test_shutdown_answers_everything_lost),
        cmocka_unit_test(test_unreachable_client_during_answers_loses_the_rest_quietly),
        cmocka_unit_test(test_unreachable_client_jobs_dropped_at_housekeeping),
        cmocka_unit_test(test_every_admitted_job_answered_exactly_once_under_chaos),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
