/* tests/unit/test_logpump.c — the components' logs under `snakepit up` (cli/logpump.h): what
 * is written into the pipe lands in the file; past the size the file is rotated at the end of
 * a line, keeping N older files and dropping the oldest; a file already over the size is
 * rotated when it is added; what is still in the pipe at the end is written. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/logpump.h"

static char s_dir[64], s_log[96];

static int s_setup(void **state)
{
    (void)state;
    snprintf(s_dir, sizeof s_dir, "/tmp/sp-logpump-XXXXXX");
    assert_non_null(mkdtemp(s_dir));
    snprintf(s_log, sizeof s_log, "%s/c.log", s_dir);
    return 0;
}

static int s_teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", s_dir);
    return system(cmd) == 0 ? 0 : -1;
}

static long s_size(const char *suffix)
{
    char path[128];
    struct stat st;
    snprintf(path, sizeof path, "%s%s", s_log, suffix);
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

static char *s_read(const char *suffix)
{
    char path[128];
    snprintf(path, sizeof path, "%s%s", s_log, suffix);
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    char *text = calloc(1, 65536);
    size_t n = fread(text, 1, 65535, f);
    text[n] = '\0';
    fclose(f);
    return text;
}

/* A line of exactly len bytes, newline included: "NNNN xxxx…\n". */
static void s_line(int fd, int n, size_t len)
{
    char line[256];
    memset(line, 'x', sizeof line);
    snprintf(line, sizeof line, "%04d", n);
    line[4] = ' ';
    line[len - 1] = '\n';
    assert_int_equal(write(fd, line, len), (ssize_t)len);
}

static void test_lines_land_in_the_file(void **state)
{
    (void)state;
    char err[256];
    logpump_t *p = logpump_new(1 << 20, 2);
    int fd = logpump_add(p, s_log, err, sizeof err);
    assert_true(fd > 0);
    assert_int_equal(logpump_start(p, err, sizeof err), 0);
    assert_int_equal(write(fd, "level=info one\nlevel=info two\n", 30), 30);
    logpump_sync(p);
    char *text = s_read("");
    assert_string_equal(text, "level=info one\nlevel=info two\n");
    free(text);
    logpump_destroy(&p);
    assert_null(p);
}

static void test_past_the_size_files_rotate_at_a_line_end_and_the_oldest_goes(void **state)
{
    (void)state;
    char err[256];
    logpump_t *p = logpump_new(1000, 2); /* 1000 bytes, two older files */
    int fd = logpump_add(p, s_log, err, sizeof err);
    assert_int_equal(logpump_start(p, err, sizeof err), 0);
    for (int i = 0; i < 100; i++) s_line(fd, i, 100); /* 10 kB in lines of 100 */
    logpump_destroy(&p);
    for (const char *suffix = ".1"; suffix; suffix = strcmp(suffix, ".1") ? NULL : ".2") {
        long size = s_size(suffix);
        assert_true(size >= 1000 && size < 1100); /* the first line's end past 1000 */
        char *text = s_read(suffix);
        assert_int_equal(text[strlen(text) - 1], '\n');
        free(text);
    }
    assert_int_equal(s_size(".3"), -1);
    /* lines 70-79 in .2, 80-89 in .1, 90-99 in the current file: none lost, none twice */
    const char *suffixes[] = {".2", ".1", ""};
    int want = 70;
    for (size_t k = 0; k < 3; k++) {
        char *text = s_read(suffixes[k]);
        for (char *line = text; *line; line = strchr(line, '\n') + 1)
            assert_int_equal(atoi(line), want++);
        free(text);
    }
    assert_int_equal(want, 100);
}

static void test_a_log_already_over_the_size_is_rotated_when_added(void **state)
{
    (void)state;
    FILE *f = fopen(s_log, "w");
    for (int i = 0; i < 30; i++) fputs("level=info from before\n", f);
    fclose(f);
    char err[256];
    logpump_t *p = logpump_new(500, 1);
    assert_true(logpump_add(p, s_log, err, sizeof err) > 0);
    assert_true(s_size(".1") > 500);
    assert_int_equal(s_size(""), 0);
    logpump_destroy(&p); /* never started: nothing to stop */
}

static void test_what_is_left_in_the_pipe_is_written_at_the_end(void **state)
{
    (void)state;
    char err[256];
    logpump_t *p = logpump_new(1 << 20, 0);
    int fd = logpump_add(p, s_log, err, sizeof err);
    assert_int_equal(logpump_start(p, err, sizeof err), 0);
    for (int i = 0; i < 200; i++) s_line(fd, i, 50);
    assert_int_equal(write(fd, "no newline", 10), 10);
    logpump_destroy(&p);
    assert_int_equal(s_size(""), 200 * 50 + 10);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_lines_land_in_the_file, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(
            test_past_the_size_files_rotate_at_a_line_end_and_the_oldest_goes, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_a_log_already_over_the_size_is_rotated_when_added,
                                        s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_what_is_left_in_the_pipe_is_written_at_the_end,
                                        s_setup, s_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
