/* mcp-frontend/exchange_mcp.c — the /mcp endpoint of Streamable HTTP, for both eras on the
 * same path: header checks first (path, method, Origin and Host, Content-Type, Accept, body
 * size), then who is calling (Bearer key → tenant), then the message. A message that claims
 * MCP 2026-07-28 in its _meta (admit.h) is checked against its headers and served in a request
 * scope, without a session (streamable-http of 2026-07-28); any other is legacy (MCP 2025-11-25
 * "Transports"): MCP-Protocol-Version, then the session (Mcp-Session-Id: 400 when missing, 404
 * when unknown or ended). Every refusal is a JSON-RPC error body with the fitting HTTP status
 * and, once the body was read, the request's id; logged and counted. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../common/buf.h"
#include "../common/log.h"
#include "admit.h"
#include "envelope.h"
#include "exchange_mcp.h"
#include "mcp.h"
#include "origin.h"
#include "tenants.h"

static const char *s_header(exchange_t *ex, const char *name)
{
    return MHD_lookup_connection_value(ex->conn, MHD_HEADER_KIND, name);
}

/* Does an Accept header admit this type? (type/subtype, type/ *, * / *; q=0 excluded) */
static int s_accepts(const char *accept, const char *type)
{
    if (!accept) return 1; /* RFC 9110 §12.5.1: no Accept means anything is fine */
    const char *slash = strchr(type, '/');
    size_t tl = (size_t)(slash - type);
    const char *p = accept;
    while (*p) {
        while (*p == ' ' || *p == ',') p++;
        const char *e = p;
        while (*e && *e != ',' && *e != ';') e++;
        size_t len = (size_t)(e - p);
        const char *params = e;
        while (*params && *params != ',') params++;
        int q0 = 0;
        for (const char *q = e; q < params; q++)
            if (!strncmp(q, "q=0", 3) &&
                (q + 3 == params || q[3] == ' ' ||
                 (q[3] == '.' && strspn(q + 4, "0") >= (size_t)(params - q - 4))))
                q0 = 1;
        while (len && p[len - 1] == ' ') len--;
        if (!q0 && ((len == strlen(type) && !strncasecmp(p, type, len)) ||
                    (len == 3 && !strncmp(p, "*/*", 3)) ||
                    (len == tl + 2 && !strncasecmp(p, type, tl) && !strncmp(p + tl, "/*", 2))))
            return 1;
        p = params;
    }
    return 0;
}

static void s_audit_auth_failure(exchange_t *ex, auth_failure_t reason)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(ex->conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    char addr[64] = "?";
    if (ci && ci->client_addr) {
        const struct sockaddr *sa = ci->client_addr;
        if (sa->sa_family == AF_INET)
            inet_ntop(AF_INET, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, addr,
                      sizeof addr);
        else if (sa->sa_family == AF_INET6)
            inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, addr,
                      sizeof addr);
    }
    ex->http->stats.auth_failures[reason]++;
    log_warn("event=auth_failed audit=1 reason=%s client=%s", auth_failure_name(reason), addr);
}

/* A legacy request's MCP-Protocol-Version: absent means 2025-03-26 (streamable-http
 * §"Protocol Version Header"), anything but a legacy version we serve is 400. 1 when refused
 * (the answer is queued, with id when the body was read). */
static int s_legacy_version_refused(exchange_t *ex, const json_t *id)
{
    const char *pv = s_header(ex, "MCP-Protocol-Version");
    if (!pv || envelope_legacy_supported(pv)) return 0;
    char msg[200];
    snprintf(msg, sizeof msg,
             "unsupported MCP-Protocol-Version: %.40s (sessions: %s; %s per "
             "request, with its _meta)",
             pv, envelope_legacy_list(), MCP_MODERN);
    exchange_refuse_id(ex, MHD_HTTP_BAD_REQUEST, RPC_INVALID_REQUEST,
                       HTTP_REFUSED_BAD_PROTOCOL_VERSION, msg, id);
    return 1;
}

/* ---- step 1: headers */

