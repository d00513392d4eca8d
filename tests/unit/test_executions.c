/* tests/unit/test_executions.c — a tools/call's execution on the farm
 * (mcp-frontend/farm/execution.h) through its header, with a fake farm and fake records behind
 * executions_new_io (the test plays the job's events and Redis's confirmations): every end is
 * announced once to each subscriber, in subscription order, after the answer; the answer waits for
 * the final record while
 * --record-wait-ms allows and Redis is there to confirm it, and leaves without it (counted by
 * why) when not; a cancelled call stops its job and still ends once; a task is answered only
 * once its record is in. What happened is logged as words, in order, in L.
 * Linked against the front-end's library (libmcp.a). */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/loop.h"
#include "proto/result.h"
#include "mcp-frontend/farm/execution.h"
#include "mcp-frontend/rpc/call.h"
#include "mcp-frontend/rpc/jsonrpc.h"

/* ---- what happened, in order -------------------------------------------------------------- */

static char L[1024];

static void s_log(const char *word)
{
    if (L[0]) strncat(L, " ", sizeof L - strlen(L) - 1);
    strncat(L, word, sizeof L - strlen(L) - 1);
}

/* ---- the fake farm (jobs.h's shape) ------------------------------------------------------- */

typedef struct {
    const job_events_t *events; /* the last job submitted */
    void *owner;
    int job;              /* its job_t stands for this int */
    int answer_on_cancel; /* a cancel answers the job at once, `cancelled` (jobs.h allows) */
} fake_farm_t;

static fake_farm_t FARM;

static job_t *f_submit(jobs_t *jobs, const jobspec_t *spec, long max_inflight,
                       const job_events_t *events, void *owner)
{
    (void)spec, (void)max_inflight;
    assert_ptr_equal(jobs, (jobs_t *)(void *)&FARM);
    FARM.events = events;
    FARM.owner = owner;
    s_log("submit");
    return (job_t *)(void *)&FARM.job;
}

static void s_finish_job(status_t st);

static void f_cancel(jobs_t *jobs, job_t *job)
{
    (void)jobs, (void)job;
    s_log("cancel");
    if (FARM.answer_on_cancel) s_finish_job(ST_CANCELLED);
}

/* The farm's answer for the last job submitted. */
static void s_finish_job(status_t st)
{
    result_t res;
    result_init(&res);
    res.status = st;
    res.exit.reason = (char *)status_name(st);
    buf_t b;
    buf_init(&b);
    result_encode(&res, &b);
    FARM.events->finished(FARM.owner, b.data, b.len);
    buf_free(&b);
}

/* ---- the fake records (records.h's shape) ------------------------------------------------- */

typedef struct {
    int finished_rc;        /* record_finished's answer: 1, a confirmation will come; 0, buffered */
    int land_at_once;       /* ... and it comes before record_finished returns (NULL: the connection
                               failed as the write went out) */
    store_reply_fn *landed; /* the final record's confirmation to come */
    void *landed_arg;
    int task_rc;
    store_reply_fn *task_landed; /* the task record's */
    void *task_arg;
    char task_status[16];
} fake_records_t;

static fake_records_t REC;

static long f_ttl_ms(const records_t *records)
{
    (void)records;
    return 3600 * 1000;
}

static int SUB; /* what a record_submit_t points at */

static record_submit_t *f_submit_new(records_t *records, const record_about_t *r,
                                     const jobspec_t *spec)
{
    (void)records, (void)r, (void)spec;
    return (record_submit_t *)(void *)&SUB;
}

static void f_submit_destroy(record_submit_t **sub_p)
{
    *sub_p = NULL;
}

static void f_submitted(records_t *records, const record_about_t *r, record_submit_t *sub)
{
    (void)records, (void)r;
    assert_ptr_equal(sub, &SUB);
    s_log("record_submitted");
}

/* "record_finished" writes the final fields; "record_whole" the submitted ones too (the job's
 * only write) */
