/* mcp-frontend/console/signin.c — sign-ins to the console (request.h): made from a tenant's API
 * key, found again from the cookie on every request, ended, and the key rotated.
 *
 * A sign-in is the hash sp:console:<sha256 of its token> {tenant, key_sha256, csrf, created_ms,
 * expires_ms}, with the idle time as its TTL (renewed by each request that finds it; a key with
 * a TTL may be evicted under memory pressure, which only signs its browser out). The browser
 * holds the token in an HttpOnly, SameSite=Strict cookie; Redis holds only its hash, so what
 * Redis holds cannot be replayed as a cookie. A request's tenant is found by the key's hash
 * through the tenants' cache, exactly as an MCP request's by its key: a key rotated or a tenant
 * removed ends its sign-ins at the next request. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "secret.h"
#include "common/sha256.h"
#include "mcp-frontend/state/limiter.h"
#include "mcp-frontend/state/tenants.h"
#include "form.h"
#include "request.h"

/* KEYS[1] the sign-in; ARGV[1] its idle time (ms). Its fields, its idle clock reset; or none. */
static const char s_find_lua[] =
    "local v = redis.call('HMGET', KEYS[1], 'tenant', 'key_sha256', 'csrf', 'expires_ms')\n"
    "if not v[1] then return {} end\n"
    "redis.call('PEXPIRE', KEYS[1], ARGV[1])\n"
    "return v\n";

/* KEYS[1] the sign-in; ARGV: tenant, key hash, csrf, created_ms, expires_ms, idle time (ms). */
static const char s_create_lua[] =
    "redis.call('HSET', KEYS[1], 'tenant', ARGV[1], 'key_sha256', ARGV[2], 'csrf', ARGV[3],\n"
    "           'created_ms', ARGV[4], 'expires_ms', ARGV[5])\n"
    "redis.call('PEXPIRE', KEYS[1], ARGV[6])\n"
    "return 1\n";

static int s_is_hex(const char *s, size_t n)
{
    return strlen(s) == n && strspn(s, "0123456789abcdef") == n;
}

static void s_key_of(char out[96], const char *token_hash)
{
    snprintf(out, 96, "sp:console:%s", token_hash);
}

static void s_unavailable(console_req_t *r)
{
    r->ex->retry_after_s = 2;
    console_refuse(r, MHD_HTTP_SERVICE_UNAVAILABLE, CONSOLE_REFUSED_UNAVAILABLE,
                   "the key store cannot be reached now; try again shortly");
}

/* ---- finding the sign-in a request carries */

/* The sign-in's key named t: signed in as t, unless the key now names another tenant or none
 * (rotated, removed), which ends the sign-in. */
static void s_tenant_known(console_req_t *r, tenant_t *t)
{
    if (t && !strcmp(t->name, r->tenant)) {
        r->signed_in = 1;
        r->ex->tenant = t;
        return;
    }
    char key[96];
    s_key_of(key, r->token_hash);
    store_writef(r->console->fe->store, "DEL %s", key);
    log_info("event=console_signin_ended reason=key_changed tenant=%s", r->tenant);
}

static void s_on_tenant(void *arg, tenant_t *t, auth_status_t st)
{
    console_req_t *r = console_back(arg);
    if (!r) return;
    if (st == AUTH_UNAVAILABLE) {
        s_unavailable(r);
        return;
    }
    s_tenant_known(r, st == AUTH_OK ? t : NULL);
    exchange_resume(r->ex);
}

static int s_field(const redisReply *reply, size_t i, char *out, size_t cap)
{
    const redisReply *v = reply->element[i];
    if (v->type != REDIS_REPLY_STRING || v->len >= cap) return -1;
    memcpy(out, v->str, v->len);
    out[v->len] = '\0';
    return 0;
}

static void s_on_found(void *arg, redisReply *reply)
{
    console_req_t *r = console_back(arg);
    if (!r) return;
    if (!reply || reply->type != REDIS_REPLY_ARRAY) {
        s_unavailable(r);
        return;
    }
    char expires[24];
    fe_t *fe = r->console->fe;
    if (reply->elements == 4 && s_field(reply, 0, r->tenant, sizeof r->tenant) == 0 &&
        s_field(reply, 1, r->key_hash, sizeof r->key_hash) == 0 &&
        s_field(reply, 2, r->csrf, sizeof r->csrf) == 0 &&
        s_field(reply, 3, expires, sizeof expires) == 0 && s_is_hex(r->key_hash, 64) &&
        s_is_hex(r->csrf, CONSOLE_TOKEN_HEX)) {
        r->expires_ms = strtoll(expires, NULL, 10);
        if (r->expires_ms <= (long long)clock_wall_ms()) { /* its longest life is over */
            char key[96];
            s_key_of(key, r->token_hash);
            store_writef(fe->store, "DEL %s", key);
        } else {
            tenant_t *t = tenants_cached_hash(fe->tenants, r->key_hash);
            if (!t) {
                if (tenants_lookup_hash(fe->tenants, r->key_hash, s_on_tenant, r->ex) < 0) {
                    s_unavailable(r);
                    return;
                }
                console_wait(r);
                return;
            }
            s_tenant_known(r, t);
        }
    }
    exchange_resume(r->ex);
}