static enum MHD_Result s_check_headers(exchange_t *ex, const char *url)
{
    http_t *h = ex->http;
    if (strcmp(url, "/mcp") != 0 && strcmp(url, "/mcp/") != 0)
        return exchange_refuse(ex, MHD_HTTP_NOT_FOUND, RPC_INVALID_REQUEST, HTTP_REFUSED_NOT_FOUND,
                               "not found: the MCP endpoint is /mcp");
    if (!http_host_allowed(s_header(ex, "Host"), h->conf.allow_host, h->loopback))
        return exchange_refuse(ex, MHD_HTTP_FORBIDDEN, RPC_INVALID_REQUEST, HTTP_REFUSED_BAD_HOST,
                               "forbidden: Host header not allowed (DNS rebinding protection)");
    if (!http_origin_allowed(s_header(ex, "Origin"), h->conf.allow_origin))
        return exchange_refuse(ex, MHD_HTTP_FORBIDDEN, RPC_INVALID_REQUEST, HTTP_REFUSED_BAD_ORIGIN,
                               "forbidden: Origin not allowed (see --allow-origin)");
    if (ex->method == 'O') { /* CORS preflight from an allowed origin */
        struct MHD_Response *r = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
        const char *origin = s_header(ex, "Origin");
        if (origin) MHD_add_response_header(r, "Access-Control-Allow-Origin", origin);
        MHD_add_response_header(r, "Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS");
        MHD_add_response_header(r, "Access-Control-Allow-Headers",
                                "Authorization, Content-Type, Accept, Mcp-Session-Id, "
                                "MCP-Protocol-Version, Mcp-Method, Mcp-Name, Last-Event-ID");
        MHD_add_response_header(r, "Access-Control-Max-Age", "600");
        enum MHD_Result rc = MHD_queue_response(ex->conn, MHD_HTTP_NO_CONTENT, r);
        MHD_destroy_response(r);
        ex->state = EX_DONE;
        return rc;
    }
    if (ex->method != 'P' && ex->method != 'G' && ex->method != 'D') {
        json_t *msg = rpc_error(NULL, RPC_INVALID_REQUEST, "method not allowed", NULL);
        size_t len;
        char *text = rpc_dump(msg, &len);
        struct MHD_Response *r = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
        json_decref(msg);
        MHD_add_response_header(r, "Allow", "GET, POST, DELETE");
        MHD_add_response_header(r, "Content-Type", "application/json");
        enum MHD_Result rc = MHD_queue_response(ex->conn, MHD_HTTP_METHOD_NOT_ALLOWED, r);
        MHD_destroy_response(r);
        ex->http->stats.refused[HTTP_REFUSED_HTTP_METHOD]++;
        ex->state = EX_DONE;
        return rc;
    }
    const char *accept = s_header(ex, "Accept");
    if (ex->method == 'P') {
        ex->accept_json = s_accepts(accept, "application/json");
        ex->accept_sse = s_accepts(accept, "text/event-stream");
        /* the spec has clients list both; we serve whichever they can take */
        if (!ex->accept_json && !ex->accept_sse)
            return exchange_refuse(
                ex, MHD_HTTP_NOT_ACCEPTABLE, RPC_INVALID_REQUEST, HTTP_REFUSED_NOT_ACCEPTABLE,
                "not acceptable: Accept must include application/json or text/event-stream");
        if (!ex->accept_json) ex->sse = 1;
        const char *ctype = s_header(ex, "Content-Type");
        if (!ctype || strncasecmp(ctype, "application/json", 16) != 0 ||
            (ctype[16] && ctype[16] != ';' && ctype[16] != ' '))
            return exchange_refuse(ex, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE, RPC_INVALID_REQUEST,
                                   HTTP_REFUSED_CONTENT_TYPE,
                                   "unsupported media type: Content-Type must be application/json");
        const char *clen = s_header(ex, "Content-Length");
        if (clen && strtoull(clen, NULL, 10) > (unsigned long long)ex->http->conf.max_body) {
            char msg[128];
            snprintf(msg, sizeof msg, "request body too large (limit %ld bytes)",
                     ex->http->conf.max_body);
            return exchange_refuse(ex, MHD_HTTP_CONTENT_TOO_LARGE, RPC_INVALID_REQUEST,
                                   HTTP_REFUSED_BODY_TOO_LARGE, msg);
        }
    } else if (ex->method == 'G') {
        if (!s_accepts(accept, "text/event-stream") || !accept)
            return exchange_refuse(
                ex, MHD_HTTP_NOT_ACCEPTABLE, RPC_INVALID_REQUEST, HTTP_REFUSED_NOT_ACCEPTABLE,
                "not acceptable: GET /mcp opens an event stream (Accept: text/event-stream)");
    }
    /* GET and DELETE exist only in legacy sessions; a POST's version is judged with its body */
    if (ex->method != 'P' && s_legacy_version_refused(ex, NULL)) return MHD_YES;
    ex->headers_checked = 1;
    return MHD_YES;
}

