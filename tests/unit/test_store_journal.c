/* tests/unit/test_store_journal.c — the store's write journal (mcp-frontend/state/store_journal.h)
 * through its header, with no connection: the store's part (sending, replies, a connection lost)
 * is played by the test. A write is kept until Redis acknowledged it and its replay window has
 * passed; every reconnect sends again, in order, whatever is kept; a `once` write keeps its
 * place but goes on the wire at most once; the journal is bounded by entries and by bytes, and
 * only acknowledged writes make room. Linked against the front-end's library (libmcp.a). */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mcp-frontend/state/store_journal.h"

/* A write of the bytes of s (the journal takes it). */
static journal_entry_t *s_append(journal_t *j, const char *s)
{
    return journal_append(j, strdup(s), strlen(s));
}

static journal_entry_t *s_append_once(journal_t *j, const char *s)
{
    return journal_append_once(j, strdup(s), strlen(s));
}

/* Sends the next write, which must be e; Redis answers it at now_ms. */
static void s_send_and_ack(journal_t *j, journal_entry_t *e, uint64_t now_ms)
{
    assert_ptr_equal(journal_next_unsent(j), e);
    journal_mark_sent(j, e);
    journal_acked(j, e, now_ms);
}

/* The commands the store would send now, in order, marked sent, as one string. */
static void s_drain(journal_t *j, char *out, size_t cap)
{
    out[0] = '\0';
    journal_entry_t *e;
    while ((e = journal_next_unsent(j))) {
        strncat(out, e->cmd, cap - strlen(out) - 1);
        journal_mark_sent(j, e);
    }
}

/* ---- the order and the cursor ---------------------------------------------------------------- */

static void test_writes_go_on_the_wire_in_the_order_they_were_made(void **state)
{
    (void)state;
    journal_t *j = journal_new(10, 1000, 1000);
    s_append(j, "a");
    s_append(j, "b");
    s_append(j, "c");
    char sent[16];
    s_drain(j, sent, sizeof sent);
    assert_string_equal(sent, "abc");
    assert_int_equal(journal_unacked(j), 3); /* in flight: not yet answered */
    journal_destroy(&j);
    assert_null(j);
}

static void test_a_write_made_while_others_are_in_flight_is_the_next_to_send(void **state)
{
    (void)state;
    journal_t *j = journal_new(10, 1000, 1000);
    journal_entry_t *a = s_append(j, "a");
    journal_mark_sent(j, a);
    assert_null(journal_next_unsent(j));
    journal_entry_t *b = s_append(j, "b"); /* the cursor was past the end: b is next */
    assert_ptr_equal(journal_next_unsent(j), b);
    journal_destroy(&j);
}

/* ---- the replay window ------------------------------------------------------------------------
 */

static void test_an_acknowledged_write_is_kept_for_the_replay_window(void **state)
{
    (void)state;
    journal_t *j = journal_new(10, 1000, 2000);
    journal_entry_t *a = s_append(j, "a");
    s_send_and_ack(j, a, 1000);
    assert_int_equal(journal_entries(j), 1); /* acknowledged, still within the window */
    assert_int_equal(journal_unacked(j), 0);
    journal_trim(j, 2999);
    assert_int_equal(journal_entries(j), 1);
    journal_trim(j, 3000);
    assert_int_equal(journal_entries(j), 0);
    assert_int_equal(journal_bytes(j), 0);
    journal_destroy(&j);
}

static void test_trimming_frees_each_write_by_the_age_of_its_own_acknowledgement(void **state)
{
    (void)state;
    journal_t *j = journal_new(10, 1000, 2000);
    journal_entry_t *a = s_append(j, "a"), *b = s_append(j, "b");
    s_send_and_ack(j, a, 0);
    s_send_and_ack(j, b, 1500);
    journal_trim(j, 2000);
    assert_int_equal(journal_entries(j), 1); /* a's window is over, b's is not */
    assert_int_equal(journal_bytes(j), 1);
    journal_trim(j, 3500);
    assert_int_equal(journal_entries(j), 0);
    journal_destroy(&j);
}

static void test_trimming_stops_at_the_first_write_not_yet_acknowledged(void **state)
{
    (void)state;
    journal_t *j = journal_new(10, 1000, 100);
    journal_entry_t *a = s_append(j, "a");
    journal_entry_t *b = s_append(j, "b");
    journal_mark_sent(j, a); /* a in flight */
    journal_mark_sent(j, b);
    journal_acked(j, b, 0); /* (not an order Redis answers in: the journal keeps FIFO anyway) */
    journal_trim(j, 100000);
    assert_int_equal(journal_entries(j), 2); /* a holds the head, and b behind it */
    journal_acked(j, a, 100000);
    journal_trim(j, 100100);
    assert_int_equal(journal_entries(j), 0);
    journal_destroy(&j);
}

