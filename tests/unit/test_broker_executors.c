/* tests/unit/test_broker_executors.c — broker/tables/executors.c and broker/tables/keymap.c: where
 * a job goes (most free credit, then least recently used) and the credit ceiling; the keymap the
 * registries stand on. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "broker/tables/executors.h"
#include "broker/tables/keymap.h"

static executor_t *s_add(executors_t *reg, const char *name, uint32_t slots, uint64_t mask)
{
    ready_t r = {0};
    snprintf(r.node, sizeof r.node, "%s", name);
    snprintf(r.services[0], sizeof r.services[0], "python.basic");
    r.n_services = 1;
    r.slots = slots;
    return executors_add(reg, name, strlen(name), &r, mask, 1);
}

static void test_pick_most_free_credit(void **state)
{
    (void)state;
    executors_t *reg = executors_new(8, 1);
    executor_t *a = s_add(reg, "a", 8, 1), *b = s_add(reg, "b", 8, 1);
    executors_refund(a, 3);
    executors_refund(b, 5);
    assert_ptr_equal(executors_pick(reg, 0, 0), b);
    executors_charge(reg, b);
    executors_charge(reg, b);
    assert_ptr_equal(executors_pick(reg, 0, 0), a); /* 3 each: a was used less recently */
    executors_destroy(&reg);
}

static void test_pick_ties_go_to_least_recently_used(void **state)
{
    (void)state;
    executors_t *reg = executors_new(8, 1);
    executor_t *e[3];
    for (int i = 0; i < 3; i++) {
        char n[16];
        snprintf(n, sizeof n, "e%d", i);
        e[i] = s_add(reg, n, 4, 1);
        executors_refund(e[i], 4);
    }
    /* Equal credit everywhere: a trickle of jobs visits every executor in turn. */
    executor_t *first = executors_pick(reg, 0, 0);
    executors_charge(reg, first);
    executors_refund(first, 1);
    executor_t *second = executors_pick(reg, 0, 0);
    assert_ptr_not_equal(second, first);
    executors_charge(reg, second);
    executors_refund(second, 1);
    executor_t *third = executors_pick(reg, 0, 0);
    assert_ptr_not_equal(third, first);
    assert_ptr_not_equal(third, second);
    executors_charge(reg, third);
    executors_refund(third, 1);
    assert_ptr_equal(executors_pick(reg, 0, 0), first);
    executors_destroy(&reg);
}

static void test_pick_only_executors_of_the_service_with_credit(void **state)
{
    (void)state;
    executors_t *reg = executors_new(8, 1);
    executor_t *a = s_add(reg, "a", 8, 1 << 0), *b = s_add(reg, "b", 8, 1 << 1);
    assert_null(executors_pick(reg, 0, 0)); /* no credit yet: CREDIT follows READY */
    executors_refund(a, 1);
    executors_refund(b, 8);
    assert_ptr_equal(executors_pick(reg, 0, 0), a);
    assert_ptr_equal(executors_pick(reg, 1, 0), b);
    assert_null(executors_pick(reg, 2, 0));
    executors_charge(reg, a);
    assert_null(executors_pick(reg, 0, 0));
    executors_destroy(&reg);
}

static void test_credit_never_exceeds_slots(void **state)
{
    (void)state;
    executors_t *reg = executors_new(8, 1);
    executor_t *a = s_add(reg, "a", 4, 1);
    executors_refund(a, 4096);
    assert_int_equal(a->credit, 4);
    executors_refund(a, 1); /* a RESULT for a job the broker forgot */
    assert_int_equal(a->credit, 4);
    executors_destroy(&reg);
}

static void test_registry_is_bounded_and_finds_by_identity_and_node(void **state)
{
    (void)state;
    executors_t *reg = executors_new(2, 1);
    executor_t *a = s_add(reg, "a", 1, 1);
    assert_null(s_add(reg, "a", 1, 1)); /* the routing id is taken */
    assert_non_null(s_add(reg, "b", 1, 1));
    assert_null(s_add(reg, "c", 1, 1)); /* full */
    assert_ptr_equal(executors_get(reg, "a", 1), a);
    assert_ptr_equal(executors_find_node(reg, "a"), a);
    executors_remove(reg, &a);
    assert_null(a);
    assert_null(executors_get(reg, "a", 1));
    assert_int_equal(executors_count(reg), 1);
    assert_string_equal(executors_at(reg, 0)->node, "b");
    executors_destroy(&reg);
}

static void s_count(void *arg, const void *key, size_t len, void *value)
{
    (void)key, (void)len, (void)value;
    (*(size_t *)arg)++;
}

static void test_keymap_put_get_del_and_grow(void **state)
{
    (void)state;
    keymap_t *m = keymap_new();
    static int values[5000];
    char k[32];
    for (int i = 0; i < 5000; i++) {
        snprintf(k, sizeof k, "key-%d", i);
        assert_int_equal(keymap_put_str(m, k, &values[i]), 0);
    }
    assert_int_equal(keymap_put_str(m, "key-7", &values[0]), -1);
    assert_int_equal(keymap_size(m), 5000);
    for (int i = 0; i < 5000; i += 2) {
        snprintf(k, sizeof k, "key-%d", i);
        assert_ptr_equal(keymap_del_str(m, k), &values[i]);
    }
    size_t n = 0;
    keymap_each(m, s_count, &n);
    assert_int_equal(n, 2500);
    assert_ptr_equal(keymap_get_str(m, "key-4999"), &values[4999]);
    assert_null(keymap_get_str(m, "key-4998"));
    uint8_t bin[3] = {0, 0, 1}, bin2[3] = {0, 0, 2};
    assert_int_equal(keymap_put(m, bin, 3, &values[1]), 0);
    assert_null(keymap_get(m, bin2, 3));
    assert_null(keymap_get(m, bin, 2));
    char long_key[300];
    memset(long_key, 'x', sizeof long_key);
    assert_int_equal(keymap_put(m, long_key, sizeof long_key, &values[0]), -1);
    keymap_destroy(&m);
    assert_null(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pick_most_free_credit),
        cmocka_unit_test(test_pick_ties_go_to_least_recently_used),
        cmocka_unit_test(test_pick_only_executors_of_the_service_with_credit),
        cmocka_unit_test(test_credit_never_exceeds_slots),
        cmocka_unit_test(test_registry_is_bounded_and_finds_by_identity_and_node),
        cmocka_unit_test(test_keymap_put_get_del_and_grow),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
