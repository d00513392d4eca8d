/* tests/unit/test_codec.c — JobSpec, Result, route, READY and LEAVING bodies (proto/job.h,
 * proto/result.h, proto/wire.h): round trips, and hostile bodies refused with a reason. */
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

static void test_jobspec_round_trip(void **state)
{
    (void)state;
    jobspec_t in, out;
    jobspec_init(&in);
    char *names[] = {"x", "df"};
    char *imports[] = {"math"};
    job_file_t files[] = {{"data.csv", "a,b\n1,2\n", 8}};
    in.kind = JOB_VALIDATE;
    in.tenant = "acme";
    in.service = "python.basic";
    in.code = "print(1)\n";
    in.code_len = 9;
    in.limits = (limits_t){1000, 900, 64, 4096, 8};
    in.inspect = names;
    in.n_inspect = 2;
    in.allowed_imports = imports;
    in.n_allowed_imports = 1;
    in.stdin_data = "42\n";
    in.stdin_len = 3;
    in.capture_output = 0;
    in.files = files;
    in.n_files = 1;
    in.submitted_ms = 1234567890123ULL;
    buf_t b;
    buf_init(&b);
    jobspec_encode(&in, &b);
    char err[128];
    assert_int_equal(jobspec_decode(b.data, b.len, &out, err, sizeof err), 0);
    assert_int_equal(out.kind, JOB_VALIDATE);
    assert_string_equal(out.tenant, "acme");
    assert_string_equal(out.service, "python.basic");
    assert_int_equal(out.code_len, 9);
    assert_memory_equal(out.code, "print(1)\n", 9);
    assert_int_equal(out.limits.wall_ms, 1000);
    assert_int_equal(out.limits.nofile, 8);
    assert_int_equal(out.n_inspect, 2);
    assert_string_equal(out.inspect[1], "df");
    assert_string_equal(out.allowed_imports[0], "math");
    assert_int_equal(out.stdin_len, 3);
    assert_int_equal(out.capture_output, 0);
    assert_int_equal(out.n_files, 1);
    assert_string_equal(out.files[0].path, "data.csv");
    assert_int_equal(out.files[0].len, 8);
    assert_true(out.submitted_ms == 1234567890123ULL);
    jobspec_clear(&out);
    buf_free(&b);
}

static void s_encode_map(buf_t *b, const char *key, const char *value, int version)
{
    mpw_t w;
    mpw_init(&w, b);
    mpw_map(&w, value ? 4 : 3);
    mpw_kv_uint(&w, "v", (uint64_t)version);
    mpw_kv_str(&w, "tenant", "t");
    mpw_kv_str(&w, "service", "python.basic");
    if (value) mpw_kv_str(&w, key, value);
}

static void test_jobspec_without_code_is_refused(void **state)
{
    (void)state;
    buf_t b;
    buf_init(&b);
    s_encode_map(&b, NULL, NULL, 1);
    jobspec_t job;
    char      err[128];
    assert_int_equal(jobspec_decode(b.data, b.len, &job, err, sizeof err), -1);
    assert_string_equal(err, "JobSpec without code");
    buf_free(&b);
}

static void test_jobspec_unknown_version_is_refused(void **state)
{
    (void)state;
    buf_t b;
    buf_init(&b);
    s_encode_map(&b, "code", "1", 2);
    jobspec_t job;
    char      err[128];
    assert_int_equal(jobspec_decode(b.data, b.len, &job, err, sizeof err), -1);
    assert_string_equal(err, "unsupported JobSpec version");
    buf_free(&b);
}

static void test_jobspec_unknown_kind_is_refused(void **state)
{
    (void)state;
    buf_t b;
    buf_init(&b);
    s_encode_map(&b, "kind", "shell", 1);
    jobspec_t job;
    char      err[128];
    assert_int_equal(jobspec_decode(b.data, b.len, &job, err, sizeof err), -1);
    assert_string_equal(err, "unknown job kind");
    buf_free(&b);
}

static void test_jobspec_unknown_keys_are_skipped(void **state)
{
    (void)state;
    buf_t b;
    buf_init(&b);
    mpw_t w;
    mpw_init(&w, &b);
    mpw_map(&w, 5);
    mpw_kv_uint(&w, "v", 1);
    mpw_kv_str(&w, "tenant", "t");
    mpw_kv_str(&w, "service", "s");
    mpw_kv_str(&w, "code", "x");
    mpw_str(&w, "future_field");
    mpw_array(&w, 2);
    mpw_map(&w, 0);
    mpw_nil(&w);
    jobspec_t job;
    char      err[128];
    assert_int_equal(jobspec_decode(b.data, b.len, &job, err, sizeof err), 0);
    jobspec_clear(&job);
    buf_free(&b);
}

