/* mcp-frontend/transport/exchange_mcp.c — the /mcp endpoint of Streamable HTTP, for both eras on
 * the same path: header checks first (path, method, Origin and Host, Content-Type, Accept, body
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

#include "common/buf.h"
#include "common/log.h"
#include "mcp-frontend/compat/compat.h"
#include "mcp-frontend/mcp/mcp.h"
#include "mcp-frontend/rpc/admit.h"
#include "mcp-frontend/rpc/envelope.h"
#include "mcp-frontend/state/tenants.h"
#include "mcp-frontend/tools/tools.h"
#include "exchange_legacy.h"
#include "exchange_mcp.h"
#include "origin.h"

static const char *s_header(exchange_t *ex, const char *name)
{
    return exchange_header(ex, name);
}

static const char *s_lookup(void *ex, const char *name)
{
    return exchange_header(ex, name);
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

/* ---- step 1: headers */

static enum MHD_Result s_check_headers(exchange_t *ex, const char *url)
{
    http_t *h = ex->http;
    if (compat_route(h->fe->compat, url, &ex->endpoint) < 0) {
        char msg[300];
        snprintf(msg, sizeof msg,
                 "not found: the MCP endpoint is /mcp, and /mcp/compat/NAME for the drop-in "
                 "endpoints (%s)",
                 compat_names(h->fe->compat));
        return exchange_refuse(ex, MHD_HTTP_NOT_FOUND, RPC_INVALID_REQUEST, HTTP_REFUSED_NOT_FOUND,
                               msg);
    }
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
    if (ex->method != 'P' && exchange_legacy_version_refused(ex, NULL)) return MHD_YES;
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

/* ---- step 3: the message */

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
    ex->session = mcp_session_scope(ex->tenant, TRANSPORT_HTTP);
    if (m->kind != RPC_REQUEST) { /* notifications/cancelled and the like: accepted */
        mcp_handle(fe->mcp, ex->session, m, env, ex->endpoint, NULL, NULL);
        return exchange_queue_json(ex, MHD_HTTP_ACCEPTED, NULL);
    }
    ex->state = EX_CALL;
    ex->call = mcp_handle(fe->mcp, ex->session, m, env, ex->endpoint, exchange_emit, ex);
    return exchange_answer_now_or_wait(ex);
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
    rpc_msg_t *m = &ex->rpc;
    ex->has_rpc = 1; /* kept until the exchange ends: a legacy one may wait for its session */
    if (rpc_parse((const char *)ex->body.data, ex->body.len, m) < 0) {
        ex->sse = 0;
        mcp_reject(fe->mcp, m, "http", s_reject_emit, ex);
        return exchange_answer_now_or_wait(ex);
    }
    reqheaders_t h = {s_header(ex, "MCP-Protocol-Version"), s_header(ex, "Mcp-Method"),
                      s_header(ex, "Mcp-Name")};
    if (m->kind == RPC_REQUEST && !strcmp(m->method, "tools/call")) { /* Mcp-Param-* */
        h.mirrors = tools_mirrors(tools_of(fe, ex->endpoint),
                                  json_string_value(json_object_get(m->params, "name")));
        h.lookup = s_lookup;
        h.lookup_ctx = ex;
    }
    admission_t a;
    switch (admit_message(mcp_admit_stats(fe->mcp), m, &h, "http", &a)) {
    case ADMIT_REFUSED:
        return s_refused(ex, &a);
    case ADMIT_MODERN:
        return s_post_modern(ex, m, &a.env);
    default:
        return exchange_legacy(ex);
    }
}

static enum MHD_Result s_after_auth(exchange_t *ex)
{
    return ex->method == 'P' ? s_post(ex) : exchange_legacy(ex); /* GET, DELETE: sessions */
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
    case EX_SESSION: /* resumed by the session lookup */
        return exchange_legacy_resume(ex);
    case EX_CALL: /* resumed by a notification before the stream started */
        return exchange_answer_now_or_wait(ex);
    default:
        return MHD_YES;
    }
}
