/* tests/unit/test_slots.c — the node's jobs between its brokers and its zygotes
 * (executor-node/node/slots.h) through the header, with fake broker links and fake zygotes behind
 * slots_new_io: the test plays the brokers (JOB, WANT, PROBE, CANCEL, a link going down) and the
 * zygotes (results, progress, a zygote dying), and reads what slots sent where. Who hears a
 * job's answer: its broker as RESULT (the slot's credit back) or as ANSWER when a waiting broker
 * gets the slot; every other broker that sent the job again or probed for it, as ANSWER; a
 * broker that went away, nothing. And which JOBs run: within the broker's credit, once per id,
 * on a zygote that serves the service and is up. And a node that drains: LEAVING to every broker
 * up (and to one that comes up again), no credit, ANSWERs, drained only once no job runs or can
 * arrive and the drain hook has nothing left. What happened is logged as words, in order,
 * in L ("1:ANSWER": link 1 was sent an ANSWER; "z:job": a zygote was sent a job).
 * Linked against the node's library (libexecutor.a). */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/buf.h"
#include "common/log.h"
#include "proto/result.h"
#include "executor-node/node/slots.h"

/* ---- what happened, in order -------------------------------------------------------------- */

static char L[2048];

static void s_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void s_log(const char *fmt, ...)
{
    char word[128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(word, sizeof word, fmt, ap);
    va_end(ap);
    if (L[0]) strncat(L, " ", sizeof L - strlen(L) - 1);
    strncat(L, word, sizeof L - strlen(L) - 1);
}

/* ---- the fake broker links (broker_link.h's shape) ---------------------------------------- */

#define N_LINKS 2

typedef struct {
    int up;
    status_t status; /* of the last Result sent on it, decoded */
    char type[64];   /* ... its error type */
} fake_link_t;

static fake_link_t LINK[N_LINKS];
static broker_link_t *LINKS[N_LINKS] = {(broker_link_t *)(void *)&LINK[0],
                                        (broker_link_t *)(void *)&LINK[1]};

static int s_index(const broker_link_t *link)
{
    return (int)((const fake_link_t *)(const void *)link - LINK);
}

static int f_link_up(const broker_link_t *link)
{
    return LINK[s_index(link)].up;
}

static void f_send_result(broker_link_t *link, const uint8_t id[ID_BYTES], const void *body,
                          size_t len, int credit)
{
    (void)id;
    fake_link_t *l = &LINK[s_index(link)];
    result_t res;
    char err[128];
    assert_int_equal(result_decode(body, len, &res, err, sizeof err), 0);
    l->status = res.status;
    snprintf(l->type, sizeof l->type, "%s", res.error.present ? res.error.type : "");
    result_clear(&res);
    s_log("%d:%s", s_index(link), credit ? "RESULT" : "ANSWER");
}

static void f_send_simple(broker_link_t *link, const uint8_t id[ID_BYTES], status_t status,
                          const char *type, const char *message)
{
    (void)id, (void)message;
    s_log("%d:REFUSED:%s:%s", s_index(link), status_name(status), type);
}

static void f_send_progress(broker_link_t *link, const uint8_t id[ID_BYTES], const void *chunk,
                            size_t len)
{
    (void)id, (void)chunk, (void)len;
    s_log("%d:PROGRESS", s_index(link));
}

static void f_send_sessions(broker_link_t *link, const void *body, size_t len)
{
    (void)body, (void)len;
    s_log("%d:SESSIONS", s_index(link));
}

static void f_send_credit(broker_link_t *link, uint32_t n)
{
    s_log("%d:CREDIT%u", s_index(link), n);
}

static void f_send_reclaim(broker_link_t *link, uint32_t n)
{
    s_log("%d:RECLAIM%u", s_index(link), n);
}

static void f_send_held(broker_link_t *link, const uint8_t id[ID_BYTES], unsigned state)
{
    (void)id;
    s_log("%d:HELD%u", s_index(link), state);
}

/* ---- the fake zygotes (zygotes.h's shape): one, serving python.basic ---------------------- */

typedef struct {
    int ready; /* up; 0: restarting */
} fake_zygotes_t;

static fake_zygotes_t Z;

static int f_pick(const zygotes_t *z, const char *service, int *ready)
{
    (void)z;
    *ready = Z.ready;
    return strcmp(service, "python.basic") == 0 ? 0 : -1;
}

static int f_env_pick(const zygotes_t *z, const char *key, int *ready)
{
    (void)z, (void)key, (void)ready;
    fail_msg("no dependency environment in these tests");
    return -1;
}

static int f_env_start(zygotes_t *z, const profile_t *profile, const char *key, const char *site,
                       const char *modules)
{
    (void)z, (void)profile, (void)key, (void)site, (void)modules;
    fail_msg("no dependency environment in these tests");
    return -1;
}

static int f_send_job(zygotes_t *z, int zi, const uint8_t id[ID_BYTES], const uint8_t *body,
                      size_t len)
{
    (void)z, (void)id, (void)body, (void)len;
    s_log("z%d:job", zi);
    return 0;
}

static void f_cancel(zygotes_t *z, int zi, const uint8_t id[ID_BYTES])
{
    (void)z, (void)id;
    s_log("z%d:cancel", zi);
}

static void f_end_session(zygotes_t *z, int zi, const uint8_t id[ID_BYTES], const char *reason)
{
    (void)z, (void)id, (void)reason;
    s_log("z%d:end_session", zi);
}

static int f_services(const zygotes_t *z, int with_retiring, char (*names)[65], int max)
{
    (void)z, (void)with_retiring, (void)max;
    snprintf(names[0], 65, "python.basic");
    return 1;
}

static const char *f_packages(const zygotes_t *z, int zi)
{
    (void)z, (void)zi;
    return "{}";
}

static const char *f_python(const zygotes_t *z)
{
    (void)z;
    return "3.11.2";
}

static void f_send_leaving(broker_link_t *link, const leaving_t *m)
{
    s_log("%d:LEAVING%u/%u/%s", s_index(link), m->grace_ms, m->running, m->reason);
}

static const slots_io_t s_io = {
    f_link_up,      f_send_result, f_send_simple, f_send_progress, f_send_sessions, f_send_credit,
    f_send_reclaim, f_send_held,   f_pick,        f_env_pick,      f_env_start,     f_send_job,
    f_cancel,       f_end_session, f_services,    f_packages,      f_python,
    NULL, /* profile: no hibernation here */
    NULL,           NULL,          NULL, /* no network egress here */
    f_send_leaving};

/* ---- the rig ------------------------------------------------------------------------------ */

static node_conf_t CONF;
static exec_metrics_t METRICS;
static slots_t *S;
static broker_link_hooks_t LH; /* what the links call */
static zygotes_hooks_t ZH;     /* what the zygotes call */

/* A node with n slots, its two links down. */
static slots_t *s_slots(long n)
{
    node_conf_defaults(&CONF);
    CONF.slots = n;
    CONF.reserve_slots = 0;
    CONF.max_sessions = 0;
    S = slots_new_io(&CONF, &s_io, (zygotes_t *)(void *)&Z, &METRICS, "all");
    slots_set_links(S, LINKS, N_LINKS);
    LH = slots_link_hooks(S);
    ZH = slots_zygote_hooks(S);
    return S;
}

static void s_up(int link)
{
    LINK[link].up = 1;
    LH.on_up(LH.arg, link);
}

static void s_down(int link)
{
    LINK[link].up = 0;
    LH.on_down(LH.arg, link);
}

static uint8_t IDS[8][ID_BYTES];

static const uint8_t *s_id(unsigned n)
{
    memset(IDS[n], 0, ID_BYTES);
    IDS[n][0] = (uint8_t)n;
    IDS[n][15] = 0x5a;
    return IDS[n];
}

static worker_msg_t s_msg(uint8_t cmd, unsigned n, const char *service)
{
    worker_msg_t m = {.cmd = cmd, .job_id = s_id(n)};
    snprintf(m.service, sizeof m.service, "%s", service);
    m.body = (frame_t){(const uint8_t *)"jobspec", 7};
    return m;
}

/* Broker `link` sends JOB n. */
static void s_job(int link, unsigned n)
{
    worker_msg_t m = s_msg(W_JOB, n, "python.basic");
    LH.on_job(LH.arg, link, &m);
}

/* The zygote answers job n (ok); what on_result said. */
static int s_result(unsigned n)
{
    result_t res;
    result_init(&res);
    res.status = ST_OK;
    res.exit.reason = "exited";
    buf_t b;
    buf_init(&b);
    result_encode(&res, &b);
    int rc = ZH.on_result(ZH.arg, s_id(n), b.data, b.len);
    buf_free(&b);
    return rc;
}

static int setup(void **state)
{
    (void)state;
    L[0] = '\0';
    memset(LINK, 0, sizeof LINK);
    memset(&METRICS, 0, sizeof METRICS);
    Z.ready = 1;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    slots_destroy(&S);
    return 0;
}

/* ---- who hears a job's answer ------------------------------------------------------------- */

static void test_a_job_s_result_returns_its_slot_to_its_broker_as_credit(void **state)
{
    (void)state;
    s_slots(1);
    s_up(0);
    assert_string_equal(L, "0:CREDIT1");
    s_job(0, 1);
    assert_int_equal(METRICS.busy, 1);
    assert_int_equal(s_result(1), 1);
    assert_string_equal(L, "0:CREDIT1 z0:job 0:RESULT");
    assert_int_equal(LINK[0].status, ST_OK);
    assert_int_equal(METRICS.busy, 0);
}

static void
test_a_finished_job_s_slot_goes_to_a_waiting_broker_and_its_own_hears_an_answer(void **state)
{
    (void)state;
    s_slots(1);
    s_up(0);
    s_up(1);
    s_job(0, 1);
    LH.on_want(LH.arg, 1, 3); /* broker 1 has three jobs for us and no credit */
    L[0] = '\0';
    s_result(1);
    assert_string_equal(L, "1:CREDIT1 0:ANSWER");
}

static void test_a_broker_that_sent_the_job_again_hears_the_answer_too(void **state)
{
    (void)state;
    s_slots(2);
    s_up(0);
    s_up(1);
    s_job(0, 1);
    s_job(1, 1); /* resubmitted there after broker 0 seemed lost */
    s_result(1);
    assert_string_equal(L, "0:CREDIT2 z0:job 1:CREDIT1 0:RESULT 1:ANSWER"); /* it ran once */
    assert_int_equal(METRICS.duplicates, 1);
}

static void test_a_broker_that_probed_for_the_job_hears_the_answer(void **state)
{
    (void)state;
    s_slots(1);
    s_up(0);
    s_up(1);
    s_job(0, 1);
    worker_msg_t probe = s_msg(W_PROBE, 1, "python.basic");
    LH.on_probe(LH.arg, 1, &probe);
    s_result(1);
    assert_string_equal(L, "0:CREDIT1 z0:job 1:HELD1 0:RESULT 1:ANSWER"); /* HELD: running */
}

static void test_a_broker_that_went_away_hears_nothing_and_its_job_s_slot_goes_on(void **state)
{
    (void)state;
    s_slots(1);
    s_up(0);
    s_up(1);
    s_job(0, 1);
    s_down(0);
    L[0] = '\0';
    s_result(1);
    assert_string_equal(L, "1:CREDIT1");
}

static void test_a_zygote_that_dies_has_each_of_its_jobs_answered_once(void **state)
{
    (void)state;
    s_slots(2);
    s_up(0);
    s_job(0, 1);
    s_job(0, 2);
    L[0] = '\0';
    ZH.on_down(ZH.arg, 0);
    assert_string_equal(L, "0:RESULT 0:RESULT");
    assert_int_equal(LINK[0].status, ST_INTERNAL_ERROR);
    assert_string_equal(LINK[0].type, "SandboxCrashed");
    assert_int_equal(s_result(1), 0); /* a late word from the dead zygote: answered already */
    assert_string_equal(L, "0:RESULT 0:RESULT");
}

static void test_progress_goes_to_the_broker_that_sent_the_job(void **state)
{
    (void)state;
    s_slots(1);
    s_up(1); /* broker 1 is the first up: it holds the credit */
    s_up(0);
    s_job(1, 1);
    ZH.on_progress(ZH.arg, s_id(1), (const uint8_t *)"x", 1);
    assert_string_equal(L, "1:CREDIT1 z0:job 1:PROGRESS");
}

static void test_a_cancel_reaches_the_zygote_running_the_job(void **state)
{
    (void)state;
    s_slots(1);
    s_up(0);
    s_job(0, 1);
    LH.on_cancel(LH.arg, 0, s_id(1));
    assert_string_equal(L, "0:CREDIT1 z0:job z0:cancel");
}

/* ---- which JOBs run ----------------------------------------------------------------------- */

static void test_a_job_beyond_its_broker_s_credit_is_refused_without_running(void **state)
{
    (void)state;
    s_slots(1);
    s_up(0); /* holds the only slot */
    s_up(1);
    s_job(1, 1);
    assert_string_equal(L, "0:CREDIT1 1:REFUSED:rejected:ExecutorRefused");
    assert_int_equal(METRICS.refused, 1);
    assert_int_equal(METRICS.busy, 0);
}

static void test_a_refused_job_may_run_when_it_is_sent_again(void **state)
{
    (void)state;
    s_slots(1);
    s_up(0);
    s_up(1);
    s_job(1, 1); /* refused: it did not run, so it holds no claim */
    L[0] = '\0';
    s_job(0, 1);
    assert_string_equal(L, "z0:job");
}

static void test_a_job_that_already_ran_here_is_refused_as_a_duplicate(void **state)
{
    (void)state;
    s_slots(1);
    s_up(0);
    s_up(1);
    s_job(0, 1);
    s_result(1);
    L[0] = '\0';
    s_job(0, 1);
    assert_string_equal(L, "0:REFUSED:lost:DuplicateJob");
}

static void test_a_job_for_a_service_no_zygote_serves_is_refused(void **state)
{
    (void)state;
    s_slots(1);
    s_up(0);
    worker_msg_t m = s_msg(W_JOB, 1, "r.basic");
    LH.on_job(LH.arg, 0, &m);
    assert_string_equal(L, "0:CREDIT1 0:REFUSED:rejected:ExecutorRefused");
}

static void test_a_job_while_its_zygote_restarts_is_refused_as_an_internal_error(void **state)
{
    (void)state;
    s_slots(1);
    s_up(0);
    Z.ready = 0;
    s_job(0, 1);
    assert_string_equal(L, "0:CREDIT1 0:REFUSED:internal_error:ExecutorRefused");
}

static void
test_a_job_on_a_session_this_node_does_not_hold_is_answered_with_its_credit(void **state)
{
    (void)state;
    s_slots(1);
    s_up(0);
    worker_msg_t m = s_msg(W_JOB, 1, "python.basic");
    m.route.has_session = 1;
    memset(m.route.session, 7, ID_BYTES);
    LH.on_job(LH.arg, 0, &m);
    assert_string_equal(L, "0:CREDIT1 0:RESULT"); /* no zygote, no slot taken */
    assert_int_equal(LINK[0].status, ST_REJECTED);
    assert_string_equal(LINK[0].type, "SessionUnknown");
    assert_int_equal(METRICS.busy, 0);
}

/* ---- draining ----------------------------------------------------------------------------- */

static void test_a_draining_node_says_leaving_gives_no_credit_and_answers_its_jobs(void **state)
{
    (void)state;
    s_slots(2);
    s_up(0);
    s_up(1);
    s_job(0, 1);
    L[0] = '\0';
    slots_drain(S, "SIGTERM", 60000);
    /* LEAVING to each broker up, then RECLAIM of what broker 0 still held */
    assert_string_equal(L, "0:LEAVING60000/1/SIGTERM 1:LEAVING60000/1/SIGTERM 0:RECLAIM1");
    assert_true(slots_draining(S));
    assert_false(slots_drained(S));
    LH.on_release(LH.arg, 0, 1);    /* the broker gives it back */
    LH.on_want(LH.arg, 1, 2);       /* a broker with work for it gets nothing */
    assert_false(slots_drained(S)); /* job 1 still runs */
    L[0] = '\0';
    s_result(1);
    assert_string_equal(L, "0:ANSWER"); /* its slot returns to no broker */
    assert_int_equal(LINK[0].status, ST_OK);
    assert_true(slots_drained(S));
    assert_int_equal(slots_running(S), 0);
    s_down(1);
    L[0] = '\0';
    s_up(1); /* a broker that registers again hears it too, after its READY, and no CREDIT */
    assert_string_equal(L, "1:LEAVING60000/0/SIGTERM");
}

static void test_a_job_its_broker_sent_before_it_heard_leaving_runs(void **state)
{
    (void)state;
    s_slots(2);
    s_up(0);
    slots_drain(S, "SIGTERM", 60000);
    LH.on_release(LH.arg, 0, 1); /* it had used the other credit already: a JOB is on its way */
    assert_false(slots_drained(S));
    L[0] = '\0';
    s_job(0, 3);
    assert_string_equal(L, "z0:job");
    s_result(3);
    assert_true(slots_drained(S));
}

static int HOOK_BUSY, HOOK_BEGUN;
static void s_hook_begin(void *arg, node_sessions_t *sessions)
{
    (void)arg, (void)sessions;
    HOOK_BEGUN++;
}
static int s_hook_busy(void *arg)
{
    (void)arg;
    return HOOK_BUSY;
}

static void test_the_drain_hook_begins_once_and_holds_the_drain_while_busy(void **state)
{
    (void)state;
    s_slots(1);
    slots_drain_hook_t hook = {s_hook_begin, s_hook_busy, NULL};
    slots_set_drain_hook(S, &hook);
    HOOK_BUSY = 1, HOOK_BEGUN = 0;
    assert_false(slots_drained(S)); /* not draining */
    slots_drain(S, "POST /drain", 1000);
    slots_drain(S, "SIGTERM", 1000);
    assert_int_equal(HOOK_BEGUN, 1);
    assert_false(slots_drained(S)); /* no link up, nothing runs: only the hook holds it */
    HOOK_BUSY = 0;
    assert_true(slots_drained(S));
}

int main(void)
{
    log_set_level(LOG_OFF); /* the refusals' warnings are the test's own doing */
#define T_(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T_(test_a_job_s_result_returns_its_slot_to_its_broker_as_credit),
        T_(test_a_finished_job_s_slot_goes_to_a_waiting_broker_and_its_own_hears_an_answer),
        T_(test_a_broker_that_sent_the_job_again_hears_the_answer_too),
        T_(test_a_broker_that_probed_for_the_job_hears_the_answer),
        T_(test_a_broker_that_went_away_hears_nothing_and_its_job_s_slot_goes_on),
        T_(test_a_zygote_that_dies_has_each_of_its_jobs_answered_once),
        T_(test_progress_goes_to_the_broker_that_sent_the_job),
        T_(test_a_cancel_reaches_the_zygote_running_the_job),
        T_(test_a_job_beyond_its_broker_s_credit_is_refused_without_running),
        T_(test_a_refused_job_may_run_when_it_is_sent_again),
        T_(test_a_job_that_already_ran_here_is_refused_as_a_duplicate),
        T_(test_a_job_for_a_service_no_zygote_serves_is_refused),
        T_(test_a_job_while_its_zygote_restarts_is_refused_as_an_internal_error),
        T_(test_a_job_on_a_session_this_node_does_not_hold_is_answered_with_its_credit),
        T_(test_a_draining_node_says_leaving_gives_no_credit_and_answers_its_jobs),
        T_(test_a_job_its_broker_sent_before_it_heard_leaving_runs),
        T_(test_the_drain_hook_begins_once_and_holds_the_drain_while_busy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
