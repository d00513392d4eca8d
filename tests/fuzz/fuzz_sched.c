/* tests/fuzz/fuzz_sched.c — libFuzzer target for the broker's scheduler (broker/sched/sched.h):
 * the input is a program of events — SUBMITs with hostile tenants, deadlines and quotas,
 * RESULTs and ANSWERs (real, stale, from the wrong executor), READY/CREDIT/DISCONNECT,
 * CANCELs from the right and the wrong client, resubmitted jobs and the executors' HELD
 * answers, RECLAIMs, LEAVINGs (executors draining), time passing — run against a fake clock and
 * fake I/O. After every program, whatever its order, each admitted job must have left exactly once
 * (an answer the broker made, or a forwarded RESULT) and nothing may be left behind. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "broker/sched/sched.h"

#define MAX_JOBS 256

static uint64_t s_now;
static uint64_t s_mono(void)
{
    return s_now;
}
static uint64_t s_wall(void)
{
    return 1700000000000ULL + s_now;
}

static uint8_t s_exits[MAX_JOBS]; /* answers + results per job number */
static uint8_t s_admitted[MAX_JOBS];

static void s_check(int ok)
{
    if (!ok) abort();
}

static int s_send_job(void *arg, executor_t *ex, job_t *job)
{
    (void)arg, (void)job;
    return ex->node[0] == 'u' ? -1 : 0; /* executors named u* are unreachable */
}

static void s_answer(void *arg, const job_t *job, status_t st, const char *type, const char *msg)
{
    (void)arg, (void)st, (void)type, (void)msg;
    s_exits[job->id[0]]++;
}

static void s_cancel(void *arg, executor_t *ex, const uint8_t id[ID_BYTES])
{
    (void)arg, (void)ex, (void)id;
}

static void s_count(void *arg, executor_t *ex, uint32_t n)
{
    (void)arg, (void)ex, (void)n;
}

