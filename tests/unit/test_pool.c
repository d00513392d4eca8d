/* tests/unit/test_pool.c — a zygote's pool of children (executor-node/zygote/pool/pool.h) through
 * its header, with real processes: the pool forks trivial children of the test's own
 * (pool_conf_t.child_main; no Python, no sandbox layer) and the test polls the pool's fds as the
 * zygote's loop does. Which child a job takes (a ready one; the last ready one left to a tenant
 * with nothing running; a fork when the pool is dry), how a job ends (its done byte answers it
 * before the exit, its exit answers it otherwise, a byte before it finished mutes it), the
 * deadline's kill, and the refill's backoff after pooled children die in a row.
 * Linked against the zygote's library (libzygote.a). */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/clock.h"
#include "common/log.h"
#include "executor-node/zygote/pool/pool.h"

/* ---- the test's children ------------------------------------------------------------------ */

/* What a child does before its job: it is copied into each child at its fork. */
typedef enum { BORN_READY, BORN_WARMING, BORN_TO_DIE } birth_t;
static birth_t BIRTH;

/* What it does with its job: the job's first byte, which the test writes into its area. */
#define JOB_DONE_BYTE 'd' /* finishes, says so on its socket, then lingers (until killed) */
#define JOB_EXIT      'x' /* exits 3 without a word */
#define JOB_EARLY     'e' /* writes its socket before it finished, then exits 0 */
#define JOB_HANG      'h' /* never ends: only the deadline stops it */

static void s_child(const child_env_t *env, area_t *area, int wake_fd, const char *ws_dir,
                    int landlock_fd, int session, int egress)
{
    (void)env, (void)ws_dir, (void)landlock_fd, (void)session, (void)egress;
    setpgid(0, 0);                    /* as child.c's children: the pool kills the whole group */
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive the test */
    area_hdr_t *h = area_hdr(area);
    if (BIRTH == BORN_TO_DIE) _exit(1); /* a layer failing in every child */
    if (BIRTH == BORN_READY) h->phase = AREA_READY;
    char b;
    if (read(wake_fd, &b, 1) != 1) _exit(2);
    h->phase = AREA_RUNNING;
    switch (area_job(area)[0]) {
    case JOB_DONE_BYTE:
        h->phase = AREA_FINISHED;
        if (write(wake_fd, "d", 1) != 1) _exit(4);
        break;
    case JOB_EXIT:
        _exit(3);
    case JOB_EARLY:
        if (write(wake_fd, "e", 1) != 1) _exit(4);
        usleep(100 * 1000);
        _exit(0);
    }
    for (;;) pause();
}

/* ---- what the pool says --------------------------------------------------------------------- */

typedef struct {
    int n;      /* on_finished calls */
    child_t *c; /* the last one's */
    int wstatus;
    int by_done_byte; /* ru was NULL: answered on the done byte, before the exit */
    kill_reason_t killed;
} heard_t;

static heard_t HEARD;

static void s_on_finished(void *arg, child_t *c, int wstatus, const struct rusage *ru)
{
    (void)arg;
    HEARD.n++;
    HEARD.c = c;
    HEARD.wstatus = wstatus;
    HEARD.by_done_byte = ru == NULL;
    HEARD.killed = c->killed;
}

static void s_on_session_gone(void *arg, child_t *c, int wstatus)
{
    (void)arg, (void)c, (void)wstatus;
    fail_msg("no child of these tests is a session's");
}

/* ---- the rig: the zygote loop's part -------------------------------------------------------- */

static sandbox_t SB; /* no layer on */
static child_env_t ENV = {.sb = &SB};
static pool_t *P;

static pool_t *s_pool(void)
{
    char err[256];
    pool_conf_t conf = {.slots = 16,
                        .job_cap = 4096,
                        .stream_cap = 4096,
                        .env = &ENV,
                        .on_finished = s_on_finished,
                        .on_session_gone = s_on_session_gone,
                        .child_main = s_child};
    P = pool_new(&conf, err, sizeof err);
    assert_non_null(P);
    return P;
}

