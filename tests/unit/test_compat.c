/* tests/unit/test_compat.c — the drop-in endpoints' pure readers of untrusted code, through
 * their headers: pyscan (the names code binds, the modules it imports) and pep723_merge (a script's
 * PEP 723 block read and checked for its shape, extra dependencies merged into it without moving a
 * line of code).
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

static int s_in(char list[][PYSCAN_NAME], size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(list[i], name)) return 1;
    return 0;
}

static void test_calls_and_double_underscore_attributes_are_read_outside_strings(void **state)
{
    (void)state;
    s_pyscan("x = eval('1')\ndef open(p): pass\nclass K(Base): pass\nobj.getattr(y)\n"
             "if exec (z): print(().__class__.__subclasses__())\n"
             "s = 'compile(1) .__dict__'  # vars(q)\nf.__name__ = 1\n");
    assert_true(s_in(s_scan.calls, s_scan.n_calls, "eval"));
    assert_true(s_in(s_scan.calls, s_scan.n_calls, "exec"));
    assert_true(s_in(s_scan.calls, s_scan.n_calls, "print"));
    assert_false(s_in(s_scan.calls, s_scan.n_calls, "open"));    /* a def is no call */
    assert_false(s_in(s_scan.calls, s_scan.n_calls, "K"));       /* nor a class */
    assert_false(s_in(s_scan.calls, s_scan.n_calls, "getattr")); /* an attribute's call */
    assert_false(s_in(s_scan.calls, s_scan.n_calls, "compile")); /* in a string */
    assert_false(s_in(s_scan.calls, s_scan.n_calls, "vars"));    /* in a comment */
    assert_false(s_in(s_scan.calls, s_scan.n_calls, "if"));
    assert_true(s_in(s_scan.dunders, s_scan.n_dunders, "__class__"));
    assert_true(s_in(s_scan.dunders, s_scan.n_dunders, "__subclasses__"));
    assert_true(s_in(s_scan.dunders, s_scan.n_dunders, "__name__"));
    assert_false(s_in(s_scan.dunders, s_scan.n_dunders, "__dict__"));
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

static void test_a_script_without_a_block_is_kept_as_it_is(void **state)
{
    (void)state;
    const char *extras[] = {"requests>=2.32"};
    char err[200];
    /* the extras go to the executor beside the script (the job's dependencies), not into it */
    char *out = s_merge("import requests\nprint(1)", extras, 1, err);
    assert_string_equal(out, "import requests\nprint(1)");
    free(out);
}

static void test_an_extra_replaces_the_script_dependency_of_the_same_name_on_its_line(void **state)
{
    (void)state;
    const char *code = "# /// script\n# requires-python = \">=3.10\"\n# dependencies = [\n"
                       "#   \"pandas>=2.2\",  # pinned\n#   'numpy',\n# ]\n# [tool.uv]\n"
                       "# dependencies = [\"ignored\"]\n# ///\nimport pandas\n";
    const char *extras[] = {"PANDAS>=1.0", "scipy"};
    char err[200];
    char *out = s_merge(code, extras, 2, err);
    assert_non_null(out);
    /* the script's own block, as written but for the one string; scipy is no part of it */
    assert_string_equal(out, "# /// script\n# requires-python = \">=3.10\"\n# dependencies = [\n"
                             "#   \"PANDAS>=1.0\",  # pinned\n#   'numpy',\n# ]\n# [tool.uv]\n"
                             "# dependencies = [\"ignored\"]\n# ///\nimport pandas\n");
    free(out);
}

static void test_the_block_alone_is_its_lines_with_the_replacements(void **state)
{
    (void)state;
    const char *code = "import x\n# /// script\n# dependencies = ['numpy<2']\n# ///\nprint(1)\n";
    pep723_meta_t m;
    char err[200];
    assert_int_equal(pep723_read(code, strlen(code), &m, err, sizeof err), 0);
    assert_int_equal(pep723_add(&m, "numpy>=2", 8, err, sizeof err), 0);
    size_t len;
    char *block = pep723_block(code, strlen(code), &m, &len);
    assert_string_equal(block, "# /// script\n# dependencies = [\"numpy>=2\"]\n# ///\n");
    assert_int_equal(len, strlen(block));
    free(block);
    pep723_meta_clear(&m);
}