static int f_finished(records_t *records, const record_about_t *r, const record_submit_t *sub,
                      const result_t *res, store_reply_fn *landed, void *arg)
{
    (void)records, (void)r, (void)res;
    s_log(sub ? "record_whole" : "record_finished");
    if (!REC.finished_rc) return 0;
    if (REC.land_at_once) {
        landed(arg, NULL);
        return 1;
    }
    REC.landed = landed;
    REC.landed_arg = arg;
    return 1;
}

static int f_task_started(records_t *records, const record_about_t *r, store_reply_fn *landed,
                          void *arg)
{
    (void)records, (void)r;
    s_log("record_task");
    if (!REC.task_rc) return 0;
    REC.task_landed = landed;
    REC.task_arg = arg;
    return 1;
}

static void f_task_status(records_t *records, const char *id, const char *task_status)
{
    (void)records, (void)id;
    snprintf(REC.task_status, sizeof REC.task_status, "%s", task_status);
}

/* Linked files and a task's place among its tenant's max_tasks: every file kept, every place
 * granted at once (tests/integration/test_fe_bounds.py has the real bounds). */
static void f_keep_files(filestore_t *files, const tenant_t *t, const char *id, const result_t *res,
                         filestore_kept_fn *fn, void *arg)
{
    (void)files, (void)t, (void)id, (void)res;
    fn(arg, NULL, 0);
}

static int HOLD; /* what a granted hold points at */

static void f_take_hold(holds_t *holds, hold_kind_t kind, const char *tenant, long cap,
                        const char *member, hold_fn *fn, void *arg)
{
    (void)holds, (void)kind, (void)tenant, (void)member;
    fn(arg, (hold_t *)(void *)&HOLD, cap > 0 ? 1 : 0);
}

static void f_release_hold(hold_t **hold_p)
{
    *hold_p = NULL;
}

static const executions_io_t s_io = {f_submit,       f_cancel,       f_ttl_ms,
                                     f_submit_new,   f_submit_destroy, f_submitted,
                                     f_finished,     f_task_started, f_task_status,
                                     f_keep_files,   f_take_hold,    f_release_hold};

/* Redis confirms the final record (type: the reply's, or -1 for NULL: the connection failed). */
static void s_land(int type)
{
    store_reply_fn *fn = REC.landed;
    assert_non_null(fn);
    REC.landed = NULL;
    redisReply reply = {.type = type, .str = type == REDIS_REPLY_ERROR ? "ERR no" : NULL};
    fn(REC.landed_arg, type < 0 ? NULL : &reply);
}

/* ---- the end hooks ------------------------------------------------------------------------ */

typedef struct {
    const char *name;
    int heard;
    char ids[4][ID_STR_LEN + 1];
    status_t status;
    int task;
    int exposed;
} hook_t;

static hook_t H1 = {"hook1"}, H2 = {"hook2"};

static void s_on_end(void *arg, const execution_end_t *end)
{
    hook_t *h = arg;
    assert_true(h->heard < 4);
    snprintf(h->ids[h->heard++], sizeof h->ids[0], "%s", end->id);
    h->status = end->status;
    h->task = end->task;
    h->exposed = end->exposed;
    s_log(h->name);
}

/* ---- calls -------------------------------------------------------------------------------- */

static tenant_t T = {.name = "acme", .max_concurrency = 4};
static call_stats_t CALL_STATS = {.label = "tools/call"};
static json_t *ANSWER; /* the last final answer's result */
/* Calls made and not yet ended: a call's maker holds it until its final answer (call.h), which
 * the teardown gives the ones an execution left unanswered. */
static call_t *OPEN[8];

static void s_emit(void *ctx, call_t *c, json_t *msg, int final)
{
    (void)ctx;
    if (!final) return; /* progress */
    for (size_t i = 0; i < 8; i++)
        if (OPEN[i] == c) OPEN[i] = NULL;
    s_log(msg ? "answer" : "no_answer");
    json_decref(ANSWER);
    ANSWER = msg ? json_incref(json_object_get(msg, "result")) : NULL;
}

