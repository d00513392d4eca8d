/* tests/unit/test_store.c — the store's write path (mcp-frontend/state/store.h) through its header,
 * against a fake Redis the test itself plays: a unix socket in a temporary directory, on the same
 * loop as the store, which reads the commands with hiredis's own reader and answers them as each
 * test says (at once, later, with an error, or by dropping the connection). No network, no
 * redis-server. What it checks: writes made while Redis is away reach it in order; a lost
 * connection has the journal sent again (PUBLISH apart); a write whose answer is wanted hears it
 * exactly once; a replica's READONLY and a Redis that stops answering make the store reconnect
 * and write again; connect hooks come before the buffered writes; a script write goes by SHA, and
 * a NOSCRIPT answer has the scripts loaded again before it is sent again; a write with two forms
 * goes as its first and is sent again as its replayable one; the buffer's bound.
 * Linked against the front-end's library (libmcp.a). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>
#include <hiredis/hiredis.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/loop.h"
#include "common/redis_url.h"
#include "mcp-frontend/state/store.h"

/* ---- the fake Redis ----------------------------------------------------------------------- */

#define MAX_SEEN 32
#define FAKE_SHA "0123456789abcdef0123456789abcdef01234567"

typedef struct {
    loop_t *loop;
    char dir[64];
    char path[108];
    int listen_fd; /* -1 until fake_listen */
    int conn_fd;   /* the store's connection; -1 when none */
    redisReader *reader;
    int connections;         /* accepted, in all */
    char seen[MAX_SEEN][64]; /* every command but PING, its words joined by spaces */
    int n_seen;
    int hold;               /* answers are held back ... */
    int held;               /* ... this many so far */
    const char *error_next; /* the next command is answered with this error */
    const char *error_at[MAX_SEEN]; /* the command seen n-th (from 0) is answered with this */
} fake_redis_t;

static fake_redis_t R;

static void s_fake_close_conn(void)
{
    if (R.conn_fd < 0) return;
    loop_remove_fd(R.loop, R.conn_fd);
    close(R.conn_fd);
    R.conn_fd = -1;
    R.held = 0;
    if (R.reader) redisReaderFree(R.reader);
    R.reader = NULL;
}

static void s_fake_send(const char *s)
{
    size_t len = strlen(s);
    assert_int_equal(write(R.conn_fd, s, len), (ssize_t)len);
}

static void s_fake_command(const redisReply *cmd)
{
    assert_int_equal(cmd->type, REDIS_REPLY_ARRAY);
    if (!strcasecmp(cmd->element[0]->str, "PING")) { /* the dial's: the connection is made */
        s_fake_send("+PONG\r\n");
        return;
    }
    assert_true(R.n_seen < MAX_SEEN);
    char *line = R.seen[R.n_seen++];
    line[0] = '\0';
    for (size_t i = 0; i < cmd->elements; i++) {
        if (i) strncat(line, " ", 63 - strlen(line));
        strncat(line, cmd->element[i]->str, 63 - strlen(line));
    }
    if (!strcasecmp(cmd->element[0]->str, "SCRIPT")) { /* SCRIPT LOAD: its SHA-1 */
        s_fake_send("$40\r\n" FAKE_SHA "\r\n");
        return;
    }
    if (R.error_at[R.n_seen - 1]) {
        s_fake_send(R.error_at[R.n_seen - 1]);
    } else if (R.error_next) {
        s_fake_send(R.error_next);
        R.error_next = NULL;
    } else if (R.hold) {
        R.held++;
    } else {
        s_fake_send("+OK\r\n");
    }
}

static void s_fake_on_conn(loop_t *loop, short revents, void *arg)
{
    (void)loop, (void)revents, (void)arg;
    char buf[4096];
    ssize_t n = read(R.conn_fd, buf, sizeof buf);
    if (n <= 0) { /* the store dropped it */
        s_fake_close_conn();
        return;
    }
    assert_int_equal(redisReaderFeed(R.reader, buf, (size_t)n), REDIS_OK);
    void *reply;
    while (redisReaderGetReply(R.reader, &reply) == REDIS_OK && reply) {
        s_fake_command(reply);
        freeReplyObject(reply);
    }
}

