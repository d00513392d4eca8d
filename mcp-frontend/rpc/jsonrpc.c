/* mcp-frontend/rpc/jsonrpc.c — see jsonrpc.h. jansson does the lexing: it rejects invalid UTF-8,
 * raw control bytes and (without JSON_ALLOW_NUL) "\u0000" inside strings; we add duplicate-key
 * rejection and the JSON-RPC shape rules. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/utf8.h"
#include "jsonrpc.h"

static int s_invalid(rpc_msg_t *m, int code, const char *why)
{
    m->kind = RPC_INVALID;
    m->code = code;
    snprintf(m->why, sizeof m->why, "%s", why);
    return -1;
}

/* JSON-RPC ids: strings or numbers; MCP narrows to string or integer, and never null. */
static int s_id_ok(const json_t *id)
{
    return json_is_string(id) || json_is_integer(id);
}

int rpc_parse(const char *data, size_t len, rpc_msg_t *m)
{
    memset(m, 0, sizeof *m);
    json_error_t jerr;
    m->msg = json_loadb(data, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
    if (!m->msg) {
        char why[240];
        snprintf(why, sizeof why, "parse error at byte %d: %.150s", jerr.position, jerr.text);
        return s_invalid(m, RPC_PARSE_ERROR, why);
    }
    if (json_is_array(m->msg))
        return s_invalid(m, RPC_INVALID_REQUEST,
                         "batches are not supported (MCP 2025-06-18 and "
                         "later send one message per request)");
    if (!json_is_object(m->msg))
        return s_invalid(m, RPC_INVALID_REQUEST, "message is not a JSON object");
    json_t *id = json_object_get(m->msg, "id");
    if (id && s_id_ok(id)) m->id = id;
    json_t *ver = json_object_get(m->msg, "jsonrpc");
    if (!json_is_string(ver) || strcmp(json_string_value(ver), "2.0") != 0)
        return s_invalid(m, RPC_INVALID_REQUEST, "\"jsonrpc\" must be \"2.0\"");
    if (id && !s_id_ok(id))
        return s_invalid(m, RPC_INVALID_REQUEST, "\"id\" must be a string or an integer");
    json_t *method = json_object_get(m->msg, "method");
    json_t *result = json_object_get(m->msg, "result");
    json_t *error = json_object_get(m->msg, "error");
    if (method) {
        if (!json_is_string(method) || json_string_length(method) == 0)
            return s_invalid(m, RPC_INVALID_REQUEST, "\"method\" must be a non-empty string");
        if (result || error)
            return s_invalid(m, RPC_INVALID_REQUEST,
                             "a request cannot carry \"result\" or \"error\"");
        m->method = json_string_value(method);
        m->params = json_object_get(m->msg, "params");
        if (m->params && json_is_null(m->params)) m->params = NULL;
        if (m->params && !json_is_object(m->params))
            return s_invalid(m, RPC_INVALID_REQUEST, "\"params\" must be an object");
        m->kind = id ? RPC_REQUEST : RPC_NOTIFICATION;
        return 0;
    }
    if (!id) return s_invalid(m, RPC_INVALID_REQUEST, "message has neither \"method\" nor \"id\"");
    if (!result == !error)
        return s_invalid(m, RPC_INVALID_REQUEST,
                         "a response carries exactly one of \"result\" and \"error\"");
    if (error && (!json_is_object(error) || !json_is_integer(json_object_get(error, "code"))))
        return s_invalid(m, RPC_INVALID_REQUEST,
                         "\"error\" must be an object with an integer code");
    m->kind = RPC_RESPONSE;
    return 0;
}

void rpc_msg_clear(rpc_msg_t *m)
{
    json_decref(m->msg);
    memset(m, 0, sizeof *m);
}

json_t *json_bytes(const char *data, size_t len)
{
    if (!data) return json_string("");
    if (utf8_valid(data, len)) return json_stringn(data, len);
    buf_t b;
    buf_init(&b);
    utf8_sanitize(&b, data, len);
    json_t *j = json_stringn((const char *)b.data, b.len);
    buf_free(&b);
    return j;
}

json_t *json_str_safe(const char *s)
{
    return s ? json_bytes(s, strlen(s)) : json_null();
}

static json_t *s_envelope(const json_t *id)
{
    json_t *msg = json_object();
    json_object_set_new(msg, "jsonrpc", json_string("2.0"));
    json_object_set_new(msg, "id", id ? json_deep_copy(id) : json_null());
    return msg;
}

json_t *rpc_result(const json_t *id, json_t *result)
{
    json_t *msg = s_envelope(id);
    json_object_set_new(msg, "result", result ? result : json_object());
    return msg;
}

json_t *rpc_error(const json_t *id, int code, const char *message, json_t *data)
{
    json_t *msg = s_envelope(id);
    json_t *err = json_object();
    json_object_set_new(err, "code", json_integer(code));
    json_object_set_new(err, "message", json_str_safe(message));
    if (data) json_object_set_new(err, "data", data);
    json_object_set_new(msg, "error", err);
    return msg;
}

json_t *rpc_notification(const char *method, json_t *params)
{
    json_t *msg = json_object();
    json_object_set_new(msg, "jsonrpc", json_string("2.0"));
    json_object_set_new(msg, "method", json_string(method));
    if (params) json_object_set_new(msg, "params", params);
    return msg;
}

/* The shortest of %.15g, %.16g, %.17g that reads back as d (17 always does), into out. A real
 * keeps a '.' or an exponent, as jansson writes one (1.0, not 1). */
static size_t s_shortest(double d, char *out, size_t cap)
{
    int n = 0;
    for (int prec = 15; prec <= 17; prec++) {
        n = snprintf(out, cap, "%.*g", prec, d);
        if (n <= 0 || (size_t)n >= cap) return 0;
        if (strtod(out, NULL) == d) break;
    }
    if (!strpbrk(out, ".eE") && (size_t)n + 2 < cap) {
        memcpy(out + n, ".0", 3);
        n += 2;
    }
    return (size_t)n;
}

char *json_text(const json_t *v, size_t flags)
{
    char *text = json_dumps(v, (flags & ~(size_t)JSON_REAL_PRECISION(31)) | JSON_REAL_PRECISION(17));
    if (!text) return NULL;
    /* Each real token outside strings rewritten in place (a form is used only when it is no
     * longer than jansson's). */
    size_t o = 0;
    int in_string = 0;
    for (size_t i = 0; text[i];) {
        char c = text[i];
        if (in_string) {
            text[o++] = text[i++];
            if (c == '\\' && text[i]) text[o++] = text[i++];
            else if (c == '"') in_string = 0;
            continue;
        }
        if (c == '"') in_string = 1;
        if (c != '-' && (c < '0' || c > '9')) {
            text[o++] = text[i++];
            continue;
        }
        size_t len = strspn(text + i, "0123456789+-.eE");
        char tok[64], shortest[40];
        size_t n = 0;
        if (len < sizeof tok) { /* an integer is left as it is */
            memcpy(tok, text + i, len);
            tok[len] = '\0';
            if (strpbrk(tok, ".eE")) n = s_shortest(strtod(tok, NULL), shortest, sizeof shortest);
        }
        if (n && n <= len) {
            memcpy(text + o, shortest, n);
            o += n;
        } else {
            memmove(text + o, text + i, len);
            o += len;
        }
        i += len;
    }
    text[o] = '\0';
    return text;
}

char *rpc_dump(const json_t *msg, size_t *len)
{
    char *s = json_text(msg, JSON_COMPACT);
    if (!s) s = xstrdup("{}");
    if (len) *len = strlen(s);
    return s;
}

int rpc_code_modern(int code)
{
    switch (code) {
    case RPC_RATE_LIMITED:
        return RPC_MODERN_RATE_LIMITED;
    case RPC_UNAVAILABLE:
        return RPC_MODERN_UNAVAILABLE;
    case RPC_QUOTA:
        return RPC_MODERN_QUOTA;
    case RPC_RESOURCE_NOT_FOUND:
        return RPC_INVALID_PARAMS;
    default:
        return code;
    }
}

int rpc_code_is_rate_limit(int code)
{
    return code == RPC_RATE_LIMITED || code == RPC_MODERN_RATE_LIMITED;
}
