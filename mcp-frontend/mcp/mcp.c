/* mcp-frontend/mcp/mcp.c — see mcp.h. One table says, per method, which handler serves it in each
 * era, whether it counts against the rate limit, how its 2026-07-28 result may be cached, and
 * what the client must declare for it; a method without a handler in an era does not exist
 * there (-32601, HTTP 404 for modern requests: streamable-http §"Protocol Version Header"). */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/log.h"
#include "mcp-frontend/rpc/envelope.h"
#include "mcp-frontend/state/limiter.h"
#include "mcp-frontend/tools/tools.h"
#include "lifecycle.h"
#include "listen.h"
#include "mcp.h"
#include "prompts.h"
#include "resources.h"
#include "tasks.h"
#include "tasks_extension.h"

typedef void(method_fn)(call_t *c);

enum { CACHE_NONE, CACHE_PUBLIC, CACHE_PRIVATE };

typedef struct {
    const char *name;
    method_fn *legacy; /* 2025-11-25 and older, in a session; NULL: not a legacy method */
    method_fn *modern; /* 2026-07-28, per request; NULL: removed or never there */
    int before_init;   /* legacy: allowed before initialize */
    int limited;       /* counts against the tenant's rate limit */
    int cache;         /* modern: CACHE_* (server/utilities/caching: these MUST carry hints) */
    long ttl_ms;
    int needs_tasks; /* modern: the request must declare the tasks extension (-32021) */
    int served_on;   /* SERVED_*: which endpoints have it (endpoint.h) */
} method_t;

/* Where a method exists. A drop-in endpoint declares tools and logging, and resources or
 * prompts when it has its own (endpoint.h); the rest of /mcp's capabilities (subscriptions,
 * completions, tasks) no drop-in declares, so their methods are -32601 there. */
enum { SERVED_EVERYWHERE, SERVED_ON_MCP, SERVED_WITH_RESOURCES, SERVED_WITH_PROMPTS };

/* Lists are the same for every tenant and change with a deployment; reads are per tenant and
 * change as executions run, so they are private and immediately stale. */
#define LIST_TTL_MS 300000

