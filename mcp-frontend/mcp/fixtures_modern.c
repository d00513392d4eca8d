/* mcp-frontend/mcp/fixtures_modern.c — the conformance suite's fixtures for MCP 2026-07-28
 * (--test-fixtures only): the diagnostic tools of the server-stateless scenario (a capability
 * gate, logging without logLevel, a stream that must carry no server requests, list-change
 * triggers), a tool whose arguments are mirrored into Mcp-Param-* headers (the
 * http-custom-header-server-validation scenario), and the multi round-trip tools and prompt of
 * the input-required-result scenarios, whose exact keys and messages those scenarios'
 * descriptions give.
 *
 * The round trips are one engine over a table: a flow is up to three rounds of input
 * requests; a retry that answers every key of its round moves to the next, one that misses a
 * key is asked again (mrtr §"Error Handling"), and the answers so far travel in the sealed
 * requestState (round_trip.h), never in this process. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "mcp-frontend/rpc/envelope.h"
#include "mcp-frontend/rpc/fe.h"
#include "fixtures.h"
#include "listen.h"
#include "round_trip.h"

#define NO_ARGS  "{\"type\":\"object\",\"properties\":{}}"
#define STATE_MS 600000 /* a user may take minutes to answer a form */

/* ---- the round-trip engine */

typedef struct {
    const char *key;   /* the inputRequests key */
    char kind;         /* 'E'licitation, 'S'ampling, 'R'oots */
    const char *text;  /* the elicitation's message, or the sampling prompt */
    const char *field; /* the elicited field */
    const char *type;  /* its JSON type */
} ask_t;

typedef struct {
    const char *name;
    int stateful;       /* sends a requestState (every flow of more than one round does) */
    int only_declared;  /* ask only for what the client declared (the capabilities flow) */
    ask_t rounds[3][4]; /* rounds of asks, each ended by {NULL}; an empty round ends them */
} flow_t;

static const char *s_cap_of(char kind)
{
    return kind == 'E' ? "elicitation" : kind == 'S' ? "sampling" : "roots";
}

static json_t *s_request(const ask_t *a)
{
    if (a->kind == 'E') return round_trip_elicit(a->text, a->field, a->type);
    if (a->kind == 'S') return round_trip_sample(a->text, 100);
    return round_trip_list_roots();
}

static int s_wanted(const flow_t *f, const call_t *c, const ask_t *a)
{
    return !f->only_declared || envelope_has_cap(c->caps, s_cap_of(a->kind));
}

/* The round's requests; -1 when c was answered -32021 (a capability it needs is undeclared). */
static int s_requests(const flow_t *f, call_t *c, int round, json_t **out)
{
    json_t *req = json_object();
    for (const ask_t *a = f->rounds[round]; a->key; a++) {
        if (!s_wanted(f, c, a)) continue;
        if (!envelope_has_cap(c->caps, s_cap_of(a->kind))) {
            json_decref(req);
            char what[40];
            snprintf(what, sizeof what, "%s", s_cap_of(a->kind));
            call_missing_capability(c, what, json_pack("{s:{}}", what));
            return -1;
        }
        json_object_set_new(req, a->key, s_request(a));
    }
    if (!json_object_size(req)) { /* the capabilities flow with nothing declared */
        json_decref(req);
        call_missing_capability(c, "elicitation, sampling or roots",
                                json_pack("{s:{}}", "elicitation"));
        return -1;
    }
    *out = req;
    return 0;
}

/* What an answer contributes to the final text. */
static json_t *s_answer(const ask_t *a, const json_t *resp)
{
    if (a->kind == 'E') {
        json_t *v = json_object_get(json_object_get(resp, "content"), a->field);
        return v ? json_incref(v) : json_string("(declined)");
    }
    if (a->kind == 'S') {
        const char *text =
            json_string_value(json_object_get(json_object_get(resp, "content"), "text"));
        return json_string(text ? text : "");
    }
    return json_integer((json_int_t)json_array_size(json_object_get(resp, "roots")));
}

