/* tests/unit/test_pep508.c — common/pep508.c: plain requirements pass; anything pip would read
 * as an archive, a path, a URL or an option is refused with a reason. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "common/pep508.h"

static int s_ok(const char *s)
{
    char err[256] = "";
    int rc = pep508_check(s, strlen(s), err, sizeof err);
    if (rc != 0) print_message("refused %s: %s\n", s, err);
    return rc == 0;
}

static void test_plain_requirements_pass(void **state)
{
    (void)state;
    const char *good[] = {"pandas", "pandas>=2", "numpy==1.24.*", "tinypkg>=1.0,<2",
                          "zope.interface", "backports.zoneinfo", "Foo_Bar-baz", "requests[socks,security]>=2.0",
                          "pkg (>=1.0, <2)", "pkg ~= 1.4.2", "pkg===1.0+local", "pkg[] >= 1",
                          "pkg; python_version < \"3.12\"", "pkg>=1; sys_platform == 'linux' and (python_version >= '3.8' or extra == 'x')",
                          "pkg ; 'linux' in sys_platform", "pkg; os_name not in 'nt'", "a", "x1"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) assert_true(s_ok(good[i]));
}

static void test_archives_paths_urls_and_options_are_refused(void **state)
{
    (void)state;
    const char *bad[] = {"x-1.0.tar.gz", "x-1.0-py3-none-any.whl", "pkg.ZIP", "evil.tgz", "./pkg",
                         "../pkg", "/tmp/pkg", "pkg/sub", "pkg @ file:///tmp/x.tar.gz",
                         "pkg@https://example.com/x.whl", "-e .", "--index-url=http://x",
                         "-r requirements.txt", "file:///etc/passwd", "git+https://x/y.git",
                         "pkg>=", "pkg>=1 extra", "pkg; import os", "pkg; python_version < 3",
                         "pkg; python_version < '3\\'", "pkg (>=1", "pkg[a,", "", " ", "pkg\n--find-links=/x",
                         "C:\\pkg", "pkg;", ".hidden", "pkg>=1,"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char err[256] = "";
        assert_int_equal(pep508_check(bad[i], strlen(bad[i]), err, sizeof err), -1);
        assert_non_null(strstr(err, "PEP 508") ? err : strstr(err, "characters"));
    }
}

static void test_the_reason_says_what_is_wrong(void **state)
{
    (void)state;
    char err[256];
    const char *archive = "x-1.0.tar.gz";
    assert_int_equal(pep508_check(archive, strlen(archive), err, sizeof err), -1);
    assert_non_null(strstr(err, "archive"));
    const char *ref = "x @ https://example.com/x.whl";
    assert_int_equal(pep508_check(ref, strlen(ref), err, sizeof err), -1);
    assert_non_null(strstr(err, "direct reference"));
    char nul[] = "pkg\0--pre";
    assert_int_equal(pep508_check(nul, sizeof nul - 1, err, sizeof err), -1);
    char huge[300];
    memset(huge, 'a', sizeof huge);
    assert_int_equal(pep508_check(huge, sizeof huge, err, sizeof err), -1);
    assert_non_null(strstr(err, "characters"));
}

static void test_deep_markers_are_bounded(void **state)
{
    (void)state;
    char text[190] = "pkg; ";
    size_t n = strlen(text);
    while (n < sizeof text - 2) text[n++] = '(';
    text[n] = '\0';
    char err[256];
    assert_int_equal(pep508_check(text, n, err, sizeof err), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_requirements_pass),
        cmocka_unit_test(test_archives_paths_urls_and_options_are_refused),
        cmocka_unit_test(test_the_reason_says_what_is_wrong),
        cmocka_unit_test(test_deep_markers_are_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
