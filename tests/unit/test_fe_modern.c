/* tests/unit/test_fe_modern.c — the pure parts of MCP 2026-07-28 in the front-end, through their
 * headers: the per-request envelope (envelope.h), the headers checked against the body, Base64
 * sentinels included (reqheaders.h), tool arguments mirrored into Mcp-Param-* headers
 * (paramheaders.h), which era a message speaks and the errors a malformed one gets (admit.h), and
 * HMAC-SHA256 (common/sha256.h), which seals requestState.
 * Linked against the front-end's library (libmcp.a). */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cmocka.h>

#include "common/base64.h"
#include "common/sha256.h"
#include "common/utf8.h"
#include "mcp-frontend/rpc/admit.h"
#include "mcp-frontend/rpc/envelope.h"
#include "mcp-frontend/rpc/jsonrpc.h"
#include "mcp-frontend/rpc/loglevel.h"
#include "mcp-frontend/rpc/paramheaders.h"
#include "mcp-frontend/rpc/reqheaders.h"

#define META_OK                                                                                    \
    "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","                       \
    "\"io.modelcontextprotocol/clientCapabilities\":{\"sampling\":{}}}"

static rpc_msg_t s_msg(const char *text)
{
    rpc_msg_t m;
    assert_int_equal(rpc_parse(text, strlen(text), &m), 0);
    return m;
}

/* Admits text with headers h (NULL: stdio); the error's code when refused, 0 when modern, 1 when
 * legacy. */
static int s_admit(const char *text, const reqheaders_t *h, unsigned *status)
{
    rpc_msg_t m = s_msg(text);
    admit_stats_t stats = {0};
    admission_t a;
    admit_t era = admit_message(&stats, &m, h, "test", &a);
    int rc = era == ADMIT_MODERN ? 0 : era == ADMIT_LEGACY ? 1 : 0;
    if (era == ADMIT_REFUSED) {
        rc = (int)json_integer_value(json_object_get(json_object_get(a.error, "error"), "code"));
        if (status) *status = a.status;
        assert_true(json_equal(json_object_get(a.error, "id"), m.id)); /* the id is echoed */
        json_decref(a.error);
    }
    rpc_msg_clear(&m);
    return rc;
}

static void test_a_request_with_a_claim_is_modern_and_without_one_legacy(void **state)
{
    (void)state;
    assert_int_equal(
        s_admit("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{" META_OK "}}",
                NULL, NULL),
        0);
    assert_int_equal(
        s_admit("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{}}", NULL,
                NULL),
        1);
    assert_int_equal(s_admit("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}", NULL, NULL), 1);
}