static void test_jobspec_every_truncation_is_refused_cleanly(void **state)
{
    (void)state;
    jobspec_t in;
    jobspec_init(&in);
    in.tenant = "t";
    in.service = "python.basic";
    in.code = "x = 1";
    in.code_len = 5;
    buf_t b;
    buf_init(&b);
    jobspec_encode(&in, &b);
    for (size_t cut = 0; cut < b.len; cut++) {
        jobspec_t out;
        char      err[128];
        assert_int_equal(jobspec_decode(b.data, cut, &out, err, sizeof err), -1);
    }
    buf_free(&b);
}

static void test_result_round_trip(void **state)
{
    (void)state;
    result_t in, out;
    result_init(&in);
    in.status = ST_SECURITY_VIOLATION;
    in.out = "hi\n";
    in.out_len = 3;
    in.err = "";
    in.out_truncated = 1;
    in.result = "42";
    in.variables = "{\"x\": 1}";
    in.error.present = 1;
    in.error.type = "SecurityViolation";
    in.error.message = "blocked";
    in.error.line = 7;
    in.queue_ms = 1.5;
    in.wall_ms = 2.25;
    in.cpu_ms = 2.0;
    in.max_rss_kb = 12345;
    in.exit.reason = "seccomp";
    in.exit.syscall = "socket";
    in.exit.signal = 0;
    result_image_t img = {"image/png", 640, 480, "\x89PNG", 4};
    in.images = &img;
    in.n_images = 1;
    in.executor = "node-1";
    buf_t b;
    buf_init(&b);
    result_encode(&in, &b);
    char err[128];
    assert_int_equal(result_decode(b.data, b.len, &out, err, sizeof err), 0);
    assert_int_equal(out.status, ST_SECURITY_VIOLATION);
    assert_int_equal(out.out_len, 3);
    assert_true(out.out_truncated);
    assert_string_equal(out.result, "42");
    assert_string_equal(out.variables, "{\"x\": 1}");
    assert_string_equal(out.error.type, "SecurityViolation");
    assert_int_equal(out.error.line, 7);
    assert_true(out.wall_ms == 2.25);
    assert_int_equal(out.max_rss_kb, 12345);
    assert_string_equal(out.exit.syscall, "socket");
    assert_int_equal(out.n_images, 1);
    assert_int_equal(out.images[0].width, 640);
    assert_int_equal(out.images[0].len, 4);
    assert_string_equal(out.executor, "node-1");
    result_clear(&out);
    buf_free(&b);
}

static void test_result_carries_security_events_and_the_exit_code(void **state)
{
    (void)state;
    result_t in, out;
    result_init(&in);
    in.status = ST_OK; /* the code caught both refusals and went on */
    in.exit.code = 42;
    result_event_t ev[2] = {{"socket.__new__", "AF_INET", "python", 3},
                            {"open", NULL, "python", 1}};
    in.events = ev;
    in.n_events = 2;
    in.events_truncated = 1;
    buf_t b;
    buf_init(&b);
    result_encode(&in, &b);
    char err[128];
    assert_int_equal(result_decode(b.data, b.len, &out, err, sizeof err), 0);
    assert_int_equal(out.status, ST_OK);
    assert_int_equal(out.exit.code, 42);
    assert_int_equal(out.n_events, 2);
    assert_true(out.events_truncated);
    assert_string_equal(out.events[0].operation, "socket.__new__");
    assert_string_equal(out.events[0].target, "AF_INET");
    assert_string_equal(out.events[0].layer, "python");
    assert_int_equal(out.events[0].count, 3);
    assert_null(out.events[1].target);
    result_clear(&out);
    buf_free(&b);
}

static void test_result_unknown_status_is_refused(void **state)
{
    (void)state;
    buf_t b;
    buf_init(&b);
    mpw_t w;
    mpw_init(&w, &b);
    mpw_map(&w, 2);
    mpw_kv_uint(&w, "v", 1);
    mpw_kv_str(&w, "status", "pwned");
    result_t res;
    char     err[128];
    assert_int_equal(result_decode(b.data, b.len, &res, err, sizeof err), -1);
    assert_string_equal(err, "unknown status");
    buf_free(&b);
}

