/* tests/unit/test_queue.c — broker/tables/queue.c through its header: per-tenant FIFOs served
 * deficit round robin, requeue at the head, removal, parking at the in-flight quota. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "broker/tables/job.h"
#include "broker/tables/queue.h"

static job_t *s_job(const char *tenant, unsigned n)
{
    uint8_t id[ID_BYTES] = {0};
    memcpy(id, &n, sizeof n);
    route_t r = {0};
    snprintf(r.tenant, sizeof r.tenant, "%s", tenant);
    return job_new_copy(id, &r, "x", 1);
}

static unsigned s_num(const job_t *job)
{
    unsigned n;
    memcpy(&n, job->id, sizeof n);
    return n;
}

static void s_free(job_t *job)
{
    job_destroy(&job);
}

static void test_one_tenant_is_fifo(void **state)
{
    (void)state;
    queue_t *q = queue_new(1);
    for (unsigned i = 0; i < 5; i++) queue_push(q, s_job("a", i));
    assert_int_equal(queue_depth(q), 5);
    for (unsigned i = 0; i < 5; i++) {
        job_t *job = queue_pop(q, NULL, NULL);
        assert_non_null(job);
        assert_int_equal(s_num(job), i);
        assert_int_equal(job->state, JOB_DETACHED);
        s_free(job);
    }
    assert_null(queue_pop(q, NULL, NULL));
    assert_int_equal(queue_tenants(q), 0);
    queue_destroy(&q);
    assert_null(q);
}

static void test_tenants_take_turns(void **state)
{
    (void)state;
    queue_t *q = queue_new(1);
    for (unsigned i = 0; i < 3; i++) queue_push(q, s_job("a", i));
    for (unsigned i = 0; i < 3; i++) queue_push(q, s_job("b", 100 + i));
    const char *want = "ababab";
    for (int i = 0; want[i]; i++) {
        job_t *job = queue_pop(q, NULL, NULL);
        assert_int_equal(job->route.tenant[0], want[i]);
        s_free(job);
    }
    queue_destroy(&q);
}

static void test_flooding_tenant_does_not_starve_others(void **state)
{
    (void)state;
    queue_t *q = queue_new(1);
    for (unsigned i = 0; i < 2000; i++) queue_push(q, s_job("flood", i));
    for (int i = 0; i < 10; i++) s_free(queue_pop(q, NULL, NULL));
    for (unsigned i = 0; i < 20; i++) queue_push(q, s_job("small", i));
    /* From now on the two alternate: small's 20 jobs are out within the next 40 pops. */
    unsigned small_seen = 0, last_small_pos = 0;
    for (unsigned pos = 1; pos <= 40; pos++) {
        job_t *job = queue_pop(q, NULL, NULL);
        if (strcmp(job->route.tenant, "small") == 0) {
            assert_int_equal(s_num(job), small_seen); /* in its own order */
            small_seen++;
            last_small_pos = pos;
        }
        s_free(job);
    }
    assert_int_equal(small_seen, 20);
    assert_true(last_small_pos <= 40);
    assert_int_equal(queue_depth(q), 2000 - 10 - 20);
    job_t *job;
    while ((job = queue_pop(q, NULL, NULL))) s_free(job);
    queue_destroy(&q);
}

static void test_new_tenant_joins_at_end_of_round(void **state)
{
    (void)state;
    queue_t *q = queue_new(1);
    queue_push(q, s_job("a", 0));
    queue_push(q, s_job("a", 1));
    queue_push(q, s_job("b", 0));
    queue_push(q, s_job("b", 1));
    s_free(queue_pop(q, NULL, NULL)); /* a */
    queue_push(q, s_job("c", 0));     /* b's turn now; c waits for b and a */
    const char *want = "bacb";
    for (int i = 0; want[i]; i++) {
        job_t *job = queue_pop(q, NULL, NULL);
        assert_int_equal(job->route.tenant[0], want[i]);
        s_free(job);
    }
    assert_null(queue_pop(q, NULL, NULL));
    queue_destroy(&q);
}

static void test_requeued_job_is_first_of_its_tenant(void **state)
{
    (void)state;
    queue_t *q = queue_new(1);
    queue_push(q, s_job("a", 1));
    queue_push(q, s_job("a", 2));
    queue_push_head(q, s_job("a", 0));
    for (unsigned i = 0; i < 3; i++) {
        job_t *job = queue_pop(q, NULL, NULL);
        assert_int_equal(s_num(job), i);
        s_free(job);
    }
    queue_destroy(&q);
}

static void test_remove_from_anywhere(void **state)
{
    (void)state;
    queue_t *q = queue_new(1);
    job_t *j[4];
    for (unsigned i = 0; i < 4; i++) queue_push(q, j[i] = s_job("a", i));
    queue_push(q, s_job("b", 9));
    queue_remove(q, j[1]);
    queue_remove(q, j[3]);
    queue_remove(q, j[0]);
    s_free(j[0]), s_free(j[1]), s_free(j[3]);
    assert_int_equal(queue_depth(q), 2);
    queue_remove(q, j[2]);
    s_free(j[2]);
    assert_int_equal(queue_tenants(q), 1); /* a's empty FIFO is gone */
    job_t *job = queue_pop(q, NULL, NULL);
    assert_string_equal(job->route.tenant, "b");
    s_free(job);
    queue_destroy(&q);
}

