/* tests/unit/sched_fakes.h — the scheduler's test rig (broker/sched/sched.h): a fake clock, fake
 * I/O recording every send, answer, cancel, WANT, RELEASE and PROBE the scheduler asks for (in F),
 * and helpers to register executors, submit jobs and answer them. Included by the scheduler's
 * unit tests (test_broker_sched.c, test_broker_resubmit.c, test_broker_sessions.c); everything
 * is static, one rig per test binary. */
#ifndef SP_TEST_SCHED_FAKES_H
#define SP_TEST_SCHED_FAKES_H
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "broker/sched/sched.h"

/* ---- fakes ------------------------------------------------------------------------------- */

static uint64_t s_now __attribute__((unused)) = 5000000;
static inline uint64_t s_mono(void)
{
    return s_now;
}
static inline uint64_t s_wall(void)
{
    return 1700000000000ULL + s_now;
}

#define MAX_EVENTS 20000

typedef struct {
    uint8_t id[ID_BYTES];
    status_t status;
    char type[32];
    char message[240];
} answer_t;

typedef struct {
    uint8_t id[ID_BYTES];
    executor_t *ex;
    uint32_t attempt;
} sent_t;

typedef struct {
    sent_t sent[MAX_EVENTS];
    size_t n_sent;
    answer_t answers[MAX_EVENTS];
    size_t n_answers;
    sent_t cancels[MAX_EVENTS];
    size_t n_cancels;
    sent_t probes[MAX_EVENTS]; /* PROBEs sent */
    size_t n_probes;
    uint32_t wanted, released; /* WANT and RELEASE counts sent, in all */
    size_t n_wants;
    executor_t *unreachable; /* send_job to it fails */
    int gone_on_answer;      /* answering finds the client unreachable, as EHOSTUNREACH does */
} fake_t;

static fake_t *F __attribute__((unused));

static inline int s_send_job(void *arg, executor_t *ex, job_t *job)
{
    fake_t *f = arg;
    if (ex == f->unreachable) return -1;
    assert_true(f->n_sent < MAX_EVENTS);
    sent_t *s = &f->sent[f->n_sent++];
    memcpy(s->id, job->id, ID_BYTES);
    s->ex = ex;
    s->attempt = job->route.attempt;
    return 0;
}

static inline void s_answer(void *arg, const job_t *job, status_t st, const char *type,
                            const char *msg)
{
    fake_t *f = arg;
    assert_true(f->n_answers < MAX_EVENTS);
    answer_t *a = &f->answers[f->n_answers++];
    memcpy(a->id, job->id, ID_BYTES);
    a->status = st;
    snprintf(a->type, sizeof a->type, "%s", type);
    snprintf(a->message, sizeof a->message, "%s", msg);
    if (f->gone_on_answer) job->client->gone = 1;
}

static inline void s_cancel(void *arg, executor_t *ex, const uint8_t id[ID_BYTES])
{
    fake_t *f = arg;
    sent_t *s = &f->cancels[f->n_cancels++];
    memcpy(s->id, id, ID_BYTES);
    s->ex = ex;
}

static inline void s_want(void *arg, executor_t *ex, uint32_t n)
{
    (void)ex;
    fake_t *f = arg;
    f->wanted += n;
    f->n_wants++;
}

static inline void s_release(void *arg, executor_t *ex, uint32_t n)
{
    (void)ex;
    ((fake_t *)arg)->released += n;
}

static inline void s_probe(void *arg, executor_t *ex, const job_t *job)
{
    fake_t *f = arg;
    sent_t *s = &f->probes[f->n_probes++];
    memcpy(s->id, job->id, ID_BYTES);
    s->ex = ex;
}

static inline sched_t *s_sched(sched_conf_t *conf)
{
    sched_conf_t def;
    if (!conf) {
        sched_conf_defaults(&def);
        conf = &def;
    }
    conf->mono_ms = s_mono;
    conf->wall_ms = s_wall;
    F = calloc(1, sizeof *F);
    sched_io_t io = {s_send_job, s_answer, s_cancel, s_want, s_release, s_probe, F};
    return sched_new(conf, &io);
}

