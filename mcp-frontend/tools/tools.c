/* mcp-frontend/tools/tools.c — see tools.h. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/utf8.h"
#include "mcp-frontend/render/outcome.h"
#include "mcp-frontend/render/proftext.h"
#include "mcp-frontend/rpc/fe.h"
#include "mcp-frontend/rpc/page.h"
#include "mcp-frontend/rpc/paramheaders.h"
#include "tools.h"

struct tools {
    long page_size;
    const tool_t **rows; /* in tools/list order */
    size_t n;
    json_t *defs;             /* the published Tool objects, parallel to rows */
    json_t *defs_modern;      /* the same for 2026-07-28, which has no Tool.execution */
    unsigned generation;      /* proftext's when defs were made: made again when it changes */
    paramheaders_t **mirrors; /* each row's Mcp-Param-* declarations, parallel to rows (or NULL) */
    tools_stats_t stats;
};

static const struct {
    const char *schema_type; /* JSON text */
    const char *words;       /* for "x must be ..." */
} s_types[] = {
    [ARG_STRING] = {"\"string\"", "a string"},
    [ARG_NUMBER] = {"\"number\"", "a number"},
    [ARG_INTEGER] = {"\"integer\"", "an integer"},
    [ARG_BOOLEAN] = {"\"boolean\"", "a boolean"},
    [ARG_ARRAY] = {"\"array\"", "an array"},
    [ARG_OBJECT] = {"\"object\"", "an object"},
    [ARG_SIZE] = {NULL, "MB as an integer, or a string like \"256m\""},
};

/* ARG_SIZE takes either spelling. Not as a type array ("type": ["integer", "string"]): some
 * clients map tool schemas onto a one-type-per-node dialect (the OpenAPI subset of Gemini's
 * function declarations) and reject or flatten it; one `type` per anyOf branch ports
 * everywhere (the MCP Inspector's --strict lint asks for exactly this). */
static const char s_size_schema[] =
    "{\"anyOf\": [{\"type\": \"integer\", \"minimum\": 1}, {\"type\": \"string\", "
    "\"pattern\": \"^\\\\s*[0-9.]+ *[kKmMgG]?[iI]?[bB]?$\"}]}";

static int s_type_ok(arg_type_t type, const json_t *v)
{
    switch (type) {
    case ARG_STRING:
        return json_is_string(v);
    case ARG_NUMBER:
        return json_is_number(v);
    case ARG_INTEGER:
        return json_is_integer(v);
    case ARG_BOOLEAN:
        return json_is_boolean(v);
    case ARG_ARRAY:
        return json_is_array(v);
    case ARG_OBJECT:
        return json_is_object(v);
    case ARG_SIZE:
        return json_is_number(v) || json_is_string(v);
    }
    return 0;
}

/* ---- definitions */

static json_t *s_json(const char *text, const char *what, const char *tool)
{
    json_error_t err;
    json_t *v = json_loads(text, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &err);
    if (!v) {
        fprintf(stderr, "tools: %s of %s: %s at %d\n", what, tool, err.text, err.position);
        abort(); /* a row of a compiled-in table is wrong */
    }
    return v;
}

static json_t *s_text(const char *template)
{
    char *s = proftext(template);
    json_t *v = json_string(s);
    free(s);
    return v;
}

static json_t *s_property(const tool_t *t, const tool_arg_t *a)
{
    json_t *p = a->type == ARG_SIZE ? s_json(s_size_schema, "a size", t->name) : json_object();
    if (s_types[a->type].schema_type)
        json_object_set_new(p, "type", s_json(s_types[a->type].schema_type, "a type", t->name));
    if (a->description) json_object_set_new(p, "description", s_text(a->description));
    if (a->flags & ARG_PROFILE) { /* the served ones: a client may check a call against them */
        json_t *names = json_array();
        for (size_t i = 0; i < n_profiles; i++)
            if (proftext_is_served(&profiles[i]))
                json_array_append_new(names, json_string(profiles[i].name));
        json_object_set_new(p, "enum", names);
    }
    if (a->schema) {
        char *text;
        if (asprintf(&text, "{%s}", a->schema) < 0) abort();
        json_t *more = s_json(text, a->name, t->name);
        free(text);
        json_object_update(p, more);
        json_decref(more);
    }
    return p;
}

