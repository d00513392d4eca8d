/* mcp-frontend/transport/exchange_legacy.c — the legacy side of /mcp and of the drop-in endpoints
 * /mcp/compat/NAME (MCP 2025-11-25 "Transports", Streamable HTTP, and the versions it
 * negotiates down to): MCP-Protocol-Version, then the session (Mcp-Session-Id: 400 when
 * missing, 404 when unknown, ended, another tenant's or another endpoint's),
 * looked up in this process's copy or in Redis (mcp_session_store.h) — so any front-end serves any
 * session — then the message; GET opens the session's stream (or, with Last-Event-ID, resumes
 * the stream that id names: stream_log.h), DELETE ends the session everywhere. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "mcp-frontend/legacy/mcp_session_store.h"
#include "mcp-frontend/legacy/stream_log.h"
#include "mcp-frontend/mcp/mcp.h"
#include "mcp-frontend/rpc/envelope.h"
#include "mcp-frontend/state/holds.h"
#include "exchange_legacy.h"

/* A legacy request's MCP-Protocol-Version: absent means 2025-03-26 (streamable-http
 * §"Protocol Version Header"), anything but a legacy version we serve is 400. 1 when refused
 * (the answer is queued, with the request's id when the body was read). */
int exchange_legacy_version_refused(exchange_t *ex, const json_t *id)
{
    const char *pv = exchange_header(ex, "MCP-Protocol-Version");
    if (!pv || envelope_legacy_supported(pv)) return 0;
    char msg[200];
    snprintf(msg, sizeof msg,
             "unsupported MCP-Protocol-Version: %.40s (sessions: %s; " MCP_MODERN
             " per request, with its _meta)",
             pv, envelope_legacy_list());
    exchange_refuse_id(ex, MHD_HTTP_BAD_REQUEST, RPC_INVALID_REQUEST,
                       HTTP_REFUSED_BAD_PROTOCOL_VERSION, msg, id);
    return 1;
}

/* ---- the session */

static void s_on_session(void *arg, mcp_session_t *s, int unavailable)
{
    exchange_t *ex = arg;
    ex->session_pending = 0;
    if (ex->orphaned) { /* the client left during the lookup */
        if (!ex->auth_pending) exchange_free(ex);
        return;
    }
    ex->session_unavailable = unavailable;
    if (s) {
        ex->session = s;
        mcp_session_hold(s);
    }
    ex->session_looked_up = 1;
    if (ex->state == EX_SESSION) exchange_resume(ex);
}

static enum MHD_Result s_dispatch(exchange_t *ex);

static const char *s_endpoint_name(const exchange_t *ex)
{
    return ex->endpoint ? ex->endpoint->name : "";
}

/* A session belongs to the endpoint that opened it (its tools, its server's identity): on any
 * other it is as unknown as an ended one (404), so that no client calls one server's tools in
 * another's session. */
static enum MHD_Result s_refuse_other_endpoint(exchange_t *ex)
{
    const char *ep = ex->session->endpoint;
    char msg[200];
    snprintf(msg, sizeof msg,
             "session not found at this endpoint: it was opened on %s%s; initialize a new one "
             "here",
             *ep ? "/mcp/compat/" : "/mcp", ep);
    log_info("event=session_wrong_endpoint session=%.8s tenant=%s opened_on=%s asked_on=%s",
             ex->session->id, ex->tenant->name, *ep ? ep : "mcp",
             ex->endpoint ? ex->endpoint->name : "mcp");
    return exchange_refuse_id(ex, MHD_HTTP_NOT_FOUND, RPC_INVALID_REQUEST,
                              HTTP_REFUSED_UNKNOWN_SESSION, msg, ex->has_rpc ? ex->rpc.id : NULL);
}

/* After the lookup: the session, or the refusal saying why there is none. */
static enum MHD_Result s_after_lookup(exchange_t *ex)
{
    if (!ex->session && ex->session_unavailable) {
        ex->retry_after_s = 2;
        return exchange_refuse_id(
            ex, MHD_HTTP_SERVICE_UNAVAILABLE, RPC_UNAVAILABLE, HTTP_REFUSED_SESSION_FAILED,
            "service unavailable: cannot look the session up now (session store unreachable)",
            ex->has_rpc ? ex->rpc.id : NULL);
    }
    if (!ex->session)
        return exchange_refuse_id(
            ex, MHD_HTTP_NOT_FOUND, RPC_INVALID_REQUEST, HTTP_REFUSED_UNKNOWN_SESSION,
            "session not found: it ended, expired or never existed; initialize a new one",
            ex->has_rpc ? ex->rpc.id : NULL);
    if (strcmp(ex->session->endpoint, s_endpoint_name(ex)) != 0) return s_refuse_other_endpoint(ex);
    mcp_session_store_touch(ex->http->fe->mcp_session_store, ex->session);
    return s_dispatch(ex);
}

