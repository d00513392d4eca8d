/* tests/unit/test_mpack.c — the hostile-input msgpack reader (proto/mpack.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "proto/mpack.h"

static void test_reads_what_the_writer_wrote(void **state)
{
    (void)state;
    buf_t b;
    buf_init(&b);
    mpw_t w;
    mpw_init(&w, &b);
    mpw_map(&w, 5);
    mpw_kv_str(&w, "s", "hello");
    mpw_kv_int(&w, "neg", -70000);
    mpw_kv_uint(&w, "big", UINT64_MAX);
    mpw_kv_double(&w, "d", 2.5);
    mpw_str(&w, "arr");
    mpw_array(&w, 2);
    mpw_bool(&w, 1);
    mpw_nil(&w);
    mpr_t r;
    mpr_init(&r, b.data, b.len);
    uint32_t n, klen, slen;
    const char *k, *s;
    assert_int_equal(mpr_map(&r, &n), 0);
    assert_int_equal(n, 5);
    mpr_str(&r, &k, &klen);
    assert_int_equal(mpr_str(&r, &s, &slen), 0);
    assert_memory_equal(s, "hello", 5);
    int64_t i;
    mpr_str(&r, &k, &klen);
    assert_int_equal(mpr_int(&r, &i), 0);
    assert_int_equal(i, -70000);
    uint64_t u;
    mpr_str(&r, &k, &klen);
    assert_int_equal(mpr_uint(&r, &u), 0);
    assert_true(u == UINT64_MAX);
    double d;
    mpr_str(&r, &k, &klen);
    assert_int_equal(mpr_double(&r, &d), 0);
    assert_true(d == 2.5);
    mpr_str(&r, &k, &klen);
    assert_int_equal(mpr_array(&r, &n), 0);
    int bv;
    assert_int_equal(mpr_bool(&r, &bv), 0);
    assert_true(bv);
    assert_int_equal(mpr_nil(&r), 1);
    assert_int_equal(mpr_done(&r), 0);
    buf_free(&b);
}

static void test_array_count_larger_than_message_is_refused(void **state)
{
    (void)state;
    /* array32 claiming 4 billion elements in 5 bytes: must fail, not allocate */
    const uint8_t lie[] = {0xdd, 0xff, 0xff, 0xff, 0xff};
    mpr_t         r;
    uint32_t      n;
    mpr_init(&r, lie, sizeof lie);
    assert_int_equal(mpr_array(&r, &n), -1);
    assert_non_null(r.err);
}

static void test_truncated_string_is_refused(void **state)
{
    (void)state;
    const uint8_t cut[] = {0xdb, 0x00, 0x00, 0x10, 0x00, 'a', 'b'}; /* str32 of 4096, 2 bytes */
    mpr_t         r;
    const char   *s;
    uint32_t      len;
    mpr_init(&r, cut, sizeof cut);
    assert_int_equal(mpr_str(&r, &s, &len), -1);
}

static void test_deep_nesting_is_capped(void **state)
{
    (void)state;
    uint8_t deep[200];
    memset(deep, 0x91, sizeof deep); /* fixarray(1) nested 199 times, then nil */
    deep[199] = 0xc0;
    mpr_t r;
    mpr_init(&r, deep, sizeof deep);
    assert_int_equal(mpr_skip(&r), -1);
    assert_string_equal(r.err, "msgpack nested too deeply");
}

static void test_errors_are_sticky(void **state)
{
    (void)state;
    const uint8_t bad[] = {0xc1, 0x01};
    mpr_t         r;
    uint64_t      u;
    mpr_init(&r, bad, sizeof bad);
    assert_int_equal(mpr_uint(&r, &u), -1);
    assert_int_equal(mpr_uint(&r, &u), -1); /* the 0x01 after it is not read */
    assert_int_equal(mpr_done(&r), -1);
}

static void test_strdup_rejects_embedded_nul(void **state)
{
    (void)state;
    const uint8_t s[] = {0xa3, 'a', 0, 'b'};
    mpr_t         r;
    char         *out;
    mpr_init(&r, s, sizeof s);
    assert_int_equal(mpr_strdup(&r, 100, &out), -1);
    assert_null(out);
}

static void test_negative_is_not_uint(void **state)
{
    (void)state;
    const uint8_t neg[] = {0xff}; /* -1 */
    mpr_t         r;
    uint64_t      u;
    mpr_init(&r, neg, sizeof neg);
    assert_int_equal(mpr_uint(&r, &u), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reads_what_the_writer_wrote),
        cmocka_unit_test(test_array_count_larger_than_message_is_refused),
        cmocka_unit_test(test_truncated_string_is_refused),
        cmocka_unit_test(test_deep_nesting_is_capped),
        cmocka_unit_test(test_errors_are_sticky),
        cmocka_unit_test(test_strdup_rejects_embedded_nul),
        cmocka_unit_test(test_negative_is_not_uint),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