/* One turn of the zygote's loop: poll the pool's fds and the sockets of running children for
 * up to ms, and hand what is ready to the pool. */
static void s_turn(int ms)
{
    struct pollfd fds[2 + 16];
    child_t *owner[2 + 16];
    nfds_t n = 0;
    fds[n++] = (struct pollfd){pool_sig_fd(P), POLLIN, 0};
    fds[n++] = (struct pollfd){pool_timer_fd(P), POLLIN, 0};
    for (size_t i = 0; i < pool_slots(P); i++) {
        child_t *c = pool_child(P, i);
        if (c->state == CHILD_RUNNING && !c->answered && !c->muted && c->sock >= 0) {
            owner[n] = c;
            fds[n++] = (struct pollfd){c->sock, POLLIN, 0};
        }
    }
    if (poll(fds, n, ms) <= 0) return;
    for (nfds_t i = 2; i < n; i++)
        if (fds[i].revents && owner[i]->state == CHILD_RUNNING) pool_on_done(P, owner[i]);
    if (fds[0].revents) pool_on_sigchld(P);
    if (fds[1].revents) pool_on_timer(P);
}

/* Turns until cond() or 3 s; 1 when cond() held. */
static int s_turn_until(int (*cond)(void))
{
    uint64_t end = clock_mono_ms() + 3000;
    while (!cond() && clock_mono_ms() < end) s_turn(10);
    return cond();
}

static int s_all_reaped(void)
{
    return pool_count(P, CHILD_FREE) == pool_slots(P);
}

static int s_heard(void)
{
    return HEARD.n > 0;
}

/* A new pooled child born as told, once it is what it was born to be. */
static child_t *s_fork(birth_t birth)
{
    BIRTH = birth;
    child_t *c = pool_fork(P);
    assert_non_null(c);
    if (birth == BORN_READY) {
        uint64_t end = clock_mono_ms() + 3000;
        while (area_hdr(&c->area)->phase != AREA_READY && clock_mono_ms() < end) usleep(1000);
        assert_int_equal(area_hdr(&c->area)->phase, AREA_READY);
    }
    return c;
}

/* Dispatch's part: c takes a job for tenant that does what `what` says, within wall_ms. */
static void s_start(child_t *c, const char *tenant, char what, long wall_ms)
{
    c->id[0] = (uint8_t)what;
    snprintf(c->tenant, sizeof c->tenant, "%s", tenant);
    c->limits.wall_ms = wall_ms;
    area_job(&c->area)[0] = (uint8_t)what;
    pool_start(P, c);
}

static int setup(void **state)
{
    (void)state;
    memset(&HEARD, 0, sizeof HEARD);
    s_pool();
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    for (size_t i = 0; i < pool_slots(P); i++) {
        child_t *c = pool_child(P, i);
        if (c->state == CHILD_FREE) continue;
        pool_kill(c, KILL_CANCEL);
        kill(c->pid, SIGKILL); /* one killed before its setpgid has no group yet */
    }
    s_turn_until(s_all_reaped);
    pool_destroy(&P);
    return 0;
}

/* ---- which child a job takes ---------------------------------------------------------------- */

static void test_a_job_takes_a_ready_child_over_one_still_warming(void **state)
{
    (void)state;
    s_fork(BORN_WARMING);
    child_t *ready = s_fork(BORN_READY);
    assert_int_equal(pool_ready(P), 1);
    assert_ptr_equal(pool_take(P, 0, 0), ready);
}

static void test_the_last_ready_child_is_left_to_a_tenant_with_nothing_running(void **state)
{
    (void)state;
    child_t *warming = s_fork(BORN_WARMING);
    child_t *ready = s_fork(BORN_READY);
    assert_ptr_equal(pool_take(P, 1, 0), warming); /* the tenant has a job running here already */
    assert_ptr_equal(pool_take(P, 0, 0), ready);   /* a quiet tenant's call does not wait */
}

static void test_an_extra_job_takes_a_ready_child_when_more_than_one_is_ready(void **state)
{
    (void)state;
    s_fork(BORN_WARMING);
    child_t *a = s_fork(BORN_READY), *b = s_fork(BORN_READY);
    child_t *c = pool_take(P, 1, 0);
    assert_true(c == a || c == b);
}

