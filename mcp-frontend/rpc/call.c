/* mcp-frontend/rpc/call.c — see call.h. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/log.h"
#include "call.h"
#include "envelope.h"
#include "fe.h"

call_t *call_new(struct fe *fe, mcp_session_t *s, const rpc_msg_t *m, call_stats_t *stats,
                 call_emit_fn *emit, void *emit_ctx)
{
    call_t *c = xcalloc(1, sizeof *c);
    c->fe = fe;
    c->session = s;
    mcp_session_hold(s);
    c->tenant = s->tenant;
    c->msg = json_incref(m->msg);
    c->id = m->id;
    c->method = m->method;
    c->stats = stats;
    c->params = m->params ? m->params : json_object_get(m->msg, "params");
    if (!c->params) {
        json_object_set_new(c->msg, "params", json_object());
        c->params = json_object_get(c->msg, "params");
    }
    c->progress_token = json_object_get(json_object_get(c->params, "_meta"), "progressToken");
    if (c->progress_token && !json_is_string(c->progress_token) &&
        !json_is_integer(c->progress_token))
        c->progress_token = NULL;
    c->start_us = clock_mono_us();
    c->emit = emit;
    c->emit_ctx = emit_ctx;
    c->log_level = LOGLEVEL_NONE;
    c->refs = 1;
    c->next = s->calls;
    s->calls = c;
    s->n_calls++;
    return c;
}

call_t *call_find(mcp_session_t *s, const json_t *id)
{
    for (call_t *c = s->calls; c; c = c->next)
        if (json_equal(c->id, id)) return c;
    return NULL;
}

static void s_unlink(call_t *c)
{
    mcp_session_t *s = c->session;
    for (call_t **pp = &s->calls; *pp; pp = &(*pp)->next)
        if (*pp == c) {
            *pp = c->next;
            s->n_calls--;
            return;
        }
}

void call_hold(call_t *c)
{
    c->refs++;
}

void call_release(call_t *c)
{
    if (--c->refs > 0) return;
    json_decref(c->pending);
    json_decref(c->msg);
    mcp_session_release(c->session);
    free(c);
}

int call_alive(const call_t *c)
{
    return !c->answered && !c->cancelled;
}

const char *outcome_name(outcome_t o)
{
    static const char *const names[OUTCOME__COUNT] = {[OUTCOME_OK] = "ok",
                                                      [OUTCOME_ERROR] = "error",
                                                      [OUTCOME_CANCELLED] = "cancelled",
                                                      [OUTCOME_IGNORED] = "ignored"};
    return names[o];
}

/* The final answer: msg is the response, or NULL when none is to be sent. */
static void s_finish(call_t *c, json_t *msg)
{
    if (c->answered) {
        json_decref(msg);
        return;
    }
    c->answered = 1;
    c->on_cancel = NULL;
    s_unlink(c);
    double secs = (double)(clock_mono_us() - c->start_us) / 1e6;
    json_t *e = msg ? json_object_get(msg, "error") : NULL;
    c->stats->outcomes[!msg ? OUTCOME_CANCELLED : e ? OUTCOME_ERROR : OUTCOME_OK]++;
    prom_hist_observe(&c->stats->seconds, secs);
    if (c->farm_us) /* the front-end's own share of a job's round trip */
        prom_hist_observe(&c->stats->overhead, secs - (double)c->farm_us / 1e6);
    if (e)
        log_info("event=request_error method=%s code=%lld session=%.8s tenant=%s", c->stats->label,
                 (long long)json_integer_value(json_object_get(e, "code")), c->session->id,
                 c->tenant->name);
    if (c->emit) c->emit(c->emit_ctx, c, msg, 1);
    json_decref(msg);
    call_release(c);
}

/* What 2026-07-28 asks of every result (basic/index §ResultType, §"Per-response protocol
 * fields"; server/utilities/caching): resultType, the server's identity in _meta, and caching
 * hints on the results of cacheable methods. */
