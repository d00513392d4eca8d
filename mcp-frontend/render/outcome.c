/* mcp-frontend/render/outcome.c — see outcome.h. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base64.h"
#include "common/ids.h"
#include "common/utf8.h"
#include "mcp-frontend/rpc/jsonrpc.h"
#include "outcome.h"
#include "rich.h"

static json_t *s_variables(const result_t *res)
{
    if (!res->variables) return json_object();
    json_t *v = json_loads(res->variables, JSON_REJECT_DUPLICATES, NULL);
    if (json_is_object(v)) return v;
    json_decref(v);
    return json_object();
}

static json_t *s_error(const result_t *res)
{
    if (!res->error.present) return json_null();
    return json_pack("{s:o,s:o,s:o,s:o}", "type",
                     json_str_safe(res->error.type ? res->error.type : "Error"), "message",
                     json_str_safe(res->error.message ? res->error.message : ""), "traceback",
                     json_str_safe(res->error.traceback), "line",
                     res->error.line > 0 ? json_integer(res->error.line) : json_null());
}

json_t *outcome_egress(const result_egress_list_t *l)
{
    json_t *a = json_array();
    for (size_t i = 0; i < l->n; i++) {
        const result_egress_t *e = &l->list[i];
        json_array_append_new(
            a, json_pack("{s:o,s:I,s:o,s:o,s:I,s:I,s:I}", "host", json_str_safe(e->host), "port",
                         (json_int_t)e->port, "verdict", json_str_safe(e->verdict), "reason",
                         json_str_safe(e->reason), "connections", (json_int_t)e->connections,
                         "bytes_out", (json_int_t)e->bytes_out, "bytes_in",
                         (json_int_t)e->bytes_in));
    }
    return a;
}

json_t *outcome_security_events(const result_t *res)
{
    json_t *events = json_array();
    for (size_t i = 0; i < res->n_events; i++) {
        const result_event_t *e = &res->events[i];
        json_array_append_new(events,
                              json_pack("{s:o,s:o,s:o,s:I}", "operation",
                                        json_str_safe(e->operation ? e->operation : ""), "target",
                                        json_str_safe(e->target), "layer",
                                        json_str_safe(e->layer ? e->layer : ""), "count",
                                        (json_int_t)e->count));
    }
    return events;
}

static json_t *s_structured(const char *id, const result_t *res)
{
    json_t *s = json_object();
    json_object_set_new(s, "execution_id", json_string(id));
    json_object_set_new(s, "status", json_string(status_name(res->status)));
    json_object_set_new(s, "stdout", json_bytes(res->out, res->out_len));
    json_object_set_new(s, "stderr", json_bytes(res->err, res->err_len));
    json_object_set_new(s, "truncated",
                        json_pack("{s:b,s:b,s:b,s:b,s:b,s:b}", "stdout", res->out_truncated,
                                  "stderr", res->err_truncated, "images", res->images_truncated,
                                  "files", res->files_truncated, "outputs",
                                  res->outputs_truncated, "security_events",
                                  res->events_truncated));
    json_object_set_new(s, "result", json_str_safe(res->result));
    json_object_set_new(s, "variables", s_variables(res));
    json_object_set_new(s, "error", s_error(res));
    json_object_set_new(s, "timings",
                        json_pack("{s:f,s:f,s:f}", "queue_ms", res->queue_ms, "wall_ms",
                                  res->wall_ms, "cpu_ms", res->cpu_ms));
    json_object_set_new(s, "resources",
                        json_pack("{s:I}", "max_rss_kb", (json_int_t)res->max_rss_kb));
    json_object_set_new(s, "exit",
                        json_pack("{s:o,s:o,s:o,s:i}", "reason", json_str_safe(res->exit.reason),
                                  "signal",
                                  res->exit.signal ? json_integer(res->exit.signal) : json_null(),
                                  "syscall", json_str_safe(res->exit.syscall), "code",
                                  res->exit.code));
    json_object_set_new(s, "security_events", outcome_security_events(res));
    json_t *images = json_array();
    for (size_t i = 0; i < res->n_images; i++) {
        const result_image_t *im = &res->images[i];
        json_array_append_new(
            images, json_pack("{s:s,s:I,s:I,s:I}", "mime", im->mime ? im->mime : "image/png",
                              "width", (json_int_t)im->width, "height", (json_int_t)im->height,
                              "bytes", (json_int_t)im->len));
    }
    json_object_set_new(s, "images", images);
    json_object_set_new(s, "files", rich_files(id, res));
    json_object_set_new(s, "outputs", rich_outputs(res));
    if (res->egress.n) json_object_set_new(s, "egress", outcome_egress(&res->egress));
    if (res->session.present) { /* a session's cell */
        char sid[ID_STR_LEN + 1];
        id_format(res->session.id, sid);
        json_object_set_new(s, "session_id", json_string(sid));
        json_object_set_new(s, "cell", json_integer(res->session.cell));
        json_t *so = json_pack("{s:b,s:o,s:I}", "alive", res->session.alive, "end_reason",
                               json_str_safe(res->session.end_reason), "memory_in_use_mb",
                               (json_int_t)((res->session.memory_kb + 512) >> 10));
        if (res->session.atomic) {
            json_object_set_new(so, "atomic", json_true());
            json_object_set_new(so, "rolled_back", json_boolean(res->session.rolled_back));
        }
        json_t *resumed = res->session.resumed ? json_loads(res->session.resumed, 0, NULL) : NULL;
        if (resumed) json_object_set_new(so, "resumed", resumed);
        json_object_set_new(s, "session", so);
    }
    return s;
}

