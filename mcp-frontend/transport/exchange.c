/* mcp-frontend/transport/exchange.c — exchange plumbing: an exchange's life, body collection,
 * parked answers, SSE streams, and the emitters through which MCP calls answer. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <strings.h>
#include <sys/socket.h>
#include <zmq.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/log.h"
#include "mcp-frontend/legacy/stream_log.h"
#include "mcp-frontend/state/holds.h"
#include "exchange.h"

/* ---- suspend and resume (MHD_ALLOW_SUSPEND_RESUME) */

/* A suspended connection is out of MHD's sight, so a client that closes it is not noticed until
 * there is something to write. For a 2026-07-28 request that matters: closing the stream is
 * the cancellation (streamable-http §Cancellation), and a job must not run on for minutes. So
 * while such an exchange is suspended its socket is watched here: readable with nothing to read
 * means the client has gone. */
static void s_unwatch(exchange_t *ex)
{
    if (ex->watch_fd < 0) return;
    loop_remove_fd(ex->http->fe->loop, ex->watch_fd);
    ex->watch_fd = -1;
}

static void s_on_peer(loop_t *loop, short revents, void *arg)
{
    (void)loop, (void)revents;
    exchange_t *ex = arg;
    char b;
    ssize_t n = recv(ex->watch_fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
    s_unwatch(ex); /* bytes waiting (a pipelined request): no telling any more; else: gone */
    if (n > 0) return;
    if (ex->call) {
        call_t *c = ex->call;
        ex->call = NULL;
        call_detach(c);
        call_cancel(c, "the client closed the request's stream");
    }
    exchange_resume(ex); /* MHD reads the end and finishes the connection */
}

static void s_watch(exchange_t *ex)
{
    if (!ex->modern || ex->watch_fd >= 0) return;
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(ex->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!ci || ci->connect_fd < 0) return;
    ex->watch_fd = ci->connect_fd;
    loop_add_fd(ex->http->fe->loop, ex->watch_fd, ZMQ_POLLIN, s_on_peer, ex);
}

void exchange_suspend(exchange_t *ex)
{
    if (ex->suspended) return;
    ex->suspended = 1;
    MHD_suspend_connection(ex->conn);
    s_watch(ex);
}

void exchange_resume(exchange_t *ex)
{
    if (!ex->suspended) return;
    ex->suspended = 0;
    s_unwatch(ex);
    MHD_resume_connection(ex->conn);
    ex->http->kick = 1;
}

/* ---- responses */

static void s_count(exchange_t *ex, unsigned status)
{
    if (status < HTTP_STATUS_MAX) ex->http->stats.responses[status]++;
}

static void s_common_headers(exchange_t *ex, struct MHD_Response *r)
{
    if (ex->route) { /* a route beside /mcp says what its answers carry */
        if (ex->route->headers) ex->route->headers(ex->route->arg, ex, r);
        return;
    }
    const char *origin = MHD_lookup_connection_value(ex->conn, MHD_HEADER_KIND, "Origin");
    if (origin) { /* only allowed origins get this far */
        MHD_add_response_header(r, "Access-Control-Allow-Origin", origin);
        MHD_add_response_header(r, "Vary", "Origin");
        MHD_add_response_header(r, "Access-Control-Expose-Headers",
                                "Mcp-Session-Id, WWW-Authenticate, Retry-After");
    }
    /* never minted nor echoed for a 2026-07-28 request (streamable-http §"Earlier Streamable
     * HTTP Revisions") */
    if (ex->session && ex->session->transport == TRANSPORT_HTTP && ex->session->id[0] &&
        !ex->modern && (ex->new_session || ex->method != 'D'))
        MHD_add_response_header(r, "Mcp-Session-Id", ex->session->id);
    if (ex->retry_after_s > 0) {
        char v[24];
        snprintf(v, sizeof v, "%ld", ex->retry_after_s);
        MHD_add_response_header(r, "Retry-After", v);
    }
    if (ex->www_authenticate)
        MHD_add_response_header(r, "WWW-Authenticate", "Bearer realm=\"snakepit\"");
}

enum MHD_Result exchange_queue_text(exchange_t *ex, unsigned status, const char *ctype, char *text,
                                    size_t len)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(
        len, text, text ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
    if (ctype) MHD_add_response_header(r, "Content-Type", ctype);
    s_common_headers(ex, r);
    enum MHD_Result rc = MHD_queue_response(ex->conn, status, r);
    MHD_destroy_response(r);
    ex->state = EX_DONE;
    s_count(ex, status);
    return rc;
}

enum MHD_Result exchange_queue_json(exchange_t *ex, unsigned status, json_t *msg)
{
    if (!msg) return exchange_queue_text(ex, status, NULL, NULL, 0);
    size_t len;
    char *text = rpc_dump(msg, &len);
    return exchange_queue_text(ex, status, "application/json", text, len);
}

/* Keeps an answer for the next handler call (the connection is suspended now). */
void exchange_park(exchange_t *ex, unsigned status, json_t *msg)
{
    ex->status = status;
    free(ex->answer);
    ex->answer = msg ? rpc_dump(msg, &ex->answer_len) : NULL;
    ex->answer_type = NULL;
    ex->state = EX_READY;
    exchange_resume(ex);
}

void exchange_park_text(exchange_t *ex, unsigned status, const char *ctype, char *text, size_t len)
{
    ex->status = status;
    free(ex->answer);
    ex->answer = text;
    ex->answer_len = len;
    ex->answer_type = ctype;
    ex->state = EX_READY;
    exchange_resume(ex);
}

enum MHD_Result exchange_queue_parked(exchange_t *ex)
{
    char *text = ex->answer;
    ex->answer = NULL;
    const char *ctype = ex->answer_type ? ex->answer_type : "application/json";
    return exchange_queue_text(ex, ex->status, text ? ctype : NULL, text, text ? ex->answer_len : 0);
}

enum MHD_Result exchange_refuse(exchange_t *ex, unsigned status, int code, http_refusal_t reason,
                                const char *message)
{
    return exchange_refuse_id(ex, status, code, reason, message, NULL);
}

enum MHD_Result exchange_refuse_id(exchange_t *ex, unsigned status, int code, http_refusal_t reason,
                                   const char *message, const json_t *id)
{
    ex->http->stats.refused[reason]++;
    const char *ua = MHD_lookup_connection_value(ex->conn, MHD_HEADER_KIND, "User-Agent");
    char q[200], uq[100];
    log_info("event=http_refused status=%u reason=%s message=%s agent=%s", status,
             http_refusal_name(reason), log_quote(q, sizeof q, message),
             log_quote(uq, sizeof uq, ua ? ua : ""));
    json_t *msg = rpc_error(id, code, message, NULL);
    enum MHD_Result rc = exchange_queue_json(ex, status, msg);
    json_decref(msg);
    return rc;
}

/* ---- SSE (text/event-stream, WHATWG HTML §9.2): each JSON-RPC message is one "message"
 * event; comments keep idle streams alive through proxies. */

static ssize_t s_sse_read(void *cls, uint64_t pos, char *out, size_t max)
{
    (void)pos;
    exchange_t *ex = cls;
    size_t left = ex->sse_out.len - ex->sse_off;
    if (left) {
        size_t n = left < max ? left : max;
        memcpy(out, ex->sse_out.data + ex->sse_off, n);
        ex->sse_off += n;
        if (ex->sse_off == ex->sse_out.len) {
            buf_reset(&ex->sse_out);
            ex->sse_off = 0;
        }
        return (ssize_t)n;
    }
    if (ex->sse_final) return MHD_CONTENT_READER_END_OF_STREAM;
    /* nothing to send: park the connection until there is (microhttpd.h's prescribed way) */
    exchange_suspend(ex);
    return 0;
}

static void s_sse_free(void *cls)
{
    (void)cls; /* the exchange is freed by exchange_completed */
}

enum MHD_Result exchange_start_sse(exchange_t *ex)
{
    struct MHD_Response *r =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, s_sse_read, ex, s_sse_free);
    MHD_add_response_header(r, "Content-Type", "text/event-stream");
    MHD_add_response_header(r, "Cache-Control", "no-cache");
    MHD_add_response_header(r, "X-Accel-Buffering", "no"); /* nginx: do not buffer the stream */
    s_common_headers(ex, r);
    enum MHD_Result rc = MHD_queue_response(ex->conn, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    ex->state = EX_STREAMING;
    ex->last_write_ms = clock_mono_ms();
    s_count(ex, MHD_HTTP_OK);
    return rc;
}

/* A client that stops reading its stream must not make us hold its events forever. */
#define SSE_MAX_BACKLOG (16u << 20)

static void s_sse_event(exchange_t *ex, const json_t *msg, const char *id)
{
    if (ex->sse_final) return;
    if (ex->sse_out.len - ex->sse_off > SSE_MAX_BACKLOG) {
        log_warn("event=sse_stream_dropped reason=client_not_reading backlog=%zu",
                 ex->sse_out.len - ex->sse_off);
        ex->http->stats.refused[HTTP_REFUSED_SSE_BACKLOG]++;
        ex->sse_final = 1; /* end the stream once what is queued has gone */
        return;
    }
    size_t len;
    char *text = rpc_dump(msg, &len);
    if (id) buf_printf(&ex->sse_out, "id: %s\n", id);
    buf_puts(&ex->sse_out, "event: message\ndata: ");
    buf_append(&ex->sse_out, text, len);
    buf_puts(&ex->sse_out, "\n\n");
    free(text);
    ex->last_write_ms = clock_mono_ms();
}

/* Comments on idle streams, so that proxies and clients see the stream alive. */
void exchange_keepalive(loop_t *loop, void *arg)
{
    (void)loop;
    http_t *h = arg;
    uint64_t now = clock_mono_ms(), every = (uint64_t)h->conf.sse_keepalive_s * 1000;
    for (exchange_t *ex = h->all; ex; ex = ex->next) {
        if (ex->state != EX_STREAMING || now - ex->last_write_ms < every || ex->sse_final) continue;
        buf_puts(&ex->sse_out, ": keepalive\n\n");
        ex->last_write_ms = now;
        exchange_resume(ex);
    }
}

/* Shutdown: libmicrohttpd refuses to stop with suspended connections, so every exchange
 * still waiting is answered (503) or its stream ended, and resumed. */
void exchange_close_streams(http_t *h)
{
    for (exchange_t *ex = h->all; ex; ex = ex->next) {
        if (ex->call) {
            call_detach(ex->call);
            ex->call = NULL;
        }
        if (ex->state == EX_STREAMING || ex->sse) {
            ex->sse_final = 1;
            if (ex->state != EX_STREAMING) ex->state = EX_READY;
        } else if (ex->state == EX_AUTH || ex->state == EX_SESSION || ex->state == EX_CALL) {
            json_t *msg = rpc_error(NULL, RPC_UNAVAILABLE, "the server is shutting down", NULL);
            exchange_park(ex, MHD_HTTP_SERVICE_UNAVAILABLE, msg);
            json_decref(msg);
        }
        exchange_resume(ex);
    }
    for (int i = 0; i < 3 && h->daemon; i++) MHD_run(h->daemon);
}

/* ---- the emitters calls answer through (call.h), and the session sink */

/* The id a legacy session's stream event carries: the stream is logged in Redis so that the
 * client can resume it anywhere (stream_log.h). 2026-07-28 streams have none. */
static const char *s_event_id(exchange_t *ex, const json_t *msg, int final)
{
    if (ex->modern || !ex->session || !ex->session->stored) return NULL;
    if (!ex->stream) ex->stream = logged_stream_new(ex->http->fe->stream_log, ex->session);
    return logged_stream_append(ex->stream, msg, final);
}

void exchange_emit(void *ctx, call_t *call, json_t *msg, int final)
{
    exchange_t *ex = ctx;
    (void)call;
    if (final) ex->call = NULL; /* the call is finished and may be freed after this */
    if (!final) {
        if (!ex->accept_sse) return; /* a JSON-only client cannot receive notifications */
        ex->sse = 1;
        s_sse_event(ex, msg, s_event_id(ex, msg, 0));
        if (ex->state == EX_STREAMING)
            exchange_resume(ex);
        else if (ex->state == EX_CALL) {
            ex->state = EX_READY; /* the handler will start the stream */
            exchange_resume(ex);
        }
        return;
    }
    if (ex->sse) {
        if (msg) s_sse_event(ex, msg, s_event_id(ex, msg, 1));
        logged_stream_free(&ex->stream);
        ex->sse_final = 1;
        if (ex->state == EX_CALL) ex->state = EX_READY;
        exchange_resume(ex);
        return;
    }
    unsigned status = MHD_HTTP_OK;
    json_t *err = msg ? json_object_get(msg, "error") : NULL;
    int code = err ? (int)json_integer_value(json_object_get(err, "code")) : 0;
    /* 2026-07-28 ties two errors to HTTP statuses wherever they arise: an unknown (or removed)
     * method is 404, a missing client capability 400 (streamable-http, basic/index); the rest
     * stay in-band with 200, as the SDK servers answer them */
    if (ex->modern && code == RPC_METHOD_NOT_FOUND) status = MHD_HTTP_NOT_FOUND;
    if (ex->modern && code == RPC_MISSING_CAPABILITY) status = MHD_HTTP_BAD_REQUEST;
    if (rpc_code_is_rate_limit(code)) {
        /* Over quota is HTTP 429 with Retry-After when the response is not a stream
         */
        json_int_t ms =
            json_integer_value(json_object_get(json_object_get(err, "data"), "retry_after_ms"));
        status = 429;
        ex->retry_after_s = (long)((ms + 999) / 1000);
        if (ex->retry_after_s < 1) ex->retry_after_s = 1;
    }
    json_t *ended = NULL;
    if (!msg && ex->session && ex->session->closed && !ex->modern) {
        /* its session ended while it ran (deleted or evicted, here or on another front-end):
         * answered as a request of an ended session is (streamable-http: 404) */
        ex->http->stats.refused[HTTP_REFUSED_UNKNOWN_SESSION]++;
        msg = ended = rpc_error(ex->has_rpc ? ex->rpc.id : NULL, RPC_INVALID_REQUEST,
                                "session ended while the request ran; initialize a new one", NULL);
        status = MHD_HTTP_NOT_FOUND;
    }
    if (!msg && ex->accept_sse) {
        /* cancelled: a request's POST is answered with an SSE stream or a JSON object, never
         * without a body (2025-11-25 transports §"Sending Messages to the Server"), and a
         * cancelled request gets no response (basic/utilities/cancellation): a stream that
         * ends with nothing on it says both */
        logged_stream_free(&ex->stream);
        ex->sse = 1;
        ex->sse_final = 1;
        ex->state = EX_READY;
        exchange_resume(ex);
        return;
    }
    if (!msg) /* a client that takes JSON only: the one JSON object it must get */
        msg = ended = rpc_error(ex->has_rpc ? ex->rpc.id : NULL, RPC_REQUEST_CANCELLED,
                                "request cancelled", NULL);
    ex->status = status;
    free(ex->answer);
    ex->answer = msg ? rpc_dump(msg, &ex->answer_len) : NULL;
    json_decref(ended);
    ex->state = EX_READY;
    exchange_resume(ex);
}

void exchange_follow_event(void *ctx, const char *id, const json_t *msg, int final)
{
    exchange_t *ex = ctx;
    s_sse_event(ex, msg, id);
    if (final) ex->sse_final = 1; /* a resumed call's response: its stream ends with it */
    exchange_resume(ex);
}

void exchange_follow_end(void *ctx)
{
    exchange_t *ex = ctx;
    ex->sse_final = 1;
    exchange_resume(ex);
}

const char *exchange_header(exchange_t *ex, const char *name)
{
    return MHD_lookup_connection_value(ex->conn, MHD_HEADER_KIND, name);
}

enum MHD_Result exchange_answer_now_or_wait(exchange_t *ex)
{
    if (ex->state == EX_READY) return ex->sse ? exchange_start_sse(ex) : exchange_queue_parked(ex);
    if (ex->sse && ex->state == EX_CALL && ex->sse_out.len) return exchange_start_sse(ex);
    exchange_suspend(ex);
    return MHD_YES;
}

/* ---- the exchange's life */

exchange_t *exchange_new(http_t *h, struct MHD_Connection *conn, const char *method)
{
    exchange_t *ex = xcalloc(1, sizeof *ex);
    ex->http = h;
    ex->conn = conn;
    ex->state = EX_BODY;
    ex->method = !strcmp(method, "POST")      ? 'P'
                 : !strcmp(method, "GET")     ? 'G'
                 : !strcmp(method, "DELETE")  ? 'D'
                 : !strcmp(method, "OPTIONS") ? 'O'
                                              : '?';
    ex->start_us = clock_mono_us();
    ex->watch_fd = -1;
    buf_init(&ex->body);
    buf_init(&ex->sse_out);
    ex->next = h->all;
    if (h->all) h->all->prev = &ex->next;
    ex->prev = &h->all;
    h->all = ex;
    return ex;
}

void exchange_take_body(exchange_t *ex, const char *data, size_t len)
{
    if (!ex->too_big && ex->body.len + len <= (size_t)ex->http->conf.max_body)
        buf_append(&ex->body, data, len);
    else
        ex->too_big = 1; /* keep reading and discarding; answer 413 at the end */
}

void exchange_free(exchange_t *ex)
{
    if (ex->has_rpc) rpc_msg_clear(&ex->rpc);
    logged_stream_free(&ex->stream);
    buf_free(&ex->body);
    buf_free(&ex->sse_out);
    free(ex->answer);
    free(ex);
}

void exchange_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                        enum MHD_RequestTerminationCode toe)
{
    (void)cls, (void)conn;
    exchange_t *ex = *con_cls;
    if (!ex) return;
    *con_cls = NULL;
    s_unwatch(ex);
    *ex->prev = ex->next;
    if (ex->next) ex->next->prev = ex->prev;
    if (ex->route && ex->route->done) ex->route->done(ex->route->arg, ex);
    if (ex->call) {
        /* the client went away before the answer. Legacy: the work goes on (2025-11-25
         * transports: a disconnect is not a cancellation) and a stream already begun goes on
         * into its log, for the client to resume; other output is dropped. 2026-07-28: it is
         * the cancellation (streamable-http §Cancellation; closing a listen stream ends it) */
        call_t *c = ex->call;
        ex->call = NULL;
        call_detach(c);
        if (ex->modern) {
            call_cancel(c, "the client closed the request's stream");
        } else if (ex->stream) {
            call_redirect(c, logged_stream_emit, ex->stream);
            ex->stream = NULL;
        }
    }
    stream_follower_stop(&ex->follow);
    holds_release(&ex->sse_hold);
    if (ex->session) {
        mcp_session_release(ex->session);
        ex->session = NULL;
    }
    if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK && ex->method == 'P')
        log_debug("event=http_request_ended code=%d", (int)toe);
    if (ex->auth_pending || ex->session_pending || ex->hold_pending) {
        ex->orphaned = 1; /* a lookup still points here: the last one frees the exchange */
        return;
    }
    exchange_free(ex);
}

