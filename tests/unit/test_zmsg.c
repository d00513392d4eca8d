/* tests/unit/test_zmsg.c — the node ⇄ zygote messages (executor-node/link/zmsg.h): each type round
 * trips through its row of the table, hostile payloads are refused with a reason, and messages
 * of any size cross a real socketpair whole. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "proto/mpack.h"
#include "executor-node/link/zmsg.h"

static const uint8_t s_id[ID_BYTES] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};

/* Encodes m and decodes it again into back. */
static int s_round_trip(const zmsg_t *m, zmsg_t *back, buf_t *b, char *err, size_t errlen)
{
    buf_init(b);
    zmsg_encode(m, b);
    return zmsg_decode((uint8_t)m->type, s_id, b->data, b->len, back, err, errlen);
}

static void test_hello_round_trip(void **state)
{
    (void)state;
    zmsg_t m = {.type = ZM_HELLO}, back;
    snprintf(m.hello.profile, sizeof m.hello.profile, "python.basic");
    snprintf(m.hello.python, sizeof m.hello.python, "3.11.2");
    snprintf(m.hello.layers, sizeof m.hello.layers, "rlimits,seccomp");
    m.hello.packages = "{\"numpy\": \"1.24.2\"}";
    m.hello.packages_len = strlen(m.hello.packages);
    m.hello.base_vm = 123456789;
    m.hello.landlock_abi = 6;
    buf_t b;
    char err[128];
    assert_int_equal(s_round_trip(&m, &back, &b, err, sizeof err), 0);
    assert_int_equal(back.type, ZM_HELLO);
    assert_string_equal(back.hello.profile, "python.basic");
    assert_string_equal(back.hello.python, "3.11.2");
    assert_string_equal(back.hello.layers, "rlimits,seccomp");
    assert_int_equal(back.hello.packages_len, m.hello.packages_len);
    assert_memory_equal(back.hello.packages, m.hello.packages, m.hello.packages_len);
    assert_true(back.hello.base_vm == 123456789);
    assert_int_equal(back.hello.landlock_abi, 6);
    buf_free(&b);
}

/* The package list is JSON: the codec hands it over whole (the node keeps it or drops it,
 * never cuts it), while names and versions are cut to their fields. */
static void test_hello_packages_come_whole_and_names_are_cut(void **state)
{
    (void)state;
    buf_t b;
    buf_init(&b);
    mpw_t w;
    mpw_init(&w, &b);
    size_t big_len = 100000;
    char *big = malloc(big_len + 1);
    memset(big, 'x', big_len);
    big[big_len] = '\0';
    mpw_map(&w, 2);
    mpw_kv_str(&w, "packages", big);
    mpw_kv_str(&w, "python", "3.11.2-and-a-version-string-far-too-long-for-its-field");
    zmsg_t m;
    char err[128];
    assert_int_equal(zmsg_decode(ZM_HELLO, s_id, b.data, b.len, &m, err, sizeof err), 0);
    assert_int_equal(m.hello.packages_len, big_len);
    assert_int_equal(strlen(m.hello.python), sizeof m.hello.python - 1);
    free(big);
    buf_free(&b);
}

static void test_stats_of_a_job_round_trip(void **state)
{
    (void)state;
    zmsg_t m = {.type = ZM_STATS}, back;
    m.stats = (zmsg_stats_t){.job = 1,
                             .status = ST_SECURITY_VIOLATION,
                             .wall_ms = 1.5,
                             .cpu_ms = 0.25,
                             .max_rss_kb = 9000,
                             .kind = 1,
                             .forks = 3,
                             .pool = 2,
                             .lowered = 1};
    snprintf(m.stats.syscall, sizeof m.stats.syscall, "socket");
    buf_t b;
    char err[128];
    assert_int_equal(s_round_trip(&m, &back, &b, err, sizeof err), 0);
    assert_int_equal(back.stats.job, 1);
    assert_int_equal(back.stats.status, ST_SECURITY_VIOLATION);
    assert_true(back.stats.wall_ms == 1.5 && back.stats.cpu_ms == 0.25);
    assert_int_equal(back.stats.max_rss_kb, 9000);
    assert_string_equal(back.stats.syscall, "socket");
    assert_int_equal(back.stats.kind, 1);
    assert_int_equal(back.stats.forks, 3);
    assert_int_equal(back.stats.pool, 2);
    assert_int_equal(back.stats.lowered, 1);
    assert_memory_equal(back.id, s_id, ID_BYTES);
    buf_free(&b);
}

