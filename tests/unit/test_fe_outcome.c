/* tests/unit/test_fe_outcome.c — the text a model reads of an execute_code result
 * (mcp-frontend/render/outcome.c): the status, the head and the tail of long output with what was
 * left out named, the traceback of an error, where it ran and why; structuredContent keeps
 * everything. Through
 * render/outcome.h, linked against the front-end's library (libmcp.a). */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/base64.h"
#include "common/utf8.h"
#include "mcp-frontend/render/outcome.h"
#include "mcp-frontend/render/rich.h"
#include "mcp-frontend/rpc/jsonrpc.h"

/* The text block and the structured stdout of a result whose stdout is out. */
static json_t *s_render(result_t *res)
{
    return outcome_execute("0190a5b0-0000-7000-8000-000000000000", res);
}

static const char *s_text(const json_t *r)
{
    /* the text block comes first (tool_result), content blocks of outputs after it */
    return json_string_value(
        json_object_get(json_array_get(json_object_get(r, "content"), 0), "text"));
}

/* A run that succeeded and printed what b holds (taken). */
static void s_succeeded(result_t *res, buf_t *b)
{
    result_init(res);
    res->status = ST_OK;
    res->out_len = b->len;
    res->out = buf_steal(b, NULL);
}

static void test_short_output_is_shown_whole(void **state)
{
    (void)state;
    result_t res;
    result_init(&res);
    res.status = ST_OK;
    res.out = xstrdup("hello\n");
    res.out_len = 6;
    json_t *r = s_render(&res);
    assert_non_null(strstr(s_text(r), "status: ok"));
    assert_non_null(strstr(s_text(r), "stdout:\nhello\n"));
    assert_null(strstr(s_text(r), "left out"));
    json_decref(r);
    result_clear(&res);
}

static void test_long_output_keeps_its_head_and_its_tail(void **state)
{
    (void)state;
    buf_t b;
    buf_init(&b);
    for (int i = 0; i < 3000; i++) buf_printf(&b, "line %d\n", i);
    result_t res;
    s_succeeded(&res, &b);
    json_t *r = s_render(&res);
    const char *t = s_text(r);
    assert_non_null(strstr(t, "\nline 0\nline 1\n"));
    assert_non_null(strstr(t, "\nline 2999\n"));
    assert_null(strstr(t, "\nline 1500\n"));
    assert_non_null(strstr(t, "left out here; the whole text is in structuredContent.stdout"));
    assert_true(strlen(t) < 5000);
    /* the cut falls between lines: no half line on either side of the marker */
    const char *mark = strstr(t, "[... ");
    assert_true(mark[-1] == '\n');
    assert_true(strstr(mark, "]\nline ") != NULL);
    /* and structuredContent has every byte */
    const char *full =
        json_string_value(json_object_get(json_object_get(r, "structuredContent"), "stdout"));
    assert_int_equal(strlen(full), res.out_len);
    json_decref(r);
    result_clear(&res);
}

static void test_a_cut_never_splits_a_utf8_sequence(void **state)
{
    (void)state;
    buf_t b;
    buf_init(&b);
    for (int i = 0; i < 4000; i++) buf_puts(&b, "\xc3\xa9"); /* é, no line breaks at all */
    result_t res;
    s_succeeded(&res, &b);
    json_t *r = s_render(&res);
    const char *t = s_text(r);
    assert_true(utf8_valid(t, strlen(t)));
    assert_null(strstr(t, "\xef\xbf\xbd")); /* no U+FFFD: nothing was cut mid-sequence */
    json_decref(r);
    result_clear(&res);
}

/* A run that failed with type: message, and the traceback when there is one. */
static void s_failed(result_t *res, const char *type, const char *message, const char *traceback)
{
    result_init(res);
    res->status = ST_ERROR;
    res->error.present = 1;
    res->error.type = xstrdup(type);
    res->error.message = xstrdup(message);
    if (traceback) res->error.traceback = xstrdup(traceback);
}

static void test_an_error_shows_its_traceback(void **state)
{
    (void)state;
    result_t res;
    s_failed(&res, "ZeroDivisionError", "division by zero",
             "Traceback (most recent call last):\n  File \"<snakepit>\", line 2, in f\n    "
             "return 1/n\nZeroDivisionError: division by zero\n");
    res.error.line = 2;
    json_t *r = s_render(&res);
    const char *t = s_text(r);
    assert_non_null(strstr(t, "status: error"));
    assert_non_null(strstr(t, "error: ZeroDivisionError at line 2\nTraceback"));
    assert_non_null(strstr(t, "    return 1/n\n"));
    assert_true(json_is_true(json_object_get(r, "isError")));
    json_decref(r);
    result_clear(&res);
}

static void test_an_error_without_traceback_shows_its_message(void **state)
{
    (void)state;
    result_t res;
    s_failed(&res, "DependencyError", "numpy>=3 is not installed", NULL);
    json_t *r = s_render(&res);
    assert_non_null(strstr(s_text(r), "error: DependencyError: numpy>=3 is not installed\n"));
    json_decref(r);
    result_clear(&res);
}