static void s_probe(void *arg, executor_t *ex, const job_t *job)
{
    (void)arg, (void)ex;
    s_check(job->state == JOB_PROBING);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int once;
    if (!once) log_init("fuzz", LOG_OFF), once = 1;
    memset(s_exits, 0, sizeof s_exits);
    memset(s_admitted, 0, sizeof s_admitted);
    s_now = 1000000;
    sched_conf_t conf;
    sched_conf_defaults(&conf);
    conf.max_queue = 64;
    conf.max_queue_per_tenant = 16;
    conf.max_queue_bytes = 4096;
    conf.max_executors = 4;
    conf.max_clients = 3;
    conf.mono_ms = s_mono;
    conf.wall_ms = s_wall;
    sched_io_t io = {s_send_job, s_answer, s_cancel, s_count, s_count, s_probe, NULL};
    sched_t *s = sched_new(&conf, &io);
    const char *services[] = {"python.basic", "python.data_science", "other"};
    const char *nodes[] = {"n0", "n1", "u2", "n3"};
    const char *clients[] = {"c0", "c1", "c2", "c3"};

    for (size_t i = 0; i + 3 <= size; i += 3) {
        uint8_t op = data[i] % 12, a = data[i + 1], b = data[i + 2];
        switch (op) {
        case 0:
        case 1: { /* SUBMIT job a */
            client_t *c = sched_client(s, clients[b & 3], 2, b & 4);
            if (!c) break;
            uint8_t id[ID_BYTES] = {a};
            route_t r = {0};
            snprintf(r.tenant, sizeof r.tenant, "t%u", b >> 5);
            r.deadline_ms = (b & 8) ? s_wall() + (uint64_t)a * 37 : 0;
            r.max_inflight = (b >> 3) & 3;
            r.resubmit = op == 1 && (a & 1);
            static const uint8_t spec[64];
            job_t *job = job_new_copy(id, &r, spec, (size_t)(a & 63));
            sched_refusal_t why;
            if (sched_submit(s, c, services[b % 3], job, &why) == 0) {
                s_check(!s_admitted[a] || s_exits[a] == s_admitted[a]); /* no live duplicate */
                s_admitted[a]++;
            } else {
                s_check(why.message[0] != '\0');
                job_destroy(&job);
            }
            break;
        }
        case 2: { /* READY from node a&3 serving some services */
            ready_t r = {0};
            snprintf(r.node, sizeof r.node, "%s", nodes[a & 3]);
            r.n_services = 1 + (b & 1);
            snprintf(r.services[0], sizeof r.services[0], "%s", services[(b >> 1) % 3]);
            snprintf(r.services[1], sizeof r.services[1], "%s", services[(b >> 3) % 3]);
            r.slots = (uint32_t)(b >> 4);
            r.reserve = (a & 4) && r.slots ? 1 : 0; /* the decoder keeps reserve ≤ slots */
            sched_executor_ready(s, nodes[a & 3], 2, &r, NULL);
            break;
        }
        case 3: { /* CREDIT */
            executor_t *ex = sched_executor(s, nodes[a & 3], 2);
            if (ex) sched_executor_credit(s, ex, b);
            break;
        }
        case 4: { /* RESULT for job b from executor a&3 (registered or not) */
            executor_t *ex = sched_executor(s, nodes[a & 3], 2);
            uint8_t id[ID_BYTES] = {b};
            job_t *job = sched_result(s, (a & 4) ? NULL : ex, id, !(a & 8));
            if (job) {
                s_exits[job->id[0]]++;
                sched_finish(s, &job);
            }
            break;
        }
        case 5: { /* DISCONNECT */
            executor_t *ex = sched_executor(s, nodes[a & 3], 2);
            if (ex) sched_executor_gone(s, ex, "fuzz");
            break;
        }
        case 6: { /* CANCEL job b from client a&3 */
            client_t *c = sched_client(s, clients[a & 3], 2, 0);
            uint8_t id[ID_BYTES] = {b};
            if (c) sched_cancel(s, c, id);
            break;
        }
        case 7: /* time passes */
            s_now += (uint64_t)a * 20;
            sched_expire(s);
            if (b & 1) sched_housekeep(s);
            break;
        case 9: { /* HELD for job b from executor a&3 */
            executor_t *ex = sched_executor(s, nodes[a & 3], 2);
            uint8_t id[ID_BYTES] = {b};
            if (ex) sched_held(s, ex, id, (a >> 2) % 3);
            break;
        }
        case 10: { /* RECLAIM */
            executor_t *ex = sched_executor(s, nodes[a & 3], 2);
            if (ex) sched_executor_reclaim(s, ex, b);
            break;
        }
        case 11: { /* LEAVING: no job goes to it from now on */
            executor_t *ex = sched_executor(s, nodes[a & 3], 2);
            if (ex) {
                leaving_t m = {.grace_ms = (uint32_t)b * 1000, .running = (uint32_t)ex->n_leases};
                sched_executor_leaving(s, ex, &m);
                s_check(ex->draining && ex->credit == 0);
            }
            break;
        }
        case 8: { /* PROGRESS: must only ever name a job leased to that executor */
            executor_t *ex = sched_executor(s, nodes[a & 3], 2);
            uint8_t id[ID_BYTES] = {b};
            job_t *job = ex ? sched_progress(s, ex, id) : NULL;
            if (job) s_check(job->executor == ex && job->state == JOB_LEASED);
            break;
        }
        }
        const executors_t *before = sched_executors(s);
        size_t leases_draining[4] = {0};
        for (size_t i2 = 0; i2 < executors_count(before); i2++) {
            const executor_t *ex = executors_at(before, i2);
            if (ex->draining && ex->node[1] >= '0' && ex->node[1] <= '3')
                leases_draining[ex->node[1] - '0'] = ex->n_leases;
        }
        sched_dispatch(s);
        for (size_t i2 = 0; i2 < executors_count(before); i2++) { /* a draining one gets no job */
            const executor_t *ex = executors_at(before, i2);
            if (ex->draining && ex->node[1] >= '0' && ex->node[1] <= '3')
                s_check(ex->n_leases <= leases_draining[ex->node[1] - '0'] && ex->credit == 0);
        }
        s_check(sched_queued(s) + sched_inflight(s) == sched_jobs(s));
        const executors_t *reg = sched_executors(s);
        for (size_t i = 0; i < executors_count(reg); i++) { /* reserve never overdrawn */
            const executor_t *ex = executors_at(reg, i);
            s_check(ex->reserve_used <= ex->reserve && ex->reserve_used <= ex->n_leases);
        }
        s_check(sched_queued(s) <= conf.max_queue + 8 * 4096); /* requeues may exceed the cap */
    }
    sched_shutdown(s, NULL); /* answers whatever is still held */
    for (int i = 0; i < MAX_JOBS; i++) s_check(s_exits[i] == s_admitted[i]);
    s_check(sched_jobs(s) == 0 && sched_tenants(s) == 0);
    sched_destroy(&s);
    return 0;
}