static void test_stats_pool_news_carry_no_job(void **state)
{
    (void)state;
    zmsg_t m = {.type = ZM_STATS}, back;
    m.stats = (zmsg_stats_t){.forks = 4, .pool = 3};
    buf_t b;
    char err[128];
    assert_int_equal(s_round_trip(&m, &back, &b, err, sizeof err), 0);
    assert_int_equal(back.stats.job, 0);
    assert_int_equal(back.stats.forks, 4);
    assert_int_equal(back.stats.pool, 3);
    buf_free(&b);

    /* job fields without a status mean nothing and are dropped */
    buf_init(&b);
    mpw_t w;
    mpw_init(&w, &b);
    mpw_map(&w, 2);
    mpw_kv_double(&w, "wall_ms", 5.0);
    mpw_kv_uint(&w, "pool", 1);
    assert_int_equal(zmsg_decode(ZM_STATS, s_id, b.data, b.len, &back, err, sizeof err), 0);
    assert_int_equal(back.stats.job, 0);
    assert_true(back.stats.wall_ms == 0);
    buf_free(&b);
}

static void test_stats_unknown_status_counts_as_internal_error(void **state)
{
    (void)state;
    buf_t b;
    buf_init(&b);
    mpw_t w;
    mpw_init(&w, &b);
    mpw_map(&w, 1);
    mpw_kv_str(&w, "status", "exploded");
    zmsg_t m;
    char err[128];
    assert_int_equal(zmsg_decode(ZM_STATS, s_id, b.data, b.len, &m, err, sizeof err), 0);
    assert_int_equal(m.stats.job, 1);
    assert_int_equal(m.stats.status, ST_INTERNAL_ERROR);
    buf_free(&b);
}

static void test_progress_running_and_output_round_trip(void **state)
{
    (void)state;
    zmsg_t m = {.type = ZM_PROGRESS}, back;
    buf_t b;
    char err[128];
    assert_int_equal(s_round_trip(&m, &back, &b, err, sizeof err), 0);
    assert_null(back.progress.stream);
    buf_free(&b);
    m.progress = (zmsg_progress_t){"stderr", (const uint8_t *)"oops\n", 5};
    assert_int_equal(s_round_trip(&m, &back, &b, err, sizeof err), 0);
    assert_string_equal(back.progress.stream, "stderr");
    assert_int_equal(back.progress.len, 5);
    assert_memory_equal(back.progress.data, "oops\n", 5);
    assert_ptr_equal(back.payload, b.data); /* the node forwards the chunk as it came */
    buf_free(&b);
}

static void test_progress_of_no_known_kind_is_refused(void **state)
{
    (void)state;
    const char *cases[][2] = {{"stream", "stdin"}, {"state", "paused"}};
    for (size_t i = 0; i < 2; i++) {
        buf_t b;
        buf_init(&b);
        mpw_t w;
        mpw_init(&w, &b);
        mpw_map(&w, 2);
        mpw_kv_str(&w, cases[i][0], cases[i][1]);
        mpw_str(&w, "data");
        mpw_bin(&w, "x", 1);
        zmsg_t m;
        char err[128] = "";
        assert_int_equal(zmsg_decode(ZM_PROGRESS, s_id, b.data, b.len, &m, err, sizeof err), -1);
        assert_true(strncmp(err, "PROGRESS: ", 10) == 0);
        buf_free(&b);
    }
}

static void test_job_result_and_fatal_carry_their_payload_untouched(void **state)
{
    (void)state;
    const uint8_t body[] = {0xc1, 0xff, 0x00, 'x'}; /* not msgpack, and not ours to read */
    zmsg_t m;
    char err[128];
    uint8_t types[] = {ZM_JOB, ZM_RESULT, ZM_FATAL};
    for (size_t i = 0; i < sizeof types; i++) {
        assert_int_equal(zmsg_decode(types[i], s_id, body, sizeof body, &m, err, sizeof err), 0);
        assert_ptr_equal(m.payload, body);
        assert_int_equal(m.len, sizeof body);
    }
}

static void test_cancel_and_retire_refuse_a_payload(void **state)
{
    (void)state;
    zmsg_t m;
    char err[128];
    assert_int_equal(zmsg_decode(ZM_CANCEL, s_id, NULL, 0, &m, err, sizeof err), 0);
    assert_int_equal(zmsg_decode(ZM_RETIRE, s_id, (const uint8_t *)"x", 1, &m, err, sizeof err),
                     -1);
    assert_string_equal(err, "RETIRE carries no payload");
}

static void test_unknown_type_is_refused(void **state)
{
    (void)state;
    zmsg_t m;
    char err[128];
    assert_int_equal(zmsg_decode(0, s_id, NULL, 0, &m, err, sizeof err), -1);
    assert_int_equal(zmsg_decode(200, s_id, NULL, 0, &m, err, sizeof err), -1);
    assert_string_equal(err, "unknown message type 200");
    assert_string_equal(zmsg_name(200), "?");
    assert_string_equal(zmsg_name(ZM_STATS), "STATS");
}