static json_t *s_input_schema(const tool_t *t)
{
    if (t->input_schema) return s_json(t->input_schema, "inputSchema", t->name);
    json_t *props = json_object(), *required = json_array();
    for (const tool_arg_t *a = t->args; a && a->name; a++) {
        json_object_set_new(props, a->name, s_property(t, a));
        if (a->flags & ARG_REQUIRED) json_array_append_new(required, json_string(a->name));
    }
    json_t *s = json_pack("{s:s,s:b}", "type", "object", "additionalProperties", 0);
    if (json_array_size(required))
        json_object_set_new(s, "required", required);
    else
        json_decref(required);
    json_object_set_new(s, "properties", props);
    return s;
}

static json_t *s_definition(const tool_t *t)
{
    json_t *d = json_pack("{s:s}", "name", t->name);
    if (t->title) json_object_set_new(d, "title", json_string(t->title));
    json_object_set_new(d, "description", s_text(t->description));
    json_object_set_new(d, "inputSchema", s_input_schema(t));
    if (t->output_schema)
        json_object_set_new(d, "outputSchema", s_json(t->output_schema, "outputSchema", t->name));
    if (t->tasks)
        json_object_set_new(d, "execution", json_pack("{s:s}", "taskSupport", "optional"));
    if (t->annotations)
        json_object_set_new(d, "annotations", s_json(t->annotations, "annotations", t->name));
    return d;
}

tools_t *tools_new(long page_size)
{
    tools_t *self = xcalloc(1, sizeof *self);
    self->page_size = page_size;
    self->defs = json_array();
    self->defs_modern = json_array();
    return self;
}

void tools_destroy(tools_t **self_p)
{
    tools_t *self = *self_p;
    if (!self) return;
    json_decref(self->defs);
    json_decref(self->defs_modern);
    for (size_t i = 0; i < self->n; i++) paramheaders_destroy(&self->mirrors[i]);
    free(self->mirrors);
    free(self->rows);
    free(self);
    *self_p = NULL;
}

/* The published definitions, made again from the rows when the profiles served changed. */
static void s_make_defs(tools_t *self)
{
    json_array_clear(self->defs);
    json_array_clear(self->defs_modern);
    for (size_t i = 0; i < self->n; i++) {
        json_t *d = s_definition(self->rows[i]);
        json_t *m = json_deep_copy(d);
        json_object_del(m,
                        "execution"); /* tasks there are the server's choice (tasks_extension.h) */
        json_array_append_new(self->defs, d);
        json_array_append_new(self->defs_modern, m);
    }
    self->generation = proftext_generation();
}

void tools_add(tools_t *self, const tool_t *table)
{
    for (const tool_t *t = table; t->name; t++) {
        self->rows = xrealloc(self->rows, (self->n + 1) * sizeof *self->rows);
        self->mirrors = xrealloc(self->mirrors, (self->n + 1) * sizeof *self->mirrors);
        json_t *d = s_definition(t);
        char err[300];
        self->mirrors[self->n] =
            paramheaders_scan(json_object_get(d, "inputSchema"), err, sizeof err);
        json_decref(d);
        if (err[0]) { /* conforming clients would drop the tool: the row is wrong */
            fprintf(stderr, "tools: %s: %s\n", t->name, err);
            abort();
        }
        self->rows[self->n++] = t;
    }
    s_make_defs(self);
}

const tools_stats_t *tools_stats(const tools_t *self)
{
    return &self->stats;
}

/* ---- calls */

/* A JSON-RPC error: for what is wrong with the request itself (MCP 2025-11-25 tools §"Error
 * Handling": an unknown tool, a request that fails CallToolRequest's schema). */
