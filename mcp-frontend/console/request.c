/* mcp-frontend/console/request.c — a console request's answers (request.h): parked on its
 * exchange for the transport to send, refusals counted and logged, the client's address, and
 * the way back from a Redis lookup to the request that waits for it. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "request.h"

void console_reply_text(console_req_t *r, unsigned status, const char *ctype, char *text,
                        size_t len)
{
    exchange_park_text(r->ex, status, ctype, text, len);
}

void console_reply(console_req_t *r, unsigned status, json_t *body)
{
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    console_reply_text(r, status, text ? "application/json" : NULL, text, text ? strlen(text) : 0);
}

void console_client(const console_req_t *r, char *out, size_t cap)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(r->ex->conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    snprintf(out, cap, "?");
    if (!ci || !ci->client_addr) return;
    const struct sockaddr *sa = ci->client_addr;
    if (sa->sa_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, out,
                  (socklen_t)cap);
    else if (sa->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, out,
                  (socklen_t)cap);
}

void console_refuse(console_req_t *r, unsigned status, console_refusal_t why, const char *message)
{
    char client[64], q[200], p[160];
    r->console->stats.refused[why]++;
    console_client(r, client, sizeof client);
    log_info("event=console_refused status=%u reason=%s client=%s path=%s message=%s", status,
             console_refusal_name(why), client, log_quote(p, sizeof p, r->op ? r->op->path : "?"),
             log_quote(q, sizeof q, message));
    console_reply(r, status,
                  json_pack("{s:s,s:s}", "error", message, "reason", console_refusal_name(why)));
}

console_req_t *console_back(exchange_t *ex)
{
    ex->auth_pending = 0;
    if (ex->orphaned) { /* the client left while Redis was asked: the last lookup frees it */
        exchange_free(ex);
        return NULL;
    }
    return ex->state == EX_AUTH ? ex->route_state : NULL;
}

void console_wait(console_req_t *r)
{
    r->ex->auth_pending = 1;
    r->ex->state = EX_AUTH;
}

const char *console_signin_name(console_signin_t outcome)
{
    static const char *const names[CONSOLE_SIGNIN__COUNT] = {
        [CONSOLE_SIGNIN_OK] = "ok",
        [CONSOLE_SIGNIN_INVALID] = "invalid_key",
        [CONSOLE_SIGNIN_MALFORMED] = "malformed",
        [CONSOLE_SIGNIN_LIMITED] = "rate_limited",
        [CONSOLE_SIGNIN_UNAVAILABLE] = "unavailable",
    };
    return names[outcome];
}

const char *console_refusal_name(console_refusal_t reason)
{
    static const char *const names[CONSOLE_REFUSED__COUNT] = {
        [CONSOLE_REFUSED_NOT_FOUND] = "not_found",
        [CONSOLE_REFUSED_METHOD] = "method",
        [CONSOLE_REFUSED_HOST] = "bad_host",
        [CONSOLE_REFUSED_ORIGIN] = "bad_origin",
        [CONSOLE_REFUSED_SIGNED_OUT] = "signed_out",
        [CONSOLE_REFUSED_CSRF] = "csrf",
        [CONSOLE_REFUSED_BODY] = "body",
        [CONSOLE_REFUSED_UNAVAILABLE] = "unavailable",
    };
    return names[reason];
}