static void test_every_truncation_and_trailing_bytes_are_refused(void **state)
{
    (void)state;
    zmsg_t m = {.type = ZM_HELLO}, back;
    snprintf(m.hello.profile, sizeof m.hello.profile, "python.basic");
    buf_t b;
    buf_init(&b);
    zmsg_encode(&m, &b);
    char err[128];
    for (size_t len = 0; len < b.len; len++)
        assert_int_equal(zmsg_decode(ZM_HELLO, s_id, b.data, len, &back, err, sizeof err), -1);
    buf_append(&b, "\xc0", 1);
    assert_int_equal(zmsg_decode(ZM_HELLO, s_id, b.data, b.len, &back, err, sizeof err), -1);
    assert_string_equal(err, "HELLO: trailing bytes");
    buf_free(&b);
}

static void test_unknown_keys_are_skipped(void **state)
{
    (void)state;
    buf_t b;
    buf_init(&b);
    mpw_t w;
    mpw_init(&w, &b);
    mpw_map(&w, 3);
    mpw_kv_str(&w, "future", "field");
    mpw_str(&w, "nested");
    mpw_map(&w, 1);
    mpw_kv_uint(&w, "a", 1);
    mpw_kv_uint(&w, "forks", 7);
    zmsg_t m;
    char err[128];
    assert_int_equal(zmsg_decode(ZM_STATS, s_id, b.data, b.len, &m, err, sizeof err), 0);
    assert_int_equal(m.stats.forks, 7);
    buf_free(&b);
}

typedef struct {
    int n;
    uint8_t type;
    size_t len;
    int intact;
} seen_t;

static void s_collect(void *arg, const zmsg_t *msg)
{
    seen_t *seen = arg;
    seen->n++;
    seen->type = (uint8_t)msg->type;
    seen->len = msg->len;
    seen->intact = msg->type != ZM_RESULT || (msg->len > 1 && msg->payload[msg->len - 1] == 0x5a &&
                                              memcmp(msg->id, s_id, ID_BYTES) == 0);
}

static void test_a_result_larger_than_a_datagram_crosses_whole(void **state)
{
    (void)state;
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
    zchan_t *zygote = zchan_new(sv[0]), *node = zchan_new(sv[1]);
    size_t len = 300000;
    uint8_t *body = calloc(1, len);
    body[len - 1] = 0x5a;
    zmsg_t m = {.type = ZM_RESULT, .id = s_id, .payload = body, .len = len};
    assert_int_equal(zmsg_send(zygote, &m), 0);
    seen_t seen = {0};
    while (zchan_pending(zygote) && seen.n == 0) {
        assert_int_equal(zmsg_read(node, s_collect, &seen), 0);
        zchan_flush(zygote);
    }
    assert_int_equal(zmsg_read(node, s_collect, &seen), 0);
    assert_int_equal(seen.n, 1);
    assert_int_equal(seen.type, ZM_RESULT);
    assert_int_equal(seen.len, len);
    assert_true(seen.intact);
    /* a malformed message is dropped, and the channel goes on */
    zmsg_t retire = {.type = ZM_RETIRE};
    assert_int_equal(zchan_send(zygote, ZM_RETIRE, NULL, "x", 1), 0);
    assert_int_equal(zmsg_send(zygote, &retire), 0);
    assert_int_equal(zmsg_read(node, s_collect, &seen), 0);
    assert_int_equal(seen.n, 2);
    assert_int_equal(seen.type, ZM_RETIRE);
    zchan_destroy(&zygote);
    assert_int_equal(zmsg_read(node, s_collect, &seen), -1); /* the peer is gone */
    zchan_destroy(&node);
    free(body);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hello_round_trip),
        cmocka_unit_test(test_hello_packages_come_whole_and_names_are_cut),
        cmocka_unit_test(test_stats_of_a_job_round_trip),
        cmocka_unit_test(test_stats_pool_news_carry_no_job),
        cmocka_unit_test(test_stats_unknown_status_counts_as_internal_error),
        cmocka_unit_test(test_progress_running_and_output_round_trip),
        cmocka_unit_test(test_progress_of_no_known_kind_is_refused),
        cmocka_unit_test(test_job_result_and_fatal_carry_their_payload_untouched),
        cmocka_unit_test(test_cancel_and_retire_refuse_a_payload),
        cmocka_unit_test(test_unknown_type_is_refused),
        cmocka_unit_test(test_every_truncation_and_trailing_bytes_are_refused),
        cmocka_unit_test(test_unknown_keys_are_skipped),
        cmocka_unit_test(test_a_result_larger_than_a_datagram_crosses_whole),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