static void test_with_no_replay_window_an_acknowledged_write_goes_at_once(void **state)
{
    (void)state;
    journal_t *j = journal_new(10, 1000, 0);
    journal_entry_t *a = s_append(j, "a");
    s_send_and_ack(j, a, 500); /* journal_acked trims */
    assert_int_equal(journal_entries(j), 0);
    journal_destroy(&j);
}

static void test_a_second_reply_for_the_same_write_changes_nothing(void **state)
{
    (void)state;
    journal_t *j = journal_new(10, 1000, 1000);
    journal_entry_t *a = s_append(j, "a");
    s_append(j, "b");
    s_send_and_ack(j, a, 10);
    journal_acked(j, a, 20);
    assert_int_equal(journal_unacked(j), 1); /* b still waits */
    journal_trim(j, 1010);                   /* the window runs from the first reply */
    assert_int_equal(journal_entries(j), 1);
    journal_destroy(&j);
}

/* ---- a lost connection --------------------------------------------------------------------- */

static void test_a_lost_connection_sends_everything_kept_again_in_order(void **state)
{
    (void)state;
    journal_t *j = journal_new(10, 1000, 5000);
    journal_entry_t *a = s_append(j, "a");
    journal_entry_t *b = s_append(j, "b");
    s_append(j, "c");
    journal_mark_sent(j, a);
    journal_mark_sent(j, b);
    journal_acked(j, a, 10); /* b in flight, c waiting: then the connection drops */
    journal_rewind(j);
    assert_int_equal(journal_unacked(j), 3); /* a will be answered again */
    char sent[16];
    s_drain(j, sent, sizeof sent);
    assert_string_equal(sent, "abc");
    journal_destroy(&j);
}

static void test_a_write_past_its_replay_window_is_not_sent_again(void **state)
{
    (void)state;
    journal_t *j = journal_new(10, 1000, 1000);
    journal_entry_t *a = s_append(j, "a");
    journal_entry_t *b = s_append(j, "b");
    s_send_and_ack(j, a, 0);
    s_send_and_ack(j, b, 900);
    journal_trim(j, 1000); /* the store's watchdog, before the connection drops */
    journal_rewind(j);
    char sent[16];
    s_drain(j, sent, sizeof sent);
    assert_string_equal(sent, "b");
    journal_destroy(&j);
}

/* ---- `once` writes (PUBLISH) ---------------------------------------------------------------- */

static void test_a_once_write_keeps_its_place_among_the_others(void **state)
{
    (void)state;
    journal_t *j = journal_new(10, 1000, 5000);
    s_append(j, "a");
    s_append_once(j, "P");
    s_append(j, "b");
    char sent[16];
    s_drain(j, sent, sizeof sent);
    assert_string_equal(sent, "aPb"); /* a listener finds in Redis what was written before */
    journal_destroy(&j);
}

static void test_a_once_write_on_the_wire_is_never_sent_again(void **state)
{
    (void)state;
    journal_t *j = journal_new(10, 1000, 5000);
    journal_entry_t *a = s_append(j, "a");
    journal_entry_t *p = s_append_once(j, "P");
    journal_entry_t *b = s_append(j, "b");
    s_send_and_ack(j, a, 10);
    s_send_and_ack(j, p, 10); /* answered */
    journal_mark_sent(j, b);
    journal_entry_t *q = s_append_once(j, "Q");
    journal_mark_sent(j, q); /* on the wire, no answer yet: it may have been heard */
    journal_rewind(j);
    char sent[16];
    s_drain(j, sent, sizeof sent);
    assert_string_equal(sent, "ab");
    assert_int_equal(journal_unacked(j), 2); /* Q counts as done */
    journal_destroy(&j);
}

static void test_a_once_write_not_yet_sent_when_the_connection_drops_goes_on_the_next(void **state)
{
    (void)state;
    journal_t *j = journal_new(10, 1000, 5000);
    journal_entry_t *a = s_append(j, "a");
    s_append_once(j, "P");
    journal_mark_sent(j, a);
    journal_rewind(j);
    char sent[16];
    s_drain(j, sent, sizeof sent);
    assert_string_equal(sent, "aP");
    journal_destroy(&j);
}

static void test_a_once_write_is_not_kept_for_replay(void **state)
{
    (void)state;
    journal_t *j = journal_new(10, 1000, 5000);
    journal_entry_t *p = s_append_once(j, "P");
    s_send_and_ack(j, p, 10);
    assert_int_equal(journal_entries(j), 0); /* the replay window is for replayed writes */
    journal_destroy(&j);
}