static const method_t s_methods[] = {
    {"initialize", lifecycle_initialize, NULL, 1, 0, CACHE_NONE, 0, 0},
    {"ping", lifecycle_ping, NULL, 1, 0, CACHE_NONE, 0, 0},
    {"logging/setLevel", lifecycle_set_level, NULL, 0, 0, CACHE_NONE, 0, 0},
    {"server/discover", NULL, lifecycle_discover, 0, 0, CACHE_PUBLIC, LIST_TTL_MS, 0},
    {"tools/list", tools_list, tools_list, 0, 0, CACHE_PUBLIC, LIST_TTL_MS, 0},
    {"tools/call", tools_call, tools_call, 0, 1, CACHE_NONE, 0, 0},
    {"resources/list", resources_list, resources_list, 0, 0, CACHE_PUBLIC, LIST_TTL_MS, 0,
     SERVED_WITH_RESOURCES},
    {"resources/templates/list", resources_templates_list, resources_templates_list, 0, 0,
     CACHE_PUBLIC, LIST_TTL_MS, 0, SERVED_WITH_RESOURCES},
    {"resources/read", resources_read, resources_read, 0, 1, CACHE_PRIVATE, 0, 0,
     SERVED_WITH_RESOURCES},
    {"resources/subscribe", resources_subscribe, NULL, 0, 0, CACHE_NONE, 0, 0, SERVED_ON_MCP},
    {"resources/unsubscribe", resources_unsubscribe, NULL, 0, 0, CACHE_NONE, 0, 0, SERVED_ON_MCP},
    {"subscriptions/listen", NULL, listen_open, 0, 0, CACHE_NONE, 0, 0, SERVED_ON_MCP},
    {"prompts/list", prompts_list, prompts_list, 0, 0, CACHE_PUBLIC, LIST_TTL_MS, 0,
     SERVED_WITH_PROMPTS},
    {"prompts/get", prompts_get, prompts_get, 0, 0, CACHE_NONE, 0, 0, SERVED_WITH_PROMPTS},
    {"completion/complete", completion_complete, completion_complete, 0, 0, CACHE_NONE, 0, 0,
     SERVED_ON_MCP},
    {"tasks/get", tasks_get, tasks_extension_get, 0, 0, CACHE_NONE, 0, 1, SERVED_ON_MCP},
    {"tasks/update", NULL, tasks_extension_update, 0, 0, CACHE_NONE, 0, 1, SERVED_ON_MCP},
    {"tasks/cancel", tasks_cancel, tasks_extension_cancel, 0, 0, CACHE_NONE, 0, 1, SERVED_ON_MCP},
    {"tasks/result", tasks_result, NULL, 0, 0, CACHE_NONE, 0, 0, SERVED_ON_MCP},
    {"tasks/list", tasks_list, NULL, 0, 0, CACHE_NONE, 0, 0, SERVED_ON_MCP},
    {NULL, NULL, NULL, 0, 0, 0, 0, 0, 0},
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

admit_stats_t *mcp_admit_stats(mcp_t *self)
{
    return &self->view.admit;
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

static int s_served_here(const method_t *m, const endpoint_t *ep)
{
    switch (m->served_on) {
    case SERVED_ON_MCP:
        return ep == NULL;
    case SERVED_WITH_RESOURCES:
        return !ep || ep->resources;
    case SERVED_WITH_PROMPTS:
        return !ep || ep->prompts;
    default:
        return 1;
    }
}

static method_fn *s_handler(const method_t *m, const call_t *c)
{
    if (!m || !s_served_here(m, c->endpoint)) return NULL;
    return c->modern ? m->modern : m->legacy;
}

static void s_notification(mcp_t *self, mcp_session_t *s, rpc_msg_t *m, int modern)
{
    int as = AS_NOTIFICATION;
    if (!modern && strcmp(m->method, "notifications/initialized") == 0) {
        s->initialized = 1;
        as = AS_INITIALIZED;
    } else if (strcmp(m->method, "notifications/cancelled") == 0) {
        /* on stdio the one way to cancel; over modern HTTP a closed stream is (and the v2
         * SDK's listen close sends one anyway, naming a request of another POST: ignored) */
        json_t *rid = m->params ? json_object_get(m->params, "requestId") : NULL;
        call_t *c = rid ? call_find(s, rid) : NULL;
        const char *why = json_string_value(json_object_get(m->params, "reason"));
        /* an unknown id is normal: the answer may have crossed the cancellation (spec) */
        if (c && strcmp(c->method, "initialize") != 0)
            call_cancel(c, why ? why : "client cancelled");
        else if (!c && rid && s->stored) /* the call may run on another front-end */
            mcp_session_cancel_elsewhere(s, rid, why);
        as = AS_CANCELLED;
    }
    s_extra(self, as)->outcomes[OUTCOME_OK]++;
}

static void s_limit_done(void *arg, int allowed, long retry_after_ms)
{
    call_t *c = arg;
    if (call_alive(c)) {
        if (allowed) {
            s_handler(s_find_method(c->method), c)(c);
        } else {
            char msg[128];
            snprintf(msg, sizeof msg, "rate limit exceeded for tenant %s; retry in %ld ms",
                     c->tenant->name, retry_after_ms);
            call_error(c, RPC_RATE_LIMITED, msg,
                       json_pack("{s:I}", "retry_after_ms", (json_int_t)retry_after_ms));
        }
    }
    call_release(c);
}

static void s_dispatch(mcp_t *self, call_t *c, const method_t *meth)
{
    mcp_session_t *s = c->session;
    method_fn *fn = s_handler(meth, c);
    if (!fn) {
        char msg[160];
        snprintf(msg, sizeof msg, "Method not found: %.100s%s", c->method,
                 !meth                               ? ""
                 : !s_served_here(meth, c->endpoint) ? " (this server does not declare it)"
                 : c->modern                         ? " (not part of MCP " MCP_MODERN ")"
                                                     : " (not part of the session's MCP version)");
        call_error(c, RPC_METHOD_NOT_FOUND, msg, NULL);
        return;
    }
    if (!c->modern && !meth->before_init && !s->protocol[0]) {
        call_error(c, RPC_INVALID_REQUEST, "the session is not initialized: send initialize first",
                   NULL);
        return;
    }
    if (c->modern && meth->needs_tasks && !envelope_has_extension(c->caps, EXT_TASKS)) {
        /* ext-tasks: a tasks method without the extension in this request's capabilities MUST fail
         */
        call_missing_capability(c, "the " EXT_TASKS " extension",
                                json_pack("{s:{s:{}}}", "extensions", EXT_TASKS));
        return;
    }
    if (s->n_calls > self->conf.max_inflight_session) {
        call_error(c, RPC_QUOTA, "too many requests in flight on this session", NULL);
        return;
    }
    if (c->modern && meth->cache != CACHE_NONE)
        c->cache = (call_cache_t){1, meth->ttl_ms, meth->cache == CACHE_PRIVATE};
    if (meth->limited) {
        long retry = 0;
        call_hold(c); /* released by s_limit_done */
        int rc = limiter_check(self->fe->limiter, c->tenant, s_limit_done, c, &retry);
        if (rc != LIMIT_PENDING) s_limit_done(c, rc == LIMIT_ALLOW, retry);
        return;
    }
    fn(c);
}

call_t *mcp_handle(mcp_t *self, mcp_session_t *s, rpc_msg_t *m, const envelope_t *env,
                   const endpoint_t *ep, call_emit_fn *emit, void *emit_ctx)
{
    s->last_used_ms = clock_mono_ms();
    if (m->kind == RPC_NOTIFICATION) {
        s_notification(self, s, m, env != NULL);
        return NULL;
    }
    if (m->kind == RPC_RESPONSE) { /* we send no requests; a stray answer is dropped */
        s_extra(self, AS_RESPONSE)->outcomes[OUTCOME_IGNORED]++;
        return NULL;
    }
    const method_t *meth = s_find_method(m->method);
    call_stats_t *stats = meth ? &self->stats[meth - s_methods] : s_extra(self, AS_OTHER);
    call_t *c = call_new(self->fe, s, m, stats, emit, emit_ctx);
    if (env) {
        c->modern = 1;
        c->caps = env->caps;
        c->log_level = env->log_level;
    }
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

void mcp_refused(mcp_t *self)
{
    s_extra(self, AS_INVALID)->outcomes[OUTCOME_ERROR]++;
}
