/* mcp-frontend/mcp/fixtures.c — the MCP conformance suite's fixtures (test_* tools, test://
 * resources, test_* prompts), served only with --test-fixtures so that `make conformance`
 * can run the official server scenarios against this server. Off by default: none of this
 * is part of snakepit's own surface. Shapes follow each scenario's stated requirements in
 * @modelcontextprotocol/conformance. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "mcp-frontend/render/outcome.h"
#include "mcp-frontend/rpc/fe.h"
#include "fixtures.h"

static const char s_png[] =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC";
static const char s_wav[] = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQIAAAAAAA==";

/* ---- tools */

#define NO_ARGS "{\"type\":\"object\",\"properties\":{}}"

static void s_reply_content(call_t *c, json_t *content)
{
    call_reply(c, json_pack("{s:o}", "content", content));
}

static void s_simple_text(call_t *c, json_t *args, const tool_task_t *task)
{
    (void)args, (void)task;
    s_reply_content(c, json_pack("[{s:s,s:s}]", "type", "text", "text",
                                 "This is a simple text response for testing."));
}

static void s_image_content(call_t *c, json_t *args, const tool_task_t *task)
{
    (void)args, (void)task;
    s_reply_content(
        c, json_pack("[{s:s,s:s,s:s}]", "type", "image", "data", s_png, "mimeType", "image/png"));
}

static void s_audio_content(call_t *c, json_t *args, const tool_task_t *task)
{
    (void)args, (void)task;
    s_reply_content(
        c, json_pack("[{s:s,s:s,s:s}]", "type", "audio", "data", s_wav, "mimeType", "audio/wav"));
}

static void s_embedded_resource(call_t *c, json_t *args, const tool_task_t *task)
{
    (void)args, (void)task;
    s_reply_content(c, json_pack("[{s:s,s:{s:s,s:s,s:s}}]", "type", "resource", "resource", "uri",
                                 "test://embedded-resource", "mimeType", "text/plain", "text",
                                 "This is an embedded resource content."));
}

static void s_multiple_content(call_t *c, json_t *args, const tool_task_t *task)
{
    (void)args, (void)task;
    s_reply_content(c, json_pack("[{s:s,s:s},{s:s,s:s,s:s},{s:s,s:{s:s,s:s,s:s}}]", "type", "text",
                                 "text", "Multiple content types test:", "type", "image", "data",
                                 s_png, "mimeType", "image/png", "type", "resource", "resource",
                                 "uri", "test://mixed-content-resource", "mimeType",
                                 "application/json", "text", "{\"test\":\"data\",\"value\":123}"));
}

static void s_error_handling(call_t *c, json_t *args, const tool_task_t *task)
{
    (void)args, (void)task;
    call_reply(c, tool_result("This tool intentionally returns an error for testing", NULL, 1));
}

static void s_schema_tool(call_t *c, json_t *args, const tool_task_t *task)
{
    (void)args, (void)task;
    s_reply_content(c, json_pack("[{s:s,s:s}]", "type", "text", "text", "ok"));
}

/* ---- delayed steps (logging and progress fixtures send three messages ~50 ms apart) */

typedef struct {
    call_t *call;
    int kind; /* 'L' logging, 'P' progress, 'R' reconnection */
    int step;
} steps_t;

static void s_step(loop_t *loop, void *arg)
{
    steps_t *s = arg;
    call_t *c = s->call;
    static const char *logs[] = {"Tool execution started", "Tool processing data",
                                 "Tool execution completed"};
    if (call_alive(c) && s->kind == 'L') {
        call_log(c, LOGLEVEL_INFO, "conformance", json_string(logs[s->step]));
    } else if (call_alive(c) && s->kind == 'P' && c->progress_token) {
        json_t *p = json_pack("{s:O,s:i,s:i}", "progressToken", c->progress_token, "progress",
                              50 * s->step, "total", 100);
        call_send(c, rpc_notification("notifications/progress", p));
    }
    if (++s->step < 3 && s->kind != 'R') {
        loop_timer_add(loop, 50, 0, s_step, s);
        return;
    }
    const char *text = s->kind == 'L'   ? "Logging test completed"
                       : s->kind == 'P' ? "Progress test completed"
                                        : "Reconnection test completed";
    call_reply(c, json_pack("{s:[{s:s,s:s}]}", "content", "type", "text", "text", text));
    call_release(c);
    free(s);
}