/* ---- bounds ------------------------------------------------------------------------------- */

static void test_a_full_journal_drops_acknowledged_writes_to_make_room(void **state)
{
    (void)state;
    journal_t *j = journal_new(2, 1000, 60000);
    journal_entry_t *a = s_append(j, "a");
    s_send_and_ack(j, a, 1);
    s_append(j, "b");
    journal_entry_t *c = s_append(j, "c");
    assert_non_null(c); /* a, only kept for replay, made room */
    assert_int_equal(journal_entries(j), 2);
    char sent[16];
    s_drain(j, sent, sizeof sent);
    assert_string_equal(sent, "bc");
    journal_destroy(&j);
}

static void test_a_full_journal_refuses_a_write_rather_than_drop_one_not_in_redis(void **state)
{
    (void)state;
    journal_t *j = journal_new(2, 1000, 60000);
    journal_entry_t *a = s_append(j, "a");
    journal_mark_sent(j, a); /* in flight */
    s_append(j, "b");        /* waiting */
    assert_null(s_append(j, "c"));
    assert_int_equal(journal_entries(j), 2);
    assert_int_equal(journal_unacked(j), 2);
    journal_destroy(&j);
}

static void test_writes_to_replay_after_a_reconnect_are_not_dropped_for_new_ones(void **state)
{
    (void)state;
    journal_t *j = journal_new(1, 1000, 60000);
    journal_entry_t *a = s_append(j, "a");
    s_send_and_ack(j, a, 1);
    journal_rewind(j); /* a must reach the new master again */
    assert_null(s_append(j, "b"));
    assert_int_equal(journal_entries(j), 1);
    assert_ptr_equal(journal_next_unsent(j), a);
    journal_destroy(&j);
}

static void test_the_byte_bound_counts_every_write_kept(void **state)
{
    (void)state;
    journal_t *j = journal_new(10, 5, 60000);
    journal_entry_t *a = s_append(j, "abc");
    assert_int_equal(journal_bytes(j), 3);
    assert_null(s_append(j, "def")); /* 6 bytes: over the cap, and a is not in Redis */
    s_send_and_ack(j, a, 1);
    assert_non_null(s_append(j, "de")); /* 5 bytes: fits beside a */
    assert_int_equal(journal_entries(j), 2);
    assert_non_null(s_append(j, "fgh")); /* a, acknowledged, made room */
    assert_int_equal(journal_bytes(j), 5);
    journal_destroy(&j);
}

static void test_a_write_larger_than_the_whole_journal_is_refused(void **state)
{
    (void)state;
    journal_t *j = journal_new(10, 4, 0);
    assert_null(s_append(j, "abcde")); /* its bytes are freed: leak detection checks */
    assert_int_equal(journal_entries(j), 0);
    assert_int_equal(journal_bytes(j), 0);
    assert_non_null(s_append(j, "abcd"));
    journal_destroy(&j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_writes_go_on_the_wire_in_the_order_they_were_made),
        cmocka_unit_test(test_a_write_made_while_others_are_in_flight_is_the_next_to_send),
        cmocka_unit_test(test_an_acknowledged_write_is_kept_for_the_replay_window),
        cmocka_unit_test(test_trimming_frees_each_write_by_the_age_of_its_own_acknowledgement),
        cmocka_unit_test(test_trimming_stops_at_the_first_write_not_yet_acknowledged),
        cmocka_unit_test(test_with_no_replay_window_an_acknowledged_write_goes_at_once),
        cmocka_unit_test(test_a_second_reply_for_the_same_write_changes_nothing),
        cmocka_unit_test(test_a_lost_connection_sends_everything_kept_again_in_order),
        cmocka_unit_test(test_a_write_past_its_replay_window_is_not_sent_again),
        cmocka_unit_test(test_a_once_write_keeps_its_place_among_the_others),
        cmocka_unit_test(test_a_once_write_on_the_wire_is_never_sent_again),
        cmocka_unit_test(test_a_once_write_not_yet_sent_when_the_connection_drops_goes_on_the_next),
        cmocka_unit_test(test_a_once_write_is_not_kept_for_replay),
        cmocka_unit_test(test_a_full_journal_drops_acknowledged_writes_to_make_room),
        cmocka_unit_test(test_a_full_journal_refuses_a_write_rather_than_drop_one_not_in_redis),
        cmocka_unit_test(test_writes_to_replay_after_a_reconnect_are_not_dropped_for_new_ones),
        cmocka_unit_test(test_the_byte_bound_counts_every_write_kept),
        cmocka_unit_test(test_a_write_larger_than_the_whole_journal_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