static void test_a_malformed_envelope_is_invalid_params(void **state)
{
    (void)state;
    const char *bad[] = {
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":{\"_meta\":{"
        "\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\"}}}", /* no capabilities */
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":{\"_meta\":{"
        "\"io.modelcontextprotocol/protocolVersion\":7,"
        "\"io.modelcontextprotocol/clientCapabilities\":{}}}}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":{\"_meta\":{"
        "\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
        "\"io.modelcontextprotocol/clientCapabilities\":{},"
        "\"io.modelcontextprotocol/clientInfo\":{\"name\":\"x\"}}}}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":{\"_meta\":{"
        "\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
        "\"io.modelcontextprotocol/clientCapabilities\":{},"
        "\"io.modelcontextprotocol/logLevel\":\"loud\"}}}",
        NULL};
    for (int i = 0; bad[i]; i++) {
        unsigned status = 0;
        assert_int_equal(s_admit(bad[i], NULL, &status), RPC_INVALID_PARAMS);
        assert_int_equal(status, 400);
    }
}

static void test_a_modern_header_without_an_envelope_is_invalid_params(void **state)
{
    (void)state;
    reqheaders_t h = {"2026-07-28", "server/discover", NULL};
    assert_int_equal(
        s_admit("{\"jsonrpc\":\"2.0\",\"id\":\"d\",\"method\":\"server/discover\"}", &h, NULL),
        RPC_INVALID_PARAMS);
    reqheaders_t legacy = {"2025-11-25", NULL, NULL};
    assert_int_equal(
        s_admit("{\"jsonrpc\":\"2.0\",\"id\":\"d\",\"method\":\"ping\"}", &legacy, NULL), 1);
}

static void test_headers_are_checked_against_the_body_before_the_version(void **state)
{
    (void)state;
    /* body v999.0.0 under a 2026-07-28 header: a mismatch (-32020), not a version (-32022) */
    const char *v999 = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"server/discover\",\"params\":{"
                       "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"v999.0.0\","
                       "\"io.modelcontextprotocol/clientCapabilities\":{}}}}";
    reqheaders_t h = {"2026-07-28", "server/discover", NULL};
    assert_int_equal(s_admit(v999, &h, NULL), RPC_HEADER_MISMATCH);
    reqheaders_t both = {"v999.0.0", "server/discover", NULL};
    assert_int_equal(s_admit(v999, &both, NULL), RPC_UNSUPPORTED_VERSION);
    assert_int_equal(s_admit(v999, NULL, NULL), RPC_UNSUPPORTED_VERSION); /* stdio */
}

static void test_required_headers_and_mcp_name(void **state)
{
    (void)state;
    const char *call = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{"
                       "\"name\":\"execute_code\"," META_OK "}}";
    reqheaders_t ok = {"2026-07-28", "tools/call", "execute_code"};
    assert_int_equal(s_admit(call, &ok, NULL), 0);
    reqheaders_t padded = {" 2026-07-28\t", "tools/call", "  execute_code "}; /* OWS trimmed */
    assert_int_equal(s_admit(call, &padded, NULL), 0);
    reqheaders_t encoded = {"2026-07-28", "tools/call", "=?base64?ZXhlY3V0ZV9jb2Rl?="};
    assert_int_equal(s_admit(call, &encoded, NULL), 0);
    reqheaders_t no_name = {"2026-07-28", "tools/call", NULL};
    assert_int_equal(s_admit(call, &no_name, NULL), RPC_HEADER_MISMATCH);
    reqheaders_t no_method = {"2026-07-28", NULL, "execute_code"};
    assert_int_equal(s_admit(call, &no_method, NULL), RPC_HEADER_MISMATCH);
    reqheaders_t no_version = {NULL, "tools/call", "execute_code"};
    assert_int_equal(s_admit(call, &no_version, NULL), RPC_HEADER_MISMATCH);
    reqheaders_t upper = {"2026-07-28", "TOOLS/CALL",
                          "execute_code"}; /* values are case-sensitive */
    assert_int_equal(s_admit(call, &upper, NULL), RPC_HEADER_MISMATCH);
}

static void test_base64_sentinels_decode_strictly(void **state)
{
    (void)state;
    buf_t b;
    buf_init(&b);
    assert_int_equal(reqheaders_value("=?base64?SGVsbG8sIOS4lueVjA==?=", 1, &b), 0);
    assert_int_equal(b.len, strlen("Hello, \xe4\xb8\x96\xe7\x95\x8c"));
    buf_reset(&b);
    assert_int_equal(reqheaders_value("=?base64?SGVsbG8?=", 1, &b), -1); /* unpadded */
    buf_reset(&b);
    assert_int_equal(reqheaders_value("=?base64?SGVs!!!bG8=?=", 1, &b), -1); /* alphabet */
    buf_reset(&b);
    assert_int_equal(reqheaders_value("=?base64?SGVsbG8", 1, &b), 0); /* unwrapped: literal */
    assert_int_equal(b.len, strlen("=?base64?SGVsbG8"));
    buf_reset(&b);
    assert_int_equal(reqheaders_value("a\x01z", 1, &b), -1); /* control char */
    buf_free(&b);
}

/* ---- Mcp-Param-* */

static paramheaders_t *s_scan(const char *schema, char *err, size_t errlen)
{
    json_t *s = json_loads(schema, 0, NULL);
    assert_non_null(s);
    paramheaders_t *ph = paramheaders_scan(s, err, errlen);
    json_decref(s);
    return ph;
}

static void
test_mirrored_arguments_are_declared_on_properties_reached_through_properties(void **state)
{
    (void)state;
    char err[300];
    paramheaders_t *ph = s_scan("{\"type\":\"object\",\"properties\":{"
                                "\"region\":{\"type\":\"string\",\"x-mcp-header\":\"Region\"},"
                                "\"n\":{\"type\":\"integer\",\"x-mcp-header\":\"Count\"},"
                                "\"where\":{\"type\":\"object\",\"properties\":{"
                                "\"zone\":{\"type\":\"string\",\"x-mcp-header\":\"Zone\"}}},"
                                "\"code\":{\"type\":\"string\"}}}",
                                err, sizeof err);
    assert_string_equal(err, "");
    assert_int_equal(paramheaders_count(ph), 3);
    assert_string_equal(paramheaders_name(ph, 0), "Mcp-Param-Region");
    paramheaders_destroy(&ph);
    assert_null(ph);
    /* none declared: nothing to check, and no error */
    assert_null(s_scan("{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}}}", err,
                       sizeof err));
    assert_string_equal(err, "");
    const char *invalid[] = {
        /* under items, a composition, a conditional, $defs: not statically reachable */
        "{\"properties\":{\"l\":{\"type\":\"array\",\"items\":{\"type\":\"string\","
        "\"x-mcp-header\":\"L\"}}}}",
        "{\"anyOf\":[{\"properties\":{\"a\":{\"type\":\"string\",\"x-mcp-header\":\"A\"}}}]}",
        "{\"if\":{\"properties\":{\"a\":{\"type\":\"string\",\"x-mcp-header\":\"A\"}}}}",
        "{\"$defs\":{\"d\":{\"type\":\"string\",\"x-mcp-header\":\"D\"}}}",
        /* on the root, on a number, not a token, empty, not a string, twice */
        "{\"type\":\"object\",\"x-mcp-header\":\"Root\"}",
        "{\"properties\":{\"a\":{\"type\":\"number\",\"x-mcp-header\":\"A\"}}}",
        "{\"properties\":{\"a\":{\"type\":\"string\",\"x-mcp-header\":\"A B\"}}}",
        "{\"properties\":{\"a\":{\"type\":\"string\",\"x-mcp-header\":\"\"}}}",
        "{\"properties\":{\"a\":{\"type\":\"string\",\"x-mcp-header\":7}}}",
        "{\"properties\":{\"a\":{\"type\":\"string\",\"x-mcp-header\":\"Dup\"},"
        "\"b\":{\"type\":\"boolean\",\"x-mcp-header\":\"dUP\"}}}",
        NULL};
    for (int i = 0; invalid[i]; i++) {
        assert_null(s_scan(invalid[i], err, sizeof err));
        assert_true(strlen(err) > 0);
    }
}

typedef struct {
    const char *names[4], *values[4];
} headers_t;

static const char *s_lookup(void *ctx, const char *name)
{
    headers_t *h = ctx;
    for (int i = 0; i < 4 && h->names[i]; i++)
        if (!strcasecmp(h->names[i], name)) return h->values[i];
    return NULL;
}

/* A tools/call of a tool mirroring region (string), n (integer) and on (boolean), with these
 * arguments and Mcp-Param-* headers: what admission answers (0: admitted). */
static int s_mirrored_call(const char *arguments, headers_t *hv)
{
    char err[300];
    paramheaders_t *ph = s_scan("{\"properties\":{"
                                "\"region\":{\"type\":\"string\",\"x-mcp-header\":\"Region\"},"
                                "\"n\":{\"type\":\"integer\",\"x-mcp-header\":\"N\"},"
                                "\"on\":{\"type\":\"boolean\",\"x-mcp-header\":\"On\"}}}",
                                err, sizeof err);
    char body[600];
    snprintf(body, sizeof body,
             "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/call\",\"params\":{"
             "\"name\":\"t\",\"arguments\":%s," META_OK "}}",
             arguments);
    reqheaders_t h = {"2026-07-28", "tools/call", "t", ph, s_lookup, hv};
    unsigned status = 0;
    int rc = s_admit(body, &h, &status);
    if (rc) assert_int_equal(status, 400);
    paramheaders_destroy(&ph);
    return rc;
}

static void test_mcp_param_headers_must_mirror_the_arguments_in_the_body(void **state)
{
    (void)state;
    headers_t plain = {{"mcp-param-region", "Mcp-Param-N", "Mcp-Param-On"},
                       {"us-west1", "42", "true"}};
    assert_int_equal(s_mirrored_call("{\"region\":\"us-west1\",\"n\":42,\"on\":true}", &plain), 0);
    headers_t numeric = {{"Mcp-Param-N"}, {"42.0"}}; /* integers compare as numbers */
    assert_int_equal(s_mirrored_call("{\"n\":42}", &numeric), 0);
    headers_t encoded = {{"Mcp-Param-Region"}, {"=?base64?IHBhZGRlZCA=?="}}; /* " padded " */
    assert_int_equal(s_mirrored_call("{\"region\":\" padded \"}", &encoded), 0);
    headers_t none = {{NULL}};
    /* null or absent in the body: no header expected, and one sent anyway is ignored */
    assert_int_equal(s_mirrored_call("{\"region\":null}", &none), 0);
    assert_int_equal(s_mirrored_call("{}", &plain), 0);
    assert_int_equal(s_mirrored_call("{\"region\":\"eu\"}", &none), RPC_HEADER_MISMATCH);
    assert_int_equal(s_mirrored_call("{\"region\":\"eu\"}", &plain), RPC_HEADER_MISMATCH);
    assert_int_equal(s_mirrored_call("{\"n\":41}", &numeric), RPC_HEADER_MISMATCH);
    assert_int_equal(s_mirrored_call("{\"on\":false}", &plain), RPC_HEADER_MISMATCH);
    headers_t bad = {{"Mcp-Param-Region"}, {"=?base64?SGVsbG8?="}}; /* unpadded sentinel */
    assert_int_equal(s_mirrored_call("{\"region\":\"Hello\"}", &bad), RPC_HEADER_MISMATCH);
    headers_t literal = {{"Mcp-Param-Region"}, {"=?base64?SGVsbG8="}}; /* no ?=: as it is */
    assert_int_equal(s_mirrored_call("{\"region\":\"=?base64?SGVsbG8=\"}", &literal), 0);
}

static void test_supported_versions_and_eras(void **state)
{
    (void)state;
    assert_true(envelope_modern_supported("2026-07-28"));
    assert_false(envelope_modern_supported("2025-11-25"));
    assert_true(envelope_legacy_supported("2024-11-05"));
    assert_true(envelope_names_modern("2099-01-01"));
    assert_true(envelope_names_modern("v999.0.0"));
    assert_false(envelope_names_modern("2025-11-25"));
    json_t *caps = json_loads(
        "{\"extensions\":{\"io.modelcontextprotocol/tasks\":{}},\"sampling\":{}}", 0, NULL);
    assert_true(envelope_has_extension(caps, EXT_TASKS));
    assert_true(envelope_has_cap(caps, "sampling"));
    assert_false(envelope_has_cap(caps, "elicitation"));
    json_decref(caps);
}

static void test_our_codes_move_out_of_the_reserved_range_for_modern_requests(void **state)
{
    (void)state;
    assert_int_equal(rpc_code_modern(RPC_RATE_LIMITED), -31029);
    assert_int_equal(rpc_code_modern(RPC_UNAVAILABLE), -31030);
    assert_int_equal(rpc_code_modern(RPC_QUOTA), -31031);
    assert_int_equal(rpc_code_modern(RPC_RESOURCE_NOT_FOUND), RPC_INVALID_PARAMS);
    assert_int_equal(rpc_code_modern(RPC_INVALID_PARAMS), RPC_INVALID_PARAMS);
}

/* RFC 4231 test case 2 */
static void test_hmac_sha256_matches_rfc_4231(void **state)
{
    (void)state;
    uint8_t mac[32];
    const char *data = "what do ya want for nothing?";
    sha256_hmac("Jefe", 4, data, strlen(data), mac);
    static const uint8_t want[32] = {0x5b, 0xdc, 0xc1, 0x46, 0xbf, 0x60, 0x75, 0x4e,
                                     0x6a, 0x04, 0x24, 0x26, 0x08, 0x95, 0x75, 0xc7,
                                     0x5a, 0x00, 0x3f, 0x08, 0x9d, 0x27, 0x39, 0x83,
                                     0x9d, 0xec, 0x58, 0xb9, 0x64, 0xec, 0x38, 0x43};
    assert_memory_equal(mac, want, 32);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_request_with_a_claim_is_modern_and_without_one_legacy),
        cmocka_unit_test(test_a_malformed_envelope_is_invalid_params),
        cmocka_unit_test(test_a_modern_header_without_an_envelope_is_invalid_params),
        cmocka_unit_test(test_headers_are_checked_against_the_body_before_the_version),
        cmocka_unit_test(test_required_headers_and_mcp_name),
        cmocka_unit_test(test_base64_sentinels_decode_strictly),
        cmocka_unit_test(
            test_mirrored_arguments_are_declared_on_properties_reached_through_properties),
        cmocka_unit_test(test_mcp_param_headers_must_mirror_the_arguments_in_the_body),
        cmocka_unit_test(test_supported_versions_and_eras),
        cmocka_unit_test(test_our_codes_move_out_of_the_reserved_range_for_modern_requests),
        cmocka_unit_test(test_hmac_sha256_matches_rfc_4231),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