static void s_steps(call_t *c, int kind)
{
    steps_t *s = xcalloc(1, sizeof *s);
    s->call = c;
    s->kind = kind;
    call_hold(c);
    if (kind == 'R')
        loop_timer_add(c->fe->loop, 100, 0, s_step, s);
    else
        s_step(c->fe->loop, s);
}

static void s_with_logging(call_t *c, json_t *args, const tool_task_t *task)
{
    (void)args, (void)task;
    s_steps(c, 'L');
}

static void s_with_progress(call_t *c, json_t *args, const tool_task_t *task)
{
    (void)args, (void)task;
    s_steps(c, 'P');
}

static void s_reconnection(call_t *c, json_t *args, const tool_task_t *task)
{
    (void)args, (void)task;
    s_steps(c, 'R');
}

/* The JSON stays laid out as JSON. */
/* clang-format off */
const tool_t fixtures_tools[] = {
    {.name = "test_simple_text", .description = "Returns simple text", .input_schema = NO_ARGS, .run = s_simple_text},
    {.name = "test_image_content", .description = "Returns an image", .input_schema = NO_ARGS, .run = s_image_content},
    {.name = "test_audio_content", .description = "Returns audio", .input_schema = NO_ARGS, .run = s_audio_content},
    {.name = "test_embedded_resource", .description = "Returns an embedded resource", .input_schema = NO_ARGS, .run = s_embedded_resource},
    {.name = "test_multiple_content_types", .description = "Returns mixed content", .input_schema = NO_ARGS, .run = s_multiple_content},
    {.name = "test_tool_with_logging", .description = "Sends three log messages", .input_schema = NO_ARGS, .run = s_with_logging},
    {.name = "test_tool_with_progress", .description = "Reports progress", .input_schema = NO_ARGS, .run = s_with_progress},
    {.name = "test_error_handling", .description = "Always fails", .input_schema = NO_ARGS, .run = s_error_handling},
    {.name = "test_reconnection", .description = "Answers after a short delay", .input_schema = NO_ARGS, .run = s_reconnection},
    {.name = "json_schema_2020_12_tool", .description = "Tool with JSON Schema 2020-12 features",
     .input_schema = "{\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"type\":\"object\",\"$defs\":{\"address\":{\"$anchor\":\"addressDef\",\"type\":\"object\","
       "\"properties\":{\"street\":{\"type\":\"string\"},\"city\":{\"type\":\"string\"}}}},\"properties\":{\"name\":{\"type\":\"string\"},"
       "\"address\":{\"$ref\":\"#/$defs/address\"},\"contactMethod\":{\"type\":\"string\",\"enum\":[\"phone\",\"email\"]},\"phone\":{\"type\":\"string\"},"
       "\"email\":{\"type\":\"string\"}},\"allOf\":[{\"anyOf\":[{\"required\":[\"phone\"]},{\"required\":[\"email\"]}]}],"
       "\"if\":{\"properties\":{\"contactMethod\":{\"const\":\"phone\"}},\"required\":[\"contactMethod\"]},\"then\":{\"required\":[\"phone\"]},"
       "\"else\":{\"required\":[\"email\"]},\"additionalProperties\":false}",
     .run = s_schema_tool},
    {NULL},
};
/* clang-format on */

/* ---- resources */

json_t *fixtures_resources(void)
{
    return json_pack("[{s:s,s:s,s:s,s:s},{s:s,s:s,s:s,s:s},{s:s,s:s,s:s,s:s}]", "uri",
                     "test://static-text", "name", "static-text", "description",
                     "A static text resource", "mimeType", "text/plain", "uri",
                     "test://static-binary", "name", "static-binary", "description",
                     "A static binary resource", "mimeType", "image/png", "uri",
                     "test://watched-resource", "name", "watched-resource", "description",
                     "A resource that can be subscribed to", "mimeType", "text/plain");
}

json_t *fixtures_resource_templates(void)
{
    return json_pack("[{s:s,s:s,s:s,s:s}]", "uriTemplate", "test://template/{id}/data", "name",
                     "template-data", "description", "Data for an id", "mimeType",
                     "application/json");
}