void signin_find(console_req_t *r)
{
    char token[CONSOLE_TOKEN_HEX + 8], key[96], idle[24];
    console_t *self = r->console;
    r->ex->state = EX_AUTH;
    int rc = form_cookie(exchange_header(r->ex, "Cookie"), CONSOLE_COOKIE, token, sizeof token);
    r->cookie_sent = rc != 0;
    if (rc != 1 || !s_is_hex(token, CONSOLE_TOKEN_HEX)) return; /* not signed in */
    sha256_hex(token, CONSOLE_TOKEN_HEX, r->token_hash);
    s_key_of(key, r->token_hash);
    snprintf(idle, sizeof idle, "%ld", self->conf.idle_s * 1000);
    if (!self->find) self->find = store_script(self->fe->store, s_find_lua);
    const char *args[] = {key, idle};
    if (store_eval(self->fe->store, self->find, s_on_found, r->ex, 1, 2, args) < 0) {
        s_unavailable(r);
        return;
    }
    console_wait(r);
}

/* ---- signing in: the attempt counted against the client address's rate, then the key, then
 * a new sign-in */

static void s_signin_outcome(console_req_t *r, console_signin_t outcome, const char *tenant)
{
    char client[64];
    console_client(r, client, sizeof client);
    r->console->stats.signins[outcome]++;
    log_emit(outcome == CONSOLE_SIGNIN_OK ? LOG_INFO : LOG_WARN,
             "event=console_signin audit=1 outcome=%s client=%s tenant=%s",
             console_signin_name(outcome), client, tenant && *tenant ? tenant : "-");
}

static void s_on_created(void *arg, redisReply *reply)
{
    console_req_t *r = console_back(arg);
    if (!r) return;
    if (!reply || reply->type != REDIS_REPLY_INTEGER) {
        r->set_cookie[0] = '\0'; /* no sign-in was made: no cookie for it */
        s_signin_outcome(r, CONSOLE_SIGNIN_UNAVAILABLE, r->tenant);
        s_unavailable(r);
        return;
    }
    s_signin_outcome(r, CONSOLE_SIGNIN_OK, r->tenant);
    console_reply(r, MHD_HTTP_OK, json_pack("{s:s}", "tenant", r->tenant));
}

static void s_create(console_req_t *r, tenant_t *t)
{
    console_t *self = r->console;
    char token[CONSOLE_TOKEN_HEX + 1], key[96], created[24], expires[24], idle[24];
    uint64_t now = clock_wall_ms();
    snprintf(r->tenant, sizeof r->tenant, "%s", t->name);
    if (secret_hex(token, CONSOLE_TOKEN_HEX / 2) < 0 ||
        secret_hex(r->csrf, CONSOLE_TOKEN_HEX / 2) < 0) {
        log_error("event=console_signin_failed error=\"getrandom failed\"");
        console_refuse(r, MHD_HTTP_SERVICE_UNAVAILABLE, CONSOLE_REFUSED_UNAVAILABLE,
                       "cannot make a sign-in now");
        return;
    }
    sha256_hex(token, CONSOLE_TOKEN_HEX, r->token_hash);
    s_key_of(key, r->token_hash);
    snprintf(created, sizeof created, "%llu", (unsigned long long)now);
    snprintf(expires, sizeof expires, "%llu",
             (unsigned long long)now + (uint64_t)self->conf.max_s * 1000);
    snprintf(idle, sizeof idle, "%ld", self->conf.idle_s * 1000);
    /* the cookie lives as long as the sign-in may; Redis ends it sooner when it goes unused */
    snprintf(r->set_cookie, sizeof r->set_cookie,
             CONSOLE_COOKIE "=%s; Path=/console; HttpOnly; SameSite=Strict; Max-Age=%ld%s", token,
             self->conf.max_s, self->secure_cookie ? "; Secure" : "");
    explicit_bzero(token, sizeof token);
    if (!self->create) self->create = store_script(self->fe->store, s_create_lua);
    const char *args[] = {key, r->tenant, r->key_hash, r->csrf, created, expires, idle};
    if (store_eval(self->fe->store, self->create, s_on_created, r->ex, 1, 7, args) < 0) {
        r->set_cookie[0] = '\0';
        s_signin_outcome(r, CONSOLE_SIGNIN_UNAVAILABLE, r->tenant);
        s_unavailable(r);
        return;
    }
    console_wait(r);
}

