/* mcp-frontend/mcp/prompts.c — see prompts.h. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/profiles.h"
#include "mcp-frontend/render/proftext.h"
#include "mcp-frontend/rpc/envelope.h"
#include "mcp-frontend/rpc/fe.h"
#include "fixtures.h"
#include "prompts.h"
#include "round_trip.h"

#define PROMPT_NAME "write_sandbox_code"
#define MAX_VALUES  100 /* the spec caps completion values at 100 */

struct prompts {
    prompts_conf_t conf;
};

prompts_t *prompts_new(const prompts_conf_t *conf)
{
    prompts_t *self = xcalloc(1, sizeof *self);
    self->conf = *conf;
    return self;
}

void prompts_destroy(prompts_t **self_p)
{
    free(*self_p);
    *self_p = NULL;
}

static json_t *s_prompt(void)
{
    char *profile = proftext("Sandbox profile to target (completable; default {default_profile})");
    json_t *p = json_pack("{s:s,s:s,s:s,s:[{s:s,s:s,s:b},{s:s,s:s,s:b}]}", "name", PROMPT_NAME,
                          "title", "Write Python for the snakepit sandbox", "description",
                          "Guidance for writing Python that runs well in snakepit's sandbox: what "
                          "is available, what is not, limits, and how results come back",
                          "arguments", "name", "task", "description", "What the code should do",
                          "required", 1, "name", "profile", "description", profile, "required", 0);
    free(profile);
    return p;
}

/* A drop-in endpoint's own prompts (endpoint.h): mcp.c sends the prompts methods here only on an
 * endpoint that has some. */
static json_t *s_endpoint_prompts(const endpoint_t *ep)
{
    json_t *list = json_array();
    for (const endpoint_prompt_t *p = ep->prompts; p->name; p++) {
        json_t *args = json_array();
        for (const endpoint_prompt_arg_t *a = p->args; a && a->name; a++)
            json_array_append_new(args, json_pack("{s:s,s:s,s:b}", "name", a->name, "description",
                                                  a->description, "required", a->required));
        json_array_append_new(list,
                              json_pack("{s:s,s:s,s:s,s:o}", "name", p->name, "title", p->title,
                                        "description", p->description, "arguments", args));
    }
    return list;
}

static const endpoint_prompt_t *s_endpoint_prompt(const endpoint_t *ep, const char *name)
{
    for (const endpoint_prompt_t *p = ep->prompts; p->name; p++)
        if (!strcmp(p->name, name)) return p;
    return NULL;
}

void prompts_list(call_t *c)
{
    json_t *list = c->endpoint ? s_endpoint_prompts(c->endpoint) : json_array();
    if (!c->endpoint) json_array_append_new(list, s_prompt());
    if (c->fe->prompts->conf.fixtures && !c->endpoint) {
        json_t *fx = fixtures_prompts(), *fm = fixtures_modern_prompts();
        json_array_extend(list, fx);
        json_array_extend(list, fm);
        json_decref(fx);
        json_decref(fm);
    }
    const char *cursor = call_str(c, "cursor");
    if (cursor && strcmp(cursor, "p:0") != 0) {
        json_decref(list);
        call_error(c, RPC_INVALID_PARAMS, "unknown cursor", NULL);
        return;
    }
    call_reply(c, json_pack("{s:o}", "prompts", list));
}

