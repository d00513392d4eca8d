/* tests/unit/test_backup_file.c — the file of `snakepit backup` (cli/backup_file.h): records
 * come back as written, binary keys and payloads included; a file cut short, changed by one
 * byte, or claiming a field longer than the format allows is refused with a reason, never
 * read past. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/backup_file.h"

static char s_path[64];

static int s_setup(void **state)
{
    (void)state;
    snprintf(s_path, sizeof s_path, "/tmp/sp-backup-test-%d.bak", (int)getpid());
    return 0;
}

static int s_teardown(void **state)
{
    (void)state;
    unlink(s_path);
    return 0;
}

/* Two records (one with a NUL in its payload and an expiry), closed: 0 when written. */
static int s_write_two(void)
{
    char err[256];
    backup_writer_t *w = backup_writer_open(s_path, "{\"format\":1}", err, sizeof err);
    if (!w) return -1;
    char payload[] = {'a', 0, 'b', (char)0xff};
    backup_record_t a = {.type = BACKUP_HASH,
                         .key = "sp:t:alice",
                         .key_len = 10,
                         .payload = payload,
                         .payload_len = sizeof payload};
    backup_record_t b = {.type = BACKUP_STRING,
                         .key = "sp:exec:1",
                         .key_len = 9,
                         .expire_at_ms = 1795000000000LL,
                         .payload = "x",
                         .payload_len = 1};
    if (backup_writer_add(w, &a, err, sizeof err) < 0 ||
        backup_writer_add(w, &b, err, sizeof err) < 0)
        return -1;
    return backup_writer_close(&w, err, sizeof err);
}

/* Reads the whole file: the number of records before the end, or -1 with the reason. */
static int s_read_all(char *err, size_t errlen)
{
    char header[256];
    backup_reader_t *r = backup_reader_open(s_path, header, sizeof header, err, errlen);
    if (!r) return -1;
    backup_record_t rec;
    int n = 0, rc;
    while ((rc = backup_reader_next(r, &rec, err, errlen)) == 1) n++;
    backup_reader_close(&r);
    return rc < 0 ? -1 : n;
}

static long s_size(void)
{
    FILE *f = fopen(s_path, "rb");
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fclose(f);
    return n;
}

static void test_records_come_back_as_written(void **state)
{
    (void)state;
    assert_int_equal(s_write_two(), 0);
    char header[256], err[256];
    backup_reader_t *r = backup_reader_open(s_path, header, sizeof header, err, sizeof err);
    assert_non_null(r);
    assert_string_equal(header, "{\"format\":1}");
    backup_record_t rec;
    assert_int_equal(backup_reader_next(r, &rec, err, sizeof err), 1);
    assert_int_equal(rec.type, BACKUP_HASH);
    assert_int_equal(rec.key_len, 10);
    assert_memory_equal(rec.key, "sp:t:alice", 10);
    assert_int_equal(rec.payload_len, 4);
    assert_memory_equal(rec.payload, "a\0b\xff", 4);
    assert_true(rec.expire_at_ms == 0);
    assert_int_equal(backup_reader_next(r, &rec, err, sizeof err), 1);
    assert_int_equal(rec.type, BACKUP_STRING);
    assert_true(rec.expire_at_ms == 1795000000000LL);
    assert_int_equal(backup_reader_next(r, &rec, err, sizeof err), 0); /* count and sum match */
    backup_reader_close(&r);
}

static void test_a_file_cut_short_is_refused(void **state)
{
    (void)state;
    assert_int_equal(s_write_two(), 0);
    long full = s_size();
    char err[256];
    for (long cut = full - 1; cut > 16; cut -= 7) {
        assert_int_equal(truncate(s_path, cut), 0);
        assert_int_equal(s_read_all(err, sizeof err), -1);
        assert_non_null(strstr(err, s_path));
    }
}

static void test_one_changed_byte_is_refused(void **state)
{
    (void)state;
    assert_int_equal(s_write_two(), 0);
    long full = s_size();
    char err[256];
    for (long at = 17; at < full; at++) { /* every byte past the magic */
        assert_int_equal(s_write_two(), 0);
        FILE *f = fopen(s_path, "r+b");
        fseek(f, at, SEEK_SET);
        int ch = fgetc(f);
        fseek(f, at, SEEK_SET);
        fputc(ch ^ 0x20, f);
        fclose(f);
        assert_int_equal(s_read_all(err, sizeof err), -1);
    }
}

static void test_a_length_past_the_limit_is_refused_not_allocated(void **state)
{
    (void)state;
    FILE *f = fopen(s_path, "wb");
    fputs("SNAKEPIT-BACKUP\n{}\nK", f);
    fputc('s', f);
    const unsigned char huge[4] = {0xff, 0xff, 0xff, 0xff}; /* a 4 GiB key */
    fwrite(huge, 1, 4, f);
    fclose(f);
    char err[256];
    assert_int_equal(s_read_all(err, sizeof err), -1);
    assert_non_null(strstr(err, "damaged or truncated"));
}

static void test_a_file_of_something_else_is_named_so(void **state)
{
    (void)state;
    FILE *f = fopen(s_path, "wb");
    fputs("REDIS0011...", f);
    fclose(f);
    char header[64], err[256];
    assert_null(backup_reader_open(s_path, header, sizeof header, err, sizeof err));
    assert_non_null(strstr(err, "not a snakepit backup"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_records_come_back_as_written, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_a_file_cut_short_is_refused, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_one_changed_byte_is_refused, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_a_length_past_the_limit_is_refused_not_allocated,
                                        s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_a_file_of_something_else_is_named_so, s_setup,
                                        s_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
