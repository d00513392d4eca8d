/* tests/unit/test_broker_sessions.c — session affinity in the scheduler
 * (broker/sched/sched_sessions.c) through sched.h, on the fake clock and I/O of sched_fakes.h: a
 * session's jobs go to its executor one at a time, a busy session holds back no one else, new
 * sessions go where memory is freest, the map is rebuilt from READY after a restart, and a session
 * whose executor went away is answered `lost` — never sent anywhere else. */
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

static void s_sid(uint8_t id[ID_BYTES], unsigned n)
{
    memset(id, 0xee, ID_BYTES);
    memcpy(id, &n, sizeof n);
}

/* An executor that keeps sessions: READY lists those it holds (n of them, numbered from
 * first), its free memory and its room. */
static executor_t *s_session_executor(sched_t *s, const char *node, uint32_t credit,
                                      uint32_t mem_free_mb, unsigned first, unsigned n)
{
    uint8_t ids[8][ID_BYTES];
    for (unsigned i = 0; i < n; i++) s_sid(ids[i], first + i);
    ready_t in = {0};
    snprintf(in.node, sizeof in.node, "%s", node);
    snprintf(in.services[0], sizeof in.services[0], "python.basic");
    in.n_services = 1;
    in.slots = 4;
    in.mem_free_mb = mem_free_mb;
    in.max_sessions = 64;
    buf_t b;
    buf_init(&b);
    ready_encode(&in, &b, (const uint8_t(*)[ID_BYTES])ids, n);
    ready_t r;
    char err[128];
    assert_int_equal(ready_decode(b.data, b.len, &r, err, sizeof err), 0);
    executor_t *ex = sched_executor_ready(s, node, strlen(node), &r, NULL);
    buf_free(&b);
    assert_non_null(ex);
    if (credit) sched_executor_credit(s, ex, credit);
    return ex;
}

/* SESSIONS from ex: session up_n began (0: none), down_n ended with reason. */
static void s_sessions(sched_t *s, executor_t *ex, unsigned up_n, unsigned down_n,
                       const char *reason)
{
    uint8_t up[1][ID_BYTES], down[1][ID_BYTES];
    s_sid(up[0], up_n);
    s_sid(down[0], down_n);
    buf_t b;
    buf_init(&b);
    sessions_encode(1000, 1, (const uint8_t(*)[ID_BYTES])up, up_n ? 1 : 0,
                    (const uint8_t(*)[ID_BYTES])down, &reason, down_n ? 1 : 0, &b);
    sessions_msg_t m;
    char err[128];
    assert_int_equal(sessions_decode(b.data, b.len, &m, err, sizeof err), 0);
    sched_executor_sessions(s, ex, &m);
    buf_free(&b);
}

/* Job n on session sid (new: it makes session sid instead). */
static int s_cell(sched_t *s, client_t *c, const char *tenant, unsigned n, unsigned sid, int new,
                  sched_refusal_t *why)
{
    uint8_t id[ID_BYTES];
    s_id(id, n);
    route_t r = {0};
    snprintf(r.tenant, sizeof r.tenant, "%s", tenant);
    if (new) {
        r.has_new_session = 1;
        s_sid(r.new_session, sid);
    } else {
        r.has_session = 1;
        s_sid(r.session, sid);
    }
    job_t *job = job_new_copy(id, &r, "jobspec", 7);
    sched_refusal_t local;
    int rc = sched_submit(s, c, "python.basic", job, why ? why : &local);
    if (rc < 0) job_destroy(&job);
    return rc;
}

static size_t s_sent_to(const executor_t *ex)
{
    size_t n = 0;
    for (size_t i = 0; i < F->n_sent; i++) n += F->sent[i].ex == ex;
    return n;
}

static void test_a_sessions_jobs_go_to_its_executor_one_at_a_time(void **state)
{
    (void)state;
    sched_t *s = s_sched(NULL);
    client_t *c = s_client(s, "fe");
    executor_t *a = s_session_executor(s, "a", 4, 8000, 0, 0);
    executor_t *b = s_session_executor(s, "b", 2, 100, 7, 1); /* holds session 7 */
    for (unsigned i = 1; i <= 3; i++) assert_int_equal(s_cell(s, c, "t", i, 7, 0, NULL), 0);
    sched_dispatch(s);
    assert_int_equal(F->n_sent, 1); /* one at a time, though b has two credits */
    assert_ptr_equal(F->sent[0].ex, b);
    assert_int_equal(s_num(F->sent[0].id), 1);
    assert_int_equal(s_result(s, b, 1), 1);
    sched_dispatch(s);
    assert_int_equal(F->n_sent, 2);
    assert_int_equal(s_num(F->sent[1].id), 2); /* in order */
    assert_int_equal(s_sent_to(a), 0);         /* never anywhere else */
    s_result(s, b, 2);
    sched_dispatch(s);
    s_result(s, b, 3);
    assert_int_equal(sched_queued(s) + sched_inflight(s), 0);
    s_done(&s);
}