static call_t *s_call(void)
{
    const char *text = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{}}";
    rpc_msg_t m;
    assert_int_equal(rpc_parse(text, strlen(text), &m), 0);
    mcp_session_t *scope = mcp_session_scope(&T, TRANSPORT_STDIO);
    call_t *c = call_new(NULL, scope, &m, &CALL_STATS, s_emit, NULL);
    mcp_session_release(scope); /* the call holds it */
    rpc_msg_clear(&m);
    size_t i = 0;
    while (OPEN[i]) i++;
    assert_true(i < 8);
    OPEN[i] = c;
    return c;
}

static json_t *s_render(const char *id, const result_t *res)
{
    return json_pack("{s:s,s:s}", "id", id, "status", status_name(res->status));
}

static execution_opts_t s_opts(int record)
{
    return (execution_opts_t){.tool = "execute_code", .render = s_render, .record = record};
}

/* ---- the rig ------------------------------------------------------------------------------ */

static loop_t *LOOP;
static executions_t *X;

/* queued_after_ms: --record-queued-after-ms (s_executions: 0, every record written at once) */
static executions_t *s_executions_q(long record_wait_ms, long queued_after_ms)
{
    executions_conf_t conf = {.record_wait_ms = record_wait_ms,
                              .record_queued_after_ms = queued_after_ms};
    X = executions_new_io(LOOP, &s_io, (jobs_t *)(void *)&FARM, (records_t *)(void *)&REC, NULL,
                          NULL, &conf);
    executions_on_end(X, s_on_end, &H1);
    executions_on_end(X, s_on_end, &H2);
    return X;
}

static executions_t *s_executions(long record_wait_ms)
{
    return s_executions_q(record_wait_ms, 0);
}

/* Starts one execution on a new call. */
static void s_start(executions_t *x, execution_opts_t opts)
{
    call_t *c = s_call();
    jobspec_t spec = {.service = "python.basic"};
    execution_start(x, c, &spec, &opts);
}

static int (*s_until)(void);
static uint64_t s_deadline_ms;

static long s_check(loop_t *loop, void *arg)
{
    (void)arg;
    if ((s_until && s_until()) || clock_mono_ms() >= s_deadline_ms) loop_stop(loop);
    return 5;
}

/* Runs the loop until cond() or 3 s; 1 when cond() held. */
static int s_run_until(int (*cond)(void))
{
    s_until = cond;
    s_deadline_ms = clock_mono_ms() + 3000;
    loop_run(LOOP);
    s_until = NULL;
    return cond();
}

static int setup(void **state)
{
    (void)state;
    L[0] = '\0';
    memset(&FARM, 0, sizeof FARM);
    memset(&REC, 0, sizeof REC);
    REC.finished_rc = REC.task_rc = 1;
    H1.heard = H2.heard = 0;
    ANSWER = NULL;
    LOOP = loop_new();
    loop_on_prepare(LOOP, s_check, NULL);
    X = NULL;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    executions_destroy(&X);
    for (size_t i = 0; i < 8; i++)
        if (OPEN[i]) call_cancel(OPEN[i], "the test is over");
    loop_destroy(&LOOP);
    json_decref(ANSWER);
    ANSWER = NULL;
    return 0;
}

/* ---- end hooks ---------------------------------------------------------------------------- */

static void test_every_subscriber_hears_each_end_once_in_subscription_order(void **state)
{
    (void)state;
    executions_t *x = s_executions(0);
    s_start(x, s_opts(0));
    s_finish_job(ST_OK);
    s_start(x, s_opts(0));
    s_finish_job(ST_ERROR);
    assert_string_equal(L, "submit answer hook1 hook2 submit answer hook1 hook2");
    assert_int_equal(H1.heard, 2);
    assert_int_equal(H2.heard, 2);
    assert_string_equal(H1.ids[0], H2.ids[0]);
    assert_string_equal(H1.ids[1], H2.ids[1]);
    assert_string_not_equal(H1.ids[0], H1.ids[1]);
    assert_int_equal(H1.status, ST_ERROR);
}

