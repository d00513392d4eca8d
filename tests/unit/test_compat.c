/* tests/unit/test_compat.c — the drop-in endpoints' pure readers of untrusted code, through
 * their headers: pyscan (the names code binds, the modules it imports) and pep723_merge (extra
 * dependencies merged into a script's PEP 723 block without moving a line of code).
 * Linked against the front-end's library (libmcp.a). */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/buf.h"
#include "mcp-frontend/compat/pep723_merge.h"
#include "mcp-frontend/tools/pyscan.h"

static pyscan_t s_scan;

static void s_pyscan(const char *code)
{
    pyscan(code, strlen(code), &s_scan);
}

static int s_has_name(const char *name)
{
    for (size_t i = 0; i < s_scan.n_names; i++)
        if (!strcmp(s_scan.names[i], name)) return 1;
    return 0;
}

static void test_assignments_of_every_form_bind_their_names(void **state)
{
    (void)state;
    s_pyscan("result = 2 + 2\na, (b, *c) = 1, (2, 3)\nx[0] = y.z = w = 5\nk: int = 3\n"
             "bits <<= 2\nif (n := 10) > 5: big = True\n");
    const char *want[] = {"result", "a", "b", "c", "w", "k", "bits", "n", "big"};
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) assert_true(s_has_name(want[i]));
    assert_false(s_has_name("x")); /* a subscript and an attribute bind no name */
    assert_false(s_has_name("y"));
    assert_false(s_has_name("z"));
}

static void test_comparisons_and_keyword_arguments_bind_nothing(void **state)
{
    (void)state;
    s_pyscan("z == 3\nv <= 3\nq != 1\nfoo(bar=1)\nprint(f'{result}')\n");
    assert_int_equal(s_scan.n_names, 0);
}

static void test_def_class_for_with_and_imports_bind_names(void **state)
{
    (void)state;
    s_pyscan("import math, os.path as osp\nfrom collections import (OrderedDict as OD,\n"
             "  defaultdict)\nfrom . import rel\ndef fib(n):\n    return n\nclass K(B): attr = 1\n"
             "for i, j in enumerate('ab'): tot = i\nwith g() as fh, h() as (p, q): pass\n");
    const char *want[] = {"math", "osp", "OD", "defaultdict", "fib", "K", "i", "j", "tot", "fh", "p", "q"};
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) assert_true(s_has_name(want[i]));
    assert_false(s_has_name("rel")); /* relative imports have no package here */
    assert_int_equal(s_scan.n_modules, 3);
    assert_string_equal(s_scan.modules[0], "math");
    assert_string_equal(s_scan.modules[1], "os.path");
    assert_string_equal(s_scan.modules[2], "collections");
}

static void test_strings_and_comments_are_not_read(void **state)
{
    (void)state;
    s_pyscan("s = \"\"\"\nfake = 1\nimport os\n\"\"\"\n# hidden = 2\nt = 'a = 1'  # c = 3\n");
    assert_true(s_has_name("s"));
    assert_true(s_has_name("t"));
    assert_false(s_has_name("fake"));
    assert_false(s_has_name("hidden"));
    assert_false(s_has_name("c"));
    assert_int_equal(s_scan.n_modules, 0);
}

static void test_non_ascii_names_are_left_out_and_output_is_bounded(void **state)
{
    (void)state;
    s_pyscan("caf\xc3\xa9 = 1\nok = 2\n");
    assert_false(s_has_name("caf\xc3\xa9"));
    assert_true(s_has_name("ok"));
    buf_t b;
    buf_init(&b);
    for (int i = 0; i < 500; i++) buf_printf(&b, "v%d = %d\n", i, i);
    pyscan((const char *)b.data, b.len, &s_scan);
    assert_int_equal(s_scan.n_names, PYSCAN_MAX);
    buf_free(&b);
}

/* ---- pep723_merge */

static char *s_merge(const char *code, const char *const *extras, size_t n, char *err)
{
    pep723_meta_t m;
    if (pep723_read(code, strlen(code), &m, err, 200) < 0) return NULL;
    for (size_t i = 0; i < n; i++)
        if (pep723_add(&m, extras[i], strlen(extras[i]), err, 200) < 0) {
            pep723_meta_clear(&m);
            return NULL;
        }
    size_t len;
    char *out = pep723_write(code, strlen(code), &m, &len);
    pep723_meta_clear(&m);
    return out;
}