static void s_fake_on_accept(loop_t *loop, short revents, void *arg)
{
    (void)revents, (void)arg;
    int fd = accept4(R.listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;
    s_fake_close_conn(); /* the store holds one connection at a time */
    R.conn_fd = fd;
    R.reader = redisReaderCreate();
    R.connections++;
    loop_add_fd(loop, fd, POLLIN, s_fake_on_conn, NULL);
}

static void s_fake_listen(void)
{
    R.listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s", R.path);
    assert_int_equal(bind(R.listen_fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(R.listen_fd, 4), 0);
    loop_add_fd(R.loop, R.listen_fd, POLLIN, s_fake_on_accept, NULL);
}

/* Answers every command held back, in order. */
static void s_fake_release(void)
{
    for (; R.held > 0; R.held--) s_fake_send("+OK\r\n");
    R.hold = 0;
}

/* ---- the rig: a loop run until a condition holds ------------------------------------------ */

static int (*s_until)(void);
static uint64_t s_deadline_ms;

static long s_check(loop_t *loop, void *arg)
{
    (void)arg;
    if ((s_until && s_until()) || clock_mono_ms() >= s_deadline_ms) loop_stop(loop);
    return 5;
}

/* Runs the loop until cond() or 3 s; 1 when cond() held. */
static int s_run_until(int (*cond)(void))
{
    s_until = cond;
    s_deadline_ms = clock_mono_ms() + 3000;
    loop_run(R.loop);
    s_until = NULL;
    return cond();
}

static store_t *S;

static store_t *s_store(long timeout_ms, long buffer_commands)
{
    redis_url_t url;
    char err[256], text[200];
    snprintf(text, sizeof text, "unix://%s", R.path);
    assert_int_equal(redis_url_parse(text, &url, err, sizeof err), 0);
    store_conf_t conf = {
        .timeout_ms = timeout_ms, .buffer_commands = buffer_commands, .replay_ms = 60000};
    snprintf(conf.url, sizeof conf.url, "%s", text);
    return S = store_new(R.loop, &url, &conf);
}

static int s_connected(void)
{
    return store_connected(S);
}

static int s_all_acked(void)
{
    return store_unacked(S) == 0;
}

static int setup(void **state)
{
    (void)state;
    memset(&R, 0, sizeof R);
    R.listen_fd = R.conn_fd = -1;
    snprintf(R.dir, sizeof R.dir, "/tmp/sp-test-store-XXXXXX");
    assert_non_null(mkdtemp(R.dir));
    snprintf(R.path, sizeof R.path, "%s/redis.sock", R.dir);
    R.loop = loop_new();
    loop_on_prepare(R.loop, s_check, NULL);
    S = NULL;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    store_destroy(&S);
    s_fake_close_conn();
    if (R.listen_fd >= 0) {
        loop_remove_fd(R.loop, R.listen_fd);
        close(R.listen_fd);
    }
    loop_destroy(&R.loop);
    unlink(R.path);
    rmdir(R.dir);
    return 0;
}

/* A store connected to the fake. */
static store_t *s_connected_store(long timeout_ms)
{
    s_fake_listen();
    store_t *s = s_store(timeout_ms, 100);
    assert_true(s_run_until(s_connected));
    return s;
}

/* ---- tests ------------------------------------------------------------------------------- */

static int s_three_seen_and_acked(void)
{
    return R.n_seen == 3 && store_unacked(S) == 0;
}

static void test_writes_made_while_redis_is_away_reach_it_in_order_once_it_is_there(void **state)
{
    (void)state;
    store_t *s = s_store(2000, 100); /* nothing listens yet */
    store_writef(s, "SET a 1");
    store_writef(s, "SET b 2");
    store_writef(s, "SET c 3");
    assert_false(store_connected(s));
    assert_int_equal(store_unacked(s), 3);
    s_fake_listen();
    assert_true(s_run_until(s_three_seen_and_acked));
    assert_string_equal(R.seen[0], "SET a 1");
    assert_string_equal(R.seen[1], "SET b 2");
    assert_string_equal(R.seen[2], "SET c 3");
}

static int s_four_seen(void)
{
    return R.n_seen >= 4 && store_unacked(S) == 0;
}

static void test_a_lost_connection_has_acknowledged_writes_sent_again_to_the_next(void **state)
{
    (void)state;
    store_t *s = s_connected_store(2000);
    store_writef(s, "SET a 1");
    store_writef(s, "SET b 2");
    assert_true(s_run_until(s_all_acked));
    assert_int_equal(R.n_seen, 2);
    s_fake_close_conn(); /* a failover: the new master may not have them */
    assert_true(s_run_until(s_four_seen));
    assert_int_equal(R.connections, 2);
    assert_string_equal(R.seen[2], "SET a 1");
    assert_string_equal(R.seen[3], "SET b 2");
    assert_int_equal(store_stats(s)->writes_replayed, 2);
}

static int s_marker_seen(void)
{
    return R.n_seen > 0 && !strcmp(R.seen[R.n_seen - 1], "SET z 9") && store_unacked(S) == 0;
}

static void test_a_publish_is_not_sent_again_after_a_reconnect(void **state)
{
    (void)state;
    store_t *s = s_connected_store(2000);
    store_writef(s, "SET a 1");
    store_publish(s, "news", "hello");
    store_writef(s, "SET b 2");
    assert_true(s_run_until(s_all_acked));
    assert_int_equal(R.n_seen, 3);
    assert_string_equal(R.seen[1], "PUBLISH news hello"); /* in the writes' order */
    s_fake_close_conn();
    store_writef(s, "SET z 9"); /* after the replay, in order: whatever is replayed comes first */
    assert_true(s_run_until(s_marker_seen));
    assert_int_equal(R.n_seen, 6);
    assert_string_equal(R.seen[3], "SET a 1");
    assert_string_equal(R.seen[4], "SET b 2");
}

static int n_answers;
static int last_answer_type;
static void s_on_answer(void *arg, redisReply *reply)
{
    (void)arg;
    n_answers++;
    last_answer_type = reply ? reply->type : -1;
}

static int s_one_seen(void)
{
    return R.n_seen == 1;
}

static int s_answered(void)
{
    return n_answers > 0;
}

/* A connected store whose writes the fake will not answer until s_fake_release, no answer
 * heard yet. */
static store_t *s_store_holding_answers(void)
{
    store_t *s = s_connected_store(2000);
    n_answers = 0;
    R.hold = 1;
    return s;
}

static void test_a_write_whose_answer_is_wanted_hears_redis_s_reply_once(void **state)
{
    (void)state;
    store_t *s = s_store_holding_answers();
    const char *argv[] = {"SET", "k", "v"};
    assert_int_equal(store_write_acked(s, s_on_answer, NULL, 3, argv, NULL), 0);
    assert_true(s_run_until(s_one_seen));
    assert_int_equal(n_answers, 0); /* Redis has not answered */
    s_fake_release();
    assert_true(s_run_until(s_answered));
    assert_int_equal(last_answer_type, REDIS_REPLY_STATUS);
    store_writef(s, "SET z 9");
    assert_true(s_run_until(s_marker_seen));
    assert_int_equal(n_answers, 1);
}

static int s_two_seen_and_acked(void)
{
    return R.n_seen == 2 && store_unacked(S) == 0;
}

static void
test_a_wanted_answer_lost_with_the_connection_is_null_and_the_write_goes_again(void **state)
{
    (void)state;
    store_t *s = s_store_holding_answers();
    const char *argv[] = {"SET", "k", "v"};
    assert_int_equal(store_write_acked(s, s_on_answer, NULL, 3, argv, NULL), 0);
    assert_true(s_run_until(s_one_seen));
    s_fake_close_conn();
    R.hold = 0;
    assert_true(s_run_until(s_answered));
    assert_int_equal(last_answer_type, -1); /* NULL: the connection failed first */
    assert_true(s_run_until(s_two_seen_and_acked));
    assert_string_equal(R.seen[1], "SET k v");
    assert_int_equal(n_answers, 1); /* the replay has no one waiting */
}

static void
test_a_replica_s_readonly_answer_makes_the_store_write_again_on_a_new_connection(void **state)
{
    (void)state;
    store_t *s = s_connected_store(2000);
    R.error_next = "-READONLY You can't write against a read only replica.\r\n";
    store_writef(s, "SET a 1");
    assert_true(s_run_until(s_two_seen_and_acked));
    assert_int_equal(R.connections, 2); /* dropped, and made again (to the new master) */
    assert_string_equal(R.seen[1], "SET a 1");
    assert_int_equal(store_stats(s)->errors[STORE_OP_WRITE], 0); /* not a failed write */
}

static int s_timed_out(void)
{
    return store_stats(S)->errors[STORE_OP_TIMEOUT] > 0;
}

static void test_a_redis_that_stops_answering_is_dropped_and_the_write_goes_again(void **state)
{
    (void)state;
    store_t *s = s_connected_store(200);
    R.hold = 1;
    store_writef(s, "SET a 1");
    assert_true(s_run_until(s_timed_out)); /* its oldest command waited past timeout_ms */
    R.hold = 0;
    assert_true(s_run_until(s_two_seen_and_acked));
    assert_int_equal(R.connections, 2);
    assert_string_equal(R.seen[1], "SET a 1");
}

static int s_script_loaded(void)
{
    return R.n_seen >= 1 && !strncmp(R.seen[R.n_seen - 1], "SCRIPT LOAD", 11);
}

static int s_evalsha_twice(void)
{
    int n = 0;
    for (int i = 0; i < R.n_seen; i++) n += !strncmp(R.seen[i], "EVALSHA " FAKE_SHA, 48);
    return n == 2 && store_unacked(S) == 0;
}

static void
test_a_script_write_goes_by_sha_and_noscript_reloads_the_scripts_and_writes_again(void **state)
{
    (void)state;
    store_t *s = s_connected_store(2000);
    store_script_t *script = store_script(s, "return 1");
    assert_true(s_run_until(s_script_loaded));
    store_writef(s, "SET m 1"); /* answered after SCRIPT LOAD: the SHA is known then */
    assert_true(s_run_until(s_all_acked));
    const char *args[] = {"k", "v"};
    R.error_next = "-NOSCRIPT No matching script. Please use EVAL.\r\n"; /* SCRIPT FLUSH'd */
    store_write_script(s, script, 1, 2, args, NULL, NULL, NULL);
    assert_true(s_run_until(s_evalsha_twice));
    assert_int_equal(R.connections, 2); /* dropped, and on the new one the script is loaded
                                           * before the journal (SET m 1, the write) goes again */
    assert_string_equal(R.seen[R.n_seen - 3], "SCRIPT LOAD return 1");
    assert_string_equal(R.seen[R.n_seen - 1], "EVALSHA " FAKE_SHA " 1 k v");
    assert_int_equal(store_stats(s)->errors[STORE_OP_WRITE], 0); /* not a failed write */
}

/* A write with two forms (store_write_first): "SET r 1" stands for the replayable script,
 * "SET f 1" + "INCR n" for the plain commands that do its work once, in a transaction. */
static const char *REPLAY[] = {"SET", "r", "1"};
static const char *FIRST[] = {"SET", "f", "1", "INCR", "n"};
static const size_t FIRST_LENS[] = {3, 1, 1, 4, 1};
static const int FIRST_ARGC[] = {3, 2};

static int s_two_form(store_t *s, store_reply_fn *fn)
{
    return store_write_first(s, 3, REPLAY, NULL, 2, FIRST_ARGC, FIRST, FIRST_LENS, fn, NULL);
}

static int s_transaction_seen(void)
{
    return R.n_seen == 4;
}

static int s_replay_seen_and_acked_after_reconnect(void)
{
    return R.connections == 2 && R.n_seen == 5 && store_unacked(S) == 0;
}

static void s_assert_transaction_seen(void)
{
    assert_string_equal(R.seen[0], "MULTI");
    assert_string_equal(R.seen[1], "SET f 1");
    assert_string_equal(R.seen[2], "INCR n");
    assert_string_equal(R.seen[3], "EXEC");
}

static void
test_a_two_form_write_goes_as_its_first_form_and_is_sent_again_as_its_replayable_one(void **state)
{
    (void)state;
    store_t *s = s_store_holding_answers();
    assert_int_equal(s_two_form(s, s_on_answer), 0);
    assert_true(s_run_until(s_transaction_seen));
    s_assert_transaction_seen();
    assert_int_equal(n_answers, 0);
    s_fake_release(); /* all answered: EXEC's answer is the write's */
    assert_true(s_run_until(s_answered));
    assert_true(s_run_until(s_all_acked));
    assert_int_equal(n_answers, 1);
    assert_int_equal(last_answer_type, REDIS_REPLY_STATUS);
    s_fake_close_conn(); /* a failover: the journal sends the write again, as its script */
    assert_true(s_run_until(s_replay_seen_and_acked_after_reconnect));
    assert_string_equal(R.seen[4], "SET r 1");
    assert_int_equal(store_stats(s)->writes_replayed, 1);
    assert_int_equal(n_answers, 1);
}

static void test_a_two_form_write_lost_before_its_answer_is_sent_again_as_its_replayable_one(
    void **state)
{
    (void)state;
    store_t *s = s_store_holding_answers();
    assert_int_equal(s_two_form(s, s_on_answer), 0);
    assert_true(s_run_until(s_transaction_seen));
    s_fake_close_conn(); /* unanswered: Redis may or may not have applied the first form */
    R.hold = 0;
    assert_true(s_run_until(s_answered));
    assert_int_equal(last_answer_type, -1);
    assert_true(s_run_until(s_replay_seen_and_acked_after_reconnect));
    assert_string_equal(R.seen[4], "SET r 1");
}

static void test_a_two_form_write_a_replica_refused_is_sent_again_as_its_replayable_one(
    void **state)
{
    (void)state;
    store_t *s = s_connected_store(2000);
    n_answers = 0;
    R.error_at[1] = "-READONLY You can't write against a read only replica.\r\n";
    R.error_at[3] = "-EXECABORT Transaction discarded because of previous errors.\r\n";
    assert_int_equal(s_two_form(s, s_on_answer), 0);
    assert_true(s_run_until(s_answered));
    s_assert_transaction_seen();
    assert_int_equal(last_answer_type, REDIS_REPLY_ERROR); /* the write's answer: refused */
    R.error_at[1] = R.error_at[3] = NULL;
    /* nothing of it applied: not acknowledged, it goes again, as its script, to the next one */
    assert_true(s_run_until(s_replay_seen_and_acked_after_reconnect));
    assert_string_equal(R.seen[4], "SET r 1");
    assert_int_equal(store_stats(s)->errors[STORE_OP_WRITE], 0); /* a reconnect, not a failure */
}

static void test_a_command_of_a_first_form_that_fails_alone_is_counted(void **state)
{
    (void)state;
    store_t *s = s_connected_store(2000);
    n_answers = 0;
    R.error_at[3] = "*2\r\n+OK\r\n-WRONGTYPE Operation against a key holding the wrong kind\r\n";
    assert_int_equal(s_two_form(s, s_on_answer), 0);
    assert_true(s_run_until(s_answered));
    assert_true(s_run_until(s_all_acked)); /* applied, all but that command: not sent again */
    assert_int_equal(last_answer_type, REDIS_REPLY_ARRAY);
    assert_int_equal(store_stats(s)->errors[STORE_OP_WRITE], 1);
    assert_int_equal(R.n_seen, 4);
}

static void test_a_two_form_write_made_while_redis_is_away_goes_only_as_its_replayable_one(
    void **state)
{
    (void)state;
    store_t *s = s_store(2000, 100);
    n_answers = 0;
    assert_int_equal(s_two_form(s, s_on_answer), -1); /* kept: nobody will be told */
    s_fake_listen();
    assert_true(s_run_until(s_one_seen));
    assert_true(s_run_until(s_all_acked));
    assert_string_equal(R.seen[0], "SET r 1");
    assert_int_equal(R.n_seen, 1);
    assert_int_equal(n_answers, 0);
}

static void s_on_connect(void *arg, store_t *store)
{
    (void)arg;
    assert_int_equal(store_queryf(store, NULL, NULL, "SCRIPT LOAD x"), 0);
}

static void test_connect_hooks_run_before_the_buffered_writes_are_sent(void **state)
{
    (void)state;
    store_t *s = s_store(2000, 100);
    store_on_connect(s, s_on_connect, NULL);
    store_writef(s, "SET a 1");
    s_fake_listen();
    assert_true(s_run_until(s_two_seen_and_acked));
    assert_string_equal(R.seen[0], "SCRIPT LOAD x"); /* what a Redis restarted empty lost */
    assert_string_equal(R.seen[1], "SET a 1");
}

static void test_writes_beyond_the_buffer_are_dropped_and_counted(void **state)
{
    (void)state;
    store_t *s = s_store(2000, 2); /* Redis away */
    store_writef(s, "SET a 1");
    store_writef(s, "SET b 2");
    store_writef(s, "SET c 3");
    assert_int_equal(store_stats(s)->writes_dropped, 1);
    assert_int_equal(store_unacked(s), 2);
    s_fake_listen();
    assert_true(s_run_until(s_two_seen_and_acked));
    assert_string_equal(R.seen[0], "SET a 1"); /* the newest is the one refused */
    assert_string_equal(R.seen[1], "SET b 2");
}

int main(void)
{
    log_set_level(LOG_OFF); /* the store's warnings are the test's own doing */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            test_writes_made_while_redis_is_away_reach_it_in_order_once_it_is_there, setup,
            teardown),
        cmocka_unit_test_setup_teardown(
            test_a_lost_connection_has_acknowledged_writes_sent_again_to_the_next, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_publish_is_not_sent_again_after_a_reconnect, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            test_a_write_whose_answer_is_wanted_hears_redis_s_reply_once, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_a_wanted_answer_lost_with_the_connection_is_null_and_the_write_goes_again, setup,
            teardown),
        cmocka_unit_test_setup_teardown(
            test_a_replica_s_readonly_answer_makes_the_store_write_again_on_a_new_connection, setup,
            teardown),
        cmocka_unit_test_setup_teardown(
            test_a_redis_that_stops_answering_is_dropped_and_the_write_goes_again, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_a_two_form_write_goes_as_its_first_form_and_is_sent_again_as_its_replayable_one,
            setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_a_two_form_write_lost_before_its_answer_is_sent_again_as_its_replayable_one, setup,
            teardown),
        cmocka_unit_test_setup_teardown(
            test_a_two_form_write_a_replica_refused_is_sent_again_as_its_replayable_one, setup,
            teardown),
        cmocka_unit_test_setup_teardown(test_a_command_of_a_first_form_that_fails_alone_is_counted,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_a_two_form_write_made_while_redis_is_away_goes_only_as_its_replayable_one, setup,
            teardown),
        cmocka_unit_test_setup_teardown(test_connect_hooks_run_before_the_buffered_writes_are_sent,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_a_script_write_goes_by_sha_and_noscript_reloads_the_scripts_and_writes_again,
            setup, teardown),
        cmocka_unit_test_setup_teardown(test_writes_beyond_the_buffer_are_dropped_and_counted,
                                        setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