static void test_an_extra_job_forks_its_own_child_rather_than_take_the_last_ready_one(void **state)
{
    (void)state;
    child_t *ready = s_fork(BORN_READY);
    BIRTH = BORN_READY;
    child_t *c = pool_take(P, 1, 0);
    assert_non_null(c);
    assert_ptr_not_equal(c, ready);
    assert_int_equal(pool_forks(P), 2);
}

static void test_a_dry_pool_forks_a_child_on_the_job_s_path(void **state)
{
    (void)state;
    BIRTH = BORN_READY;
    child_t *c = pool_take(P, 0, 0);
    assert_non_null(c);
    assert_int_equal(c->state, CHILD_IDLE);
    assert_int_equal(pool_forks(P), 1);
}

/* ---- how a job ends ----------------------------------------------------------------------- */

static void test_a_done_byte_answers_the_job_before_the_child_is_reaped(void **state)
{
    (void)state;
    child_t *c = s_fork(BORN_READY);
    s_start(c, "acme", JOB_DONE_BYTE, 10000);
    assert_true(s_turn_until(s_heard));
    assert_true(HEARD.by_done_byte); /* no rusage: the child is still exiting */
    assert_ptr_equal(HEARD.c, c);
    assert_int_equal(c->state, CHILD_RUNNING); /* its slot stays taken until it is reaped */
    assert_true(c->answered);
    assert_true(s_turn_until(s_all_reaped)); /* the pool killed it: nothing runs past the answer */
    assert_int_equal(HEARD.n, 1);            /* its reaping says nothing more */
}

static void test_a_child_that_exits_without_its_done_byte_is_answered_when_reaped(void **state)
{
    (void)state;
    child_t *c = s_fork(BORN_READY);
    s_start(c, "acme", JOB_EXIT, 10000);
    assert_true(s_turn_until(s_heard));
    assert_false(HEARD.by_done_byte);
    assert_true(WIFEXITED(HEARD.wstatus));
    assert_int_equal(WEXITSTATUS(HEARD.wstatus), 3);
    assert_true(s_turn_until(s_all_reaped));
    assert_int_equal(HEARD.n, 1);
}

static void test_a_byte_before_the_job_finished_mutes_the_child_until_its_exit(void **state)
{
    (void)state;
    child_t *c = s_fork(BORN_READY);
    s_start(c, "acme", JOB_EARLY, 10000);
    assert_true(s_turn_until(s_heard)); /* only at its exit */
    assert_int_equal(pool_muted(P), 1);
    assert_false(HEARD.by_done_byte);
    assert_true(WIFEXITED(HEARD.wstatus));
    assert_int_equal(WEXITSTATUS(HEARD.wstatus), 0);
    assert_int_equal(HEARD.n, 1);
}

static void test_a_child_past_its_deadline_is_killed_for_timeout(void **state)
{
    (void)state;
    child_t *c = s_fork(BORN_READY);
    s_start(c, "acme", JOB_HANG, 50);
    assert_int_equal(c->killed, KILL_NONE);
    assert_true(s_turn_until(s_heard));
    assert_int_equal(HEARD.killed, KILL_TIMEOUT);
    assert_true(WIFSIGNALED(HEARD.wstatus));
    assert_int_equal(WTERMSIG(HEARD.wstatus), SIGKILL);
}

static void test_the_deadline_timer_follows_the_earliest_running_child(void **state)
{
    (void)state;
    child_t *slow = s_fork(BORN_READY), *quick = s_fork(BORN_READY);
    s_start(slow, "acme", JOB_HANG, 60000); /* armed first, for a minute */
    s_start(quick, "acme", JOB_HANG, 50);   /* the timer must move up to this one */
    assert_true(s_turn_until(s_heard));
    assert_ptr_equal(HEARD.c, quick);
    assert_int_equal(slow->killed, KILL_NONE);
}