json_t *fixtures_read(const char *uri)
{
    if (!strcmp(uri, "test://static-text"))
        return json_pack("{s:[{s:s,s:s,s:s}]}", "contents", "uri", uri, "mimeType", "text/plain",
                         "text", "This is the content of the static text resource.");
    if (!strcmp(uri, "test://static-binary"))
        return json_pack("{s:[{s:s,s:s,s:s}]}", "contents", "uri", uri, "mimeType", "image/png",
                         "blob", s_png);
    if (!strcmp(uri, "test://watched-resource"))
        return json_pack("{s:[{s:s,s:s,s:s}]}", "contents", "uri", uri, "mimeType", "text/plain",
                         "text", "watched");
    const char *prefix = "test://template/";
    size_t pl = strlen(prefix), ul = strlen(uri);
    if (!strncmp(uri, prefix, pl) && ul > pl + 5 && !strcmp(uri + ul - 5, "/data")) {
        char id[64];
        snprintf(id, sizeof id, "%.*s", (int)(ul - pl - 5), uri + pl);
        json_t *payload =
            json_pack("{s:s,s:b,s:s+}", "id", id, "templateTest", 1, "data", "Data for ID: ", id);
        char *text = json_dumps(payload, JSON_COMPACT);
        json_decref(payload);
        json_t *r = json_pack("{s:[{s:s,s:s,s:s}]}", "contents", "uri", uri, "mimeType",
                              "application/json", "text", text);
        free(text);
        return r;
    }
    return NULL;
}

int fixtures_subscribable(const char *uri)
{
    return !strncmp(uri, "test://", 7);
}

/* ---- prompts */

json_t *fixtures_prompts(void)
{
    return json_pack("[{s:s,s:s},{s:s,s:s,s:[{s:s,s:s,s:b},{s:s,s:s,s:b}]},{s:s,s:s,s:[{s:s,s:s,s:"
                     "b}]},{s:s,s:s}]",
                     "name", "test_simple_prompt", "description", "A simple prompt", "name",
                     "test_prompt_with_arguments", "description", "A prompt with arguments",
                     "arguments", "name", "arg1", "description", "First argument", "required", 1,
                     "name", "arg2", "description", "Second argument", "required", 1, "name",
                     "test_prompt_with_embedded_resource", "description",
                     "A prompt with an embedded resource", "arguments", "name", "resourceUri",
                     "description", "URI of the resource to embed", "required", 1, "name",
                     "test_prompt_with_image", "description", "A prompt with an image");
}

static json_t *s_text_message(const char *text)
{
    return json_pack("{s:s,s:{s:s,s:s}}", "role", "user", "content", "type", "text", "text", text);
}

json_t *fixtures_prompt_get(const char *name, const json_t *args)
{
    if (!strcmp(name, "test_simple_prompt"))
        return json_pack("{s:[o]}", "messages",
                         s_text_message("This is a simple prompt for testing."));
    if (!strcmp(name, "test_prompt_with_arguments")) {
        const char *a1 = json_string_value(json_object_get(args, "arg1")),
                   *a2 = json_string_value(json_object_get(args, "arg2"));
        buf_t b;
        buf_init(&b);
        buf_printf(&b, "Prompt with arguments: arg1='%s', arg2='%s'", a1 ? a1 : "", a2 ? a2 : "");
        json_t *r = json_pack("{s:[o]}", "messages", s_text_message((const char *)b.data));
        buf_free(&b);
        return r;
    }
    if (!strcmp(name, "test_prompt_with_embedded_resource")) {
        const char *uri = json_string_value(json_object_get(args, "resourceUri"));
        return json_pack("{s:[{s:s,s:{s:s,s:{s:s,s:s,s:s}}},o]}", "messages", "role", "user",
                         "content", "type", "resource", "resource", "uri",
                         uri ? uri : "test://example-resource", "mimeType", "text/plain", "text",
                         "Embedded resource content for testing.",
                         s_text_message("Please process the embedded resource above."));
    }
    if (!strcmp(name, "test_prompt_with_image"))
        return json_pack("{s:[{s:s,s:{s:s,s:s,s:s}},o]}", "messages", "role", "user", "content",
                         "type", "image", "data", s_png, "mimeType", "image/png",
                         s_text_message("Please analyze the image above."));
    return NULL;
}

json_t *fixtures_complete(const char *ref_name, const char *arg, const char *value)
{
    (void)arg;
    if (strcmp(ref_name, "test_prompt_with_arguments") != 0) return NULL;
    static const char *words[] = {"paris", "park", "party", "test", "testing", NULL};
    json_t *values = json_array();
    for (int i = 0; words[i]; i++)
        if (!strncmp(words[i], value, strlen(value)))
            json_array_append_new(values, json_string(words[i]));
    return values;
}