static int s_protocol_error(call_t *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int s_protocol_error(call_t *c, const char *fmt, ...)
{
    char msg[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    c->fe->tools->stats.invalid_args++;
    call_error(c, RPC_INVALID_PARAMS, msg, NULL);
    return -1;
}

json_t *tool_error(const char *kind, const char *argument, const char *text)
{
    json_t *r = tool_result(text, NULL, 1);
    json_t *e = json_pack("{s:s}", "kind", kind);
    if (argument) json_object_set_new(e, "argument", json_string(argument));
    json_object_set_new(r, "_meta", json_pack("{s:o}", TOOL_ERROR_META, e));
    return r;
}

static int s_refuse(call_t *c, const char *kind, const char *argument, const char *fmt, va_list ap)
{
    char msg[1200];
    vsnprintf(msg, sizeof msg, fmt, ap);
    if (!strcmp(kind, TOOL_INVALID_ARGUMENT)) c->fe->tools->stats.invalid_args++;
    call_reply(c, tool_error(kind, argument, msg));
    return -1;
}

int tool_bad(call_t *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    s_refuse(c, TOOL_INVALID_ARGUMENT, NULL, fmt, ap);
    va_end(ap);
    return -1;
}

int tool_bad_arg(call_t *c, const char *argument, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    s_refuse(c, TOOL_INVALID_ARGUMENT, argument, fmt, ap);
    va_end(ap);
    return -1;
}

int tool_refuse(call_t *c, const char *kind, const char *argument, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    s_refuse(c, kind, argument, fmt, ap);
    va_end(ap);
    return -1;
}

tools_t *tools_of(const struct fe *fe, const endpoint_t *ep)
{
    return ep ? ep->tools : fe->tools;
}

static tools_t *s_table(const call_t *c)
{
    return tools_of(c->fe, c->endpoint);
}

void tools_list(call_t *c)
{
    tools_t *self = s_table(c);
    if (self->generation != proftext_generation()) s_make_defs(self);
    page_reply(c, c->modern ? self->defs_modern : self->defs, "tools", "t", self->page_size);
}

static long s_index(const tools_t *self, const char *name)
{
    for (size_t i = 0; i < self->n; i++)
        if (!strcmp(self->rows[i]->name, name)) return (long)i;
    return -1;
}

static const tool_t *s_find(const tools_t *self, const char *name)
{
    long i = s_index(self, name);
    return i < 0 ? NULL : self->rows[i];
}

const paramheaders_t *tools_mirrors(const tools_t *self, const char *name)
{
    long i = name ? s_index(self, name) : -1;
    return i < 0 ? NULL : self->mirrors[i];
}

/* ---- the arguments against the row */

/* The JSON type of what was sent, in words. */
static const char *s_sent_type(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_STRING:
        return "a string";
    case JSON_INTEGER:
        return "an integer";
    case JSON_REAL:
        return "a number";
    case JSON_TRUE:
    case JSON_FALSE:
        return "a boolean";
    case JSON_ARRAY:
        return "an array";
    case JSON_OBJECT:
        return "an object";
    case JSON_NULL:
        return "null";
    }
    return "a value";
}

/* What was sent, as JSON, cut to a short head: enough to recognise, never the whole code. */
static void s_sent(buf_t *b, const json_t *v)
{
    char *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    size_t len = text ? strlen(text) : 0, keep = utf8_prefix(text ? text : "", len, 60);
    buf_append(b, text ? text : "?", text ? keep : 1);
    if (keep < len) buf_puts(b, "...");
    buf_printf(b, " (%s)", s_sent_type(v));
    free(text);
}

/* Edit distance of two short names, at most 3 (more is "not close"). */
static int s_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 64 || lb > 64 || (la > lb ? la - lb : lb - la) > 3) return 4;
    int row[65];
    for (size_t j = 0; j <= lb; j++) row[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        int diag = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int up = row[j], best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            diag = up;
            row[j] = best;
        }
    }
    return row[lb] > 3 ? 4 : row[lb];
}

/* The argument an unknown one was probably meant as: a required one the call left out whose
 * type takes the value (a model that sent `source` for `code`), else one spelt nearly alike. */
static const tool_arg_t *s_meant(const tool_arg_t *list, json_t *args, const char *key,
                                 const json_t *v)
{
    for (const tool_arg_t *a = list; a->name; a++)
        if ((a->flags & ARG_REQUIRED) && !json_object_get(args, a->name) && s_type_ok(a->type, v))
            return a;
    const tool_arg_t *best = NULL;
    int d = 3;
    for (const tool_arg_t *a = list; a->name; a++) {
        int k = s_distance(key, a->name);
        if (k < d || (k == d && !best && k <= 2)) best = a, d = k;
    }
    return best;
}

static void s_expected(buf_t *b, const tool_arg_t *a)
{
    buf_puts(b, s_types[a->type].words);
    if (a->description) {
        buf_puts(b, ": ");
        proftext_expand(b, a->description);
    }
}

/* One problem per line, the arguments the tool takes at the end. */
static void s_arg_problem(buf_t *b, const char **first, const char *arg)
{
    buf_puts(b, "\n- ");
    if (!*first) *first = arg;
}