static void test_extras_go_in_a_block_at_the_end_when_the_script_has_none(void **state)
{
    (void)state;
    const char *extras[] = {"requests>=2.32"};
    char err[200];
    char *out = s_merge("import requests\nprint(1)", extras, 1, err);
    assert_string_equal(out, "import requests\nprint(1)\n# /// script\n# dependencies = [\n"
                             "#   \"requests>=2.32\",\n# ]\n# ///\n");
    free(out);
}

static void test_an_extra_replaces_the_script_dependency_of_the_same_name(void **state)
{
    (void)state;
    const char *code = "# /// script\n# requires-python = \">=3.10\"\n# dependencies = [\n"
                       "#   \"pandas>=2.2\",  # pinned\n#   'numpy',\n# ]\n# [tool.uv]\n"
                       "# dependencies = [\"ignored\"]\n# ///\nimport pandas\n";
    const char *extras[] = {"PANDAS>=1.0", "scipy"};
    char err[200];
    char *out = s_merge(code, extras, 2, err);
    assert_non_null(out);
    /* the code keeps its line numbers: the old opening line is renamed, not removed */
    assert_non_null(strstr(out, "# /// script (merged into the block at the end)\n# requires"));
    assert_non_null(strstr(out, "\nimport pandas\n# /// script\n# requires-python = \">=3.10\"\n"
                                "# dependencies = [\n#   \"PANDAS>=1.0\",\n#   'numpy',\n"
                                "#   \"scipy\",\n# ]\n# ///\n"));
    assert_null(strstr(out, "ignored\",\n# ]"));
    free(out);
}

static void test_extras_are_quoted_for_toml_and_checked(void **state)
{
    (void)state;
    char err[200];
    const char *quote[] = {"pkg; python_version < \"3.12\""};
    char *out = s_merge("x = 1\n", quote, 1, err);
    assert_non_null(strstr(out, "\"pkg; python_version < \\\"3.12\\\"\""));
    free(out);
    const char *control[] = {"pkg\n# ///"};
    assert_null(s_merge("x = 1\n", control, 1, err));
    assert_non_null(strstr(err, "PEP 508"));
    const char *empty[] = {""};
    assert_null(s_merge("x = 1\n", empty, 1, err));
}

static void test_a_block_whose_dependencies_cannot_be_read_is_refused(void **state)
{
    (void)state;
    char err[200];
    assert_null(s_merge("# /// script\n# dependencies = \"numpy\"\n# ///\n", NULL, 0, err));
    assert_non_null(strstr(err, "must be an array"));
    assert_null(s_merge("# /// script\n# dependencies = [\"a\",\n# ///\n", NULL, 0, err));
}

static void test_an_unclosed_block_is_no_block(void **state)
{
    (void)state;
    pep723_meta_t m;
    char err[200];
    const char *code = "# /// script\n# dependencies = [\"a\"]\nprint(1)\n";
    assert_int_equal(pep723_read(code, strlen(code), &m, err, sizeof err), 0);
    assert_false(m.found);
    pep723_meta_clear(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_assignments_of_every_form_bind_their_names),
        cmocka_unit_test(test_comparisons_and_keyword_arguments_bind_nothing),
        cmocka_unit_test(test_def_class_for_with_and_imports_bind_names),
        cmocka_unit_test(test_strings_and_comments_are_not_read),
        cmocka_unit_test(test_non_ascii_names_are_left_out_and_output_is_bounded),
        cmocka_unit_test(test_extras_go_in_a_block_at_the_end_when_the_script_has_none),
        cmocka_unit_test(test_an_extra_replaces_the_script_dependency_of_the_same_name),
        cmocka_unit_test(test_extras_are_quoted_for_toml_and_checked),
        cmocka_unit_test(test_a_block_whose_dependencies_cannot_be_read_is_refused),
        cmocka_unit_test(test_an_unclosed_block_is_no_block),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