/* ---- step 2: who is calling */

static void s_on_tenant(void *arg, tenant_t *t, auth_status_t st)
{
    exchange_t *ex = arg;
    ex->auth_pending = 0;
    if (ex->orphaned) { /* the client left during the lookup */
        exchange_free(ex);
        return;
    }
    ex->tenant = t;
    ex->status = st == AUTH_OK ? 0 : st == AUTH_UNKNOWN_KEY ? 401 : 503;
    if (ex->state == EX_AUTH) exchange_resume(ex);
}

/* Authentication starts as soon as the headers are in, so that a caller without a key never
 * gets a body buffered, and a Redis lookup overlaps the body's upload. 0: ex->tenant is set
 * or ex->auth_pending; -1: refused (a response is queued). */
static int s_auth_start(exchange_t *ex, enum MHD_Result *rc)
{
    fe_t *fe = ex->http->fe;
    const char *auth = s_header(ex, "Authorization");
    if (!auth || !*auth) {
        if (ex->http->conf.anonymous_tenant[0]) {
            ex->tenant = tenants_named(fe->tenants, ex->http->conf.anonymous_tenant);
            return 0;
        }
        s_audit_auth_failure(ex, AUTH_FAILED_MISSING);
        ex->www_authenticate = 1;
        *rc = exchange_refuse(ex, MHD_HTTP_UNAUTHORIZED, RPC_INVALID_REQUEST,
                              HTTP_REFUSED_UNAUTHORIZED,
                              "unauthorized: send Authorization: Bearer <API key>");
        return -1;
    }
    if (strncasecmp(auth, "Bearer ", 7) != 0 || !auth[7] || strlen(auth + 7) > 512) {
        s_audit_auth_failure(ex, AUTH_FAILED_MALFORMED);
        ex->www_authenticate = 1;
        *rc = exchange_refuse(
            ex, MHD_HTTP_UNAUTHORIZED, RPC_INVALID_REQUEST, HTTP_REFUSED_UNAUTHORIZED,
            "unauthorized: the Authorization header must be \"Bearer <API key>\"");
        return -1;
    }
    const char *key = auth + 7;
    while (*key == ' ') key++;
    tenant_t *t = tenants_cached(fe->tenants, key, strlen(key));
    if (t) {
        ex->tenant = t;
        return 0;
    }
    ex->auth_pending = 1;
    if (tenants_lookup(fe->tenants, key, strlen(key), s_on_tenant, ex) < 0) {
        ex->auth_pending = 0;
        s_audit_auth_failure(ex, AUTH_FAILED_UNAVAILABLE);
        ex->retry_after_s = 2;
        *rc = exchange_refuse(
            ex, MHD_HTTP_SERVICE_UNAVAILABLE, RPC_UNAVAILABLE, HTTP_REFUSED_AUTH_UNAVAILABLE,
            "service unavailable: cannot check the API key now (key store unreachable)");
        return -1;
    }
    return 0;
}

static enum MHD_Result s_auth_result(exchange_t *ex)
{
    if (ex->status == 401) {
        s_audit_auth_failure(ex, AUTH_FAILED_INVALID);
        ex->www_authenticate = 1;
        return exchange_refuse(ex, MHD_HTTP_UNAUTHORIZED, RPC_INVALID_REQUEST,
                               HTTP_REFUSED_UNAUTHORIZED, "unauthorized: unknown API key");
    }
    s_audit_auth_failure(ex, AUTH_FAILED_UNAVAILABLE);
    ex->retry_after_s = 2;
    return exchange_refuse(
        ex, MHD_HTTP_SERVICE_UNAVAILABLE, RPC_UNAVAILABLE, HTTP_REFUSED_AUTH_UNAVAILABLE,
        "service unavailable: cannot check the API key now (key store unreachable)");
}

/* ---- step 3: the session */

