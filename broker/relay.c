/* broker/relay.c — see relay.h. */
#define _GNU_SOURCE
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "common/buf.h"
#include "common/log.h"
#include "proto/mpack.h"
#include "proto/result.h"
#include "proto/wire_zmq.h"
#include "ratelog.h"
#include "relay.h"

#define RECV_BUDGET 512 /* messages per socket per loop turn */

struct relay {
    void *clients;   /* ROUTER, client channel (the broker's) */
    void *executors; /* ROUTER, worker channel (the broker's) */
    int curve;       /* ZAP names each connection's key */
    sched_t *sched;  /* set by relay_serve */
    buf_t scratch;   /* route headers and broker-made Results, reused */
    relay_stats_t stats;
    ratelog_t bad_log, reject_log;
};

static const char *s_channel_names[2] = {"client", "worker"}; /* in logs */

static const char *s_bad_names[BAD__COUNT] = {
    "too_many_frames", "unknown_version", "unknown_command", "unexpected_command", "oversized",
    "bad_route",       "bad_ready",       "bad_credit",      "bad_framing",
};

const char *relay_bad_reason_name(bad_reason_t why)
{
    return (unsigned)why < BAD__COUNT ? s_bad_names[why] : "unknown";
}

relay_t *relay_new(void *clients, void *executors, int curve)
{
    relay_t *r = xcalloc(1, sizeof *r);
    r->clients = clients;
    r->executors = executors;
    r->curve = curve;
    buf_init(&r->scratch);
    r->bad_log.kind = "malformed";
    r->reject_log.kind = "rejected";
    return r;
}

void relay_destroy(relay_t **self_p)
{
    assert(self_p);
    relay_t *r = *self_p;
    if (!r) return;
    buf_free(&r->scratch);
    free(r);
    *self_p = NULL;
}

void relay_serve(relay_t *r, sched_t *sched)
{
    assert(!r->sched);
    r->sched = sched;
}

const relay_stats_t *relay_stats(const relay_t *r)
{
    return &r->stats;
}

/* ---- sending ----------------------------------------------------------------------------- */