/* The row's arguments against the call's: each required one present, none unknown, each of
 * its type. Every problem is said at once, each naming the argument, what it takes and what
 * was sent, so that one corrected call succeeds. */
static int s_check_args(call_t *c, const tool_t *t, json_t *args)
{
    static const tool_arg_t none[] = {{NULL}};
    const tool_arg_t *list = t->args ? t->args : none;
    const char *first = NULL, *key;
    json_t *v;
    buf_t b;
    buf_init(&b);
    buf_printf(&b, "Invalid arguments for %s:", t->name);
    for (const tool_arg_t *a = list; a->name; a++) {
        if (!(a->flags & ARG_REQUIRED) || json_object_get(args, a->name)) continue;
        s_arg_problem(&b, &first, a->name);
        buf_printf(&b, "`%s` is required (", a->name);
        s_expected(&b, a);
        buf_puts(&b, "); the call did not send it.");
    }
    json_object_foreach(args, key, v)
    {
        const tool_arg_t *a = list;
        while (a->name && strcmp(a->name, key) != 0) a++;
        if (!a->name) {
            const tool_arg_t *meant = s_meant(list, args, key, v);
            s_arg_problem(&b, &first, key);
            buf_printf(&b, "`%.64s` is not an argument of %s (it was sent ", key, t->name);
            s_sent(&b, v);
            buf_puts(&b, ")");
            if (meant)
                buf_printf(&b, "; did you mean `%s`?", meant->name);
            else
                buf_puts(&b, ".");
            continue;
        }
        if (json_is_null(v) && (a->flags & ARG_NULLABLE)) continue;
        if (s_type_ok(a->type, v)) continue;
        s_arg_problem(&b, &first, a->name);
        buf_printf(&b, "`%s` must be ", a->name);
        s_expected(&b, a);
        buf_puts(&b, "; it was sent ");
        s_sent(&b, v);
        buf_puts(&b, ".");
    }
    if (!first) {
        buf_free(&b);
        return 0;
    }
    buf_printf(&b, "\n%s takes: ", t->name);
    for (const tool_arg_t *a = list; a->name; a++)
        buf_printf(&b, "%s%s%s", a == list ? "" : ", ", a->name,
                   a->flags & ARG_REQUIRED ? " (required)" : "");
    if (list == none) buf_puts(&b, "no arguments");
    buf_puts(&b, ". Its inputSchema (tools/list) describes each.");
    tool_bad_arg(c, first, "%s", (const char *)b.data);
    buf_free(&b);
    return -1;
}

static int s_task(call_t *c, const tool_t *t, tool_task_t *task)
{
    json_t *v = json_object_get(c->params, "task");
    *task = (tool_task_t){.ttl_ms = -1};
    /* 2026-07-28 has no task parameter: a server MUST ignore it (ext-tasks, SEP-2663) */
    if (!v || c->modern) return 0;
    if (!t->tasks)
        return s_protocol_error(c, "tool %.64s does not support task-augmented calls", t->name);
    if (!json_is_object(v)) return s_protocol_error(c, "task must be an object");
    json_t *ttl = json_object_get(v, "ttl");
    if (ttl && !json_is_null(ttl) && (!json_is_integer(ttl) || json_integer_value(ttl) < 0))
        return s_protocol_error(c, "task.ttl must be a non-negative integer (ms)");
    task->wanted = 1;
    if (json_is_integer(ttl)) task->ttl_ms = (long)json_integer_value(ttl);
    return 0;
}

void tools_call(call_t *c)
{
    tools_t *self = s_table(c);
    const char *name = call_str(c, "name");
    if (!name) {
        s_protocol_error(c, "tools/call: \"name\" (string) is required");
        return;
    }
    json_t *args = json_object_get(c->params, "arguments");
    if (args && json_is_null(args)) args = NULL;
    if (args && !json_is_object(args)) {
        s_protocol_error(c, "tools/call: \"arguments\" must be an object");
        return;
    }
    const tool_t *t = s_find(self, name);
    if (!t) {
        c->fe->tools->stats.unknown_tools++; /* counted once for every endpoint */
        s_protocol_error(c, "unknown tool: %.64s (tools/list names the tools)", name);
        return;
    }
    tool_task_t task;
    json_t *empty = args ? NULL : json_object();
    if (!args) args = empty;
    if (s_task(c, t, &task) == 0 && (t->input_schema || s_check_args(c, t, args) == 0))
        t->run(c, args, &task);
    json_decref(empty);
}