/* Asks (again) for round `round`, with the answers collected so far in the state. */
static void s_ask(const flow_t *f, call_t *c, int round, json_t *answers)
{
    json_t *req;
    if (s_requests(f, c, round, &req) < 0) {
        json_decref(answers);
        return;
    }
    char *state = NULL;
    if (f->stateful)
        state =
            round_trip_seal(c->fe->round_trip, c,
                            json_pack("{s:i,s:o}", "round", round, "answers", answers), STATE_MS);
    else
        json_decref(answers);
    call_reply(c, round_trip_input_required(req, state));
}

static char *s_text(const char *fmt, json_t *answers)
{
    buf_t b;
    buf_init(&b);
    buf_puts(&b, fmt);
    const char *k;
    json_t *v;
    json_object_foreach(answers, k, v)
    {
        char *s = json_dumps(v, JSON_ENCODE_ANY);
        buf_printf(&b, " %s=%s", k, s ? s : "?");
        free(s);
    }
    return buf_steal(&b, NULL);
}

/* One step of a flow: 1 with *answers (new reference) when it is complete, 0 when c was
 * answered (input_required, or an error). */
static int s_step(const flow_t *f, call_t *c, json_t **answers_out)
{
    if (!c->modern) {
        call_error(c, RPC_INVALID_PARAMS,
                   "this fixture asks the client for input, which needs MCP " MCP_MODERN, NULL);
        return 0;
    }
    json_t *responses, *state;
    if (round_trip_responses(c, &responses) < 0 ||
        round_trip_open(c->fe->round_trip, c, &state) < 0)
        return 0;
    int round = f->stateful && state ? (int)json_integer_value(json_object_get(state, "round")) : 0;
    json_t *answers = json_object_get(state, "answers");
    answers = json_is_object(answers) ? json_deep_copy(answers) : json_object();
    json_decref(state);
    if (round < 0 || round > 2 || !f->rounds[round][0].key) {
        json_decref(answers);
        call_error(c, RPC_INVALID_PARAMS, "invalid requestState: no such round", NULL);
        return 0;
    }
    for (const ask_t *a = f->rounds[round]; a->key; a++) {
        if (!s_wanted(f, c, a)) continue;
        json_t *resp = json_object_get(responses, a->key);
        if (!resp) { /* missing: ask again rather than fail */
            s_ask(f, c, round, answers);
            return 0;
        }
        json_object_set_new(answers, a->key, s_answer(a, resp));
    }
    if (round + 1 < 3 && f->rounds[round + 1][0].key) {
        s_ask(f, c, round + 1, answers);
        return 0;
    }
    *answers_out = answers;
    return 1;
}

/* clang-format off */
static const flow_t s_flows[] = {
    {"test_input_required_result_elicitation", 0, 0,
     {{{"user_name", 'E', "What is your name?", "name", "string"}, {NULL}}}},
    {"test_input_required_result_sampling", 0, 0,
     {{{"capital_question", 'S', "What is the capital of France?", NULL, NULL}, {NULL}}}},
    {"test_input_required_result_list_roots", 0, 0,
     {{{"client_roots", 'R', NULL, NULL, NULL}, {NULL}}}},
    {"test_input_required_result_request_state", 1, 0,
     {{{"confirm", 'E', "Please confirm", "ok", "boolean"}, {NULL}}}},
    {"test_input_required_result_multiple_inputs", 1, 0,
     {{{"user_name", 'E', "What is your name?", "name", "string"},
       {"greeting", 'S', "Generate a greeting", NULL, NULL},
       {"client_roots", 'R', NULL, NULL, NULL}, {NULL}}}},
    {"test_input_required_result_multi_round", 1, 0,
     {{{"step1", 'E', "Step 1: What is your name?", "name", "string"}, {NULL}},
      {{"step2", 'E', "Step 2: What is your favorite color?", "color", "string"}, {NULL}}}},
    {"test_input_required_result_tampered_state", 1, 0,
     {{{"confirm", 'E', "Please confirm", "ok", "boolean"}, {NULL}}}},
    {"test_input_required_result_capabilities", 1, 1,
     {{{"user_name", 'E', "What is your name?", "name", "string"},
       {"capital_question", 'S', "What is the capital of France?", NULL, NULL},
       {"client_roots", 'R', NULL, NULL, NULL}, {NULL}}}},
    {"test_input_required_result_prompt", 0, 0,
     {{{"user_context", 'E', "What context should the prompt use?", "context", "string"}, {NULL}}}},
    {NULL, 0, 0, {{{NULL}}}},
};
/* clang-format on */