static int s_send(relay_t *r, channel_t ch, const uint8_t *identity, size_t id_len,
                  const frame_t *head, int n, zmq_msg_t *body)
{
    void *sock = ch == CH_CLIENT ? r->clients : r->executors;
    if (zmq_send(sock, identity, id_len, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0) {
        r->stats.send_failed[ch][errno == EAGAIN ? SEND_WOULD_BLOCK : SEND_UNREACHABLE]++;
        return -1;
    }
    /* Past the first part ZeroMQ takes the rest of the message whole. */
    for (int i = 0; i < n; i++) {
        int more = i + 1 < n || body;
        zmq_send(sock, head[i].data, head[i].len, (more ? ZMQ_SNDMORE : 0) | ZMQ_DONTWAIT);
    }
    if (body) zmq_msg_send(body, sock, ZMQ_DONTWAIT);
    return 0;
}

static const frame_t s_client_tag = {(const uint8_t *)WIRE_CLIENT_TAG, 4};
static const frame_t s_worker_tag = {(const uint8_t *)WIRE_WORKER_TAG, 4};

/* To a client: [SPC1, cmd, service, id, body?]. A client that cannot be reached any more is
 * marked gone: nothing more is sent to it, and the scheduler drops its jobs at the next
 * housekeeping. Only marked, because this runs inside the scheduler's own callbacks, where
 * calling back into it would pull jobs out from under the caller. */
static void s_to_client(relay_t *r, client_t *c, const uint8_t *identity, size_t id_len,
                        uint8_t cmd, const char *service, const uint8_t *job_id, const void *body,
                        size_t len, zmq_msg_t *body_msg)
{
    frame_t f[5] = {s_client_tag,
                    {&cmd, 1},
                    {(const uint8_t *)service, strlen(service)},
                    {job_id, ID_BYTES},
                    {body, len}};
    int n = body && !body_msg ? 5 : 4; /* a body message goes as itself, uncopied */
    if (s_send(r, CH_CLIENT, identity, id_len, f, n, body_msg) < 0 && errno == EHOSTUNREACH && c)
        c->gone = 1;
}

static void s_reject(relay_t *r, client_t *c, const uint8_t *identity, size_t id_len,
                     const char *service, const uint8_t *job_id, status_t st, const char *type,
                     const char *message)
{
    buf_reset(&r->scratch);
    result_encode_simple(&r->scratch, st, type, message);
    s_to_client(r, c, identity, id_len, CMD_REJECT, service, job_id, r->scratch.data,
                r->scratch.len, NULL);
}

static void s_worker_cmd(relay_t *r, const uint8_t *identity, size_t id_len, uint8_t cmd)
{
    frame_t f[2] = {s_worker_tag, {&cmd, 1}};
    s_send(r, CH_WORKER, identity, id_len, f, 2, NULL);
}

/* ---- sched_io_t -------------------------------------------------------------------------- */

/* [SPW1, cmd, service, job id, route]: the head of a JOB, and the whole of a PROBE. The route
 * is encoded into the relay's scratch buffer; cmd must outlive the frames. */
static void s_job_head(relay_t *r, const uint8_t *cmd, const job_t *job, frame_t f[5])
{
    buf_reset(&r->scratch);
    route_encode(&job->route, &r->scratch);
    f[0] = s_worker_tag;
    f[1] = (frame_t){cmd, 1};
    f[2] = (frame_t){(const uint8_t *)job->service->name, strlen(job->service->name)};
    f[3] = (frame_t){job->id, ID_BYTES};
    f[4] = (frame_t){r->scratch.data, r->scratch.len};
}

static int s_io_send_job(void *arg, executor_t *ex, job_t *job)
{
    relay_t *r = arg;
    uint8_t cmd = W_JOB;
    frame_t f[5];
    s_job_head(r, &cmd, job, f);
    /* A reference, not a copy: the job keeps its body for a possible requeue. */
    zmq_msg_t body;
    zmq_msg_init(&body);
    zmq_msg_copy(&body, &job->body);
    int rc = s_send(r, CH_WORKER, ex->identity, ex->identity_len, f, 5, &body);
    zmq_msg_close(&body);
    return rc;
}

static const char *s_type_for(status_t st)
{
    switch (st) {
    case ST_TIMEOUT:
        return "Timeout";
    case ST_LOST:
        return "ExecutorLost";
    case ST_CANCELLED:
        return "Cancelled";
    default:
        return "Rejected";
    }
}

static void s_io_answer(void *arg, const job_t *job, status_t st, const char *type,
                        const char *message)
{
    relay_t *r = arg;
    client_t *c = job->client;
    s_reject(r, c, c->identity, c->identity_len, job->service->name, job->id, st,
             type ? type : s_type_for(st), message);
}

static void s_io_cancel(void *arg, executor_t *ex, const uint8_t id[ID_BYTES])
{
    relay_t *r = arg;
    uint8_t cmd = W_CANCEL;
    frame_t f[3] = {s_worker_tag, {&cmd, 1}, {id, ID_BYTES}};
    s_send(r, CH_WORKER, ex->identity, ex->identity_len, f, 3, NULL);
}

/* [SPW1, cmd, uint n]: WANT and RELEASE */
static void s_worker_count(relay_t *r, executor_t *ex, uint8_t cmd, uint32_t n)
{
    buf_reset(&r->scratch);
    mpw_t w;
    mpw_init(&w, &r->scratch);
    mpw_uint(&w, n);
    frame_t f[3] = {s_worker_tag, {&cmd, 1}, {r->scratch.data, r->scratch.len}};
    s_send(r, CH_WORKER, ex->identity, ex->identity_len, f, 3, NULL);
}

static void s_io_want(void *arg, executor_t *ex, uint32_t n)
{
    s_worker_count(arg, ex, W_WANT, n);
}

static void s_io_release(void *arg, executor_t *ex, uint32_t n)
{
    s_worker_count(arg, ex, W_RELEASE, n);
}

static void s_io_probe(void *arg, executor_t *ex, const job_t *job)
{
    relay_t *r = arg;
    uint8_t cmd = W_PROBE;
    frame_t f[5];
    s_job_head(r, &cmd, job, f);
    s_send(r, CH_WORKER, ex->identity, ex->identity_len, f, 5, NULL);
}

sched_io_t relay_io(relay_t *r)
{
    return (sched_io_t){s_io_send_job, s_io_answer,  s_io_cancel, s_io_want,
                        s_io_release,  s_io_probe, r};
}

/* ---- malformed input ---------------------------------------------------------------------- */

static bad_reason_t s_classify(const char *err)
{
    if (strstr(err, "protocol tag")) return BAD_UNKNOWN_VERSION;
    if (strstr(err, "unknown") && strstr(err, "command")) return BAD_UNKNOWN_COMMAND;
    if (strstr(err, "too large")) return BAD_OVERSIZED;
    if (strncmp(err, "route:", 6) == 0) return BAD_ROUTE;
    if (strncmp(err, "ready:", 6) == 0 || strncmp(err, "sessions:", 9) == 0 ||
        strncmp(err, "leaving:", 8) == 0)
        return BAD_READY;
    if (strstr(err, "credit")) return BAD_CREDIT;
    return BAD_FRAMING;
}

static void s_malformed(relay_t *r, channel_t ch, bad_reason_t why, const char *detail,
                        size_t bytes)
{
    r->stats.malformed[ch][why]++;
    if (ratelog_allow(&r->bad_log)) {
        char q[160];
        log_warn("event=malformed channel=%s reason=%s detail=%s bytes=%zu total=%llu",
                 s_channel_names[ch], relay_bad_reason_name(why), log_quote(q, sizeof q, detail),
                 bytes, (unsigned long long)r->stats.malformed[ch][why]);
    }
}

/* A SUBMIT that failed to parse but names a service and a job id the broker does not hold
 * gets a REJECT, so its submitter learns why instead of waiting out its deadline. */
static void s_reject_malformed_submit(relay_t *r, const wire_msg_t *msg, const char *why)
{
    const frames_t *fr = &msg->frames;
    if (fr->n < 4 || fr->f[0].len != 4 || memcmp(fr->f[0].data, WIRE_CLIENT_TAG, 4) ||
        fr->f[1].len != 1 || fr->f[1].data[0] != CMD_SUBMIT || fr->f[3].len != ID_BYTES ||
        !wire_name_ok((const char *)fr->f[2].data, fr->f[2].len) ||
        sched_knows(r->sched, fr->f[3].data))
        return;
    char service[65], message[200];
    snprintf(service, sizeof service, "%.*s", (int)fr->f[2].len, (const char *)fr->f[2].data);
    snprintf(message, sizeof message, "malformed SUBMIT: %s", why);
    r->stats.rejected_malformed++;
    s_reject(r, NULL, msg->identity.data, msg->identity.len, service, fr->f[3].data, ST_REJECTED,
             "MalformedRequest", message);
}

/* ---- client channel ---------------------------------------------------------------------- */

static const char *s_refusal_type(refusal_t r)
{
    static const char *types[REFUSE__COUNT] = {
        "QueueFull",        "QueueFull",      "TenantQueueFull", "InflightQuota",
        "NoExecutor",       "DuplicateJob",   "DeadlinePassed",  "Overloaded",
        "MalformedRequest", "SessionUnknown", "SessionLost",     "SessionEnded",
    };
    return (unsigned)r < REFUSE__COUNT ? types[r] : "Rejected";
}

static void s_on_submit(relay_t *r, wire_msg_t *msg, client_t *c, const client_msg_t *m)
{
    const uint8_t *ident = msg->identity.data;
    size_t ilen = msg->identity.len;
    sched_refusal_t why;
    if (!c) {
        why.reason = REFUSE_OVERLOAD;
        why.status = ST_REJECTED;
        snprintf(why.message, sizeof why.message, "the broker has too many client connections");
    } else {
        /* The JobSpec is the last part; the job takes it over without a copy. */
        job_t *job = job_new(m->job_id, &m->route, &msg->parts[msg->n - 1]);
        if (sched_submit(r->sched, c, m->service, job, &why) == 0) {
            s_to_client(r, c, ident, ilen, CMD_ACCEPTED, m->service, m->job_id, NULL, 0, NULL);
            return;
        }
        job_destroy(&job);
    }
    r->stats.refused[why.reason]++;
    if (ratelog_allow(&r->reject_log)) {
        char q[300];
        log_info("event=rejected service=%s tenant=%s reason=%s message=%s", m->service,
                 m->route.tenant, refusal_name(why.reason), log_quote(q, sizeof q, why.message));
    }
    s_reject(r, c, ident, ilen, m->service, m->job_id, why.status, s_refusal_type(why.reason),
             why.message);
}

static void s_client_message(relay_t *r, wire_msg_t *msg)
{
    client_msg_t m;
    char err[128];
    r->stats.received[CH_CLIENT]++;
    if (msg->overflow) {
        s_malformed(r, CH_CLIENT, BAD_TOO_MANY_FRAMES, "more than 8 frames", msg->bytes);
        return;
    }
    if (wire_parse_client(&msg->frames, &m, err, sizeof err) < 0) {
        s_malformed(r, CH_CLIENT, s_classify(err), err, msg->bytes);
        s_reject_malformed_submit(r, msg, err);
        return;
    }
    client_t *c = sched_client(r->sched, msg->identity.data, msg->identity.len, m.cmd == CMD_PING);
    switch (m.cmd) {
    case CMD_PING: {
        uint8_t cmd = CMD_PONG;
        frame_t f[2] = {s_client_tag, {&cmd, 1}};
        s_send(r, CH_CLIENT, msg->identity.data, msg->identity.len, f, 2, NULL);
        break;
    }
    case CMD_SUBMIT:
        s_on_submit(r, msg, c, &m);
        break;
    case CMD_CANCEL:
        r->stats.cancels++;
        if (!c || sched_cancel(r->sched, c, m.job_id) < 0)
            log_debug("event=cancel_ignored service=%s reason=\"not a job of this client\"",
                      m.service);
        break;
    default:
        s_malformed(r, CH_CLIENT, BAD_UNEXPECTED, "broker-to-client command", msg->bytes);
        break;
    }
}

/* ---- worker channel ---------------------------------------------------------------------- */

static void s_on_result(relay_t *r, wire_msg_t *msg, executor_t *ex, const worker_msg_t *m)
{
    job_t *job = sched_result(r->sched, ex, m->job_id, m->cmd == W_RESULT);
    if (!job) return;
    client_t *c = job->client;
    if (!c->gone)
        s_to_client(r, c, c->identity, c->identity_len, CMD_RESULT, job->service->name, job->id,
                    m->body.data, m->body.len, &msg->parts[msg->n - 1]);
    sched_finish(r->sched, &job);
}

static void s_on_progress(relay_t *r, wire_msg_t *msg, executor_t *ex, const worker_msg_t *m)
{
    job_t *job = sched_progress(r->sched, ex, m->job_id);
    if (!job || job->client->gone) return;
    client_t *c = job->client;
    s_to_client(r, c, c->identity, c->identity_len, CMD_PROGRESS, job->service->name, job->id,
                m->body.data, m->body.len, &msg->parts[msg->n - 1]);
}

/* A RESULT over the body cap is still the executor's answer for that job: dropping it would
 * leave the job leased and its slot's credit gone for good. The client gets an
 * internal_error instead of the Result, and the credit comes back. */
static void s_oversized_result(relay_t *r, const wire_msg_t *msg, const char *why)
{
    const frames_t *fr = &msg->frames;
    if (fr->n != 4 || fr->f[0].len != 4 || memcmp(fr->f[0].data, WIRE_WORKER_TAG, 4) ||
        fr->f[1].len != 1 || (fr->f[1].data[0] != W_RESULT && fr->f[1].data[0] != W_ANSWER) ||
        fr->f[2].len != ID_BYTES || fr->f[3].len <= WIRE_MAX_BODY)
        return;
    executor_t *ex = sched_executor(r->sched, msg->identity.data, msg->identity.len);
    job_t *job = sched_result(r->sched, ex, fr->f[2].data, fr->f[1].data[0] == W_RESULT);
    if (!job) return;
    client_t *c = job->client;
    if (!c->gone) {
        char message[200];
        snprintf(message, sizeof message, "the executor's result was too large to deliver (%s)",
                 why);
        s_reject(r, c, c->identity, c->identity_len, job->service->name, job->id, ST_INTERNAL_ERROR,
                 "ResultTooLarge", message);
    }
    sched_finish(r->sched, &job);
}

static void s_on_ready(relay_t *r, wire_msg_t *msg, const worker_msg_t *m)
{
    /* With CURVE on, ZAP named the key this connection authenticated with. */
    const char *key = r->curve ? zmq_msg_gets(&msg->parts[1], "User-Id") : NULL;
    if (!sched_executor_ready(r->sched, msg->identity.data, msg->identity.len, &m->ready, key))
        s_worker_cmd(r, msg->identity.data, msg->identity.len, W_DISCONNECT);
}

static void s_worker_message(relay_t *r, wire_msg_t *msg)
{
    worker_msg_t m;
    char err[128];
    r->stats.received[CH_WORKER]++;
    if (msg->overflow) {
        s_malformed(r, CH_WORKER, BAD_TOO_MANY_FRAMES, "more than 8 frames", msg->bytes);
        return;
    }
    if (wire_parse_worker(&msg->frames, &m, err, sizeof err) < 0) {
        s_malformed(r, CH_WORKER, s_classify(err), err, msg->bytes);
        s_oversized_result(r, msg, err);
        return;
    }
    if (m.cmd == W_READY) {
        s_on_ready(r, msg, &m);
        return;
    }
    executor_t *ex = sched_executor(r->sched, msg->identity.data, msg->identity.len);
    if (!ex && m.cmd != W_DISCONNECT) {
        /* Not registered (a broker restart, or it was expired): tell it to register again.
         * Its RESULT still counts below: first answer wins. */
        r->stats.unregistered[CH_WORKER]++;
        s_worker_cmd(r, msg->identity.data, msg->identity.len, W_DISCONNECT);
    }
    switch (m.cmd) {
    case W_CREDIT:
        if (ex) sched_executor_credit(r->sched, ex, (uint32_t)m.credit);
        break;
    case W_HEARTBEAT:
        break;
    case W_SESSIONS:
        if (ex) sched_executor_sessions(r->sched, ex, &m.sessions);
        break;
    case W_RESULT:
    case W_ANSWER:
        s_on_result(r, msg, ex, &m);
        break;
    case W_RECLAIM:
        if (ex) sched_executor_reclaim(r->sched, ex, (uint32_t)m.credit);
        break;
    case W_LEAVING:
        if (ex) sched_executor_leaving(r->sched, ex, &m.leaving);
        break;
    case W_HELD:
        if (ex) sched_held(r->sched, ex, m.job_id, (unsigned)m.credit);
        break;
    case W_PROGRESS:
        if (ex) s_on_progress(r, msg, ex, &m);
        break;
    case W_DISCONNECT:
        if (ex) sched_executor_gone(r->sched, ex, "it said DISCONNECT");
        break;
    default:
        s_malformed(r, CH_WORKER, BAD_UNEXPECTED, "broker-to-executor command", msg->bytes);
        break;
    }
}

/* ---- reading ------------------------------------------------------------------------------ */

/* Hands each waiting message on one channel to handle, at most RECV_BUDGET of them: the
 * other channel gets its turn. */
static void s_drain(relay_t *r, channel_t ch, void (*handle)(relay_t *, wire_msg_t *))
{
    void *sock = ch == CH_CLIENT ? r->clients : r->executors;
    wire_msg_t msg;
    for (int i = 0; i < RECV_BUDGET; i++) {
        int rc = wire_recv(sock, &msg, 1);
        if (rc <= 0) {
            if (rc < 0 && errno != EAGAIN && ratelog_allow(&r->bad_log))
                log_warn("event=recv_failed channel=%s error=\"%s\"", s_channel_names[ch],
                         zmq_strerror(errno));
            break;
        }
        handle(r, &msg);
        wire_msg_close(&msg);
    }
}

void relay_on_clients(loop_t *loop, short revents, void *arg)
{
    (void)loop, (void)revents;
    s_drain(arg, CH_CLIENT, s_client_message);
}

void relay_on_executors(loop_t *loop, short revents, void *arg)
{
    (void)loop, (void)revents;
    s_drain(arg, CH_WORKER, s_worker_message);
}

/* ---- the broker's timers ------------------------------------------------------------------ */

void relay_heartbeat(relay_t *r)
{
    const executors_t *reg = sched_executors(r->sched);
    /* Downwards, because an unreachable one is dropped on the spot. */
    for (size_t i = executors_count(reg); i-- > 0;) {
        executor_t *ex = executors_at(reg, i);
        uint8_t cmd = W_HEARTBEAT;
        frame_t f[2] = {s_worker_tag, {&cmd, 1}};
        if (s_send(r, CH_WORKER, ex->identity, ex->identity_len, f, 2, NULL) < 0 &&
            errno == EHOSTUNREACH)
            sched_executor_gone(r->sched, ex, "unreachable");
    }
}

void relay_disconnect_all(relay_t *r)
{
    const executors_t *reg = sched_executors(r->sched);
    for (size_t i = 0; i < executors_count(reg); i++) {
        executor_t *ex = executors_at(reg, i);
        s_worker_cmd(r, ex->identity, ex->identity_len, W_DISCONNECT);
    }
}

void relay_flush_logs(relay_t *r)
{
    ratelog_flush(&r->bad_log);
    ratelog_flush(&r->reject_log);
}
