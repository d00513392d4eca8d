/* tests/unit/test_codec_sessions.c — the session parts of the wire: a JobSpec's
 * session fields and what each kind requires of them, the route's session ids, READY's and
 * SESSIONS' lists read in place, a Result's session map and snapshot; hostile forms refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "proto/job.h"
#include "proto/mpack.h"
#include "proto/result.h"
#include "proto/wire.h"

static const uint8_t ID_A[ID_BYTES] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
static const uint8_t ID_B[ID_BYTES] = {0xb0, 0xb1, 0xb2, 0xb3, 0xb4, 0xb5, 0xb6, 0xb7,
                                       0xb8, 0xb9, 0xba, 0xbb, 0xbc, 0xbd, 0xbe, 0xbf};

static void s_job(jobspec_t *job, job_kind_t kind)
{
    jobspec_init(job);
    job->kind = kind;
    job->tenant = "acme";
    job->service = "python.basic";
    job->code = "";
}

static int s_round_trip(const jobspec_t *in, jobspec_t *out, char *err, size_t errlen)
{
    buf_t b;
    buf_init(&b);
    jobspec_encode(in, &b);
    int rc = jobspec_decode(b.data, b.len, out, err, errlen);
    buf_free(&b);
    return rc;
}

static void test_fork_job_carries_both_ids(void **state)
{
    (void)state;
    jobspec_t in, out;
    char err[128];
    s_job(&in, JOB_SESSION_FORK);
    in.has_session = in.has_new_session = 1;
    memcpy(in.session, ID_A, ID_BYTES);
    memcpy(in.new_session, ID_B, ID_BYTES);
    assert_int_equal(s_round_trip(&in, &out, err, sizeof err), 0);
    assert_int_equal(out.kind, JOB_SESSION_FORK);
    assert_memory_equal(out.session, ID_A, ID_BYTES);
    assert_memory_equal(out.new_session, ID_B, ID_BYTES);
    assert_true(job_kind_is_session(out.kind));
    jobspec_clear(&out);
}

static void test_new_session_carries_its_idle_timeout(void **state)
{
    (void)state;
    jobspec_t in, out;
    char err[128];
    s_job(&in, JOB_SESSION_NEW);
    in.has_new_session = 1;
    memcpy(in.new_session, ID_B, ID_BYTES);
    in.idle_timeout_s = 600;
    in.limits.memory_mb = 512;
    assert_int_equal(s_round_trip(&in, &out, err, sizeof err), 0);
    assert_int_equal(out.idle_timeout_s, 600);
    assert_int_equal(out.limits.memory_mb, 512);
    assert_false(out.has_session);
    jobspec_clear(&out);
}

static void test_restore_carries_the_snapshot_bytes(void **state)
{
    (void)state;
    jobspec_t in, out;
    char err[128];
    s_job(&in, JOB_SESSION_RESTORE);
    in.has_session = 1;
    memcpy(in.session, ID_A, ID_BYTES);
    in.snapshot = "\x80"; /* an empty msgpack map */
    in.snapshot_len = 1;
    assert_int_equal(s_round_trip(&in, &out, err, sizeof err), 0);
    assert_int_equal(out.snapshot_len, 1);
    assert_memory_equal(out.snapshot, "\x80", 1);
    jobspec_clear(&out);
}

/* Each kind names what it needs; a JobSpec with the wrong set is malformed, not guessed at. */
static void test_each_kind_requires_its_session_fields(void **state)
{
    (void)state;
    jobspec_t in, out;
    char err[128];
    s_job(&in, JOB_SESSION_NEW); /* without new_session */
    assert_int_equal(s_round_trip(&in, &out, err, sizeof err), -1);
    assert_non_null(strstr(err, "new_session"));
    s_job(&in, JOB_SESSION_FORK); /* without the new id */
    in.has_session = 1;
    assert_int_equal(s_round_trip(&in, &out, err, sizeof err), -1);
    s_job(&in, JOB_SESSION_CLOSE); /* without the session */
    assert_int_equal(s_round_trip(&in, &out, err, sizeof err), -1);
    s_job(&in, JOB_SESSION_RESTORE); /* with both targets */
    in.has_session = in.has_new_session = 1;
    in.snapshot = "\x80";
    in.snapshot_len = 1;
    assert_int_equal(s_round_trip(&in, &out, err, sizeof err), -1);
    s_job(&in, JOB_EXEC); /* a cell is an exec with a session: fine */
    in.has_session = 1;
    assert_int_equal(s_round_trip(&in, &out, err, sizeof err), 0);
    assert_true(out.has_session);
    jobspec_clear(&out);
    s_job(&in, JOB_EXEC); /* an exec cannot make a session */
    in.has_new_session = 1;
    assert_int_equal(s_round_trip(&in, &out, err, sizeof err), -1);
}