static void test_the_end_is_announced_after_the_answer(void **state)
{
    (void)state;
    executions_t *x = s_executions(0);
    s_start(x, s_opts(0));
    s_finish_job(ST_OK);
    assert_string_equal(L, "submit answer hook1 hook2");
    assert_string_equal(json_string_value(json_object_get(ANSWER, "status")), "ok");
    assert_string_equal(json_string_value(json_object_get(ANSWER, "id")), H1.ids[0]);
}

static void test_ends_are_counted_by_tool_and_status(void **state)
{
    (void)state;
    executions_t *x = s_executions(0);
    s_start(x, s_opts(0));
    s_finish_job(ST_OK);
    s_start(x, s_opts(0));
    s_finish_job(ST_TIMEOUT);
    s_start(x, s_opts(0));
    s_finish_job(ST_OK);
    const executions_stats_t *st = executions_stats(x);
    assert_int_equal(st->n_tools, 1);
    assert_string_equal(st->tools[0].tool, "execute_code");
    assert_int_equal(st->tools[0].by_status[ST_OK], 2);
    assert_int_equal(st->tools[0].by_status[ST_TIMEOUT], 1);
}

static void test_a_result_the_front_end_cannot_read_ends_as_an_internal_error(void **state)
{
    (void)state;
    executions_t *x = s_executions(0);
    s_start(x, s_opts(0));
    const uint8_t garbage[] = {0xc1, 0x00, 0x17};
    FARM.events->finished(FARM.owner, garbage, sizeof garbage);
    assert_string_equal(L, "submit answer hook1 hook2");
    assert_int_equal(H1.status, ST_INTERNAL_ERROR);
    assert_int_equal(executions_stats(x)->bad_results, 1);
}

/* ---- records before answers --------------------------------------------------------------- */

static void test_the_record_is_written_after_the_job_leaves(void **state)
{
    (void)state;
    executions_t *x = s_executions(1000);
    s_start(x, s_opts(1));
    assert_string_equal(L, "submit record_submitted");
}

static void test_a_job_that_ends_before_queued_after_ms_is_recorded_by_one_write(void **state)
{
    (void)state;
    executions_t *x = s_executions_q(5000, 1000);
    s_start(x, s_opts(1));
    assert_string_equal(L, "submit"); /* nothing yet */
    s_finish_job(ST_OK);
    assert_string_equal(L, "submit record_whole");
    s_land(REDIS_REPLY_INTEGER);
    assert_string_equal(L, "submit record_whole answer hook1 hook2");
    assert_int_equal(H1.exposed, 0); /* no one could have subscribed to it */
}

static int s_queued(void)
{
    return strstr(L, "record_submitted") != NULL;
}

static void test_a_job_still_running_after_queued_after_ms_is_recorded_as_queued(void **state)
{
    (void)state;
    executions_t *x = s_executions_q(5000, 20);
    s_start(x, s_opts(1));
    assert_true(s_run_until(s_queued));
    assert_string_equal(L, "submit record_submitted");
    s_finish_job(ST_OK);
    s_land(REDIS_REPLY_INTEGER);
    assert_string_equal(L, "submit record_submitted record_finished answer hook1 hook2");
    assert_int_equal(H1.exposed, 1); /* it could be found while it ran */
}

static void test_a_task_is_recorded_as_queued_at_once_and_announced_as_exposed(void **state)
{
    (void)state;
    executions_t *x = s_executions_q(5000, 60000);
    execution_opts_t opts = s_opts(1);
    opts.task = 1;
    opts.task_ttl_ms = -1;
    s_start(x, opts);
    assert_string_equal(L, "submit record_submitted record_task");
    REC.task_landed(REC.task_arg, NULL);
    s_finish_job(ST_OK);
    s_land(REDIS_REPLY_INTEGER);
    assert_int_equal(H1.exposed, 1);
}

