/* tests/unit/test_pretouch.c — executor-node/mem/pretouch.h: the probe's report names the pages a
 * job made private, a pooled child's pre-faulting leaves their bytes as they were, and a range
 * that is no longer writable (unmapped, or read-only now) is skipped without ending the
 * process, with the process's own SIGSEGV handler back in place afterwards. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "executor-node/mem/pretouch.h"

#define PAGE 4096u

static char *s_region; /* 8 pages, private and writable, mapped before the probe */

static void s_probe(void *arg)
{
    (void)arg;
    s_region[2 * PAGE] = 'x'; /* the job writes pages 2 and 3 */
    s_region[3 * PAGE + 7] = 'y';
}

static int s_has_page(const pretouch_t *t, uintptr_t page)
{
    for (size_t i = 0; i < t->n; i++)
        if (page >= t->ranges[i].start && page < t->ranges[i].start + t->ranges[i].len) return 1;
    return 0;
}

static void test_the_probe_reports_the_pages_a_job_made_private(void **state)
{
    (void)state;
    s_region = mmap(NULL, 8 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(s_region != MAP_FAILED);
    memset(s_region, 'a', 8 * PAGE); /* present here, so the probe's writes copy them */
    pretouch_t t;
    char err[128];
    assert_int_equal(pretouch_record(&t, s_probe, NULL, err, sizeof err), 0);
    assert_true(s_has_page(&t, (uintptr_t)s_region + 2 * PAGE));
    assert_true(s_has_page(&t, (uintptr_t)s_region + 3 * PAGE));
    assert_false(s_has_page(&t, (uintptr_t)s_region + 5 * PAGE)); /* untouched by the job */
    assert_true(t.pages >= 2);
    pretouch_free(&t);
    munmap(s_region, 8 * PAGE);
}

static void s_mine(int sig)
{
    (void)sig;
}

static void test_apply_keeps_bytes_and_skips_what_it_cannot_write(void **state)
{
    (void)state;
    char *rw = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char *ro = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char *gone = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char *after = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(rw != MAP_FAILED && ro != MAP_FAILED && gone != MAP_FAILED && after != MAP_FAILED);
    memset(rw, 0x5a, 2 * PAGE);
    memset(after, 0x33, PAGE);
    assert_int_equal(mprotect(ro, PAGE, PROT_READ), 0); /* read-only since the probe */
    touch_range_t ranges[] = {{(uintptr_t)rw, 2 * PAGE},
                              {(uintptr_t)ro, PAGE},
                              {(uintptr_t)gone, PAGE},
                              {(uintptr_t)after, PAGE}};
    pretouch_t t = {.ranges = ranges, .n = 4, .pages = 5};
    struct sigaction mine = {.sa_handler = s_mine}, now;
    sigemptyset(&mine.sa_mask);
    assert_int_equal(sigaction(SIGSEGV, &mine, NULL), 0);

    assert_int_equal(munmap(gone, PAGE), 0); /* unmapped since the probe (last: no reuse) */
    pid_t pid = fork(); /* in a child: a fault the guard missed must not end the test runner */
    assert_true(pid >= 0);
    if (pid == 0) {
        pretouch_apply(&t);
        int ok = sigaction(SIGSEGV, NULL, &now) == 0 && now.sa_handler == s_mine;
        for (size_t i = 0; i < 2 * PAGE; i++) ok &= rw[i] == 0x5a;
        for (size_t i = 0; i < PAGE; i++) ok &= after[i] == 0x33;
        _exit(ok ? 0 : 3);
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    signal(SIGSEGV, SIG_DFL);
    munmap(rw, 2 * PAGE);
    munmap(ro, PAGE);
    munmap(after, PAGE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_the_probe_reports_the_pages_a_job_made_private),
        cmocka_unit_test(test_apply_keeps_bytes_and_skips_what_it_cannot_write),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
