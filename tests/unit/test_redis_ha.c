/* tests/unit/test_redis_ha.c — redis-sentinel:// URLs (common/redis_url.h) through the header:
 * the sentinels listed, the master named, bad URLs refused with a reason. (The store's write
 * journal, which keeps the front-end's writes through a failover, is test_store_journal.c's.) */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/redis_url.h"

static void test_a_sentinel_url_lists_its_sentinels_and_names_the_master(void **state)
{
    (void)state;
    redis_url_t u;
    char err[256];
    assert_int_equal(redis_url_parse("redis-sentinel://pw@10.0.0.1:5000,s2,[::1]/mymaster/3", &u,
                                     err, sizeof err),
                     -1); /* brackets are not a host name here */
    assert_int_equal(
        redis_url_parse("redis-sentinel://pw@10.0.0.1:5000,s2/mymaster/3", &u, err, sizeof err), 0);
    assert_true(redis_url_is_sentinel(&u));
    assert_int_equal(u.n_sentinels, 2);
    assert_string_equal(u.sentinel[0].host, "10.0.0.1");
    assert_int_equal(u.sentinel[0].port, 5000);
    assert_string_equal(u.sentinel[1].host, "s2");
    assert_int_equal(u.sentinel[1].port, REDIS_SENTINEL_PORT);
    assert_string_equal(u.master, "mymaster");
    assert_string_equal(u.password, "pw");
    assert_int_equal(u.db, 3);
    assert_string_equal(u.host, "");
    char shown[600];
    redis_url_describe(&u, shown, sizeof shown);
    assert_string_equal(shown, "redis-sentinel://:***@10.0.0.1:5000,s2:26379/mymaster/3");
}

static void test_bad_sentinel_urls_are_refused_with_a_reason(void **state)
{
    (void)state;
    redis_url_t u;
    char err[512];
    const char *bad[] = {"redis-sentinel://h:1",       "redis-sentinel://h:1/",
                         "redis-sentinel:///m",        "redis-sentinel://h:0/m",
                         "redis-sentinel://h:1,,h2/m", "redis-sentinel://h:1/m/x",
                         "redis-sentinel://h:1/m n",   NULL};
    for (int i = 0; bad[i]; i++) {
        err[0] = '\0';
        assert_int_equal(redis_url_parse(bad[i], &u, err, sizeof err), -1);
        assert_non_null(strstr(err, "redis-sentinel://"));
    }
    assert_int_equal(redis_url_parse("redis://h:6380", &u, err, sizeof err), 0);
    assert_false(redis_url_is_sentinel(&u));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_sentinel_url_lists_its_sentinels_and_names_the_master),
        cmocka_unit_test(test_bad_sentinel_urls_are_refused_with_a_reason),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