static void test_result_simple_carries_the_reason(void **state)
{
    (void)state;
    buf_t b;
    buf_init(&b);
    result_encode_simple(&b, ST_REJECTED, "QueueFull", "tenant queue is full");
    result_t res;
    char     err[128];
    assert_int_equal(result_decode(b.data, b.len, &res, err, sizeof err), 0);
    assert_int_equal(res.status, ST_REJECTED);
    assert_string_equal(res.error.message, "tenant queue is full");
    result_clear(&res);
    buf_free(&b);
}

static void test_route_requires_a_valid_tenant(void **state)
{
    (void)state;
    route_t r = {.deadline_ms = 99, .max_inflight = 3};
    snprintf(r.tenant, sizeof r.tenant, "bad tenant");
    buf_t b;
    buf_init(&b);
    route_encode(&r, &b);
    route_t out;
    char    err[128];
    assert_int_equal(route_decode(b.data, b.len, &out, err, sizeof err), -1);
    buf_reset(&b);
    snprintf(r.tenant, sizeof r.tenant, "acme-1");
    route_encode(&r, &b);
    assert_int_equal(route_decode(b.data, b.len, &out, err, sizeof err), 0);
    assert_string_equal(out.tenant, "acme-1");
    assert_int_equal(out.max_inflight, 3);
    buf_free(&b);
}

static void test_ready_round_trip_and_caps(void **state)
{
    (void)state;
    ready_t r = {0}, out;
    snprintf(r.node, sizeof r.node, "n1");
    snprintf(r.services[0], sizeof r.services[0], "python.basic");
    r.n_services = 1;
    r.slots = 8;
    r.reserve = 1;
    buf_t b;
    buf_init(&b);
    ready_encode(&r, &b, NULL, 0);
    char err[128];
    assert_int_equal(ready_decode(b.data, b.len, &out, err, sizeof err), 0);
    assert_int_equal(out.slots, 8);
    assert_int_equal(out.reserve, 1);
    assert_string_equal(out.services[0], "python.basic");
    /* a reserve larger than the slots it is part of is refused */
    r.reserve = 9;
    buf_reset(&b);
    ready_encode(&r, &b, NULL, 0);
    assert_int_equal(ready_decode(b.data, b.len, &out, err, sizeof err), -1);
    assert_string_equal(err, "ready: READY reserves more slots than it has");
    buf_free(&b);
}

static void test_client_frames_are_validated(void **state)
{
    (void)state;
    uint8_t  cmd = CMD_CANCEL, id[ID_BYTES] = {1};
    frames_t fr = {.n = 4};
    fr.f[0] = (frame_t){(const uint8_t *)"SPC1", 4};
    fr.f[1] = (frame_t){&cmd, 1};
    fr.f[2] = (frame_t){(const uint8_t *)"python.basic", 12};
    fr.f[3] = (frame_t){id, ID_BYTES};
    client_msg_t m;
    char         err[128];
    assert_int_equal(wire_parse_client(&fr, &m, err, sizeof err), 0);
    assert_string_equal(m.service, "python.basic");
    fr.f[0] = (frame_t){(const uint8_t *)"SPC2", 4};
    assert_int_equal(wire_parse_client(&fr, &m, err, sizeof err), -1);
    assert_string_equal(err, "unknown protocol tag");
    fr.f[0] = (frame_t){(const uint8_t *)"SPC1", 4};
    fr.f[3] = (frame_t){id, 15};
    assert_int_equal(wire_parse_client(&fr, &m, err, sizeof err), -1);
    fr.f[3] = (frame_t){id, ID_BYTES};
    fr.f[2] = (frame_t){(const uint8_t *)"../etc", 6};
    assert_int_equal(wire_parse_client(&fr, &m, err, sizeof err), -1);
    assert_string_equal(err, "bad service name");
    fr.n = 3;
    assert_int_equal(wire_parse_client(&fr, &m, err, sizeof err), -1);
}

/* A LEAVING body written by hand, past what leaving_encode would write. */
static void s_leaving_body(buf_t *b, uint64_t v, uint64_t grace, uint64_t running,
                           const char *reason, size_t reason_len)
{
    mpw_t w;
    mpw_init(&w, b);
    mpw_map(&w, 4);
    mpw_kv_uint(&w, "v", v);
    mpw_kv_uint(&w, "grace_ms", grace);
    mpw_kv_uint(&w, "running", running);
    mpw_str(&w, "reason");
    mpw_strn(&w, reason, reason_len);
}

