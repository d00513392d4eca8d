/* mcp-frontend/mcp.c — see mcp.h. Method rules follow MCP 2025-11-25 "Lifecycle": initialize
 * first (anything but ping before it is refused), version negotiation answers the client's
 * version when we support it and our latest otherwise. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "../common/buf.h"
#include "../common/clock.h"
#include "../common/log.h"
#include "limiter.h"
#include "mcp.h"
#include "proftext.h"
#include "prompts.h"
#include "resources.h"
#include "tasks.h"
#include "tools.h"

static const char *const s_versions[] = {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05",
                                         NULL};

int mcp_version_supported(const char *v)
{
    for (int i = 0; s_versions[i]; i++)
        if (strcmp(v, s_versions[i]) == 0) return 1;
    return 0;
}

/* ---- the lifecycle methods */

/* The server's instructions (InitializeResult), profiles named from their table (proftext.h). */
static const char s_instructions[] =
    "snakepit runs Python 3.11 code in a fresh sandboxed interpreter per call. Use execute_code "
    "to run code (print what you need, or end with an expression to get its value as `result`); "
    "each call starts clean, with no network or processes. Profiles: {profile_summaries}. "
    "validate_code checks code without running it, get_sandbox_info lists profiles, modules and "
    "limits, and get_execution / list_executions show your earlier runs.";

static void s_initialize(call_t *c)
{
    session_t *s = c->session;
    const char *want = call_str(c, "protocolVersion");
    if (!want) {
        call_error(c, RPC_INVALID_PARAMS, "initialize: \"protocolVersion\" (string) is required",
                   NULL);
        return;
    }
    json_t *caps = json_object_get(c->params, "capabilities");
    if (caps && !json_is_object(caps)) {
        call_error(c, RPC_INVALID_PARAMS, "initialize: \"capabilities\" must be an object", NULL);
        return;
    }
    if (s->protocol[0]) {
        call_error(c, RPC_INVALID_REQUEST, "the session is already initialized", NULL);
        return;
    }
    snprintf(s->protocol, sizeof s->protocol, "%s",
             mcp_version_supported(want) ? want : MCP_LATEST);
    s->client_tasks = json_object_get(caps, "tasks") != NULL;
    const char *name =
        json_string_value(json_object_get(json_object_get(c->params, "clientInfo"), "name"));
    snprintf(s->client_name, sizeof s->client_name, "%s", name ? name : "");
    /* a compat endpoint is a tools-only server, as the one it stands in for */
    const endpoint_t *ep = c->endpoint;
    json_t *server_caps =
        ep ? json_pack("{s:{s:b},s:{}}", "tools", "listChanged", 0, "logging")
           : json_pack("{s:{s:b},s:{s:b,s:b},s:{s:b},s:{},s:{},s:{s:{},s:{},s:{s:{s:{}}}}}",
                       "tools", "listChanged", 0, "resources", "subscribe", 1, "listChanged", 1,
                       "prompts", "listChanged", 0, "logging", "completions", "tasks", "list",
                       "cancel", "requests", "tools", "call");
    char *instructions = proftext(ep ? ep->instructions : s_instructions);
    json_t *result = json_pack("{s:s,s:o,s:{s:s,s:s,s:s},s:s}", "protocolVersion", s->protocol,
                               "capabilities", server_caps, "serverInfo", "name", "snakepit",
                               "title", ep ? ep->title : "snakepit Python sandbox", "version",
                               FE_VERSION, "instructions", instructions);
    free(instructions);
    log_info("event=session_initialized session=%.8s tenant=%s protocol=%s client=\"%.40s\"", s->id,
             s->tenant->name, s->protocol, s->client_name);
    call_reply(c, result);
}

static void s_ping(call_t *c)
{
    call_reply(c, json_object());
}

static void s_set_level(call_t *c)
{
    const char *level = call_str(c, "level");
    for (int i = 0; level && i < LOGLEVEL_NONE; i++)
        if (strcmp(level, loglevel_name(i)) == 0) {
            c->session->log_level = i;
            call_reply(c, json_object());
            return;
        }
    call_error(c, RPC_INVALID_PARAMS,
               "logging/setLevel: \"level\" must be one of debug, info, notice, "
               "warning, error, critical, alert, emergency",
               NULL);
}

