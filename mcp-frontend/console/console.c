/* mcp-frontend/console/console.c — see console.h. The route: one row per endpoint (method,
 * path, who may call it, how much it may send, its handler), the headers every answer carries,
 * the page's files. What a row's handler does is signin.c's or calls.c's; answers are
 * request.c's. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/buf.h"
#include "common/log.h"
#include "mcp-frontend/transport/origin.h"
#include "console.h"
#include "request.h"
#include "secret.h"

/* Only the page's own files run and style it (no inline script or style, no eval); it talks
 * only to its own origin; images may be data: URIs (figures); frames are the sandboxed ones
 * that show HTML outputs (srcdoc, which inherit this policy: no script runs in them either);
 * nothing may frame the console itself (clickjacking). */
static const char s_csp[] =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; frame-src 'self'; form-action 'self'; base-uri 'none'; "
    "frame-ancestors 'none'";

static void s_index(console_req_t *r);
static void s_asset(console_req_t *r);

/* The endpoints. Reads are GETs with the sign-in's cookie; everything that changes something
 * (or runs code) is a POST that must also carry the sign-in's CSRF token. */
static const console_op_t s_ops[] = {
    {'G', "/console", 0, OP_PUBLIC, 0, s_index},
    {'G', "/console/", 0, OP_PUBLIC, 0, s_index},
    {'G', "/console/assets/", 1, OP_PUBLIC, 0, s_asset},
    {'P', "/console/signin", 0, OP_PUBLIC, 4096, signin_run},
    {'P', "/console/signout", 0, OP_CSRF, 4096, signout_run},
    {'G', "/console/api/me", 0, OP_SIGNED_IN, 0, me_run},
    {'P', "/console/api/key", 0, OP_CSRF, 4096, key_rotate_run},
    {'P', "/console/api/tools/", 1, OP_CSRF, -1 /* the transport's --max-body */, calls_tool},
    {'P', "/console/api/resource", 0, OP_CSRF, 4096, calls_resource},
    {0},
};

/* The row for url, its tail past a prefix row's in rest; *wrong_method when only the method
 * differs. */
static const console_op_t *s_find(int method, const char *url, char *rest, size_t cap,
                                  int *wrong_method)
{
    *wrong_method = 0;
    for (const console_op_t *op = s_ops; op->path; op++) {
        size_t n = strlen(op->path);
        int match = op->prefix ? !strncmp(url, op->path, n) && url[n] && strlen(url + n) < cap
                               : !strcmp(url, op->path);
        if (!match) continue;
        if (op->method != method) {
            *wrong_method = 1;
            continue;
        }
        snprintf(rest, cap, "%s", op->prefix ? url + n : "");
        return op;
    }
    return NULL;
}

/* ---- the page and its files */

static void s_send_asset(console_req_t *r, const console_asset_t *a)
{
    exchange_t *ex = r->ex;
    r->cache = "no-cache"; /* kept, and asked again with If-None-Match: a new build shows at once */
    snprintf(r->etag, sizeof r->etag, "%s", a->etag);
    const char *inm = exchange_header(ex, "If-None-Match");
    r->console->stats.assets++;
    if (inm && !strcmp(inm, a->etag)) {
        console_reply_text(r, MHD_HTTP_NOT_MODIFIED, NULL, NULL, 0);
        return;
    }
    char *copy = xmalloc(a->len ? a->len : 1);
    memcpy(copy, a->data, a->len);
    console_reply_text(r, MHD_HTTP_OK, a->ctype, copy, a->len);
}

static void s_index(console_req_t *r)
{
    s_send_asset(r, console_asset("index.html"));
}

static void s_asset(console_req_t *r)
{
    const console_asset_t *a = console_asset(r->rest);
    if (!a || !strcmp(r->rest, "index.html"))
        console_refuse(r, MHD_HTTP_NOT_FOUND, CONSOLE_REFUSED_NOT_FOUND, "no such file");
    else
        s_send_asset(r, a);
}

/* ---- the route */