static enum MHD_Result s_find_session(exchange_t *ex, int is_initialize, int *ok)
{
    fe_t *fe = ex->http->fe;
    const char *sid = s_header(ex, "Mcp-Session-Id");
    *ok = 0;
    if (!sid) {
        if (ex->method == 'P' && is_initialize) {
            if (sessions_full(fe->sessions, ex->tenant)) {
                ex->retry_after_s = 5;
                return exchange_refuse(ex, MHD_HTTP_SERVICE_UNAVAILABLE, RPC_UNAVAILABLE,
                                       HTTP_REFUSED_TOO_MANY_SESSIONS,
                                       "too many open sessions; try again later");
            }
            ex->session = session_new(fe->sessions, TRANSPORT_HTTP, ex->tenant);
            if (!ex->session)
                return exchange_refuse(ex, MHD_HTTP_INTERNAL_SERVER_ERROR, RPC_INTERNAL_ERROR,
                                       HTTP_REFUSED_SESSION_FAILED, "could not create a session");
            session_hold(ex->session);
            ex->new_session = 1;
            *ok = 1;
            return MHD_YES;
        }
        return exchange_refuse(
            ex, MHD_HTTP_BAD_REQUEST, RPC_INVALID_REQUEST, HTTP_REFUSED_MISSING_SESSION,
            "bad request: Mcp-Session-Id header is required (send initialize first)");
    }
    session_t *s = session_find(fe->sessions, sid);
    /* another tenant's session is as unknown to this caller as a made-up id */
    if (!s || s->closed || s->tenant != ex->tenant)
        return exchange_refuse(
            ex, MHD_HTTP_NOT_FOUND, RPC_INVALID_REQUEST, HTTP_REFUSED_UNKNOWN_SESSION,
            "session not found: it ended or never existed; initialize a new one");
    ex->session = s;
    session_hold(s);
    *ok = 1;
    return MHD_YES;
}

/* ---- step 4: the message */

static enum MHD_Result s_answer_now_or_wait(exchange_t *ex)
{
    if (ex->state == EX_READY) return ex->sse ? exchange_start_sse(ex) : exchange_queue_parked(ex);
    if (ex->sse && ex->state == EX_CALL && ex->sse_out.len) return exchange_start_sse(ex);
    exchange_suspend(ex);
    return MHD_YES;
}

static void s_reject_emit(void *ctx, call_t *call, json_t *msg, int final)
{
    (void)call, (void) final;
    exchange_t *ex = ctx;
    ex->status = MHD_HTTP_BAD_REQUEST;
    ex->answer = rpc_dump(msg, &ex->answer_len);
    ex->state = EX_READY;
}

/* A modern message refused by admission: its error, with its status (400). */
static enum MHD_Result s_refused(exchange_t *ex, admission_t *a)
{
    ex->sse = 0;
    ex->status = a->status;
    free(ex->answer);
    ex->answer = rpc_dump(a->error, &ex->answer_len);
    ex->state = EX_READY;
    mcp_refused(ex->http->fe->mcp);
    json_decref(a->error);
    return exchange_queue_parked(ex);
}

/* A 2026-07-28 message: a scope of its own, no session (an Mcp-Session-Id is ignored). */
static enum MHD_Result s_post_modern(exchange_t *ex, rpc_msg_t *m, const envelope_t *env)
{
    fe_t *fe = ex->http->fe;
    ex->modern = 1;
    ex->session = session_scope(ex->tenant, TRANSPORT_HTTP);
    if (m->kind != RPC_REQUEST) { /* notifications/cancelled and the like: accepted */
        mcp_handle(fe->mcp, ex->session, m, env, NULL, NULL);
        return exchange_queue_json(ex, MHD_HTTP_ACCEPTED, NULL);
    }
    ex->state = EX_CALL;
    ex->call = mcp_handle(fe->mcp, ex->session, m, env, exchange_emit, ex);
    return s_answer_now_or_wait(ex);
}