/* What the model reads of a long text: its head and its tail, since the start says what
 * the code set out to do and the end how it finished (the last lines printed, the exception).
 * The middle goes; structuredContent keeps every byte. Cuts fall on a line break near the
 * budget when there is one, and never inside a UTF-8 sequence. */
#define CLIP_HEAD  2000 /* bytes of a stream's head in the text */
#define CLIP_TAIL  2000 /* and of its tail */
#define CLIP_SLACK 512  /* a text at most this much over head + tail is shown whole */

static size_t s_head_cut(const char *s, size_t len, size_t max)
{
    size_t n = utf8_prefix(s, len, max);
    for (size_t i = n; i > n / 2; i--)
        if (s[i - 1] == '\n') return i;
    return n;
}

static size_t s_tail_start(const char *s, size_t len, size_t max)
{
    size_t start = len - max;
    for (size_t i = start; i < start + max / 2; i++)
        if (s[i] == '\n') return i + 1;
    while (start < len && ((unsigned char)s[start] & 0xC0) == 0x80) start++;
    return start;
}

static size_t s_count_lines(const char *s, size_t len)
{
    size_t n = 0;
    for (const char *p = s; (p = memchr(p, '\n', len - (size_t)(p - s))) != NULL; p++) n++;
    return n;
}

static void s_end_line(buf_t *b)
{
    if (b->len && b->data[b->len - 1] != '\n') buf_puts(b, "\n");
}

/* Appends s (len bytes), clipped to head and tail; where names what is left out. */
static void s_append_clipped(buf_t *b, const char *s, size_t len, const char *where)
{
    if (len <= CLIP_HEAD + CLIP_TAIL + CLIP_SLACK) {
        utf8_sanitize(b, s, len);
    } else {
        size_t head = s_head_cut(s, len, CLIP_HEAD), tail = s_tail_start(s, len, CLIP_TAIL);
        utf8_sanitize(b, s, head);
        if (head && s[head - 1] != '\n') buf_puts(b, "\n");
        buf_printf(b, "[... %zu bytes (%zu lines) left out here; the whole text is in %s ...]\n",
                   tail - head, s_count_lines(s + head, tail - head), where);
        utf8_sanitize(b, s + tail, len - tail);
    }
}

static void s_append_stream(buf_t *b, const char *name, const char *data, size_t len, int truncated)
{
    if (!len) return;
    char where[48];
    snprintf(where, sizeof where, "structuredContent.%s", name);
    buf_printf(b, "%s:\n", name);
    s_append_clipped(b, data, len, where);
    s_end_line(b);
    if (truncated) buf_printf(b, "[%s was cut at the output limit]\n", name);
}

/* The exception: its summary line, then the traceback (which ends with type and message). */
static void s_append_error(buf_t *b, const result_t *res)
{
    const char *type = res->error.type ? res->error.type : "Error";
    const char *msg = res->error.message ? res->error.message : "";
    const char *tb = res->error.traceback;
    buf_puts(b, "error: ");
    utf8_sanitize(b, type, strlen(type));
    if (tb && *tb) {
        if (res->error.line > 0) buf_printf(b, " at line %ld", res->error.line);
        buf_puts(b, "\n");
        s_append_clipped(b, tb, strlen(tb), "structuredContent.error.traceback");
        s_end_line(b);
        return;
    }
    if (*msg) {
        buf_puts(b, ": ");
        s_append_clipped(b, msg, strlen(msg), "structuredContent.error.message");
    }
    if (res->error.line > 0) buf_printf(b, " (line %ld)", res->error.line);
    buf_puts(b, "\n");
}