static void test_a_busy_session_holds_back_no_other_tenant(void **state)
{
    (void)state;
    sched_t *s = s_sched(NULL);
    client_t *c = s_client(s, "fe");
    executor_t *ex = s_session_executor(s, "a", 2, 1000, 7, 1);
    for (unsigned i = 1; i <= 5; i++) s_cell(s, c, "flood", i, 7, 0, NULL);
    assert_int_equal(s_submit(s, c, "other", 100), 0);
    sched_dispatch(s);
    assert_int_equal(F->n_sent, 2);
    assert_non_null(sched_tenant(s, "other"));
    int other_ran = 0;
    for (size_t i = 0; i < F->n_sent; i++) other_ran |= s_num(F->sent[i].id) == 100;
    assert_true(other_ran); /* the second credit went to the other tenant's job */
    (void)ex;
    s_done(&s);
}

static void test_pinned_and_service_jobs_take_turns(void **state)
{
    (void)state;
    sched_t *s = s_sched(NULL);
    client_t *c = s_client(s, "fe");
    executor_t *ex = s_session_executor(s, "a", 0, 1000, 1, 4); /* sessions 1..4 */
    for (unsigned i = 1; i <= 4; i++) s_cell(s, c, "t", i, i, 0, NULL);
    for (unsigned i = 10; i < 14; i++) s_submit(s, c, "u", i);
    for (int k = 0; k < 4; k++) {
        sched_executor_credit(s, ex, 1);
        sched_dispatch(s);
    }
    size_t cells = 0;
    for (size_t i = 0; i < F->n_sent; i++) cells += s_num(F->sent[i].id) < 10;
    assert_int_equal(F->n_sent, 4);
    assert_int_equal(cells, 2); /* one credit each, alternately */
    s_done(&s);
}

static void test_new_sessions_go_where_memory_is_freest(void **state)
{
    (void)state;
    sched_t *s = s_sched(NULL);
    client_t *c = s_client(s, "fe");
    executor_t *small = s_session_executor(s, "small", 4, 900, 0, 0);
    executor_t *big = s_session_executor(s, "big", 1, 7000, 0, 0);
    s_cell(s, c, "t", 1, 50, 1, NULL);
    sched_dispatch(s);
    assert_int_equal(F->n_sent, 1);
    assert_ptr_equal(F->sent[0].ex, big); /* more memory beats more credit */
    (void)small;
    s_done(&s);
}

static void test_an_unknown_session_waits_for_its_executor_after_a_restart(void **state)
{
    (void)state;
    sched_t *s = s_sched(NULL); /* just started */
    client_t *c = s_client(s, "fe");
    assert_int_equal(s_cell(s, c, "t", 1, 9, 0, NULL), 0); /* waits: nobody said where 9 is */
    sched_dispatch(s);
    assert_int_equal(F->n_sent, 0);
    executor_t *ex = s_session_executor(s, "a", 1, 1000, 9, 1); /* READY names it */
    sched_dispatch(s);
    assert_int_equal(F->n_sent, 1);
    assert_ptr_equal(F->sent[0].ex, ex);
    /* past the grace, a session no executor named is refused at once */
    s_now += 11000;
    sched_refusal_t why;
    assert_int_equal(s_cell(s, c, "t", 2, 77, 0, &why), -1);
    assert_int_equal(why.reason, REFUSE_SESSION_UNKNOWN);
    s_done(&s);
}

static void test_executor_loss_answers_its_sessions_jobs_lost(void **state)
{
    (void)state;
    sched_t *s = s_sched(NULL);
    client_t *c = s_client(s, "fe");
    s_now += 60000;
    executor_t *a = s_session_executor(s, "a", 1, 1000, 5, 1);
    executor_t *b = s_session_executor(s, "b", 4, 9000, 0, 0);
    s_cell(s, c, "t", 1, 5, 0, NULL);
    s_cell(s, c, "t", 2, 5, 0, NULL);
    sched_dispatch(s);
    sched_executor_gone(s, a, "test");
    const answer_t *ans = s_answer_for(1); /* the running one: at once */
    assert_non_null(ans);
    assert_int_equal(ans->status, ST_LOST);
    assert_non_null(strstr(ans->message, "session lost: its executor went away"));
    sched_dispatch(s);
    assert_int_equal(s_sent_to(b), 0); /* never requeued elsewhere */
    s_now += 11000;
    sched_housekeep(s); /* the waiting one, once the node did not come back */
    assert_non_null(s_answer_for(2));
    assert_int_equal(s_answer_for(2)->status, ST_LOST);
    sched_refusal_t why; /* and a later one, from memory */
    assert_int_equal(s_cell(s, c, "t", 3, 5, 0, &why), -1);
    assert_int_equal(why.reason, REFUSE_SESSION_LOST);
    assert_int_equal(why.status, ST_LOST);
    s_done(&s);
}