static void s_on_key(void *arg, tenant_t *t, auth_status_t st)
{
    console_req_t *r = console_back(arg);
    if (!r) return;
    if (st == AUTH_OK) {
        s_create(r, t);
    } else if (st == AUTH_UNKNOWN_KEY) {
        s_signin_outcome(r, CONSOLE_SIGNIN_INVALID, NULL);
        console_reply(r, MHD_HTTP_UNAUTHORIZED,
                      json_pack("{s:s,s:s}", "error", "unknown API key", "reason", "invalid_key"));
    } else {
        s_signin_outcome(r, CONSOLE_SIGNIN_UNAVAILABLE, NULL);
        s_unavailable(r);
    }
}

static void s_on_limit(void *arg, int outcome, long retry_after_ms)
{
    console_req_t *r = console_back(arg);
    if (!r) return;
    fe_t *fe = r->console->fe;
    if (outcome == LIMIT_DENY) {
        char msg[128];
        explicit_bzero(r->secret, sizeof r->secret);
        s_signin_outcome(r, CONSOLE_SIGNIN_LIMITED, NULL);
        r->ex->retry_after_s = (retry_after_ms + 999) / 1000;
        snprintf(msg, sizeof msg, "too many sign-in attempts from your address; retry in %ld s",
                 r->ex->retry_after_s);
        console_reply(r, 429,
                      json_pack("{s:s,s:s,s:I}", "error", msg, "reason", "rate_limited",
                                "retry_after_ms", (json_int_t)retry_after_ms));
        return;
    }
    if (outcome != LIMIT_ALLOW) {
        explicit_bzero(r->secret, sizeof r->secret);
        s_signin_outcome(r, CONSOLE_SIGNIN_UNAVAILABLE, NULL);
        s_unavailable(r);
        return;
    }
    size_t n = strlen(r->secret);
    sha256_hex(r->secret, n, r->key_hash);
    tenant_t *t = tenants_cached(fe->tenants, r->secret, n);
    int rc = t ? 0 : tenants_lookup(fe->tenants, r->secret, n, s_on_key, r->ex);
    explicit_bzero(r->secret, sizeof r->secret);
    if (t) {
        s_create(r, t);
    } else if (rc < 0) {
        s_signin_outcome(r, CONSOLE_SIGNIN_UNAVAILABLE, NULL);
        s_unavailable(r);
    } else {
        console_wait(r);
    }
}

/* POST /console/signin, a form with the key: never in a URL, where logs and history keep it. */
void signin_run(console_req_t *r)
{
    exchange_t *ex = r->ex;
    console_t *self = r->console;
    const char *ctype = exchange_header(ex, "Content-Type");
    char client[64], key[160];
    if (!ctype || strncasecmp(ctype, "application/x-www-form-urlencoded", 33) != 0 ||
        form_field((const char *)ex->body.data, ex->body.len, "key", r->secret, sizeof r->secret) !=
            1) {
        explicit_bzero(r->secret, sizeof r->secret);
        s_signin_outcome(r, CONSOLE_SIGNIN_MALFORMED, NULL);
        console_reply(r, MHD_HTTP_BAD_REQUEST,
                      json_pack("{s:s,s:s}", "error", "send the API key in the form's `key` field",
                                "reason", "malformed"));
        return;
    }
    /* a key pasted with the line around it */
    char *k = r->secret + strspn(r->secret, " \t\r\n");
    size_t n = strlen(k);
    while (n && strchr(" \t\r\n", k[n - 1])) k[--n] = '\0';
    memmove(r->secret, k, n + 1);
    if (!n || n > 512) {
        explicit_bzero(r->secret, sizeof r->secret);
        s_signin_outcome(r, CONSOLE_SIGNIN_MALFORMED, NULL);
        console_reply(r, MHD_HTTP_UNAUTHORIZED,
                      json_pack("{s:s,s:s}", "error", "unknown API key", "reason", "invalid_key"));
        return;
    }
    /* every attempt counts, per client address as this front-end sees it, across front-ends */
    console_client(r, client, sizeof client);
    snprintf(key, sizeof key, "sp:rl:console:%s", client);
    double per_min = (double)self->conf.signin_per_min;
    if (limiter_check_key(self->fe->limiter, key, per_min / 60.0, self->conf.signin_per_min,
                          s_on_limit, ex) < 0) {
        explicit_bzero(r->secret, sizeof r->secret);
        s_signin_outcome(r, CONSOLE_SIGNIN_UNAVAILABLE, NULL);
        s_unavailable(r);
        return;
    }
    console_wait(r);
}

