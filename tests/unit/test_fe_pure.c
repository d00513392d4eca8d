/* tests/unit/test_fe_pure.c — the front-end's pure modules through their headers: UTF-8
 * repair, SHA-256, the JSON-RPC parser, GCRA, memory-limit parsing, Origin/Host checks,
 * base64, the texts that name profiles, the Task object.
 * Linked against the front-end's library (libmcp.a) and the shared one (libsnakepit.a). */
#define _GNU_SOURCE
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/base64.h"
#include "common/profiles.h"
#include "common/sha256.h"
#include "common/utf8.h"
#include "mcp-frontend/farm/served.h"
#include "mcp-frontend/render/proftext.h"
#include "mcp-frontend/render/rich.h"
#include "mcp-frontend/rpc/jsonrpc.h"
#include "mcp-frontend/rpc/task.h"
#include "mcp-frontend/state/gcra.h"
#include "mcp-frontend/tools/units.h"
#include "mcp-frontend/transport/origin.h"

static char *s_sanitized(const char *in, size_t len)
{
    buf_t b;
    buf_init(&b);
    utf8_sanitize(&b, in, len);
    return buf_steal(&b, NULL);
}

/* Reals leave the front-end in their shortest exact form, whatever their size; integers,
 * strings that look like numbers, and escapes are untouched. */
static void test_reals_are_written_shortest_and_exact(void **state)
{
    (void)state;
    json_t *v = json_pack("{s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:I, s:s, s:[f, f]}", "a", 0.1,
                          "b", 0.1 + 0.2, "c", 1763924000.123456, "d", 1.0, "e", -0.0, "f",
                          1e300, "g", 5e-324, "i", (json_int_t)12345678901234567LL, "s",
                          "0.10000000000000001 \" 2.5", "l", 1.5, 1e16);
    char *text = json_text(v, JSON_COMPACT | JSON_SORT_KEYS);
    assert_string_equal(text, "{\"a\":0.1,\"b\":0.30000000000000004,\"c\":1763924000.123456,"
                              "\"d\":1.0,\"e\":-0.0,\"f\":1e+300,\"g\":4.94065645841247e-324,"
                              "\"i\":12345678901234567,\"l\":[1.5,1e+16],"
                              "\"s\":\"0.10000000000000001 \\\" 2.5\"}");
    json_error_t err;
    json_t *back = json_loads(text, 0, &err);
    assert_non_null(back);
    assert_true(json_real_value(json_object_get(back, "b")) == 0.1 + 0.2);
    assert_true(json_real_value(json_object_get(back, "c")) == 1763924000.123456);
    assert_true(json_is_real(json_object_get(back, "d")));
    json_decref(back);
    free(text);
    json_decref(v);
}

/* A random JSON value: every type, keys and strings with escapes, control bytes and UTF-8,
 * reals of every magnitude and sign. */
static json_t *s_random_json(unsigned *seed, int depth)
{
    static const char *const words[] = {"", "a", "é", "\"q\"", "back\\slash", "tab\there",
                                        "nl\n\r\b\f", "\x01\x1f\x7f", "/slash/", "日本",
                                        "\xf0\x9f\x90\x8d", "0.5", "u\\u0041"};
    const size_t nw = sizeof words / sizeof words[0];
    int kind = depth > 3 ? rand_r(seed) % 6 : rand_r(seed) % 8;
    double mant = (double)rand_r(seed) / RAND_MAX * (rand_r(seed) % 2 ? 1 : -1);
    switch (kind) {
    case 0: return json_null();
    case 1: return json_boolean(rand_r(seed) % 2);
    case 2: { /* the magnitude shifted, then the sign: a negative value is never shifted */
        json_int_t v = (json_int_t)rand_r(seed) << (rand_r(seed) % 32);
        return json_integer(rand_r(seed) % 2 ? v : -v);
    }
    case 3: return json_real(mant * pow(10, rand_r(seed) % 600 - 300));
    case 4: return json_real((double)(rand_r(seed) % 100000) / 1000);
    case 5: return json_string(words[rand_r(seed) % nw]);
    case 6: {
        json_t *a = json_array();
        for (int i = rand_r(seed) % 4; i > 0; i--) json_array_append_new(a, s_random_json(seed, depth + 1));
        return a;
    }
    default: {
        json_t *o = json_object();
        for (int i = rand_r(seed) % 5; i > 0; i--)
            json_object_set_new(o, words[rand_r(seed) % nw], s_random_json(seed, depth + 1));
        return o;
    }
    }
}

/* The compact writer is jansson's text, byte for byte (JSON_PRESERVE_ORDER, a no-op flag in
 * jansson 2.14, takes json_text through json_dumps). */