static void test_a_validation_writes_no_record(void **state)
{
    (void)state;
    executions_t *x = s_executions(1000);
    s_start(x, s_opts(0));
    s_finish_job(ST_OK);
    assert_string_equal(L, "submit answer hook1 hook2");
}

static void test_the_answer_waits_until_redis_has_the_final_record(void **state)
{
    (void)state;
    executions_t *x = s_executions(5000);
    s_start(x, s_opts(1));
    s_finish_job(ST_OK);
    assert_string_equal(L, "submit record_submitted record_finished"); /* no answer yet */
    assert_int_equal(H1.heard, 0);
    s_land(REDIS_REPLY_STATUS);
    assert_string_equal(L, "submit record_submitted record_finished answer hook1 hook2");
    const executions_stats_t *st = executions_stats(x);
    for (int i = 0; i < UNCONFIRMED__COUNT; i++) assert_int_equal(st->unconfirmed[i], 0);
}

static int s_hook_heard(void)
{
    return H2.heard > 0;
}

static void test_an_answer_whose_record_is_slow_leaves_after_record_wait_ms(void **state)
{
    (void)state;
    executions_t *x = s_executions(30);
    s_start(x, s_opts(1));
    s_finish_job(ST_OK);
    assert_string_equal(L, "submit record_submitted record_finished"); /* it waits ... */
    assert_true(s_run_until(s_hook_heard));                            /* ... for the timer */
    assert_string_equal(L, "submit record_submitted record_finished answer hook1 hook2");
    assert_int_equal(executions_stats(x)->unconfirmed[UNCONFIRMED_SLOW], 1);
    s_land(REDIS_REPLY_STATUS); /* late: nothing more is said */
    assert_int_equal(H1.heard, 1);
    assert_string_equal(L, "submit record_submitted record_finished answer hook1 hook2");
}

static void test_an_answer_whose_record_is_buffered_leaves_at_once(void **state)
{
    (void)state;
    executions_t *x = s_executions(5000);
    REC.finished_rc = 0; /* Redis away: the write waits in the journal */
    s_start(x, s_opts(1));
    s_finish_job(ST_OK);
    assert_string_equal(L, "submit record_submitted record_finished answer hook1 hook2");
    assert_int_equal(executions_stats(x)->unconfirmed[UNCONFIRMED_BUFFERED], 1);
}

static void test_an_answer_whose_record_redis_refused_leaves_counted_as_failed(void **state)
{
    (void)state;
    executions_t *x = s_executions(5000);
    s_start(x, s_opts(1));
    s_finish_job(ST_OK);
    s_land(REDIS_REPLY_ERROR);
    assert_string_equal(L, "submit record_submitted record_finished answer hook1 hook2");
    assert_int_equal(executions_stats(x)->unconfirmed[UNCONFIRMED_FAILED], 1);
}

static void test_a_record_confirmed_while_it_is_written_ends_the_execution_once(void **state)
{
    (void)state;
    executions_t *x = s_executions(5000);
    REC.land_at_once = 1; /* the connection fails as the write goes out */
    s_start(x, s_opts(1));
    s_finish_job(ST_OK);
    assert_string_equal(L, "submit record_submitted record_finished answer hook1 hook2");
    assert_int_equal(H1.heard, 1);
    assert_int_equal(executions_stats(x)->unconfirmed[UNCONFIRMED_FAILED], 1);
}

static void test_with_no_record_wait_the_answer_does_not_wait_for_the_record(void **state)
{
    (void)state;
    executions_t *x = s_executions(0);
    s_start(x, s_opts(1));
    s_finish_job(ST_OK);
    assert_string_equal(L, "submit record_submitted record_finished answer hook1 hook2");
    s_land(REDIS_REPLY_STATUS);
    assert_int_equal(H1.heard, 1);
}

/* ---- cancels, hooks before the answer, tasks, shutdown ------------------------------------ */