static const flow_t *s_flow(const char *name)
{
    for (const flow_t *f = s_flows; f->name; f++)
        if (!strcmp(f->name, name)) return f;
    return NULL;
}

static void s_flow_tool(call_t *c, json_t *args, const tool_task_t *task)
{
    (void)args, (void)task;
    const flow_t *f = s_flow(call_str(c, "name"));
    json_t *answers;
    if (!s_step(f, c, &answers)) return;
    json_t *name = json_object_get(answers, "user_name");
    char *text =
        s_text(f->stateful ? "state-ok: the requestState came back intact;" : "Done;", answers);
    if (json_is_string(name) && !f->stateful) {
        free(text);
        if (asprintf(&text, "Hello, %s!", json_string_value(name)) < 0) abort();
    }
    json_decref(answers);
    call_reply(c, json_pack("{s:[{s:s,s:s}]}", "content", "type", "text", "text", text));
    free(text);
}

int fixtures_modern_prompt(call_t *c, const char *name)
{
    const flow_t *f = s_flow(name);
    if (!f || strcmp(name, "test_input_required_result_prompt") != 0) return 0;
    json_t *answers;
    if (!s_step(f, c, &answers)) return 1;
    const char *context = json_string_value(json_object_get(answers, "user_context"));
    char *text;
    if (asprintf(&text, "Use this context: %s", context ? context : "(none)") < 0) abort();
    call_reply(c, json_pack("{s:s,s:[{s:s,s:{s:s,s:s}}]}", "description",
                            "A prompt that asked for its context", "messages", "role", "user",
                            "content", "type", "text", "text", text));
    free(text);
    json_decref(answers);
    return 1;
}

json_t *fixtures_modern_prompts(void)
{
    return json_pack("[{s:s,s:s}]", "name", "test_input_required_result_prompt", "description",
                     "Asks the client for its context (multi round-trip)");
}

/* ---- the diagnostic tools of server-stateless */

static void s_text_reply(call_t *c, const char *text)
{
    call_reply(c, json_pack("{s:[{s:s,s:s}]}", "content", "type", "text", "text", text));
}

/* Needs a capability the request must declare: -32021 naming it, else it runs. */
static void s_missing_capability(call_t *c, json_t *args, const tool_task_t *task)
{
    (void)args, (void)task;
    if (!envelope_has_cap(c->caps, "sampling")) {
        call_missing_capability(c, "sampling", json_pack("{s:{}}", "sampling"));
        return;
    }
    s_text_reply(c, "sampling is declared");
}

/* Would log: only a request that named a logLevel hears it (call_log checks). */
static void s_logging(call_t *c, json_t *args, const tool_task_t *task)
{
    (void)args, (void)task;
    call_log(c, LOGLEVEL_INFO, "conformance", json_string("test_logging_tool ran"));
    s_text_reply(c, "logged, if the request asked for a log level");
}

