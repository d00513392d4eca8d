/* tests/unit/test_pep723.c — common/pep723.c: the dependency names a call without a
 * profile is routed by. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "common/pep723.h"

static int s_deps(const char *code, char names[][PEP723_NAME])
{
    return pep723_dependencies(code, strlen(code), names, 8);
}

static void test_names_are_read_and_normalised(void **state)
{
    (void)state;
    char n[8][PEP723_NAME];
    const char *code =
        "# /// script\n# requires-python = \">=3.11\"\n"
        "# dependencies = [\"NumPy>=1.20\", 'pandas[excel] ; python_version>\"3\"',\n"
        "#   \"python_dateutil==2.*\",\n#   \"scikit.learn\"]\n# ///\nimport numpy\n";
    assert_int_equal(s_deps(code, n), 4);
    assert_string_equal(n[0], "numpy");
    assert_string_equal(n[1], "pandas");
    assert_string_equal(n[2], "python-dateutil");
    assert_string_equal(n[3], "scikit-learn");
}

static void test_no_block_is_minus_one_and_an_empty_list_zero(void **state)
{
    (void)state;
    char n[8][PEP723_NAME];
    assert_int_equal(s_deps("import numpy\n# dependencies = ['numpy']\n", n), -1);
    assert_int_equal(s_deps("# /// script\n# dependencies = []\n# ///\n", n), 0);
    assert_int_equal(s_deps("# /// pyproject\n# dependencies = ['x']\n# ///\n", n), -1);
}

static void test_a_broken_block_routes_nowhere(void **state)
{
    (void)state;
    char n[8][PEP723_NAME];
    /* a non-comment line ends the block without its closing line: not PEP 723 */
    assert_int_equal(s_deps("# /// script\nx = 1\n# dependencies = ['numpy']\n# ///\n", n), -1);
    /* an unterminated string reads nothing past the line */
    assert_int_equal(s_deps("# /// script\n# dependencies = ['numpy\n# ///\n", n), 0);
}

static void test_more_names_than_room_are_capped(void **state)
{
    (void)state;
    char n[2][PEP723_NAME];
    const char *code = "# /// script\n# dependencies = ['a', 'b', 'c']\n# ///\n";
    assert_int_equal(pep723_dependencies(code, strlen(code), n, 2), 2);
}

static void test_requirements_are_kept_as_written(void **state)
{
    (void)state;
    char r[4][PEP723_REQ];
    const char *code = "# /// script\n# dependencies = [\"tinypkg>=1,<2\", 'scikit-learn[alldeps] ; "
                       "python_version>\"3\"']\n# ///\n";
    assert_int_equal(pep723_requirements(code, strlen(code), r, 4), 2);
    assert_string_equal(r[0], "tinypkg>=1,<2");
    assert_string_equal(r[1], "scikit-learn[alldeps] ; python_version>\"3\"");
}

static void test_a_long_name_with_separators_stays_within_its_buffer(void **state)
{
    (void)state;
    /* a separator and a character written at the buffer's last free byte once overflowed it
     * (found by fuzz_compat in pep723_merge.c's copy of this normalisation; ASan sees it) */
    char n[1][PEP723_NAME];
    char code[300];
    snprintf(code, sizeof code, "# /// script\n# dependencies = [\"%.*s-b\"]\n# ///\n",
             PEP723_NAME - 2, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
    assert_int_equal(pep723_dependencies(code, strlen(code), n, 1), 1);
    assert_true(strlen(n[0]) < PEP723_NAME);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names_are_read_and_normalised),
        cmocka_unit_test(test_no_block_is_minus_one_and_an_empty_list_zero),
        cmocka_unit_test(test_a_broken_block_routes_nowhere),
        cmocka_unit_test(test_more_names_than_room_are_capped),
        cmocka_unit_test(test_requirements_are_kept_as_written),
        cmocka_unit_test(test_a_long_name_with_separators_stays_within_its_buffer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