static void test_a_discarded_child_goes_unanswered(void **state)
{
    (void)state;
    child_t *c = s_fork(BORN_READY);
    pool_discard(P, c); /* its directory was spoilt before its job */
    assert_true(s_turn_until(s_all_reaped));
    assert_int_equal(HEARD.n, 0);
}

static void test_a_tenant_s_running_jobs_are_those_not_yet_answered_nor_killed(void **state)
{
    (void)state;
    child_t *a = s_fork(BORN_READY), *b = s_fork(BORN_READY), *c = s_fork(BORN_READY);
    s_start(a, "acme", JOB_DONE_BYTE, 10000);
    s_start(b, "acme", JOB_HANG, 10000);
    s_start(c, "other", JOB_HANG, 10000);
    assert_int_equal(pool_tenant_running(P, "acme"), 2);
    assert_true(s_turn_until(s_heard)); /* a answered (its reaping may still be to come) */
    assert_int_equal(pool_tenant_running(P, "acme"), 1);
    pool_kill(b, KILL_CANCEL);
    assert_int_equal(pool_tenant_running(P, "acme"), 0);
    assert_int_equal(pool_tenant_running(P, "other"), 1);
}

/* ---- the refill's backoff ----------------------------------------------------------------- */

/* Forks n children that die before they are ready, and reaps them. */
static void s_deaths(int n)
{
    for (int i = 0; i < n; i++) s_fork(BORN_TO_DIE);
    assert_true(s_turn_until(s_all_reaped));
}

static void test_pooled_children_dying_in_a_row_slow_the_refill_down(void **state)
{
    (void)state;
    s_deaths(2);
    assert_int_equal(pool_refill_delay_ms(P), 0); /* two may be bad luck */
    s_deaths(1);
    assert_int_equal(pool_refill_delay_ms(P), 10);
    s_deaths(1);
    assert_int_equal(pool_refill_delay_ms(P), 20); /* doubling ... */
    s_deaths(6);
    assert_int_equal(pool_refill_delay_ms(P), 1000); /* ... up to a second */
}

static void test_a_job_on_a_ready_child_ends_the_backoff(void **state)
{
    (void)state;
    s_deaths(4);
    assert_int_equal(pool_refill_delay_ms(P), 20);
    child_t *c = s_fork(BORN_READY);
    s_start(c, "acme", JOB_DONE_BYTE, 10000);
    assert_int_equal(pool_refill_delay_ms(P), 0);
}

static void test_a_child_that_dies_once_ready_does_not_slow_the_refill(void **state)
{
    (void)state;
    s_deaths(2);
    child_t *c = s_fork(BORN_READY);
    kill(c->pid, SIGKILL); /* not a layer failing in every child: it got as far as ready */
    assert_true(s_turn_until(s_all_reaped));
    assert_int_equal(pool_refill_delay_ms(P), 0);
}

int main(void)
{
    log_set_level(LOG_OFF); /* the pool's warnings are the test's own doing */
#define T_(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T_(test_a_job_takes_a_ready_child_over_one_still_warming),
        T_(test_the_last_ready_child_is_left_to_a_tenant_with_nothing_running),
        T_(test_an_extra_job_takes_a_ready_child_when_more_than_one_is_ready),
        T_(test_an_extra_job_forks_its_own_child_rather_than_take_the_last_ready_one),
        T_(test_a_dry_pool_forks_a_child_on_the_job_s_path),
        T_(test_a_done_byte_answers_the_job_before_the_child_is_reaped),
        T_(test_a_child_that_exits_without_its_done_byte_is_answered_when_reaped),
        T_(test_a_byte_before_the_job_finished_mutes_the_child_until_its_exit),
        T_(test_a_child_past_its_deadline_is_killed_for_timeout),
        T_(test_the_deadline_timer_follows_the_earliest_running_child),
        T_(test_a_discarded_child_goes_unanswered),
        T_(test_a_tenant_s_running_jobs_are_those_not_yet_answered_nor_killed),
        T_(test_pooled_children_dying_in_a_row_slow_the_refill_down),
        T_(test_a_job_on_a_ready_child_ends_the_backoff),
        T_(test_a_child_that_dies_once_ready_does_not_slow_the_refill),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