static void test_a_session_id_of_the_wrong_size_is_refused(void **state)
{
    (void)state;
    buf_t b;
    buf_init(&b);
    mpw_t w;
    mpw_init(&w, &b);
    mpw_map(&w, 6);
    mpw_kv_uint(&w, "v", 1);
    mpw_kv_str(&w, "kind", "session_close");
    mpw_kv_str(&w, "tenant", "acme");
    mpw_kv_str(&w, "service", "python.basic");
    mpw_kv_str(&w, "code", "");
    mpw_str(&w, "session");
    mpw_bin(&w, ID_A, 15);
    jobspec_t out;
    char err[128];
    assert_int_equal(jobspec_decode(b.data, b.len, &out, err, sizeof err), -1);
    assert_non_null(strstr(err, "16 bytes"));
    buf_free(&b);
}

static void test_route_carries_session_ids(void **state)
{
    (void)state;
    route_t in = {.tenant = "acme", .has_session = 1, .has_new_session = 1}, out;
    memcpy(in.session, ID_A, ID_BYTES);
    memcpy(in.new_session, ID_B, ID_BYTES);
    buf_t b;
    buf_init(&b);
    route_encode(&in, &b);
    char err[128];
    assert_int_equal(route_decode(b.data, b.len, &out, err, sizeof err), 0);
    assert_true(out.has_session && out.has_new_session);
    assert_memory_equal(out.session, ID_A, ID_BYTES);
    assert_memory_equal(out.new_session, ID_B, ID_BYTES);
    buf_free(&b);
}

static void test_ready_lists_sessions_read_in_place(void **state)
{
    (void)state;
    ready_t in = {.node = "n1",
                  .n_services = 1,
                  .slots = 2,
                  .mem_free_mb = 3000,
                  .max_sessions = 64},
            out;
    strcpy(in.services[0], "python.basic");
    uint8_t list[2][ID_BYTES];
    memcpy(list[0], ID_A, ID_BYTES);
    memcpy(list[1], ID_B, ID_BYTES);
    buf_t b;
    buf_init(&b);
    ready_encode(&in, &b, (const uint8_t(*)[ID_BYTES])list, 2);
    char err[128];
    assert_int_equal(ready_decode(b.data, b.len, &out, err, sizeof err), 0);
    assert_int_equal(out.mem_free_mb, 3000);
    assert_int_equal(out.max_sessions, 64);
    assert_int_equal(out.sessions.n, 2);
    uint8_t got[ID_BYTES];
    wire_ids_at(&out.sessions, 1, got);
    assert_memory_equal(got, ID_B, ID_BYTES);
    buf_free(&b);
}

typedef struct {
    int n;
    char last[64];
    uint8_t id[ID_BYTES];
} downs_t;

static void s_down(void *arg, const uint8_t id[ID_BYTES], const char *reason, size_t len)
{
    downs_t *d = arg;
    d->n++;
    snprintf(d->last, sizeof d->last, "%.*s", (int)len, reason);
    memcpy(d->id, id, ID_BYTES);
}

static void test_sessions_message_round_trip(void **state)
{
    (void)state;
    uint8_t up[1][ID_BYTES], down[1][ID_BYTES];
    memcpy(up[0], ID_A, ID_BYTES);
    memcpy(down[0], ID_B, ID_BYTES);
    const char *reasons[] = {"session expired after 600 s idle"};
    buf_t b;
    buf_init(&b);
    sessions_encode(1234, 7, (const uint8_t(*)[ID_BYTES])up, 1, (const uint8_t(*)[ID_BYTES])down,
                    reasons, 1, &b);
    sessions_msg_t m;
    char err[128];
    assert_int_equal(sessions_decode(b.data, b.len, &m, err, sizeof err), 0);
    assert_int_equal(m.mem_free_mb, 1234);
    assert_int_equal(m.sessions, 7);
    assert_int_equal(m.up.n, 1);
    downs_t d = {0};
    wire_down_each(&m, s_down, &d);
    assert_int_equal(d.n, 1);
    assert_string_equal(d.last, "session expired after 600 s idle");
    assert_memory_equal(d.id, ID_B, ID_BYTES);
    /* every truncation is refused, none crashes */
    for (size_t cut = 0; cut < b.len; cut++)
        assert_int_equal(sessions_decode(b.data, cut, &m, err, sizeof err), -1);
    buf_free(&b);
}

/* A reason is shown and logged as it is: the encoder blanks control characters (a reason may
 * quote the tenant's text), the decoder refuses them. */
static void test_a_reason_carries_no_control_character(void **state)
{
    (void)state;
    uint8_t down[1][ID_BYTES];
    memcpy(down[0], ID_B, ID_BYTES);
    const char *reasons[] = {"line one\nlevel=error fake=1\x7f"};
    buf_t b;
    buf_init(&b);
    sessions_encode(1, 0, NULL, 0, (const uint8_t(*)[ID_BYTES])down, reasons, 1, &b);
    sessions_msg_t m;
    char err[128];
    assert_int_equal(sessions_decode(b.data, b.len, &m, err, sizeof err), 0);
    downs_t d = {0};
    wire_down_each(&m, s_down, &d);
    assert_string_equal(d.last, "line one level=error fake=1 ");
    buf_reset(&b);
    mpw_t w;
    mpw_init(&w, &b);
    mpw_map(&w, 2);
    mpw_kv_uint(&w, "v", 1);
    mpw_str(&w, "down");
    mpw_array(&w, 1);
    mpw_array(&w, 2);
    mpw_bin(&w, ID_B, ID_BYTES);
    mpw_strn(&w, "a\0b", 3);
    assert_int_equal(sessions_decode(b.data, b.len, &m, err, sizeof err), -1);
    assert_non_null(strstr(err, "control character"));
    buf_free(&b);
}