static void s_guide(buf_t *b, const profile_t *p, const char *task, const tenant_t *t)
{
    buf_printf(b,
               "Write Python 3.11 code for the snakepit sandbox (profile %s) to do this:\n\n%s\n\n"
               "How the sandbox works:\n"
               "- Call the execute_code tool with the code. Each call runs in a fresh "
               "interpreter: nothing (variables, imports, files) survives between calls, so "
               "every call must be self-contained (or use a session: create_session, then "
               "execute_code with its session_id).\n"
               "- Without `profile`, a call runs in the smallest profile that has every module "
               "its code imports; the answer's `profile` and `profile_reason` say which and why.\n"
               "- Print what you want to see; the value of the last expression (or of a variable "
               "named `result`) comes back as `result`. Ask for variables by name with "
               "inspect_variables.\n",
               p->name, task);
    proftext_expand(
        b, p->workspace
               ? "- The code runs in a private scratch directory: pass input files with the "
                 "`files` argument and read them by relative path; files it writes there come "
                 "back in structuredContent.files. Nothing outside it can be read or written, and "
                 "there is no network, no subprocesses and no threads: such attempts end the run "
                 "as a security_violation.\n"
               : "- There is no filesystem, no network, no subprocesses and no threads. Do not "
                 "try to open files, fetch URLs or call os/sys/subprocess: such attempts end the "
                 "run as a security_violation ({workspace_profiles} have a scratch directory for "
                 "files).\n");
    buf_puts(b, "- Importable modules: ");
    for (const char *const *m = p->modules; *m; m++)
        buf_printf(b, "%s%s", m == p->modules ? "" : ", ", *m);
    buf_printf(b,
               ".\n- Limits: %ld s wall time by default (at most %ld s for you), %ld MB memory by "
               "default, %ld bytes of output per stream; past a limit the run ends with status "
               "timeout, memory_limit or output_limit and what was printed before is kept.\n"
               "- Check `status` in the result: ok, or error (with the exception's type, message, "
               "traceback and line), syntax_error, timeout, memory_limit, output_limit, "
               "security_violation.\n"
               "- To check code without running it, call validate_code.\n",
               p->defaults.wall_ms / 1000, t->max_timeout_s, p->defaults.memory_mb,
               p->defaults.output_bytes);
    if (p->figures)
        buf_puts(b, "- matplotlib uses the Agg backend: every figure left open at the end (or "
                    "shown with plt.show()) comes back as a PNG image; close the ones you do not "
                    "want to see.\n");
}

/* Without its task the prompt cannot be written, and the one who knows it is the user: a
 * 2026-07-28 client that can elicit is asked for it (a multi round-trip request, round_trip.h)
 * rather than refused. 0 with *task when the retry brought it (or there is nobody to ask: the
 * caller refuses then); -1 when c has been answered (asked, or its requestState refused). */
static int s_ask_task(call_t *c, const char **task)
{
    json_t *responses, *state;
    if (round_trip_responses(c, &responses) < 0 ||
        round_trip_open(c->fe->round_trip, c, &state) < 0)
        return -1;
    json_decref(state);
    json_t *answer = json_object_get(responses, "task");
    *task = round_trip_elicited(answer, "task");
    if ((*task && **task) || answer || !envelope_has_cap(c->caps, "elicitation"))
        return 0; /* answered, declined (refused as missing), or nobody to ask */
    json_t *ask =
        json_pack("{s:o}", "task", round_trip_elicit("What should the code do?", "task", "string"));
    call_reply(c, round_trip_input_required(
                      ask, round_trip_seal(c->fe->round_trip, c, json_object(), 600000)));
    return -1;
}

void prompts_get(call_t *c)
{
    const char *name = call_str(c, "name");
    json_t *args = json_object_get(c->params, "arguments");
    if (!name) {
        call_error(c, RPC_INVALID_PARAMS, "prompts/get: \"name\" (string) is required", NULL);
        return;
    }
    if (args && !json_is_object(args)) {
        call_error(c, RPC_INVALID_PARAMS, "prompts/get: \"arguments\" must be an object of strings",
                   NULL);
        return;
    }
    if (c->endpoint) {
        const endpoint_prompt_t *p = s_endpoint_prompt(c->endpoint, name);
        if (p)
            p->get(c, args);
        else
            call_error(c, RPC_INVALID_PARAMS, "unknown prompt",
                       json_pack("{s:o}", "name", json_str_safe(name)));
        return;
    }
    if (strcmp(name, PROMPT_NAME) != 0) {
        if (c->fe->prompts->conf.fixtures && fixtures_modern_prompt(c, name)) return;
        json_t *fx = c->fe->prompts->conf.fixtures ? fixtures_prompt_get(name, args) : NULL;
        if (fx)
            call_reply(c, fx);
        else
            call_error(c, RPC_INVALID_PARAMS, "unknown prompt",
                       json_pack("{s:o}", "name", json_str_safe(name)));
        return;
    }
    const char *task = json_string_value(json_object_get(args, "task"));
    const char *profile = json_string_value(json_object_get(args, "profile"));
    if (c->modern && (!task || !*task) && s_ask_task(c, &task) < 0) return;
    if (!task || !*task) {
        call_error(c, RPC_INVALID_PARAMS,
                   "prompts/get write_sandbox_code: argument \"task\" is required", NULL);
        return;
    }
    const profile_t *p = profile && *profile ? profile_find(profile) : proftext_default();
    if (!p) {
        call_error(c, RPC_INVALID_PARAMS,
                   "unknown profile (see completion/complete or get_sandbox_info)", NULL);
        return;
    }
    buf_t b;
    buf_init(&b);
    s_guide(&b, p, task, c->tenant);
    json_t *r = json_pack("{s:s,s:[{s:s,s:{s:s,s:o}}]}", "description",
                          "How to write code for the snakepit sandbox", "messages", "role", "user",
                          "content", "type", "text", "text", json_str_safe((char *)b.data));
    buf_free(&b);
    call_reply(c, r);
}