/* Finds the session the request names (or makes one, for initialize). */
static enum MHD_Result s_find(exchange_t *ex)
{
    fe_t *fe = ex->http->fe;
    const char *sid = exchange_header(ex, "Mcp-Session-Id");
    int is_init =
        ex->has_rpc && ex->rpc.kind == RPC_REQUEST && !strcmp(ex->rpc.method, "initialize");
    if (!sid && ex->method == 'P' && is_init) {
        /* never refused for being one too many: mcp_session_store_open evicts the tenant's idlest
         */
        ex->session = mcp_session_new(fe->mcp_sessions, TRANSPORT_HTTP, ex->tenant);
        if (!ex->session)
            return exchange_refuse(ex, MHD_HTTP_INTERNAL_SERVER_ERROR, RPC_INTERNAL_ERROR,
                                   HTTP_REFUSED_SESSION_FAILED, "could not create a session");
        mcp_session_hold(ex->session);
        snprintf(ex->session->endpoint, sizeof ex->session->endpoint, "%s", s_endpoint_name(ex));
        ex->new_session = 1;
        return s_dispatch(ex);
    }
    if (!sid)
        return exchange_refuse_id(
            ex, MHD_HTTP_BAD_REQUEST, RPC_INVALID_REQUEST, HTTP_REFUSED_MISSING_SESSION,
            "bad request: Mcp-Session-Id header is required (send initialize first)",
            ex->has_rpc ? ex->rpc.id : NULL);
    ex->session_pending = 1;
    mcp_session_store_find(fe->mcp_session_store, ex->tenant, sid, s_on_session, ex);
    if (!ex->session_pending) return s_after_lookup(ex); /* a fresh copy was at hand */
    ex->state = EX_SESSION;
    exchange_suspend(ex);
    return MHD_YES;
}

/* ---- the methods */

static enum MHD_Result s_post(exchange_t *ex)
{
    fe_t *fe = ex->http->fe;
    if (ex->rpc.kind != RPC_REQUEST) {
        /* notifications and responses: accepted, no body (202) */
        mcp_handle(fe->mcp, ex->session, &ex->rpc, NULL, ex->endpoint, NULL, NULL);
        return exchange_queue_json(ex, MHD_HTTP_ACCEPTED, NULL);
    }
    ex->state = EX_CALL;
    /* kept to detach the call should the client go away before the answer */
    ex->call = mcp_handle(fe->mcp, ex->session, &ex->rpc, NULL, ex->endpoint, exchange_emit, ex);
    return exchange_answer_now_or_wait(ex);
}

/* The tenant's count of GET streams across the farm had room for this one (or not). */
static void s_on_get_hold(void *arg, hold_t *hold, long held)
{
    exchange_t *ex = arg;
    ex->hold_pending = 0;
    if (ex->orphaned) { /* the client left meanwhile */
        holds_release(&hold);
        exchange_free(ex);
        return;
    }
    ex->sse_hold = hold;
    ex->hold_count = held;
    ex->hold_answered = 1;
    if (ex->state == EX_SESSION) exchange_resume(ex);
}

/* A GET stream is one of the tenant's max_sse_streams: they are held open for as long as the
 * client likes, on a front-end that serves every tenant. The member is the session and the
 * stream followed (its own, "g", or a POST's being resumed: Last-Event-ID's "<stream>.<n>"), so
 * a newer GET replacing an older one (on any front-end) counts once. 1 while the take is in
 * flight (the exchange is suspended), 0 once it answered. */