const char *http_refusal_name(http_refusal_t reason)
{
    static const char *const names[HTTP_REFUSED__COUNT] = {
        [HTTP_REFUSED_NOT_FOUND] = "not_found",
        [HTTP_REFUSED_BAD_HOST] = "bad_host",
        [HTTP_REFUSED_BAD_ORIGIN] = "bad_origin",
        [HTTP_REFUSED_HTTP_METHOD] = "http_method",
        [HTTP_REFUSED_NOT_ACCEPTABLE] = "not_acceptable",
        [HTTP_REFUSED_CONTENT_TYPE] = "content_type",
        [HTTP_REFUSED_BODY_TOO_LARGE] = "body_too_large",
        [HTTP_REFUSED_BAD_PROTOCOL_VERSION] = "bad_protocol_version",
        [HTTP_REFUSED_UNAUTHORIZED] = "unauthorized",
        [HTTP_REFUSED_AUTH_UNAVAILABLE] = "auth_unavailable",
        [HTTP_REFUSED_TOO_MANY_SESSIONS] = "too_many_sessions",
        [HTTP_REFUSED_SESSION_FAILED] = "session_failed",
        [HTTP_REFUSED_MISSING_SESSION] = "missing_session",
        [HTTP_REFUSED_UNKNOWN_SESSION] = "unknown_session",
        [HTTP_REFUSED_UNKNOWN_STREAM] = "unknown_stream",
        [HTTP_REFUSED_SSE_BACKLOG] = "sse_backlog",
        [HTTP_REFUSED_TENANT_CAP] = "tenant_cap",
    };
    return names[reason];
}

const char *auth_failure_name(auth_failure_t reason)
{
    static const char *const names[AUTH_FAILED__COUNT] = {
        [AUTH_FAILED_MISSING] = "missing",
        [AUTH_FAILED_MALFORMED] = "malformed",
        [AUTH_FAILED_INVALID] = "invalid",
        [AUTH_FAILED_UNAVAILABLE] = "redis_unavailable",
    };
    return names[reason];
}