static void test_a_node_that_comes_back_keeps_its_sessions(void **state)
{
    (void)state;
    sched_t *s = s_sched(NULL);
    client_t *c = s_client(s, "fe");
    s_now += 60000;
    executor_t *a = s_session_executor(s, "a", 1, 1000, 5, 1);
    sched_executor_gone(s, a, "heartbeat expired");
    s_cell(s, c, "t", 1, 5, 0, NULL);              /* waits: session 5 has no executor now */
    a = s_session_executor(s, "a", 1, 1000, 5, 1); /* the node re-registers, listing it */
    sched_dispatch(s);
    assert_int_equal(F->n_sent, 1);
    assert_ptr_equal(F->sent[0].ex, a);
    s_done(&s);
}

static void test_an_ended_session_answers_its_waiting_jobs_with_the_reason(void **state)
{
    (void)state;
    sched_t *s = s_sched(NULL);
    client_t *c = s_client(s, "fe");
    executor_t *ex = s_session_executor(s, "a", 1, 1000, 5, 1);
    s_cell(s, c, "t", 1, 5, 0, NULL);
    s_cell(s, c, "t", 2, 5, 0, NULL);
    sched_dispatch(s);
    s_sessions(s, ex, 0, 5, "session expired after 600 s idle");
    const answer_t *ans = s_answer_for(2);
    assert_non_null(ans);
    assert_int_equal(ans->status, ST_REJECTED);
    assert_string_equal(ans->type, "SessionEnded");
    assert_string_equal(ans->message, "session expired after 600 s idle");
    assert_int_equal(s_result(s, ex, 1), 1); /* the running one still gets its RESULT */
    assert_int_equal(sched_sessions(s), 0);
    s_done(&s);
}

static void test_an_ended_session_is_answered_at_once_and_only_to_its_tenant(void **state)
{
    (void)state;
    sched_t *s = s_sched(NULL); /* within the grace: an unknown session would wait */
    client_t *c = s_client(s, "fe");
    executor_t *ex = s_session_executor(s, "a", 1, 1000, 5, 1);
    s_cell(s, c, "alice", 1, 5, 0, NULL);
    sched_dispatch(s);
    assert_int_equal(s_result(s, ex, 1), 1);
    sched_refusal_t why; /* another tenant's job on it: as if it were unknown */
    assert_int_equal(s_cell(s, c, "mallory", 2, 5, 0, &why), -1);
    assert_int_equal(why.reason, REFUSE_SESSION_UNKNOWN);
    s_sessions(s, ex, 0, 5, "closed by the client");
    assert_int_equal(s_cell(s, c, "alice", 3, 5, 0, &why), -1); /* not a wait: the reason */
    assert_int_equal(why.reason, REFUSE_SESSION_ENDED);
    assert_int_equal(why.status, ST_REJECTED);
    assert_string_equal(why.message, "closed by the client");
    assert_int_equal(s_cell(s, c, "mallory", 4, 5, 0, &why), 0); /* learns nothing: waits */
    s_done(&s);
}

static void test_sessions_up_places_a_new_session(void **state)
{
    (void)state;
    sched_t *s = s_sched(NULL);
    client_t *c = s_client(s, "fe");
    s_now += 60000;
    executor_t *ex = s_session_executor(s, "a", 2, 1000, 0, 0);
    s_sessions(s, ex, 8, 0, "");
    assert_int_equal(s_cell(s, c, "t", 1, 8, 0, NULL), 0);
    sched_dispatch(s);
    assert_int_equal(F->n_sent, 1);
    assert_ptr_equal(F->sent[0].ex, ex);
    s_done(&s);
}


/* ---- with several brokers (PROTOCOL.md §3.1) ------------------------------------------------ */

/* A session's cell pinned to an executor that gave this broker no credit (another broker holds
 * its slots): the broker asks that executor for credit, and the cell waits for it. */