static void test_extras_are_quoted_for_toml_and_checked(void **state)
{
    (void)state;
    char err[200];
    const char *code = "# /// script\n# dependencies = [\"pkg\", \"other\"]\n# ///\n";
    /* a marker's double quotes: a literal string, which every reader of the block reads whole */
    const char *quote[] = {"pkg; python_version < \"3.12\""};
    char *out = s_merge(code, quote, 1, err);
    assert_non_null(strstr(out, "['pkg; python_version < \"3.12\"', \"other\"]"));
    free(out);
    const char *both[] = {"pkg; python_version < \"3.12\" and os_name != 'nt'"};
    out = s_merge(code, both, 1, err);
    assert_non_null(strstr(out, "\"pkg; python_version < \\\"3.12\\\" and os_name != 'nt'\""));
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
    assert_null(s_merge("# /// script\n# requires-python = \">=3\"\n# requires-python = \">=3\"\n"
                        "# ///\n",
                        NULL, 0, err));
    assert_non_null(strstr(err, "given twice"));
}

static void test_a_malformed_block_is_refused_naming_its_line(void **state)
{
    (void)state;
    char err[200];
    /* PEP 723: closed by `# ///`, every line between `#` or `# ` and text, one block */
    assert_null(s_merge("# /// script\n# dependencies = [\"a\"]\nprint(1)\n", NULL, 0, err));
    assert_non_null(strstr(err, "(line 1) is not closed: line 3"));
    assert_null(s_merge("x = 1\n# /// script\n# dependencies = [\"a\"]\n", NULL, 0, err));
    assert_non_null(strstr(err, "(line 2) is not closed"));
    assert_null(s_merge("# /// script\n#dependencies = [\"a\"]\n# ///\n", NULL, 0, err));
    assert_non_null(strstr(err, "line 2 is neither"));
    assert_null(s_merge("# /// script\n# ///\nx = 1\n# /// script\n# ///\n", NULL, 0, err));
    assert_non_null(strstr(err, "two `# /// script` blocks (lines 1 and 4)"));
    /* an empty line inside is `#` alone only with its hash; a block type of another name is no
     * script block */
    char *out = s_merge("# /// pyproject\nx\n# /// script\n#\n# ///\n", NULL, 0, err);
    assert_non_null(out);
    free(out);
}

static void test_a_token_unquotes_as_toml_reads_it(void **state)
{
    (void)state;
    char out[64];
    pep723_unquote("\"a\\\"b\\\\c\"", out, sizeof out);
    assert_string_equal(out, "a\"b\\c");
    pep723_unquote("'x\\y'", out, sizeof out);
    assert_string_equal(out, "x\\y");
    pep723_unquote("\"abcdef\"", out, 4);
    assert_string_equal(out, "abc");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_assignments_of_every_form_bind_their_names),
        cmocka_unit_test(test_comparisons_and_keyword_arguments_bind_nothing),
        cmocka_unit_test(test_def_class_for_with_and_imports_bind_names),
        cmocka_unit_test(test_strings_and_comments_are_not_read),
        cmocka_unit_test(test_non_ascii_names_are_left_out_and_output_is_bounded),
        cmocka_unit_test(test_calls_and_double_underscore_attributes_are_read_outside_strings),
        cmocka_unit_test(test_a_script_without_a_block_is_kept_as_it_is),
        cmocka_unit_test(test_an_extra_replaces_the_script_dependency_of_the_same_name_on_its_line),
        cmocka_unit_test(test_the_block_alone_is_its_lines_with_the_replacements),
        cmocka_unit_test(test_extras_are_quoted_for_toml_and_checked),
        cmocka_unit_test(test_a_block_whose_dependencies_cannot_be_read_is_refused),
        cmocka_unit_test(test_a_malformed_block_is_refused_naming_its_line),
        cmocka_unit_test(test_a_token_unquotes_as_toml_reads_it),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