static enum MHD_Result s_post_legacy(exchange_t *ex, rpc_msg_t *m)
{
    fe_t *fe = ex->http->fe;
    if (s_legacy_version_refused(ex, m->id)) return MHD_YES;
    int is_init = m->kind == RPC_REQUEST && strcmp(m->method, "initialize") == 0;
    int ok;
    enum MHD_Result rc = s_find_session(ex, is_init, &ok);
    if (!ok) return rc;
    if (m->kind != RPC_REQUEST) {
        /* notifications and responses: accepted, no body (202) */
        mcp_handle(fe->mcp, ex->session, m, NULL, NULL, NULL);
        return exchange_queue_json(ex, MHD_HTTP_ACCEPTED, NULL);
    }
    ex->state = EX_CALL;
    /* kept to detach the call should the client go away before the answer */
    ex->call = mcp_handle(fe->mcp, ex->session, m, NULL, exchange_emit, ex);
    return s_answer_now_or_wait(ex);
}

static enum MHD_Result s_post(exchange_t *ex)
{
    fe_t *fe = ex->http->fe;
    if (ex->too_big) {
        char msg[128];
        snprintf(msg, sizeof msg, "request body too large (limit %ld bytes)",
                 ex->http->conf.max_body);
        return exchange_refuse(ex, MHD_HTTP_CONTENT_TOO_LARGE, RPC_INVALID_REQUEST,
                               HTTP_REFUSED_BODY_TOO_LARGE, msg);
    }
    rpc_msg_t m;
    if (rpc_parse((const char *)ex->body.data, ex->body.len, &m) < 0) {
        ex->sse = 0;
        mcp_reject(fe->mcp, &m, "http", s_reject_emit, ex);
        rpc_msg_clear(&m);
        return s_answer_now_or_wait(ex);
    }
    reqheaders_t h = {s_header(ex, "MCP-Protocol-Version"), s_header(ex, "Mcp-Method"),
                      s_header(ex, "Mcp-Name")};
    admission_t a;
    enum MHD_Result rc;
    switch (admit_message(mcp_admit_stats(fe->mcp), &m, &h, "http", &a)) {
    case ADMIT_REFUSED:
        rc = s_refused(ex, &a);
        break;
    case ADMIT_MODERN:
        rc = s_post_modern(ex, &m, &a.env);
        break;
    default:
        rc = s_post_legacy(ex, &m);
        break;
    }
    rpc_msg_clear(&m);
    return rc;
}

static enum MHD_Result s_get(exchange_t *ex)
{
    if (ex->session->notify) /* one stream per session: the spec lets us refuse a second */
        return exchange_refuse(ex, MHD_HTTP_CONFLICT, RPC_INVALID_REQUEST,
                               HTTP_REFUSED_STREAM_EXISTS,
                               "conflict: this session already has an open GET stream");
    ex->get_stream = 1;
    ex->sse = 1;
    ex->session->notify = exchange_notify;
    ex->session->notify_ctx = ex;
    ex->session->notify_end = exchange_notify_end;
    return exchange_start_sse(ex);
}

static enum MHD_Result s_delete(exchange_t *ex)
{
    log_info("event=session_deleted session=%.8s tenant=%s", ex->session->id,
             ex->session->tenant->name);
    session_close(ex->session);
    return exchange_queue_json(ex, MHD_HTTP_OK, NULL);
}

static enum MHD_Result s_after_auth(exchange_t *ex)
{
    if (ex->method == 'P') return s_post(ex);
    int ok;
    enum MHD_Result rc = s_find_session(ex, 0, &ok);
    if (!ok) return rc;
    return ex->method == 'G' ? s_get(ex) : s_delete(ex);
}

enum MHD_Result exchange_mcp(exchange_t *ex, const char *url)
{
    enum MHD_Result rc = MHD_YES;
    if (!ex->headers_checked) {
        rc = s_check_headers(ex, url);
        if (ex->state == EX_DONE) return rc;
        if (s_auth_start(ex, &rc) < 0) return rc;
        if (ex->method == 'P') return MHD_YES; /* now read the body */
    }
    switch (ex->state) {
    case EX_BODY: /* the body is in (POST), or there is none (GET, DELETE) */
    case EX_AUTH:
        if (ex->auth_pending) { /* Redis has not said yet who this is */
            ex->state = EX_AUTH;
            exchange_suspend(ex);
            return MHD_YES;
        }
        if (!ex->tenant) return s_auth_result(ex);
        ex->state = EX_BODY;
        return s_after_auth(ex);
    case EX_CALL: /* resumed by a notification before the stream started */
        return s_answer_now_or_wait(ex);
    default:
        return MHD_YES;
    }
}