/* What the sandbox refused, one line: whether the code went on (its status is its own) or a
 * refusal ended it (security_violation). */
static void s_append_events(buf_t *b, const result_t *res)
{
    if (!res->n_events) return;
    buf_puts(b, res->status == ST_SECURITY_VIOLATION
                    ? "refused by the sandbox: "
                    : "refused by the sandbox (the code went on): ");
    for (size_t i = 0; i < res->n_events; i++) {
        const result_event_t *e = &res->events[i];
        if (i) buf_puts(b, "; ");
        utf8_sanitize(b, e->operation ? e->operation : "", e->operation ? strlen(e->operation) : 0);
        if (e->target) {
            buf_puts(b, " ");
            utf8_sanitize(b, e->target, utf8_prefix(e->target, strlen(e->target), 120));
        }
        buf_puts(b, " [");
        utf8_sanitize(b, e->layer ? e->layer : "?", e->layer ? strlen(e->layer) : 1);
        buf_puts(b, "]");
        if (e->count > 1) buf_printf(b, " x%u", e->count);
    }
    buf_puts(b, res->events_truncated ? "; and more\n" : "\n");
}

/* The text block: what a model that ignores structuredContent needs to see — how the run
 * ended, what it printed (head and tail), its value, and the traceback of its exception. */
static void s_summary(buf_t *b, const result_t *res)
{
    buf_printf(b, "status: %s (wall %.1f ms", status_name(res->status), res->wall_ms);
    if (res->queue_ms >= 1) buf_printf(b, ", queued %.1f ms", res->queue_ms);
    buf_puts(b, ")\n");
    s_append_stream(b, "stdout", res->out, res->out_len, res->out_truncated);
    s_append_stream(b, "stderr", res->err, res->err_len, res->err_truncated);
    if (res->result) {
        buf_puts(b, "result: ");
        s_append_clipped(b, res->result, strlen(res->result), "structuredContent.result");
        s_end_line(b);
    }
    if (res->error.present) s_append_error(b, res);
    if (res->exit.code) buf_printf(b, "exit code: %d\n", res->exit.code);
    if (res->exit.syscall) buf_printf(b, "blocked: %.100s\n", res->exit.syscall);
    s_append_events(b, res);
    if (res->n_images)
        buf_printf(b, "figures: %zu PNG image%s (image content below)\n", res->n_images,
                   res->n_images > 1 ? "s" : "");
    if (res->images_truncated)
        buf_puts(b, "[some figures were left out: at most 8 images, 2 MiB each and 4 MiB in all; "
                    "close figures you do not need]\n");
    for (size_t i = 0; i < res->n_files; i++) {
        buf_puts(b, i ? ", " : "files written (in structuredContent.files): ");
        utf8_sanitize(b, res->files[i].path, strlen(res->files[i].path));
        buf_printf(b, " (%zu bytes)", res->files[i].len);
        if (i + 1 == res->n_files) buf_puts(b, "\n");
    }
    if (res->files_truncated)
        buf_puts(b, "[some files were left out: at most 32 files and 8 MiB in all are returned]\n");
    for (size_t i = 0; i < res->egress.n; i++) { /* the network, destination by destination */
        const result_egress_t *e = &res->egress.list[i];
        buf_puts(b, i ? "; " : "network: ");
        utf8_sanitize(b, e->host ? e->host : "?", e->host ? strlen(e->host) : 1);
        buf_printf(b, ":%u %s (%llu B out, %llu B in)", e->port, e->verdict ? e->verdict : "?",
                   (unsigned long long)e->bytes_out, (unsigned long long)e->bytes_in);
        if (i + 1 == res->egress.n) buf_puts(b, "\n");
    }
    if (res->session.present && res->session.cell)
        buf_printf(b, "session cell %u%s\n", res->session.cell,
                   res->session.alive ? "" : "; the session has ended");
    if (res->session.present && res->session.rolled_back)
        buf_puts(b, "atomic cell rolled back: the session, its variables and its files are as "
                    "they were before this cell\n");
    if (res->session.present && res->session.resumed_note) {
        utf8_sanitize(b, res->session.resumed_note, strlen(res->session.resumed_note));
        buf_puts(b, "\n");
    }
    if (res->session.present && !res->session.alive && res->session.end_reason) {
        buf_puts(b, "session ended: ");
        utf8_sanitize(b, res->session.end_reason, strlen(res->session.end_reason));
        buf_puts(b, "\n");
    }
}