/* A browser names the page a request comes from (Fetch §3.1: Origin on every POST, and
 * Sec-Fetch-Site): a state-changing request must come from the console's own origin. A
 * sandboxed frame's is "null", refused too. Without either it is not a browser's cross-site
 * request (a script with curl holds the cookie itself). */
static int s_same_origin(exchange_t *ex)
{
    const char *site = exchange_header(ex, "Sec-Fetch-Site");
    if (site && strcmp(site, "same-origin") != 0 && strcmp(site, "none") != 0) return 0;
    const char *origin = exchange_header(ex, "Origin"), *host = exchange_header(ex, "Host");
    if (!origin) return 1;
    const char *p = strstr(origin, "://");
    return p && host && !strcasecmp(p + 3, host) &&
           (!strncmp(origin, "http://", 7) || !strncmp(origin, "https://", 8));
}

static enum MHD_Result s_after_auth(console_req_t *r)
{
    exchange_t *ex = r->ex;
    if (!r->signed_in) {
        if (r->cookie_sent) /* unknown, ended or expired: the browser may forget it */
            snprintf(r->set_cookie, sizeof r->set_cookie,
                     CONSOLE_COOKIE "=; Path=/console; HttpOnly; SameSite=Strict; Max-Age=0%s",
                     r->console->secure_cookie ? "; Secure" : "");
        console_refuse(r, MHD_HTTP_UNAUTHORIZED, CONSOLE_REFUSED_SIGNED_OUT,
                       r->cookie_sent ? "your sign-in has ended: sign in again" : "not signed in");
        return exchange_answer_now_or_wait(ex);
    }
    if (r->op->auth == OP_CSRF) {
        const char *token = exchange_header(ex, "X-CSRF-Token");
        if (!token || strlen(token) != CONSOLE_TOKEN_HEX ||
            !secret_equal(token, r->csrf, CONSOLE_TOKEN_HEX)) {
            console_refuse(r, MHD_HTTP_FORBIDDEN, CONSOLE_REFUSED_CSRF,
                           "this request needs the sign-in's CSRF token (X-CSRF-Token)");
            return exchange_answer_now_or_wait(ex);
        }
    }
    r->ran = 1;
    r->op->run(r);
    return exchange_answer_now_or_wait(ex);
}

/* The body is in (or there is none): who is asking, then the handler. */
static enum MHD_Result s_after_body(console_req_t *r)
{
    exchange_t *ex = r->ex;
    long cap = r->op->max_body < 0 ? ex->http->conf.max_body : r->op->max_body;
    if (ex->too_big || (long)ex->body.len > cap) {
        console_refuse(r, MHD_HTTP_CONTENT_TOO_LARGE, CONSOLE_REFUSED_BODY, "request too large");
        return exchange_answer_now_or_wait(ex);
    }
    if (r->op->auth == OP_PUBLIC) {
        r->ran = 1;
        r->op->run(r);
        return exchange_answer_now_or_wait(ex);
    }
    signin_find(r);
    if (ex->state == EX_AUTH && !ex->auth_pending) return s_after_auth(r); /* known at once */
    return exchange_answer_now_or_wait(ex); /* refused, or waiting for Redis */
}

static enum MHD_Result s_begin(console_t *self, exchange_t *ex, const char *url)
{
    console_req_t *r = xcalloc(1, sizeof *r);
    r->console = self;
    r->ex = ex;
    ex->route_state = r;
    ex->state = EX_AUTH; /* until it is routed: answers are parked as for any wait */
    int wrong_method;
    r->op = s_find(ex->method, url, r->rest, sizeof r->rest, &wrong_method);
    http_t *h = ex->http;
    if (!http_host_allowed(exchange_header(ex, "Host"), h->conf.allow_host, h->loopback))
        console_refuse(r, MHD_HTTP_FORBIDDEN, CONSOLE_REFUSED_HOST,
                       "Host header not allowed (DNS rebinding protection)");
    else if (!r->op)
        console_refuse(r, wrong_method ? MHD_HTTP_METHOD_NOT_ALLOWED : MHD_HTTP_NOT_FOUND,
                       wrong_method ? CONSOLE_REFUSED_METHOD : CONSOLE_REFUSED_NOT_FOUND,
                       wrong_method ? "method not allowed" : "no such page");
    else if (r->op->method == 'P' && !s_same_origin(ex))
        console_refuse(r, MHD_HTTP_FORBIDDEN, CONSOLE_REFUSED_ORIGIN,
                       "a request from another site (Origin) is not taken");
    if (ex->state == EX_READY) return exchange_answer_now_or_wait(ex);
    ex->state = EX_BODY;
    if (r->op->method == 'P') return MHD_YES; /* read the body first */
    return s_after_body(r);
}