static void test_leaving_round_trip_caps_and_frame(void **state)
{
    (void)state;
    leaving_t in = {.grace_ms = 60000, .running = 3}, out;
    snprintf(in.reason, sizeof in.reason, "SIGTERM");
    char err[128];
    buf_t b;
    buf_init(&b);
    leaving_encode(&in, &b);
    assert_int_equal(leaving_decode(b.data, b.len, &out, err, sizeof err), 0);
    assert_int_equal(out.grace_ms, 60000);
    assert_int_equal(out.running, 3);
    assert_string_equal(out.reason, "SIGTERM");
    for (size_t cut = 0; cut < b.len; cut++) /* every truncation refused, with a reason */
        assert_int_equal(leaving_decode(b.data, cut, &out, err, sizeof err), -1);
    /* in a frame: [SPW1, 0x10, body] */
    uint8_t cmd = W_LEAVING;
    frames_t fr = {.n = 3};
    fr.f[0] = (frame_t){(const uint8_t *)"SPW1", 4};
    fr.f[1] = (frame_t){&cmd, 1};
    fr.f[2] = (frame_t){b.data, b.len};
    worker_msg_t m;
    assert_int_equal(wire_parse_worker(&fr, &m, err, sizeof err), 0);
    assert_int_equal(m.cmd, W_LEAVING);
    assert_int_equal(m.leaving.grace_ms, 60000);
    fr.n = 2;
    assert_int_equal(wire_parse_worker(&fr, &m, err, sizeof err), -1);
    /* what the encoder cleans: a control character becomes a space */
    snprintf(in.reason, sizeof in.reason, "a\nb");
    buf_reset(&b);
    leaving_encode(&in, &b);
    assert_int_equal(leaving_decode(b.data, b.len, &out, err, sizeof err), 0);
    assert_string_equal(out.reason, "a b");
    struct {
        uint64_t v, grace, running;
        const char *reason;
        const char *why;
    } bad[] = {
        {2, 1000, 0, "x", "leaving: unsupported LEAVING version"},
        {1, WIRE_MAX_DRAIN_GRACE_MS + 1ull, 0, "x", "leaving: grace too long"},
        {1, 1000, 4097, "x", "leaving: too many running jobs"},
        {1, 1000, 0, "a\x01b", "leaving: a control character in a reason"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        buf_reset(&b);
        s_leaving_body(&b, bad[i].v, bad[i].grace, bad[i].running, bad[i].reason,
                       strlen(bad[i].reason));
        assert_int_equal(leaving_decode(b.data, b.len, &out, err, sizeof err), -1);
        assert_string_equal(err, bad[i].why);
    }
    char long_reason[WIRE_MAX_REASON + 1];
    memset(long_reason, 'r', sizeof long_reason);
    buf_reset(&b);
    s_leaving_body(&b, 1, 1000, 0, long_reason, sizeof long_reason);
    assert_int_equal(leaving_decode(b.data, b.len, &out, err, sizeof err), -1);
    assert_string_equal(err, "leaving: reason too long");
    buf_reset(&b);
    leaving_encode(&in, &b);
    buf_puts(&b, "x"); /* trailing bytes */
    assert_int_equal(leaving_decode(b.data, b.len, &out, err, sizeof err), -1);
    assert_string_equal(err, "leaving: trailing bytes in LEAVING");
    buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_jobspec_round_trip),
        cmocka_unit_test(test_jobspec_without_code_is_refused),
        cmocka_unit_test(test_jobspec_unknown_version_is_refused),
        cmocka_unit_test(test_jobspec_unknown_kind_is_refused),
        cmocka_unit_test(test_jobspec_unknown_keys_are_skipped),
        cmocka_unit_test(test_jobspec_every_truncation_is_refused_cleanly),
        cmocka_unit_test(test_result_round_trip),
        cmocka_unit_test(test_result_carries_security_events_and_the_exit_code),
        cmocka_unit_test(test_result_unknown_status_is_refused),
        cmocka_unit_test(test_result_simple_carries_the_reason),
        cmocka_unit_test(test_route_requires_a_valid_tenant),
        cmocka_unit_test(test_ready_round_trip_and_caps),
        cmocka_unit_test(test_client_frames_are_validated),
        cmocka_unit_test(test_leaving_round_trip_caps_and_frame),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