/* Needs the user: asks by MRTR — never by a JSON-RPC request on the stream. */
static void s_streaming_elicitation(call_t *c, json_t *args, const tool_task_t *task)
{
    (void)args, (void)task;
    if (!c->modern || !envelope_has_cap(c->caps, "elicitation")) {
        s_text_reply(c, "no elicitation declared: nothing asked");
        return;
    }
    if (json_object_size(json_object_get(c->params, "inputResponses"))) {
        s_text_reply(c, "thank you");
        return;
    }
    json_t *req =
        json_pack("{s:o}", "stream_question", round_trip_elicit("Go on?", "ok", "boolean"));
    call_reply(c, round_trip_input_required(req, NULL));
}

static void s_trigger_tools(call_t *c, json_t *args, const tool_task_t *task)
{
    (void)args, (void)task;
    listen_list_changed(c->fe->bus, "tools");
    s_text_reply(c, "the tool list changed");
}

static void s_trigger_prompts(call_t *c, json_t *args, const tool_task_t *task)
{
    (void)args, (void)task;
    listen_list_changed(c->fe->bus, "prompts");
    s_text_reply(c, "the prompt list changed");
}

/* Declares arguments mirrored into Mcp-Param-* headers (paramheaders.h): the transport holds the
 * headers against the body before this runs, so it only says what it got. */
static void s_param_headers(call_t *c, json_t *args, const tool_task_t *task)
{
    (void)task;
    char *text = json_dumps(args, JSON_COMPACT | JSON_SORT_KEYS);
    s_text_reply(c, text ? text : "{}");
    free(text);
}

static const tool_arg_t s_mirrored[] = {
    {"region", ARG_STRING, ARG_REQUIRED, "Where to run (the Mcp-Param-Region header)",
     "\"x-mcp-header\": \"Region\""},
    {"priority", ARG_INTEGER, 0, "How urgent (the Mcp-Param-Priority header)",
     "\"x-mcp-header\": \"Priority\""},
    {"verbose", ARG_BOOLEAN, 0, "Say more (the Mcp-Param-Verbose header)",
     "\"x-mcp-header\": \"Verbose\""},
    {"note", ARG_STRING, 0, "Not mirrored", NULL},
    {NULL},
};

/* clang-format off */
#define FLOW_TOOL(n, d) {.name = n, .description = d, .input_schema = NO_ARGS, .run = s_flow_tool}
const tool_t fixtures_modern_tools[] = {
    {.name = "test_missing_capability", .description = "Needs the sampling capability", .input_schema = NO_ARGS, .run = s_missing_capability},
    {.name = "test_logging_tool", .description = "Logs when asked to", .input_schema = NO_ARGS, .run = s_logging},
    {.name = "test_streaming_elicitation", .description = "Asks the user through MRTR", .input_schema = NO_ARGS, .run = s_streaming_elicitation},
    {.name = "test_trigger_tool_change", .description = "Announces a tool list change", .input_schema = NO_ARGS, .run = s_trigger_tools},
    {.name = "test_trigger_prompt_change", .description = "Announces a prompt list change", .input_schema = NO_ARGS, .run = s_trigger_prompts},
    {.name = "test_param_headers", .description = "Echoes its arguments, three of them mirrored into Mcp-Param-* headers", .args = s_mirrored, .run = s_param_headers},
    FLOW_TOOL("test_input_required_result_elicitation", "Asks for a name"),
    FLOW_TOOL("test_input_required_result_sampling", "Asks the client's model"),
    FLOW_TOOL("test_input_required_result_list_roots", "Asks for the client's roots"),
    FLOW_TOOL("test_input_required_result_request_state", "Round-trips a requestState"),
    FLOW_TOOL("test_input_required_result_multiple_inputs", "Asks for three things at once"),
    FLOW_TOOL("test_input_required_result_multi_round", "Asks twice"),
    FLOW_TOOL("test_input_required_result_tampered_state", "Refuses a tampered requestState"),
    FLOW_TOOL("test_input_required_result_capabilities", "Asks only what the client declared"),
    {NULL},
};
/* clang-format on */