static void test_a_cancelled_call_stops_its_job_and_its_end_is_still_announced_once(void **state)
{
    (void)state;
    executions_t *x = s_executions(0);
    FARM.answer_on_cancel = 1;
    call_t *c = s_call();
    jobspec_t spec = {.service = "python.basic"};
    execution_opts_t opts = s_opts(0);
    execution_start(x, c, &spec, &opts);
    call_cancel(c, "notifications/cancelled");
    assert_string_equal(L, "submit cancel hook1 hook2 no_answer");
    assert_int_equal(H1.heard, 1);
    assert_int_equal(H1.status, ST_CANCELLED);
}

static execution_t *HELD;
static void s_on_result(void *arg, execution_t *ex, result_t *res)
{
    (void)arg, (void)res;
    s_log("on_result");
    HELD = ex;
}

static void test_an_on_result_hook_holds_the_answer_until_it_goes_on(void **state)
{
    (void)state;
    executions_t *x = s_executions(0);
    execution_opts_t opts = s_opts(0);
    opts.on_result = s_on_result;
    s_start(x, opts);
    s_finish_job(ST_OK);
    assert_string_equal(L, "submit on_result"); /* a session's cell: its record first */
    execution_go_on(HELD);
    assert_string_equal(L, "submit on_result answer hook1 hook2");
}

static void test_a_task_is_answered_with_its_task_only_once_its_record_is_in(void **state)
{
    (void)state;
    executions_t *x = s_executions(5000);
    execution_opts_t opts = s_opts(1);
    opts.task = 1;
    opts.task_ttl_ms = -1;
    s_start(x, opts);
    assert_string_equal(L, "submit record_submitted record_task");
    REC.task_landed(REC.task_arg, NULL);
    assert_string_equal(L, "submit record_submitted record_task answer");
    assert_non_null(json_object_get(ANSWER, "task"));
    s_finish_job(ST_OK); /* the outcome is the task's, fetched with tasks/result */
    assert_string_equal(L, "submit record_submitted record_task answer record_finished");
    s_land(REDIS_REPLY_STATUS);
    assert_string_equal(L,
                        "submit record_submitted record_task answer record_finished hook1 hook2");
    assert_int_equal(H1.task, 1);
}

static void test_shutdown_drops_running_executions_unanswered(void **state)
{
    (void)state;
    executions_t *x = s_executions(0);
    s_start(x, s_opts(1));
    executions_destroy(&x);
    X = NULL;
    assert_string_equal(L, "submit record_submitted"); /* and nothing leaks */
}

int main(void)
{
    log_set_level(LOG_OFF);
#define T_(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T_(test_every_subscriber_hears_each_end_once_in_subscription_order),
        T_(test_the_end_is_announced_after_the_answer),
        T_(test_ends_are_counted_by_tool_and_status),
        T_(test_a_result_the_front_end_cannot_read_ends_as_an_internal_error),
        T_(test_the_record_is_written_after_the_job_leaves),
        T_(test_a_job_that_ends_before_queued_after_ms_is_recorded_by_one_write),
        T_(test_a_job_still_running_after_queued_after_ms_is_recorded_as_queued),
        T_(test_a_task_is_recorded_as_queued_at_once_and_announced_as_exposed),
        T_(test_a_validation_writes_no_record),
        T_(test_the_answer_waits_until_redis_has_the_final_record),
        T_(test_an_answer_whose_record_is_slow_leaves_after_record_wait_ms),
        T_(test_an_answer_whose_record_is_buffered_leaves_at_once),
        T_(test_an_answer_whose_record_redis_refused_leaves_counted_as_failed),
        T_(test_a_record_confirmed_while_it_is_written_ends_the_execution_once),
        T_(test_with_no_record_wait_the_answer_does_not_wait_for_the_record),
        T_(test_a_cancelled_call_stops_its_job_and_its_end_is_still_announced_once),
        T_(test_an_on_result_hook_holds_the_answer_until_it_goes_on),
        T_(test_a_task_is_answered_with_its_task_only_once_its_record_is_in),
        T_(test_shutdown_drops_running_executions_unanswered),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