/* ---- dispatch */

typedef struct {
    const char *name;
    void (*fn)(call_t *c);
    int before_init; /* allowed before initialize */
    int limited;     /* counts against the tenant's rate limit */
} method_t;

static const method_t s_methods[] = {
    {"initialize", s_initialize, 1, 0},
    {"ping", s_ping, 1, 0},
    {"logging/setLevel", s_set_level, 0, 0},
    {"tools/list", tools_list, 0, 0},
    {"tools/call", tools_call, 0, 1},
    {"resources/list", resources_list, 0, 0},
    {"resources/templates/list", resources_templates_list, 0, 0},
    {"resources/read", resources_read, 0, 1},
    {"resources/subscribe", resources_subscribe, 0, 0},
    {"resources/unsubscribe", resources_unsubscribe, 0, 0},
    {"prompts/list", prompts_list, 0, 0},
    {"prompts/get", prompts_get, 0, 0},
    {"completion/complete", completion_complete, 0, 0},
    {"tasks/get", tasks_get, 0, 0},
    {"tasks/result", tasks_result, 0, 0},
    {"tasks/list", tasks_list, 0, 0},
    {"tasks/cancel", tasks_cancel, 0, 0},
    {NULL, NULL, 0, 0},
};

#define N_METHODS (sizeof s_methods / sizeof s_methods[0] - 1)

/* Labels counted besides the methods: a request for an unknown method, notifications,
 * responses (we send no requests), and messages that did not parse. */
enum {
    AS_OTHER,
    AS_INITIALIZED,
    AS_CANCELLED,
    AS_NOTIFICATION,
    AS_RESPONSE,
    AS_INVALID,
    AS__COUNT
};
static const char *const s_extra_labels[AS__COUNT] = {
    "other",  "notifications/initialized", "notifications/cancelled", "notification", "response",
    "invalid"};

static const double s_duration_bounds[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
                                           0.025,  0.05,    0.1,    0.25,  0.5,    1,     2.5,
                                           5,      10,      30,     60,    120,    300};
static const double s_overhead_bounds[] = {0.00005, 0.0001, 0.00015, 0.0002,  0.00025,
                                           0.0003,  0.0004, 0.0005,  0.00075, 0.001,
                                           0.002,   0.005,  0.01,    0.05};

struct mcp {
    fe_t *fe;
    mcp_conf_t conf;
    call_stats_t stats[N_METHODS + AS__COUNT]; /* each method's, then the extra labels' */
    mcp_stats_t view;
};

mcp_t *mcp_new(fe_t *fe, const mcp_conf_t *conf)
{
    mcp_t *self = xcalloc(1, sizeof *self);
    self->fe = fe;
    self->conf = *conf;
    for (size_t i = 0; i < N_METHODS + AS__COUNT; i++) {
        call_stats_t *st = &self->stats[i];
        st->label = i < N_METHODS ? s_methods[i].name : s_extra_labels[i - N_METHODS];
        prom_hist_init(&st->seconds, s_duration_bounds,
                       sizeof s_duration_bounds / sizeof s_duration_bounds[0]);
        prom_hist_init(&st->overhead, s_overhead_bounds,
                       sizeof s_overhead_bounds / sizeof s_overhead_bounds[0]);
    }
    self->view.labels = self->stats;
    self->view.n_labels = N_METHODS + AS__COUNT;
    return self;
}

void mcp_destroy(mcp_t **self_p)
{
    free(*self_p);
    *self_p = NULL;
}

const mcp_stats_t *mcp_stats(const mcp_t *self)
{
    return &self->view;
}

static call_stats_t *s_extra(mcp_t *self, int which)
{
    return &self->stats[N_METHODS + (size_t)which];
}

static const method_t *s_find_method(const char *name)
{
    for (const method_t *m = s_methods; m->name; m++)
        if (strcmp(m->name, name) == 0) return m;
    return NULL;
}