/* ---- completion/complete */

static json_t *s_completion(json_t *values)
{
    size_t total = json_array_size(values);
    while (json_array_size(values) > MAX_VALUES)
        json_array_remove(values, json_array_size(values) - 1);
    return json_pack("{s:{s:o,s:I,s:b}}", "completion", "values", values, "total",
                     (json_int_t)total, "hasMore", total > MAX_VALUES);
}

typedef struct {
    call_t *call;
    char prefix[64];
} id_completion_t;

static void s_on_ids(void *arg, redisReply *reply)
{
    id_completion_t *ic = arg;
    json_t *values = json_array();
    for (size_t i = 0; reply && reply->type == REDIS_REPLY_ARRAY && i < reply->elements; i++) {
        const redisReply *e = reply->element[i];
        if (e->type == REDIS_REPLY_STRING && !strncmp(e->str, ic->prefix, strlen(ic->prefix)))
            json_array_append_new(values, json_stringn(e->str, e->len));
    }
    call_reply(ic->call, s_completion(values));
    call_release(ic->call);
    free(ic);
}

void completion_complete(call_t *c)
{
    json_t *ref = json_object_get(c->params, "ref"), *arg = json_object_get(c->params, "argument");
    const char *type = json_string_value(json_object_get(ref, "type"));
    const char *arg_name = json_string_value(json_object_get(arg, "name"));
    const char *value = json_string_value(json_object_get(arg, "value"));
    if (!type || !arg_name || !value) {
        call_error(c, RPC_INVALID_PARAMS,
                   "completion/complete needs ref {type, name|uri} and argument {name, value}",
                   NULL);
        return;
    }
    json_t *values = json_array();
    if (!strcmp(type, "ref/prompt")) {
        const char *name = json_string_value(json_object_get(ref, "name"));
        if (name && !strcmp(name, PROMPT_NAME) && !strcmp(arg_name, "profile")) {
            for (size_t i = 0; i < n_profiles; i++)
                if (proftext_is_served(&profiles[i]) &&
                    !strncmp(profiles[i].name, value, strlen(value)))
                    json_array_append_new(values, json_string(profiles[i].name));
        } else if (name && c->fe->prompts->conf.fixtures) {
            json_t *fx = fixtures_complete(name, arg_name, value);
            if (fx) {
                json_decref(values);
                values = fx;
            }
        }
    } else if (!strcmp(type, "ref/resource")) {
        const char *uri = json_string_value(json_object_get(ref, "uri"));
        if (uri && !strcmp(uri, "sandbox://executions/{id}") && !strcmp(arg_name, "id")) {
            id_completion_t *ic = xcalloc(1, sizeof *ic);
            ic->call = c;
            snprintf(ic->prefix, sizeof ic->prefix, "%s", value);
            call_hold(c);
            if (store_queryf(c->fe->store, s_on_ids, ic, "ZREVRANGE sp:t:%s:execs 0 99",
                             c->tenant->name) == 0) {
                json_decref(values);
                return;
            }
            call_release(c);
            free(ic);
        }
    } else {
        json_decref(values);
        call_error(c, RPC_INVALID_PARAMS,
                   "completion/complete: ref.type must be ref/prompt or ref/resource", NULL);
        return;
    }
    call_reply(c, s_completion(values));
}