static inline void s_done(sched_t **s)
{
    sched_destroy(s);
    free(F);
    F = NULL;
}

static inline void s_id(uint8_t id[ID_BYTES], unsigned n)
{
    memset(id, 0, ID_BYTES);
    memcpy(id, &n, sizeof n);
    id[15] = 0x5a;
}

static inline unsigned s_num(const uint8_t *id)
{
    unsigned n;
    memcpy(&n, id, sizeof n);
    return n;
}

static inline client_t *s_client(sched_t *s, const char *name)
{
    return sched_client(s, name, strlen(name), 1);
}

/* Submits job n for tenant; returns sched_submit's result. */
static inline int s_submit_ex(sched_t *s, client_t *c, const char *service, const char *tenant,
                              unsigned n, uint64_t deadline_ms, uint32_t quota,
                              sched_refusal_t *why)
{
    uint8_t id[ID_BYTES];
    s_id(id, n);
    route_t r = {0};
    snprintf(r.tenant, sizeof r.tenant, "%s", tenant);
    r.deadline_ms = deadline_ms;
    r.max_inflight = quota;
    job_t *job = job_new_copy(id, &r, "jobspec", 7);
    sched_refusal_t local;
    int rc = sched_submit(s, c, service, job, why ? why : &local);
    if (rc < 0) job_destroy(&job);
    return rc;
}

static inline int s_submit(sched_t *s, client_t *c, const char *tenant, unsigned n)
{
    return s_submit_ex(s, c, "python.basic", tenant, n, 0, 0, NULL);
}

/* An executor with slots (its reserve of them included) and credit. */
static inline executor_t *s_executor_reserve(sched_t *s, const char *node, uint32_t slots,
                                             uint32_t reserve, uint32_t credit)
{
    ready_t r = {0};
    snprintf(r.node, sizeof r.node, "%s", node);
    snprintf(r.services[0], sizeof r.services[0], "python.basic");
    r.n_services = 1;
    r.slots = slots;
    r.reserve = reserve;
    executor_t *ex = sched_executor_ready(s, node, strlen(node), &r, NULL);
    assert_non_null(ex);
    if (credit) sched_executor_credit(s, ex, credit);
    return ex;
}

static inline executor_t *s_executor(sched_t *s, const char *node, uint32_t slots, uint32_t credit)
{
    return s_executor_reserve(s, node, slots, 0, credit);
}

/* The executor answers job n: what the reactor does on RESULT. Returns 1 when the job was
 * still held (and is now finished), 0 when the RESULT was stale. */
static int *s_results __attribute__((unused)); /* when set: RESULTs forwarded, per job number */

static inline int s_result(sched_t *s, executor_t *ex, unsigned n)
{
    uint8_t id[ID_BYTES];
    s_id(id, n);
    job_t *job = sched_result(s, ex, id, 1);
    if (!job) return 0;
    if (s_results) s_results[n]++;
    sched_finish(s, &job);
    return 1;
}

/* Job n marked resubmit (its first broker was lost, PROTOCOL.md §3.1), for tenant "t"; on
 * session (16 bytes) when that is not NULL. */
static inline int s_resubmit_on(sched_t *s, client_t *c, unsigned n, const uint8_t *session)
{
    uint8_t id[ID_BYTES];
    s_id(id, n);
    route_t r = {0};
    snprintf(r.tenant, sizeof r.tenant, "t");
    r.resubmit = 1;
    if (session) {
        r.has_session = 1;
        memcpy(r.session, session, ID_BYTES);
    }
    job_t *job = job_new_copy(id, &r, "jobspec", 7);
    sched_refusal_t why;
    int rc = sched_submit(s, c, "python.basic", job, &why);
    if (rc < 0) job_destroy(&job);
    return rc;
}

/* ex's HELD for job n. */
static inline void s_held(sched_t *s, executor_t *ex, unsigned n, unsigned state)
{
    uint8_t id[ID_BYTES];
    s_id(id, n);
    sched_held(s, ex, id, state);
}

static inline const answer_t *s_answer_for(unsigned n)
{
    for (size_t i = 0; i < F->n_answers; i++)
        if (s_num(F->answers[i].id) == n) return &F->answers[i];
    return NULL;
}

#endif