static void s_notification(mcp_t *self, session_t *s, rpc_msg_t *m)
{
    int as = AS_NOTIFICATION;
    if (strcmp(m->method, "notifications/initialized") == 0) {
        s->initialized = 1;
        as = AS_INITIALIZED;
    } else if (strcmp(m->method, "notifications/cancelled") == 0) {
        json_t *rid = m->params ? json_object_get(m->params, "requestId") : NULL;
        call_t *c = rid ? call_find(s, rid) : NULL;
        /* an unknown id is normal: the answer may have crossed the cancellation (spec) */
        if (c && strcmp(c->method, "initialize") != 0) {
            const char *why = json_string_value(json_object_get(m->params, "reason"));
            call_cancel(c, why ? why : "client cancelled");
        }
        as = AS_CANCELLED;
    }
    s_extra(self, as)->outcomes[OUTCOME_OK]++;
}

static void s_limit_done(void *arg, int allowed, long retry_after_ms)
{
    call_t *c = arg;
    if (call_alive(c)) {
        if (allowed) {
            const method_t *m = s_find_method(c->method);
            m->fn(c);
        } else {
            char msg[128];
            snprintf(msg, sizeof msg, "rate limit exceeded for tenant %s; retry in %ld ms",
                     c->session->tenant->name, retry_after_ms);
            call_error(c, RPC_RATE_LIMITED, msg,
                       json_pack("{s:I}", "retry_after_ms", (json_int_t)retry_after_ms));
        }
    }
    call_release(c);
}

static void s_dispatch(mcp_t *self, call_t *c, const method_t *meth)
{
    session_t *s = c->session;
    if (!meth) {
        char msg[160];
        snprintf(msg, sizeof msg, "method not found: %.100s", c->method);
        call_error(c, RPC_METHOD_NOT_FOUND, msg, NULL);
        return;
    }
    if (!meth->before_init && !s->protocol[0]) {
        call_error(c, RPC_INVALID_REQUEST, "the session is not initialized: send initialize first",
                   NULL);
        return;
    }
    if (s->n_calls > self->conf.max_inflight_session) {
        call_error(c, RPC_QUOTA, "too many requests in flight on this session", NULL);
        return;
    }
    if (meth->limited) {
        long retry = 0;
        call_hold(c); /* released by s_limit_done */
        int rc = limiter_check(self->fe->limiter, s->tenant, s_limit_done, c, &retry);
        if (rc != LIMIT_PENDING) s_limit_done(c, rc == LIMIT_ALLOW, retry);
        return;
    }
    meth->fn(c);
}

call_t *mcp_handle(mcp_t *self, session_t *s, rpc_msg_t *m, const endpoint_t *ep,
                   call_emit_fn *emit, void *emit_ctx)
{
    s->last_used_ms = clock_mono_ms();
    if (m->kind == RPC_NOTIFICATION) {
        s_notification(self, s, m);
        return NULL;
    }
    if (m->kind == RPC_RESPONSE) { /* we send no requests; a stray answer is dropped */
        s_extra(self, AS_RESPONSE)->outcomes[OUTCOME_IGNORED]++;
        return NULL;
    }
    const method_t *meth = s_find_method(m->method);
    call_stats_t *stats = meth ? &self->stats[meth - s_methods] : s_extra(self, AS_OTHER);
    call_t *c = call_new(self->fe, s, m, stats, emit, emit_ctx);
    c->endpoint = ep;
    call_hold(c); /* so that c can be returned if the handler did not answer it */
    s_dispatch(self, c, meth);
    call_t *pending = call_alive(c) ? c : NULL;
    call_release(c);
    return pending;
}

void mcp_reject(mcp_t *self, const rpc_msg_t *m, const char *transport, call_emit_fn *emit,
                void *emit_ctx)
{
    if (m->code == RPC_PARSE_ERROR)
        self->view.parse_errors++;
    else
        self->view.invalid_requests++;
    s_extra(self, AS_INVALID)->outcomes[OUTCOME_ERROR]++;
    char q[200];
    log_info("event=message_rejected transport=%s code=%d why=%s", transport, m->code,
             log_quote(q, sizeof q, m->why));
    json_t *msg =
        rpc_error(m->id, m->code, m->code == RPC_PARSE_ERROR ? "Parse error" : "Invalid Request",
                  json_pack("{s:o}", "detail", json_str_safe(m->why)));
    emit(emit_ctx, NULL, msg, 1);
    json_decref(msg);
}
