/* tests/unit/test_redis_ha.c — what keeps the front-end's Redis state through failures, through
 * the headers: redis-sentinel:// URLs (common/redis_url.h) and the store's write journal
 * (mcp-frontend/state/store_journal.h: kept until acknowledged and past the replay window, sent
 * again after every reconnect, bounded; a PUBLISH in its place but at most once). Linked against
 * the front-end's library (libmcp.a). */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/redis_url.h"
#include "mcp-frontend/state/store_journal.h"

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

static char *s_cmd(const char *s)
{
    return strdup(s);
}

static void test_journal_keeps_an_acknowledged_write_for_the_replay_window(void **state)
{
    (void)state;
    journal_t *j = journal_new(10, 1000, 2000);
    journal_entry_t *a = journal_append(j, s_cmd("a"), 1);
    assert_ptr_equal(journal_next_unsent(j), a);
    journal_mark_sent(j, a);
    assert_null(journal_next_unsent(j));
    journal_acked(j, a, 1000);
    assert_int_equal(journal_entries(j), 1); /* acknowledged, still within the window */
    assert_int_equal(journal_unacked(j), 0);
    journal_trim(j, 2999);
    assert_int_equal(journal_entries(j), 1);
    journal_trim(j, 3000);
    assert_int_equal(journal_entries(j), 0);
    journal_destroy(&j);
    assert_null(j);
}

static void test_journal_rewind_sends_everything_again_in_order(void **state)
{
    (void)state;
    journal_t *j = journal_new(10, 1000, 5000);
    journal_entry_t *a = journal_append(j, s_cmd("a"), 1);
    journal_entry_t *b = journal_append(j, s_cmd("b"), 1);
    journal_entry_t *c = journal_append(j, s_cmd("c"), 1);
    journal_mark_sent(j, a);
    journal_mark_sent(j, b);
    journal_acked(j, a, 10); /* b in flight, c waiting: then the connection drops */
    journal_rewind(j);
    assert_int_equal(journal_unacked(j), 3);
    assert_ptr_equal(journal_next_unsent(j), a);
    journal_mark_sent(j, a);
    assert_ptr_equal(journal_next_unsent(j), b);
    journal_mark_sent(j, b);
    assert_ptr_equal(journal_next_unsent(j), c);
    journal_destroy(&j);
}

static void test_a_once_write_keeps_its_place_but_is_never_sent_twice(void **state)
{
    (void)state;
    journal_t *j = journal_new(10, 1000, 5000);
    journal_entry_t *a = journal_append(j, s_cmd("a"), 1);
    journal_entry_t *p = journal_append_once(j, s_cmd("p"), 1);
    journal_entry_t *b = journal_append(j, s_cmd("b"), 1);
    journal_entry_t *q = journal_append_once(j, s_cmd("q"), 1);
    assert_ptr_equal(journal_next_unsent(j), a); /* behind the writes made before it */
    journal_mark_sent(j, a);
    assert_ptr_equal(journal_next_unsent(j), p);
    journal_mark_sent(j, p);
    journal_acked(j, a, 10);
    journal_acked(j, p, 10);
    journal_mark_sent(j, b); /* then the connection drops, b in flight, q not yet sent */
    journal_rewind(j);
    assert_ptr_equal(journal_next_unsent(j), a); /* a replayed, p skipped, q sent in its turn */
    journal_mark_sent(j, a);
    assert_ptr_equal(journal_next_unsent(j), b);
    journal_mark_sent(j, b);
    assert_ptr_equal(journal_next_unsent(j), q);
    journal_mark_sent(j, q);
    journal_rewind(j); /* q was on the wire: done, whether Redis took it or not */
    journal_mark_sent(j, a);
    journal_mark_sent(j, b);
    assert_null(journal_next_unsent(j));
    assert_int_equal(journal_unacked(j), 2);
    journal_acked(j, a, 20);
    journal_acked(j, b, 20);
    journal_trim(j, 5020); /* past the window: the replayed writes go, the once ones too */
    assert_int_equal(journal_entries(j), 0);
    journal_destroy(&j);
}

static void test_a_full_journal_drops_acknowledged_writes_before_refusing_new_ones(void **state)
{
    (void)state;
    journal_t *j = journal_new(2, 1000, 60000);
    journal_entry_t *a = journal_append(j, s_cmd("a"), 1);
    journal_mark_sent(j, a);
    journal_acked(j, a, 1);
    journal_append(j, s_cmd("b"), 1);
    assert_non_null(journal_append(j, s_cmd("c"), 1)); /* a (acknowledged) made room */
    assert_int_equal(journal_entries(j), 2);
    assert_null(journal_append(j, s_cmd("d"), 1)); /* b and c are not yet in Redis */
    assert_int_equal(journal_entries(j), 2);
    journal_t *small = journal_new(10, 4, 0);
    assert_non_null(journal_append(small, s_cmd("abc"), 3));
    assert_null(journal_append(small, s_cmd("de"), 2)); /* over the byte cap */
    journal_destroy(&small);
    journal_destroy(&j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_sentinel_url_lists_its_sentinels_and_names_the_master),
        cmocka_unit_test(test_bad_sentinel_urls_are_refused_with_a_reason),
        cmocka_unit_test(test_journal_keeps_an_acknowledged_write_for_the_replay_window),
        cmocka_unit_test(test_journal_rewind_sends_everything_again_in_order),
        cmocka_unit_test(test_a_once_write_keeps_its_place_but_is_never_sent_twice),
        cmocka_unit_test(test_a_full_journal_drops_acknowledged_writes_before_refusing_new_ones),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
