/* tests/unit/test_fe_console.c — the console's pure parts through their headers: the Cookie
 * header and urlencoded form readers (console/form.h), which read what any browser or attacker
 * sends, and the secrets (console/secret.h). Linked against libmcp.a. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "mcp-frontend/console/form.h"
#include "mcp-frontend/console/secret.h"

static void test_cookie_is_found_among_others(void **state)
{
    (void)state;
    char v[80];
    assert_int_equal(form_cookie("a=1; sp_console=abc123; b=2", "sp_console", v, sizeof v), 1);
    assert_string_equal(v, "abc123");
    assert_int_equal(form_cookie("sp_console=\"q\"", "sp_console", v, sizeof v), 1);
    assert_string_equal(v, "q");
}

static void test_cookie_absent_or_prefix_is_not_there(void **state)
{
    (void)state;
    char v[80];
    assert_int_equal(form_cookie(NULL, "sp_console", v, sizeof v), 0);
    assert_int_equal(form_cookie("sp_console_x=1; xsp_console=2", "sp_console", v, sizeof v), 0);
}

static void test_cookie_twice_or_too_long_or_bad_octets_is_refused(void **state)
{
    (void)state;
    char v[8];
    /* another site of the domain may plant one of the same name: neither is taken */
    assert_int_equal(form_cookie("sp_console=a; sp_console=b", "sp_console", v, sizeof v), -1);
    assert_int_equal(form_cookie("sp_console=0123456789", "sp_console", v, sizeof v), -1);
    assert_int_equal(form_cookie("sp_console=a\\b", "sp_console", v, sizeof v), -1);
}

static void test_form_field_decodes_plus_and_percent(void **state)
{
    (void)state;
    const char body[] = "x=1&key=sp_%61b+c&y=";
    char v[32];
    assert_int_equal(form_field(body, strlen(body), "key", v, sizeof v), 1);
    assert_string_equal(v, "sp_ab c");
    assert_int_equal(form_field(body, strlen(body), "y", v, sizeof v), 1);
    assert_string_equal(v, "");
    assert_int_equal(form_field(body, strlen(body), "z", v, sizeof v), 0);
}

static void test_form_field_broken_escape_nul_twice_or_long_is_refused(void **state)
{
    (void)state;
    char v[8];
    assert_int_equal(form_field("key=%4", 6, "key", v, sizeof v), -1);
    assert_int_equal(form_field("key=a%00b", 9, "key", v, sizeof v), -1);
    assert_int_equal(form_field("key=a&key=b", 11, "key", v, sizeof v), -1);
    assert_int_equal(form_field("key=0123456789", 14, "key", v, sizeof v), -1);
    /* the length given is the body's: nothing past it is read */
    assert_int_equal(form_field("key=abcdef", 6, "key", v, sizeof v), 1);
    assert_string_equal(v, "ab");
}

static void test_api_keys_are_new_each_time_and_well_formed(void **state)
{
    (void)state;
    char a[SECRET_API_KEY_LEN + 1], b[SECRET_API_KEY_LEN + 1];
    assert_int_equal(secret_api_key(a), 0);
    assert_int_equal(secret_api_key(b), 0);
    assert_int_equal(strlen(a), SECRET_API_KEY_LEN);
    assert_memory_equal(a, "sp_", 3);
    assert_int_equal(strspn(a + 3, "0123456789abcdef"), 64);
    assert_string_not_equal(a, b);
}

static void test_secrets_compare_whole(void **state)
{
    (void)state;
    assert_true(secret_equal("abcd", "abcd", 4));
    assert_false(secret_equal("abcd", "abce", 4));
    assert_false(secret_equal("xbcd", "abcd", 4));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cookie_is_found_among_others),
        cmocka_unit_test(test_cookie_absent_or_prefix_is_not_there),
        cmocka_unit_test(test_cookie_twice_or_too_long_or_bad_octets_is_refused),
        cmocka_unit_test(test_form_field_decodes_plus_and_percent),
        cmocka_unit_test(test_form_field_broken_escape_nul_twice_or_long_is_refused),
        cmocka_unit_test(test_api_keys_are_new_each_time_and_well_formed),
        cmocka_unit_test(test_secrets_compare_whole),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