static void test_the_compact_writer_writes_what_jansson_writes(void **state)
{
    (void)state;
    unsigned seed = 7;
    for (int i = 0; i < 5000; i++) {
        json_t *v = json_object();
        json_object_set_new(v, "v", s_random_json(&seed, 0));
        json_object_set_new(v, "r", json_pack("[f,f,f,f,f,f]", 1e20, 1e-5, 1.0150000000000006,
                                              -0.0, 123456789012345678.0, 1.7976931348623157e308));
        char *mine = json_text(v, JSON_COMPACT);
        char *theirs = json_text(v, JSON_COMPACT | JSON_PRESERVE_ORDER);
        assert_non_null(mine);
        assert_string_equal(mine, theirs);
        free(mine);
        free(theirs);
        json_decref(v);
    }
}

static void test_valid_utf8_passes_through_unchanged(void **state)
{
    (void)state;
    const char *s = "h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x90\x8d";
    assert_true(utf8_valid(s, strlen(s)));
    char *out = s_sanitized(s, strlen(s));
    assert_string_equal(out, s);
    free(out);
}

static void test_output_cut_mid_sequence_ends_in_one_replacement_char(void **state)
{
    (void)state;
    const char *s = "ab\xe2\x82"; /* the euro sign, cut by the output cap */
    assert_false(utf8_valid(s, 4));
    char *out = s_sanitized(s, 4);
    assert_string_equal(out, "ab\xef\xbf\xbd");
    free(out);
}

static void test_overlongs_surrogates_and_nul_are_replaced(void **state)
{
    (void)state;
    char *out = s_sanitized("\xc0\xaf|\xed\xa0\x80|\0|\xff", 10);
    assert_true(utf8_valid(out, strlen(out)));
    assert_null(memchr(out, '\xc0', strlen(out)));
    assert_string_equal(
        out,
        "\xef\xbf\xbd\xef\xbf\xbd|\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd|\xef\xbf\xbd|\xef\xbf\xbd");
    free(out);
}

static void test_prefix_never_splits_a_sequence(void **state)
{
    (void)state;
    const char *s = "a\xe2\x82\xac"; /* 4 bytes */
    assert_int_equal(utf8_prefix(s, 4, 2), 1);
    assert_int_equal(utf8_prefix(s, 4, 3), 1);
    assert_int_equal(utf8_prefix(s, 4, 4), 4);
    assert_int_equal(utf8_prefix(s, 4, 1), 1);
}