static int s_not_a(void *arg, const job_t *job)
{
    (*(int *)arg)++;
    return job->route.tenant[0] != 'a';
}

static void test_parked_tenant_waits_until_unparked(void **state)
{
    (void)state;
    queue_t *q = queue_new(1);
    queue_push(q, s_job("a", 0));
    queue_push(q, s_job("a", 1));
    queue_push(q, s_job("b", 0));
    int calls = 0;
    job_t *job = queue_pop(q, s_not_a, &calls);
    assert_string_equal(job->route.tenant, "b");
    s_free(job);
    assert_int_equal(queue_parked(q), 1);
    assert_null(queue_pop(q, s_not_a, &calls)); /* only a is left, and it is parked */
    calls = 0;
    assert_null(queue_pop(q, s_not_a, &calls));
    assert_int_equal(calls, 0);   /* parked FIFOs are not even looked at */
    queue_push(q, s_job("a", 2)); /* a parked FIFO stays parked */
    assert_null(queue_pop(q, NULL, NULL));
    queue_unpark(q, "a");
    assert_int_equal(queue_parked(q), 0);
    for (unsigned i = 0; i < 3; i++) {
        job = queue_pop(q, NULL, NULL);
        assert_int_equal(s_num(job), i);
        s_free(job);
    }
    queue_destroy(&q);
}

static int s_not_tenant_a(void *arg, const job_t *job)
{
    (void)arg;
    return strcmp(job->route.tenant, "a") != 0;
}

static void test_pop_first_jumps_the_round_without_moving_it(void **state)
{
    (void)state;
    queue_t *q = queue_new(1);
    for (unsigned i = 0; i < 3; i++) queue_push(q, s_job("a", i));
    queue_push(q, s_job("b", 100));
    queue_push(q, s_job("c", 200));
    queue_push(q, s_job("c", 201));
    /* a's turn, but a may not: the first other FIFO in round order, b, gives its head */
    job_t *job = queue_pop_first(q, s_not_tenant_a, NULL);
    assert_non_null(job);
    assert_int_equal(s_num(job), 100);
    s_free(job);
    assert_int_equal(queue_tenants(q), 2); /* b's empty FIFO left */
    assert_int_equal(queue_parked(q), 0);  /* a was passed over, not parked */
    job = queue_pop_first(q, s_not_tenant_a, NULL);
    assert_int_equal(s_num(job), 200);
    s_free(job);
    /* the round is where it was: a's turn, then c */
    job = queue_pop(q, NULL, NULL);
    assert_int_equal(s_num(job), 0);
    s_free(job);
    job = queue_pop(q, NULL, NULL);
    assert_int_equal(s_num(job), 201);
    s_free(job);
    /* only a is left, and pop_first may not take it */
    assert_null(queue_pop_first(q, s_not_tenant_a, NULL));
    assert_int_equal(queue_depth(q), 2);
    while ((job = queue_pop(q, NULL, NULL))) s_free(job);
    assert_null(queue_pop_first(q, s_not_tenant_a, NULL)); /* empty */
    queue_destroy(&q);
}

static void test_quantum_gives_runs_per_turn(void **state)
{
    (void)state;
    queue_t *q = queue_new(3);
    for (unsigned i = 0; i < 6; i++) queue_push(q, s_job("a", i));
    for (unsigned i = 0; i < 6; i++) queue_push(q, s_job("b", i));
    const char *want = "aaabbbaaabbb";
    for (int i = 0; want[i]; i++) {
        job_t *job = queue_pop(q, NULL, NULL);
        assert_int_equal(job->route.tenant[0], want[i]);
        s_free(job);
    }
    queue_destroy(&q);
}

static void test_many_tenants_each_get_one_per_round(void **state)
{
    (void)state;
    queue_t *q = queue_new(1);
    char name[16];
    for (unsigned t = 0; t < 100; t++)
        for (unsigned i = 0; i < 5; i++) {
            snprintf(name, sizeof name, "t%u", t);
            queue_push(q, s_job(name, t * 10 + i));
        }
    for (unsigned round = 0; round < 5; round++) {
        int seen[100] = {0};
        for (unsigned k = 0; k < 100; k++) {
            job_t *job = queue_pop(q, NULL, NULL);
            unsigned t = (unsigned)atoi(job->route.tenant + 1);
            assert_int_equal(seen[t], 0);
            seen[t] = 1;
            assert_int_equal(s_num(job), t * 10 + round);
            s_free(job);
        }
    }
    assert_int_equal(queue_depth(q), 0);
    queue_destroy(&q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_tenant_is_fifo),
        cmocka_unit_test(test_pop_first_jumps_the_round_without_moving_it),
        cmocka_unit_test(test_tenants_take_turns),
        cmocka_unit_test(test_flooding_tenant_does_not_starve_others),
        cmocka_unit_test(test_new_tenant_joins_at_end_of_round),
        cmocka_unit_test(test_requeued_job_is_first_of_its_tenant),
        cmocka_unit_test(test_remove_from_anywhere),
        cmocka_unit_test(test_parked_tenant_waits_until_unparked),
        cmocka_unit_test(test_quantum_gives_runs_per_turn),
        cmocka_unit_test(test_many_tenants_each_get_one_per_round),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