static void test_the_profile_and_a_lowered_limit_are_said(void **state)
{
    (void)state;
    result_t res;
    buf_t b;
    buf_init(&b);
    buf_puts(&b, "hi\n");
    s_succeeded(&res, &b);
    json_t *r = s_render(&res);
    json_t *adjusted = json_pack("{s:{s:f,s:f,s:s,s:s}}", "timeout", "requested", 500.0, "used",
                                 300.0, "unit", "s", "why", "your tenant's maximum");
    outcome_annotate(r, "python.data_science", "inferred from imports pandas", adjusted);
    const char *text = s_text(r);
    /* the status line first, then where it ran and why, then what was lowered, then the output */
    assert_non_null(strstr(text, "status: ok"));
    assert_true(strstr(text, "status: ok") < strstr(text, "profile: python.data_science"));
    assert_non_null(strstr(text,
                           "profile: python.data_science (inferred from imports pandas)\n"
                           "note: timeout 500 s asked for, 300 s used (your tenant's maximum)\n"
                           "stdout:\nhi\n"));
    json_t *sc = json_object_get(r, "structuredContent");
    assert_string_equal(json_string_value(json_object_get(sc, "profile")), "python.data_science");
    assert_string_equal(json_string_value(json_object_get(sc, "profile_reason")),
                        "inferred from imports pandas");
    assert_true(json_equal(json_object_get(sc, "limits_adjusted"), adjusted));
    json_decref(adjusted);
    json_decref(r);
    result_clear(&res);
}

static void test_a_file_not_kept_is_listed_with_its_note_and_no_link(void **state)
{
    (void)state;
    result_t res;
    result_init(&res);
    res.status = ST_OK;
    json_t *r = s_render(&res);
    json_t *unkept = json_pack("[{s:s,s:i,s:s}]", "path", "big.bin", "bytes", 300000, "note",
                               "not kept for resources/read: tenant t's ... (max_linked_mb)");
    rich_add_unkept(r, unkept);
    json_t *files = json_object_get(json_object_get(r, "structuredContent"), "files");
    assert_int_equal(json_array_size(files), 1);
    json_t *f = json_array_get(files, 0);
    assert_string_equal(json_string_value(json_object_get(f, "path")), "big.bin");
    assert_int_equal(json_integer_value(json_object_get(f, "bytes")), 300000);
    assert_true(json_is_null(json_object_get(f, "content")));
    assert_null(json_object_get(f, "uri"));
    assert_non_null(strstr(json_string_value(json_object_get(f, "note")), "max_linked_mb"));
    json_t *content = json_object_get(r, "content");
    const char *last = json_string_value(
        json_object_get(json_array_get(content, json_array_size(content) - 1), "text"));
    assert_non_null(strstr(last, "file big.bin (300000 bytes) not kept"));
    for (size_t i = 0; i < json_array_size(content); i++)
        assert_string_not_equal(
            json_string_value(json_object_get(json_array_get(content, i), "type")),
            "resource_link");
    json_decref(unkept);
    json_decref(r);
    result_clear(&res);
}

/* A refusal the code caught: the run is ok, the refusal listed in structuredContent and named in
 * the text; the exit code is the code's own. */
static void test_a_caught_refusal_is_listed_and_not_a_failure(void **state)
{
    (void)state;
    result_t res;
    result_init(&res);
    res.status = ST_OK;
    res.exit.code = 0;
    res.events = xcalloc(1, sizeof *res.events);
    res.n_events = 1;
    res.events[0] = (result_event_t){xstrdup("socket.getaddrinfo"), NULL, xstrdup("python"), 2};
    json_t *r = s_render(&res);
    assert_true(json_is_false(json_object_get(r, "isError")));
    json_t *ev = json_object_get(json_object_get(r, "structuredContent"), "security_events");
    assert_int_equal(json_array_size(ev), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(ev, 0), "operation")),
                        "socket.getaddrinfo");
    assert_true(json_is_null(json_object_get(json_array_get(ev, 0), "target")));
    assert_string_equal(json_string_value(json_object_get(json_array_get(ev, 0), "layer")),
                        "python");
    assert_int_equal(json_integer_value(json_object_get(json_array_get(ev, 0), "count")), 2);
    assert_non_null(strstr(
        s_text(r), "refused by the sandbox (the code went on): socket.getaddrinfo [python] x2"));
    json_decref(r);
    result_clear(&res);
}

static void test_an_exit_code_is_shown(void **state)
{
    (void)state;
    result_t res;
    result_init(&res);
    res.status = ST_ERROR;
    res.exit.code = 42;
    res.error.present = 1;
    res.error.type = xstrdup("SystemExit");
    res.error.message = xstrdup("exit code 42");
    json_t *r = s_render(&res);
    json_t *exit = json_object_get(json_object_get(r, "structuredContent"), "exit");
    assert_int_equal(json_integer_value(json_object_get(exit, "code")), 42);
    assert_non_null(strstr(s_text(r), "exit code: 42\n"));
    assert_int_equal(json_array_size(json_object_get(json_object_get(r, "structuredContent"),
                                                     "security_events")),
                     0);
    json_decref(r);
    result_clear(&res);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_short_output_is_shown_whole),
        cmocka_unit_test(test_long_output_keeps_its_head_and_its_tail),
        cmocka_unit_test(test_a_cut_never_splits_a_utf8_sequence),
        cmocka_unit_test(test_an_error_shows_its_traceback),
        cmocka_unit_test(test_an_error_without_traceback_shows_its_message),
        cmocka_unit_test(test_the_profile_and_a_lowered_limit_are_said),
        cmocka_unit_test(test_a_file_not_kept_is_listed_with_its_note_and_no_link),
        cmocka_unit_test(test_a_caught_refusal_is_listed_and_not_a_failure),
        cmocka_unit_test(test_an_exit_code_is_shown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