/* ---- signed in */

void signout_run(console_req_t *r)
{
    char key[96];
    s_key_of(key, r->token_hash);
    store_writef(r->console->fe->store, "DEL %s", key);
    r->console->stats.signouts++;
    snprintf(r->set_cookie, sizeof r->set_cookie,
             CONSOLE_COOKIE "=; Path=/console; HttpOnly; SameSite=Strict; Max-Age=0%s",
             r->console->secure_cookie ? "; Secure" : "");
    log_info("event=console_signout audit=1 tenant=%s", r->tenant);
    console_reply(r, MHD_HTTP_OK, json_pack("{s:b}", "signed_out", 1));
}

/* The local tenant's key is the farm's own (STATE_DIR/local.key): the front-end puts it back
 * whenever Redis has lost it, so a rotation would not last. */
static int s_may_rotate(const console_req_t *r)
{
    return strcmp(r->tenant, "local") != 0;
}

void me_run(console_req_t *r)
{
    console_reply(r, MHD_HTTP_OK,
                  json_pack("{s:s,s:s,s:I,s:I,s:b}", "tenant", r->tenant, "csrf", r->csrf,
                            "expires_ms", (json_int_t)r->expires_ms, "idle_s",
                            (json_int_t)r->console->conf.idle_s, "may_rotate_key",
                            s_may_rotate(r)));
}

static void s_on_moved(void *arg, redisReply *reply)
{
    console_req_t *r = console_back(arg);
    if (!r) return;
    /* the key is new either way; a sign-in that did not follow it ends at its next request */
    if (!reply || reply->type != REDIS_REPLY_INTEGER)
        log_warn("event=console_signin_not_moved tenant=%s why=\"%s\"", r->tenant,
                 reply && reply->type == REDIS_REPLY_ERROR ? "redis error" : "no answer");
    console_reply(r, MHD_HTTP_OK,
                  json_pack("{s:s,s:s}", "api_key", r->secret, "warning",
                            "This key is shown once. The old key stopped working: every client "
                            "that used it must be given this one."));
    explicit_bzero(r->secret, sizeof r->secret);
}

static void s_on_rotated(void *arg, int rc)
{
    console_req_t *r = console_back(arg);
    if (!r) return;
    if (rc == -2) {
        explicit_bzero(r->secret, sizeof r->secret);
        console_reply(r, MHD_HTTP_CONFLICT,
                      json_pack("{s:s,s:s}", "error",
                                "the key this sign-in was made with is no longer the tenant's "
                                "(rotated elsewhere): sign in again",
                                "reason", "key_changed"));
        return;
    }
    if (rc < 0) {
        explicit_bzero(r->secret, sizeof r->secret);
        s_unavailable(r);
        return;
    }
    /* done, whether or not the browser is still there to be shown the key */
    r->console->stats.key_rotations++;
    log_info("event=console_key_rotated audit=1 tenant=%s", r->tenant);
    /* this sign-in follows the key it was made with: the person who rotated stays signed in */
    char key[96], hash[65];
    s_key_of(key, r->token_hash);
    sha256_hex(r->secret, strlen(r->secret), hash);
    if (store_queryf(r->console->fe->store, s_on_moved, r->ex, "HSET %s key_sha256 %s", key, hash) <
        0) {
        s_on_moved(r->ex, NULL); /* it ends at its next request; the new key stands */
        return;
    }
    console_wait(r);
}

void key_rotate_run(console_req_t *r)
{
    if (!s_may_rotate(r)) {
        console_reply(r, MHD_HTTP_CONFLICT,
                      json_pack("{s:s,s:s}", "error",
                                "the tenant `local` is the farm's own: its key is kept in the "
                                "farm's state directory (local.key) and put back from there",
                                "reason", "local_tenant"));
        return;
    }
    if (secret_api_key(r->secret) < 0) {
        console_refuse(r, MHD_HTTP_SERVICE_UNAVAILABLE, CONSOLE_REFUSED_UNAVAILABLE,
                       "cannot make a key now");
        return;
    }
    /* audited before it is asked: a browser gone by the answer leaves it done but unlogged */
    log_info("event=console_key_rotation audit=1 tenant=%s", r->tenant);
    if (tenants_rotate_key(r->console->fe->tenants, r->tenant, r->key_hash, r->secret, s_on_rotated,
                           r->ex) < 0) {
        explicit_bzero(r->secret, sizeof r->secret);
        s_unavailable(r);
        return;
    }
    console_wait(r);
}