/* A list whose element is a bin of another size (or not a bin) cannot be read in place. */
static void test_an_id_list_of_odd_elements_is_refused(void **state)
{
    (void)state;
    buf_t b;
    buf_init(&b);
    mpw_t w;
    mpw_init(&w, &b);
    mpw_map(&w, 2);
    mpw_kv_uint(&w, "v", 1);
    mpw_str(&w, "up");
    mpw_array(&w, 2);
    mpw_bin(&w, ID_A, ID_BYTES);
    mpw_str(&w, "0123456789abcdef0");
    sessions_msg_t m;
    char err[128];
    assert_int_equal(sessions_decode(b.data, b.len, &m, err, sizeof err), -1);
    assert_non_null(strstr(err, "16-byte"));
    buf_free(&b);
}

static void test_result_carries_the_session_and_snapshot(void **state)
{
    (void)state;
    result_t in, out;
    result_init(&in);
    in.status = ST_OK;
    in.session.present = 1;
    memcpy(in.session.id, ID_A, ID_BYTES);
    in.session.cell = 3;
    in.session.alive = 0;
    in.session.end_reason = "memory_limit: the session used more than its 256 MB";
    in.session.memory_kb = 20480;
    in.session.memory_mb = 256;
    in.session.idle_timeout_s = 600;
    in.session.forks_left = 14;
    in.session.summary = "{\"variables\": []}";
    /* {"v": 1} as the snapshot map */
    in.snapshot = "\x81\xa1v\x01";
    in.snapshot_len = 4;
    buf_t b;
    buf_init(&b);
    result_encode(&in, &b);
    char err[128];
    assert_int_equal(result_decode(b.data, b.len, &out, err, sizeof err), 0);
    assert_true(out.session.present);
    assert_memory_equal(out.session.id, ID_A, ID_BYTES);
    assert_int_equal(out.session.cell, 3);
    assert_false(out.session.alive);
    assert_string_equal(out.session.end_reason, in.session.end_reason);
    assert_int_equal(out.session.memory_kb, 20480);
    assert_int_equal(out.session.forks_left, 14);
    assert_string_equal(out.session.summary, in.session.summary);
    assert_int_equal(out.snapshot_len, 4);
    assert_memory_equal(out.snapshot, "\x81\xa1v\x01", 4);
    result_clear(&out);
    buf_free(&b);
}

static void test_a_snapshot_that_is_not_a_map_is_refused(void **state)
{
    (void)state;
    buf_t b;
    buf_init(&b);
    mpw_t w;
    mpw_init(&w, &b);
    mpw_map(&w, 3);
    mpw_kv_uint(&w, "v", 1);
    mpw_kv_str(&w, "status", "ok");
    mpw_str(&w, "snapshot");
    mpw_bin(&w, "xx", 2);
    result_t out;
    char err[128];
    assert_int_equal(result_decode(b.data, b.len, &out, err, sizeof err), -1);
    buf_free(&b);
}

static void test_worker_sessions_frame_is_parsed(void **state)
{
    (void)state;
    buf_t b;
    buf_init(&b);
    sessions_encode(10, 0, NULL, 0, NULL, NULL, 0, &b);
    uint8_t cmd = W_SESSIONS;
    frames_t fr = {.n = 3};
    fr.f[0] = (frame_t){(const uint8_t *)WIRE_WORKER_TAG, 4};
    fr.f[1] = (frame_t){&cmd, 1};
    fr.f[2] = (frame_t){b.data, b.len};
    worker_msg_t m;
    char err[128];
    assert_int_equal(wire_parse_worker(&fr, &m, err, sizeof err), 0);
    assert_int_equal(m.cmd, W_SESSIONS);
    assert_int_equal(m.sessions.mem_free_mb, 10);
    buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fork_job_carries_both_ids),
        cmocka_unit_test(test_new_session_carries_its_idle_timeout),
        cmocka_unit_test(test_restore_carries_the_snapshot_bytes),
        cmocka_unit_test(test_each_kind_requires_its_session_fields),
        cmocka_unit_test(test_a_session_id_of_the_wrong_size_is_refused),
        cmocka_unit_test(test_route_carries_session_ids),
        cmocka_unit_test(test_ready_lists_sessions_read_in_place),
        cmocka_unit_test(test_sessions_message_round_trip),
        cmocka_unit_test(test_an_id_list_of_odd_elements_is_refused),
        cmocka_unit_test(test_a_reason_carries_no_control_character),
        cmocka_unit_test(test_result_carries_the_session_and_snapshot),
        cmocka_unit_test(test_a_snapshot_that_is_not_a_map_is_refused),
        cmocka_unit_test(test_worker_sessions_frame_is_parsed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