json_t *tool_result(const char *text, json_t *structured, int is_error)
{
    json_t *r =
        json_pack("{s:[{s:s,s:o}]}", "content", "type", "text", "text", json_str_safe(text));
    if (structured) json_object_set_new(r, "structuredContent", structured);
    json_object_set_new(r, "isError", json_boolean(is_error));
    return r;
}

json_t *outcome_execute(const char *id, const result_t *res)
{
    buf_t b;
    buf_init(&b);
    s_summary(&b, res);
    json_t *r = tool_result((const char *)b.data, s_structured(id, res), res->status != ST_OK);
    buf_free(&b);
    json_t *content = json_object_get(r, "content");
    for (size_t i = 0; i < res->n_images; i++) {
        const result_image_t *im = &res->images[i];
        buf_t d;
        buf_init(&d);
        base64_encode(&d, im->data, im->len);
        json_array_append_new(content, json_pack("{s:s,s:s%,s:s}", "type", "image", "data",
                                                 (const char *)d.data, d.len, "mimeType",
                                                 im->mime ? im->mime : "image/png"));
        buf_free(&d);
    }
    rich_blocks(content, id, res);
    return r;
}

json_t *outcome_validate(const char *id, const result_t *res)
{
    (void)id;
    json_t *v = res->validation ? json_loads(res->validation, JSON_REJECT_DUPLICATES, NULL) : NULL;
    if (res->status != ST_OK || !json_is_object(v)) {
        json_decref(v);
        buf_t b;
        buf_init(&b);
        buf_printf(&b, "validation could not run: %s", status_name(res->status));
        if (res->error.present && res->error.message)
            buf_printf(&b, ": %.500s", res->error.message);
        json_t *s = json_pack("{s:b,s:[o],s:[],s:[],s:s,s:{},s:[]}", "valid", 0, "errors",
                              json_str_safe((const char *)b.data), "warnings", "details", "message",
                              "validation failed to run", "analysis", "recommendations");
        json_t *r = tool_result((const char *)b.data, s, 1);
        buf_free(&b);
        return r;
    }
    buf_t b;
    buf_init(&b);
    int valid = json_is_true(json_object_get(v, "valid"));
    buf_printf(&b, "%s\n",
               valid ? "valid: the code parses and uses only allowed modules" : "not valid:");
    json_t *e;
    size_t i;
    json_array_foreach(json_object_get(v, "errors"), i, e)
        buf_printf(&b, "- %s\n", json_is_string(e) ? json_string_value(e) : "?");
    json_array_foreach(json_object_get(v, "warnings"), i, e)
        buf_printf(&b, "- warning: %s\n", json_is_string(e) ? json_string_value(e) : "?");
    json_t *r = tool_result((const char *)b.data, v, 0);
    buf_free(&b);
    return r;
}

/* ---- what the front-end decided */

static void s_adjusted_lines(buf_t *b, const json_t *adjusted)
{
    const char *name;
    json_t *a;
    json_object_foreach((json_t *)adjusted, name, a)
    {
        const char *unit = json_string_value(json_object_get(a, "unit"));
        const char *why = json_string_value(json_object_get(a, "why"));
        buf_printf(b, "note: %s %g %s asked for, %g %s used (%s)\n", name,
                   json_number_value(json_object_get(a, "requested")), unit ? unit : "",
                   json_number_value(json_object_get(a, "used")), unit ? unit : "",
                   why ? why : "a maximum");
    }
}

void outcome_annotate(json_t *r, const char *profile, const char *reason, const json_t *adjusted)
{
    json_t *sc = json_object_get(r, "structuredContent");
    if (json_is_object(sc)) {
        json_object_set_new(sc, "profile", json_string(profile));
        if (reason) json_object_set_new(sc, "profile_reason", json_str_safe(reason));
        if (adjusted) json_object_set(sc, "limits_adjusted", (json_t *)adjusted);
    }
    json_t *block = json_array_get(json_object_get(r, "content"), 0);
    const char *text = json_string_value(json_object_get(block, "text"));
    if (!text) return;
    buf_t b;
    buf_init(&b);
    const char *nl = strchr(text, '\n'); /* after the status line */
    size_t head = nl ? (size_t)(nl - text) + 1 : strlen(text);
    buf_append(&b, text, head);
    if (!nl) buf_puts(&b, "\n");
    buf_printf(&b, "profile: %s", profile);
    if (reason) buf_printf(&b, " (%s)", reason);
    buf_puts(&b, "\n");
    if (adjusted) s_adjusted_lines(&b, adjusted);
    buf_puts(&b, text + head);
    json_object_set_new(block, "text", json_str_safe((const char *)b.data));
    buf_free(&b);
}