static enum MHD_Result s_serve(void *arg, exchange_t *ex, const char *url)
{
    console_req_t *r = ex->route_state;
    if (!r) return s_begin(arg, ex, url);
    switch (ex->state) {
    case EX_BODY: /* a POST's body is in */
        return s_after_body(r);
    case EX_AUTH: /* resumed: the sign-in is known (signin_find) */
        return r->ran ? exchange_answer_now_or_wait(ex) : s_after_auth(r);
    case EX_CALL: /* resumed by a tool call's progress before its stream began */
        return exchange_answer_now_or_wait(ex);
    default:
        return MHD_YES;
    }
}

/* Every answer of the console: the policy above, no sniffing, no referrer leaving with ids in
 * the URL, no framing, no cache of a tenant's data. */
static void s_headers(void *arg, exchange_t *ex, struct MHD_Response *resp)
{
    (void)arg;
    console_req_t *r = ex->route_state;
    MHD_add_response_header(resp, "Content-Security-Policy", s_csp);
    MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(resp, "Referrer-Policy", "no-referrer");
    MHD_add_response_header(resp, "X-Frame-Options", "DENY");
    MHD_add_response_header(resp, "Cross-Origin-Opener-Policy", "same-origin");
    MHD_add_response_header(resp, "Cross-Origin-Resource-Policy", "same-origin");
    if (!ex->sse) /* a stream says no-cache itself */
        MHD_add_response_header(resp, "Cache-Control", r && r->cache ? r->cache : "no-store");
    if (ex->retry_after_s > 0) {
        char v[24];
        snprintf(v, sizeof v, "%ld", ex->retry_after_s);
        MHD_add_response_header(resp, "Retry-After", v);
    }
    if (!r) return;
    if (r->set_cookie[0]) MHD_add_response_header(resp, "Set-Cookie", r->set_cookie);
    if (r->disposition[0]) MHD_add_response_header(resp, "Content-Disposition", r->disposition);
    if (r->etag[0]) MHD_add_response_header(resp, "ETag", r->etag);
}

static void s_done(void *arg, exchange_t *ex)
{
    (void)arg;
    console_req_t *r = ex->route_state;
    if (r) explicit_bzero(r, sizeof *r); /* the CSRF token, a key being rotated */
    free(r);
    ex->route_state = NULL;
}

/* ---- the console */

console_t *console_new(fe_t *fe, const console_conf_t *conf)
{
    console_t *self = xcalloc(1, sizeof *self);
    self->fe = fe;
    self->conf = *conf;
    return self;
}

void console_destroy(console_t **self_p)
{
    free(*self_p);
    *self_p = NULL;
}

void console_serve(console_t *self, http_t *http)
{
    if (!http) return;
    /* the browser reaches the console over TLS when we serve it, or when a proxy in front
     * does (plain HTTP off loopback is allowed only then) */
    self->secure_cookie = (http->conf.tls_cert[0] && http->conf.tls_key[0]) || !http->loopback;
    http_route_add(http, &(http_route_t){"/console", s_serve, s_headers, s_done, self});
    log_info("event=console_serving path=/console secure_cookie=%d", self->secure_cookie);
}

const console_stats_t *console_stats(const console_t *self)
{
    return &self->stats;
}