static void test_sha256_matches_the_fips_vectors(void **state)
{
    (void)state;
    char hex[65];
    sha256_hex("abc", 3, hex);
    assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    sha256_hex("", 0, hex);
    assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    const char *two =
        "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"; /* 56 bytes: two blocks */
    sha256_hex(two, strlen(two), hex);
    assert_string_equal(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

static void test_request_notification_and_response_are_told_apart(void **state)
{
    (void)state;
    rpc_msg_t m;
    const char *req = "{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"ping\"}";
    assert_int_equal(rpc_parse(req, strlen(req), &m), 0);
    assert_int_equal(m.kind, RPC_REQUEST);
    assert_string_equal(m.method, "ping");
    assert_null(m.params);
    rpc_msg_clear(&m);
    const char *note =
        "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\",\"params\":{}}";
    assert_int_equal(rpc_parse(note, strlen(note), &m), 0);
    assert_int_equal(m.kind, RPC_NOTIFICATION);
    rpc_msg_clear(&m);
    const char *resp = "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}";
    assert_int_equal(rpc_parse(resp, strlen(resp), &m), 0);
    assert_int_equal(m.kind, RPC_RESPONSE);
    rpc_msg_clear(&m);
}

static void test_parse_errors_and_invalid_requests_get_their_codes(void **state)
{
    (void)state;
    struct {
        const char *in;
        int code;
        int has_id;
    } cases[] = {
        {"{", RPC_PARSE_ERROR, 0},
        {"", RPC_PARSE_ERROR, 0},
        {"{\"a\":1,\"a\":2}", RPC_PARSE_ERROR, 0},
        {"[]", RPC_INVALID_REQUEST, 0},
        {"7", RPC_INVALID_REQUEST, 0},
        {"{\"jsonrpc\":\"1.0\",\"id\":4,\"method\":\"x\"}", RPC_INVALID_REQUEST, 1},
        {"{\"jsonrpc\":\"2.0\",\"id\":4.5,\"method\":\"x\"}", RPC_INVALID_REQUEST, 0},
        {"{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"x\",\"params\":[1]}", RPC_INVALID_REQUEST, 1},
        {"{\"jsonrpc\":\"2.0\",\"id\":4,\"result\":1,\"error\":{\"code\":1}}", RPC_INVALID_REQUEST,
         1},
        {"{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"\"}", RPC_INVALID_REQUEST, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rpc_msg_t m;
        assert_int_equal(rpc_parse(cases[i].in, strlen(cases[i].in), &m), -1);
        assert_int_equal(m.kind, RPC_INVALID);
        assert_int_equal(m.code, cases[i].code);
        assert_int_equal(m.id != NULL, cases[i].has_id);
        assert_true(m.why[0] != '\0');
        rpc_msg_clear(&m);
    }
}

static void test_error_messages_with_invalid_utf8_still_serialize(void **state)
{
    (void)state;
    json_t *e = rpc_error(NULL, RPC_METHOD_NOT_FOUND, "method not found: \xe2\x82", NULL);
    size_t len;
    char *text = rpc_dump(e, &len);
    assert_non_null(strstr(text, "\\ufffd") ? strstr(text, "\\ufffd")
                                            : strstr(text, "\xef\xbf\xbd"));
    free(text);
    json_decref(e);
}

static void test_gcra_allows_the_burst_then_one_per_period(void **state)
{
    (void)state;
    double tat = 0;
    long retry = 0;
    for (int i = 0; i < 3; i++)
        assert_true(gcra_step(&tat, 1000, 2.0, 3, &retry)); /* 2/s, burst 3 */
    assert_false(gcra_step(&tat, 1000, 2.0, 3, &retry));
    assert_int_equal(retry, 500);
    assert_true(gcra_step(&tat, 1500, 2.0, 3, &retry));
    assert_false(gcra_step(&tat, 1500, 2.0, 3, &retry));
    assert_true(gcra_step(&tat, 10000, 2.0, 3, &retry)); /* idle time refills the burst */
    assert_true(gcra_step(&tat, 10000, 2.0, 3, &retry));
}

static void test_memory_limits_as_users_write_them(void **state)
{
    (void)state;
    struct {
        const char *json;
        long mb; /* -1: refused */
    } cases[] = {{"256", 256},       {"\"256m\"", 256},  {"\"1g\"", 1024}, {"\"512M\"", 512},
                 {"\"300mb\"", 300}, {"\"2GiB\"", 2048}, {"\"1024k\"", 1}, {"\"1.5g\"", 1536},
                 {"0", -1},          {"-5", -1},         {"\"lots\"", -1}, {"\"5x\"", -1},
                 {"\"\"", -1},       {"true", -1},       {"2.5", -1}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *v = json_loads(cases[i].json, JSON_DECODE_ANY, NULL);
        long mb = 0;
        int rc = parse_memory_mb(v, &mb);
        if (cases[i].mb < 0) {
            assert_int_equal(rc, -1);
        } else {
            assert_int_equal(rc, 0);
            assert_int_equal(mb, cases[i].mb);
        }
        json_decref(v);
    }
}

static void test_origin_and_host_checks_stop_dns_rebinding(void **state)
{
    (void)state;
    assert_true(http_origin_allowed(NULL, ""));
    assert_true(http_origin_allowed("http://localhost:3000", ""));
    assert_true(http_origin_allowed("http://127.0.0.1", ""));
    assert_true(http_origin_allowed("https://[::1]:8080", ""));
    assert_false(http_origin_allowed("http://evil.example", ""));
    assert_false(http_origin_allowed("http://localhost.evil.example", ""));
    assert_false(http_origin_allowed("null", ""));
    assert_true(
        http_origin_allowed("https://app.example", "https://app.example,https://b.example"));
    assert_false(http_origin_allowed("https://c.example", "https://app.example"));
    assert_true(http_origin_allowed("https://c.example", "*"));
    assert_true(http_host_allowed("localhost:8765", "", 1));
    assert_true(http_host_allowed("127.0.0.1:8765", "", 1));
    assert_true(http_host_allowed("[::1]:8765", "", 1));
    assert_false(http_host_allowed("evil.example:8765", "", 1));
    assert_false(http_host_allowed(NULL, "", 1));
    assert_true(http_host_allowed("mcp.example", "mcp.example", 1));
    assert_true(http_host_allowed("anything", "", 0));
    assert_false(http_host_allowed("other.example", "mcp.example", 0));
}

static void test_base64_round_trips_bytes_and_refuses_what_is_not_base64(void **state)
{
    (void)state;
    const char bytes[] = "yranib\xff\x00!";
    buf_t enc, dec;
    buf_init(&enc);
    buf_init(&dec);
    base64_encode(&enc, bytes, sizeof bytes - 1);
    assert_string_equal((const char *)enc.data, "eXJhbmli/wAh");
    assert_int_equal(base64_decode(&dec, (const char *)enc.data, enc.len), 0);
    assert_int_equal(dec.len, sizeof bytes - 1);
    assert_memory_equal(dec.data, bytes, dec.len);
    buf_reset(&dec);
    assert_int_equal(base64_decode(&dec, "YQ==\r\n", 6), 0); /* MIME line breaks */
    assert_int_equal(dec.len, 1);
    assert_int_equal(base64_decode(&dec, "%%%", 3), -1);
    assert_int_equal(base64_decode(&dec, "YQ==YQ", 6), -1); /* data after padding */
    buf_free(&enc);
    buf_free(&dec);
}

static void test_profile_texts_follow_the_profile_table(void **state)
{
    (void)state;
    char *s = proftext("default {default_profile}; all: {profiles}; {path: text} stays");
    char expect[1200], names[1024];
    profiles_join(names, sizeof names, ", ", NULL);
    snprintf(expect, sizeof expect, "default %s; all: %s; {path: text} stays",
             profile_default()->name, names);
    assert_string_equal(s, expect);
    free(s);
    s = proftext("{workspace_profiles}|{profile_summaries}");
    for (size_t i = 0; i < n_profiles; i++) {
        const char *in_list = strstr(s, profiles[i].name);
        assert_non_null(in_list); /* every profile appears in the summaries */
        assert_true((in_list < strchr(s, '|')) == (profiles[i].workspace != 0));
        assert_non_null(strstr(s, profiles[i].summary));
    }
    free(s);
}

static void test_profile_texts_name_only_the_profiles_served(void **state)
{
    (void)state;
    proftext_serve(1u << 0); /* the table's first profile alone */
    char *s = proftext("{profiles}|{default_profile}|{workspace_profiles}|{profile_summaries}");
    for (size_t i = 1; i < n_profiles; i++) assert_null(strstr(s, profiles[i].name));
    char expect[300];
    snprintf(expect, sizeof expect, "%s|%s|none on this farm|%s (default): ", profiles[0].name,
             profiles[0].name, profiles[0].name);
    assert_memory_equal(s, expect, strlen(expect));
    free(s);
    unsigned before = proftext_generation();
    proftext_serve(1u << (n_profiles - 1)); /* the last alone: it is the default now */
    assert_true(proftext_generation() != before);
    assert_ptr_equal(proftext_default(), &profiles[n_profiles - 1]);
    assert_false(proftext_is_served(&profiles[0]));
    proftext_serve(0); /* not known: every profile again */
    assert_true(proftext_is_served(&profiles[0]) && proftext_default() == profile_default());
}

static void test_a_profile_is_served_while_an_executor_refreshes_it(void **state)
{
    (void)state;
    /* sp:profiles as executors write it: {python, packages, node, updated_ms} per profile */
    const char *names[] = {profiles[0].name, profiles[1].name, "python.unknown", profiles[2].name};
    const char *values[] = {"{\"updated_ms\": 100000}", "{\"updated_ms\": 50000}",
                            "{\"updated_ms\": 100000}", "not json"};
    uint32_t mask = served_parse(names, values, 4, 100500, 30000);
    assert_int_equal(mask, 1u << 0); /* the second is stale, the unknown and the broken ignored */
    /* a clock ahead of ours is still fresh */
    const char *ahead[] = {"{\"updated_ms\": 200000}"};
    assert_int_equal(served_parse(names + 1, ahead, 1, 100500, 30000), 1u << 1);
    assert_int_equal(served_parse(names, values, 0, 100500, 30000), 0);
}

static void test_a_task_status_follows_the_result(void **state)
{
    (void)state;
    assert_string_equal(task_status_for(ST_OK, 0), "completed");
    assert_string_equal(task_status_for(ST_OK, 1), "cancelled");
    assert_string_equal(task_status_for(ST_CANCELLED, 0), "cancelled");
    assert_string_equal(task_status_for(ST_TIMEOUT, 0), "failed");
    assert_true(task_terminal("failed"));
    assert_false(task_terminal("working"));
    json_t *t = task_json("id-1", "working", 1000, 2500, 60000, NULL);
    assert_string_equal(json_string_value(json_object_get(t, "createdAt")),
                        "1970-01-01T00:00:01.000Z");
    assert_string_equal(json_string_value(json_object_get(t, "lastUpdatedAt")),
                        "1970-01-01T00:00:02.500Z");
    assert_null(json_object_get(t, "statusMessage"));
    task_mark_related(t, "id-1");
    assert_string_equal(
        json_string_value(json_object_get(
            json_object_get(json_object_get(t, "_meta"), "io.modelcontextprotocol/related-task"),
            "taskId")),
        "id-1");
    json_decref(t);
}

static void test_file_uris_percent_encode_and_decode_paths(void **state)
{
    (void)state;
    buf_t u, p;
    buf_init(&u);
    buf_init(&p);
    rich_file_uri(&u, "01a2", "out/big report é.csv");
    assert_string_equal((const char *)u.data,
                        "sandbox://executions/01a2/files/out/big%20report%20%C3%A9.csv");
    assert_int_equal(rich_uri_path("out/big%20report%20%C3%A9.csv", &p), 0);
    assert_string_equal((const char *)p.data, "out/big report é.csv");
    buf_reset(&p);
    assert_int_equal(rich_uri_path("a%2", &p), -1);  /* cut */
    buf_reset(&p);
    assert_int_equal(rich_uri_path("a%00b", &p), -1); /* NUL */
    assert_string_equal(rich_mime_of("x/Data.CSV"), "text/csv");
    assert_string_equal(rich_mime_of("blob"), "application/octet-stream");
    buf_free(&u);
    buf_free(&p);
}

static void test_large_files_become_links_and_outputs_blocks(void **state)
{
    (void)state;
    rich_set_link_bytes(4);
    result_t res;
    result_init(&res);
    result_file_t files[2] = {{"small.txt", "abc", 3}, {"big.csv", "a,b\n1,2\n", 8}};
    result_output_t outs[3] = {{"display", 0, "text/html", "<b>x</b>", 8},
                               {"display", 0, "text/plain", "x", 1},
                               {"result", 1, "application/json", "{\"k\": 1}", 8}};
    res.files = files, res.n_files = 2, res.outputs = outs, res.n_outputs = 3;
    json_t *f = rich_files("id1", &res), *o = rich_outputs(&res), *content = json_array();
    assert_string_equal(json_string_value(json_object_get(json_array_get(f, 0), "content")), "abc");
    assert_true(json_is_null(json_object_get(json_array_get(f, 1), "content")));
    assert_string_equal(json_string_value(json_object_get(json_array_get(f, 1), "uri")),
                        "sandbox://executions/id1/files/big.csv");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(json_array_get(o, 2), "data"), "k")), 1);
    rich_blocks(content, "id1", &res);
    /* html as a resource, its text/plain twin dropped, the JSON as a resource, one link */
    assert_int_equal(json_array_size(content), 3);
    assert_string_equal(json_string_value(json_object_get(json_array_get(content, 2), "type")),
                        "resource_link");
    json_decref(f);
    json_decref(o);
    json_decref(content);
    rich_set_link_bytes(RICH_LINK_BYTES_DEFAULT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_file_uris_percent_encode_and_decode_paths),
        cmocka_unit_test(test_large_files_become_links_and_outputs_blocks),
        cmocka_unit_test(test_reals_are_written_shortest_and_exact),
        cmocka_unit_test(test_the_compact_writer_writes_what_jansson_writes),
        cmocka_unit_test(test_valid_utf8_passes_through_unchanged),
        cmocka_unit_test(test_output_cut_mid_sequence_ends_in_one_replacement_char),
        cmocka_unit_test(test_overlongs_surrogates_and_nul_are_replaced),
        cmocka_unit_test(test_prefix_never_splits_a_sequence),
        cmocka_unit_test(test_sha256_matches_the_fips_vectors),
        cmocka_unit_test(test_request_notification_and_response_are_told_apart),
        cmocka_unit_test(test_parse_errors_and_invalid_requests_get_their_codes),
        cmocka_unit_test(test_error_messages_with_invalid_utf8_still_serialize),
        cmocka_unit_test(test_gcra_allows_the_burst_then_one_per_period),
        cmocka_unit_test(test_memory_limits_as_users_write_them),
        cmocka_unit_test(test_origin_and_host_checks_stop_dns_rebinding),
        cmocka_unit_test(test_base64_round_trips_bytes_and_refuses_what_is_not_base64),
        cmocka_unit_test(test_profile_texts_follow_the_profile_table),
        cmocka_unit_test(test_profile_texts_name_only_the_profiles_served),
        cmocka_unit_test(test_a_profile_is_served_while_an_executor_refreshes_it),
        cmocka_unit_test(test_a_task_status_follows_the_result),
    };
    return cmocka_run_group_tests_name("mcp-frontend", tests, NULL, NULL);
}