static void s_decorate(const call_t *c, json_t *result)
{
    json_t *type = json_object_get(result, "resultType");
    if (!type) json_object_set_new(result, "resultType", json_string("complete"));
    json_t *meta = json_object_get(result, "_meta");
    if (!json_is_object(meta)) {
        meta = json_object();
        json_object_set_new(result, "_meta", meta);
    }
    json_object_set_new(meta, META_SERVER_INFO,
                        json_pack("{s:s,s:s,s:s}", "name", "snakepit", "title",
                                  endpoint_title(c->endpoint), "version", FE_VERSION));
    int complete = !type || (json_is_string(type) && !strcmp(json_string_value(type), "complete"));
    if (c->cache.cacheable && complete && !json_object_get(result, "ttlMs")) {
        json_object_set_new(result, "ttlMs", json_integer(c->cache.ttl_ms));
        json_object_set_new(result, "cacheScope",
                            json_string(c->cache.private_scope ? "private" : "public"));
    }
}

void call_reply(call_t *c, json_t *result)
{
    if (!call_alive(c)) {
        json_decref(result);
        return;
    }
    if (!result) result = json_object();
    if (c->modern) s_decorate(c, result);
    s_finish(c, rpc_result(c->id, result));
}

void call_error(call_t *c, int code, const char *message, json_t *data)
{
    if (!call_alive(c)) {
        json_decref(data);
        return;
    }
    if (c->modern) code = rpc_code_modern(code);
    s_finish(c, rpc_error(c->id, code, message, data));
}

void call_missing_capability(call_t *c, const char *what, json_t *required)
{
    char msg[200];
    snprintf(msg, sizeof msg, "Missing required client capability: %s", what);
    call_error(c, RPC_MISSING_CAPABILITY, msg,
               json_pack("{s:o}", "requiredCapabilities", required));
}

int call_log_level(const call_t *c)
{
    return c->modern ? c->log_level : c->session->log_level;
}

int call_has_cap(const call_t *c, const char *name)
{
    return c->modern && envelope_has_cap(c->caps, name);
}

void call_send(call_t *c, json_t *msg)
{
    if (call_alive(c) && c->emit) c->emit(c->emit_ctx, c, msg, 0);
    json_decref(msg);
}

void call_progress(call_t *c, const char *message)
{
    if (!c->progress_token) return;
    c->progress += 1;
    json_t *p = json_pack("{s:O,s:f}", "progressToken", c->progress_token, "progress", c->progress);
    if (message) json_object_set_new(p, "message", json_string(message));
    call_send(c, rpc_notification("notifications/progress", p));
}

void call_log(call_t *c, int level, const char *logger, json_t *data)
{
    int min = call_log_level(c);
    if (min == LOGLEVEL_NONE || level < min) {
        json_decref(data);
        return;
    }
    json_t *p = json_pack("{s:s,s:o}", "level", loglevel_name(level), "data", data);
    if (logger) json_object_set_new(p, "logger", json_string(logger));
    call_send(c, rpc_notification("notifications/message", p));
}

void call_detach(call_t *c)
{
    if (c->emit_owned) return; /* a log, not a transport: it hears the end whatever happens */
    c->emit = NULL;
    c->emit_ctx = NULL;
}

void call_redirect(call_t *c, call_emit_fn *emit, void *emit_ctx)
{
    c->emit = emit;
    c->emit_ctx = emit_ctx;
    c->emit_owned = 1;
}

void call_on_cancel(call_t *c, call_cancel_fn *fn, void *arg)
{
    c->on_cancel = fn;
    c->cancel_arg = fn ? arg : NULL;
}

void call_cancel(call_t *c, const char *why)
{
    if (!call_alive(c)) return;
    c->cancelled = 1;
    log_info("event=request_cancelled method=%s session=%.8s reason=\"%s\"", c->method,
             c->session->id, why ? why : "");
    call_cancel_fn *fn = c->on_cancel;
    c->on_cancel = NULL;
    call_hold(c); /* the callback may drop the work's hold on the call */
    if (fn) fn(c->cancel_arg, c);
    s_finish(c, NULL);
    call_release(c);
}

void calls_cancel_all(mcp_session_t *s, const char *why)
{
    /* from the head each time: a cancel may end other calls of the list (a task's waiters).
     * Not detached from their transports: a session can now end on another front-end (deleted
     * or evicted there) while a request of it waits here, and its client must hear that
     * (exchange.c answers it as a request of an ended session) rather than wait forever. */
    while (s->calls) call_cancel(s->calls, why); /* unlinks it */
}

const char *call_str(const call_t *c, const char *name)
{
    return json_string_value(json_object_get(c->params, name));
}