static void test_a_pinned_cell_without_credit_asks_its_executor_for_credit(void **state)
{
    (void)state;
    sched_t *s = s_sched(NULL);
    client_t *c = s_client(s, "fe");
    executor_t *a = s_session_executor(s, "a", 4, 8000, 0, 0);
    executor_t *b = s_session_executor(s, "b", 0, 100, 7, 1); /* holds session 7, no credit */
    assert_int_equal(s_cell(s, c, "t", 1, 7, 0, NULL), 0);
    sched_dispatch(s);
    assert_int_equal(F->n_sent, 0); /* a has credit, but the session is on b */
    assert_int_equal(F->n_wants, 1);
    assert_int_equal(F->wanted, 1);
    sched_executor_credit(s, b, 1);
    sched_dispatch(s);
    assert_int_equal(F->n_sent, 1);
    assert_ptr_equal(F->sent[0].ex, b);
    assert_int_equal(s_sent_to(a), 0);
    s_done(&s);
}

/* Job n on session sid, marked resubmit (its first broker was lost). */
static void s_resubmit_cell(sched_t *s, client_t *c, unsigned n, unsigned sid)
{
    uint8_t session[ID_BYTES];
    s_sid(session, sid);
    assert_int_equal(s_resubmit_on(s, c, n, session), 0);
}

/* Every executor said it never ran the resubmitted cell: it joins its session's line and goes
 * to the session's executor, after the cell queued before it. */
static void test_a_resubmitted_cell_joins_its_sessions_line(void **state)
{
    (void)state;
    sched_t *s = s_sched(NULL);
    s_now += 60000; /* long after start */
    client_t *c = s_client(s, "fe");
    executor_t *a = s_session_executor(s, "a", 4, 8000, 0, 0);
    executor_t *b = s_session_executor(s, "b", 4, 100, 7, 1);
    s_resubmit_cell(s, c, 1, 7);
    sched_dispatch(s);
    assert_int_equal(F->n_probes, 2);
    assert_int_equal(F->n_sent, 0);
    s_held(s, a, 1, HELD_STATE_NONE);
    s_held(s, b, 1, HELD_STATE_NONE);
    sched_dispatch(s);
    assert_int_equal(F->n_sent, 1);
    assert_ptr_equal(F->sent[0].ex, b);
    assert_int_equal(s_result(s, b, 1), 1);
    assert_int_equal(sched_queued(s) + sched_inflight(s), 0);
    s_done(&s);
}

/* The resubmitted cell still runs on the session's executor (for the broker that died): it is
 * the session's running cell here, so the next cell waits for its answer. */
static void test_a_resubmitted_cell_found_running_holds_its_session(void **state)
{
    (void)state;
    sched_t *s = s_sched(NULL);
    s_now += 60000;
    client_t *c = s_client(s, "fe");
    executor_t *b = s_session_executor(s, "b", 4, 100, 7, 1);
    s_resubmit_cell(s, c, 1, 7);
    assert_int_equal(s_cell(s, c, "t", 2, 7, 0, NULL), 0);
    sched_dispatch(s);
    s_held(s, b, 1, HELD_STATE_RUNNING);
    sched_dispatch(s);
    assert_int_equal(F->n_sent, 0); /* cell 2 waits for cell 1's answer */
    uint8_t id[ID_BYTES];
    s_id(id, 1);
    job_t *job = sched_result(s, b, id, 0); /* its ANSWER */
    assert_non_null(job);
    sched_finish(s, &job);
    sched_dispatch(s);
    assert_int_equal(F->n_sent, 1);
    assert_int_equal(s_num(F->sent[0].id), 2);
    s_result(s, b, 2);
    assert_int_equal(sched_queued(s) + sched_inflight(s), 0);
    s_done(&s);
}

int main(void)
{
    log_init("test", LOG_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_sessions_jobs_go_to_its_executor_one_at_a_time),
        cmocka_unit_test(test_an_ended_session_is_answered_at_once_and_only_to_its_tenant),
        cmocka_unit_test(test_a_busy_session_holds_back_no_other_tenant),
        cmocka_unit_test(test_pinned_and_service_jobs_take_turns),
        cmocka_unit_test(test_new_sessions_go_where_memory_is_freest),
        cmocka_unit_test(test_an_unknown_session_waits_for_its_executor_after_a_restart),
        cmocka_unit_test(test_executor_loss_answers_its_sessions_jobs_lost),
        cmocka_unit_test(test_a_node_that_comes_back_keeps_its_sessions),
        cmocka_unit_test(test_an_ended_session_answers_its_waiting_jobs_with_the_reason),
        cmocka_unit_test(test_sessions_up_places_a_new_session),
        cmocka_unit_test(test_a_pinned_cell_without_credit_asks_its_executor_for_credit),
        cmocka_unit_test(test_a_resubmitted_cell_joins_its_sessions_line),
        cmocka_unit_test(test_a_resubmitted_cell_found_running_holds_its_session),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