static int s_get_hold(exchange_t *ex)
{
    if (ex->hold_answered) return 0;
    const char *last = exchange_header(ex, "Last-Event-ID");
    size_t n = last ? strspn(last, "0123456789abcdefg") : 0;
    char member[64];
    if (n && n <= 8 && last[n] == '.')
        snprintf(member, sizeof member, "s:%s:%.*s", ex->session->id, (int)n, last);
    else /* the session's stream, or an id the follower will refuse */
        snprintf(member, sizeof member, "s:%s:g", ex->session->id);
    ex->hold_pending = 1;
    holds_take(ex->http->fe->holds, HOLD_SSE, ex->tenant->name, ex->tenant->max_sse_streams, member,
               s_on_get_hold, ex);
    if (!ex->hold_pending) return 0; /* decided at once (Redis away) */
    ex->state = EX_SESSION;          /* resumed through exchange_legacy_resume */
    exchange_suspend(ex);
    return 1;
}

static enum MHD_Result s_refuse_get(exchange_t *ex)
{
    long cap = ex->tenant->max_sse_streams;
    char msg[320];
    if (ex->hold_count < 0)
        return exchange_refuse(ex, MHD_HTTP_SERVICE_UNAVAILABLE, RPC_UNAVAILABLE,
                               HTTP_REFUSED_SESSION_FAILED, "the server is stopping; reconnect");
    log_warn("event=tenant_cap_refused cap=max_sse_streams tenant=%s held=%ld limit=%ld "
             "session=%.8s",
             ex->tenant->name, ex->hold_count, cap, ex->session->id);
    snprintf(msg, sizeof msg,
             "tenant %s already has %ld GET stream%s open on its sessions, its cap "
             "(max_sse_streams %ld, counted across every front-end): close one, or end a session "
             "it no longer uses (DELETE), or ask the operator to raise the cap",
             ex->tenant->name, ex->hold_count, ex->hold_count == 1 ? "" : "s", cap);
    return exchange_refuse(ex, MHD_HTTP_TOO_MANY_REQUESTS, RPC_QUOTA, HTTP_REFUSED_TENANT_CAP, msg);
}

/* GET: the session's stream from now on, or — with Last-Event-ID — what followed that event
 * on the stream it names, then that stream's live events. */
static enum MHD_Result s_get(exchange_t *ex)
{
    if (s_get_hold(ex)) return MHD_YES;
    if (!ex->sse_hold) return s_refuse_get(ex);
    const char *last = exchange_header(ex, "Last-Event-ID");
    ex->follow = stream_follower_start(ex->http->fe->stream_log, ex->session, last,
                                       exchange_follow_event, exchange_follow_end, ex);
    if (!ex->follow)
        return exchange_refuse(ex, MHD_HTTP_BAD_REQUEST, RPC_INVALID_REQUEST,
                               HTTP_REFUSED_UNKNOWN_STREAM,
                               "bad request: Last-Event-ID names no stream of this session "
                               "that can be resumed");
    ex->get_stream = 1;
    ex->sse = 1;
    return exchange_start_sse(ex);
}

static void s_on_deleted(void *arg, int rc)
{
    exchange_t *ex = arg;
    ex->status = rc == 0 ? MHD_HTTP_OK : MHD_HTTP_SERVICE_UNAVAILABLE;
    if (rc == 0) mcp_session_close(ex->session); /* here at once; the bus tells the others */
    ex->state = EX_READY;
    exchange_resume(ex);
}

static enum MHD_Result s_delete(exchange_t *ex)
{
    log_info("event=session_deleted session=%.8s tenant=%s", ex->session->id,
             ex->session->tenant->name);
    ex->state = EX_CALL;
    mcp_session_store_delete(ex->http->fe->mcp_session_store, ex->session, s_on_deleted, ex);
    if (ex->state == EX_READY) return exchange_queue_parked(ex);
    exchange_suspend(ex);
    return MHD_YES;
}

static enum MHD_Result s_dispatch(exchange_t *ex)
{
    if (ex->method == 'P') return s_post(ex);
    return ex->method == 'G' ? s_get(ex) : s_delete(ex);
}

enum MHD_Result exchange_legacy(exchange_t *ex)
{
    if (exchange_legacy_version_refused(ex, ex->has_rpc ? ex->rpc.id : NULL)) return MHD_YES;
    return s_find(ex);
}

enum MHD_Result exchange_legacy_resume(exchange_t *ex)
{
    if (ex->session_pending || ex->hold_pending) {
        exchange_suspend(ex);
        return MHD_YES;
    }
    ex->state = EX_BODY;
    return s_after_lookup(ex);
}
