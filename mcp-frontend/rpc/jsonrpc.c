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

/* jansson's own text of a real at precision 17 (dump.c's dtostr): %.17g, ".0" when it has no
 * '.' or 'e', and no '+' or leading zeros in an exponent. */
static size_t s_jansson_real(double d, char *out, size_t cap)
{
    int n = snprintf(out, cap, "%.17g", d);
    if (n <= 0 || (size_t)n + 2 >= cap) return 0;
    if (!strchr(out, '.') && !strchr(out, 'e')) {
        memcpy(out + n, ".0", 3);
        n += 2;
    }
    char *e = strchr(out, 'e');
    if (e) {
        char *start = e + 1, *end = e + 2;
        if (*start == '-') start++;
        while (*end == '0') end++;
        if (end != start) {
            memmove(start, end, (size_t)(out + n + 1 - end));
            n -= (int)(end - start);
        }
    }
    return (size_t)n;
}

/* A JSON string as jansson writes it: '"' and '\' escaped, control characters as \b \f \n \r \t
 * or \u00XX, everything else (UTF-8 included) as it is. -1 when the bytes are not UTF-8. */
static int s_string(buf_t *out, const char *str, size_t len)
{
    buf_reserve(out, len + 2);
    buf_append(out, "\"", 1);
    size_t run = 0;
    unsigned char high = 0; /* any byte past ASCII: then the whole must be UTF-8 */
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)str[i];
        high |= c;
        if (c >= 0x20 && c != '"' && c != '\\') continue;
        buf_append(out, str + run, i - run);
        run = i + 1;
        char esc[8] = {'\\', (char)c, 0};
        switch (c) {
        case '"':
        case '\\':
            break;
        case '\b': esc[1] = 'b'; break;
        case '\f': esc[1] = 'f'; break;
        case '\n': esc[1] = 'n'; break;
        case '\r': esc[1] = 'r'; break;
        case '\t': esc[1] = 't'; break;
        default:
            snprintf(esc, sizeof esc, "\\u%04X", c);
        }
        buf_puts(out, esc);
    }
    buf_append(out, str + run, len - run);
    buf_append(out, "\"", 1);
    return (high & 0x80) && !utf8_valid(str, len) ? -1 : 0;
}

/* The compact text json_dumps(JSON_COMPACT) and the real rewriting below would make, written
 * directly: jansson checks every container it dumps against a table of its parents keyed by
 * "%p" text, which made dumping one execute_code answer ~70k instructions. 0, or -1 for what
 * only jansson should judge (a string that is not UTF-8, nesting past the cap): the caller
 * then asks jansson. */
static int s_compact(buf_t *out, const json_t *v, int depth)
{
    char num[64];
    if (depth > 2048) return -1;
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        buf_append(out, "{", 1);
        for (void *it = json_object_iter((json_t *)v); it;
             it = json_object_iter_next((json_t *)v, it)) {
            if (out->data[out->len - 1] != '{') buf_append(out, ",", 1);
            if (s_string(out, json_object_iter_key(it), json_object_iter_key_len(it)) < 0)
                return -1;
            buf_append(out, ":", 1);
            if (s_compact(out, json_object_iter_value(it), depth + 1) < 0) return -1;
        }
        buf_append(out, "}", 1);
        return 0;
    case JSON_ARRAY:
        buf_append(out, "[", 1);
        for (size_t i = 0; i < json_array_size(v); i++) {
            if (i) buf_append(out, ",", 1);
            if (s_compact(out, json_array_get(v, i), depth + 1) < 0) return -1;
        }
        buf_append(out, "]", 1);
        return 0;
    case JSON_STRING:
        return s_string(out, json_string_value(v), json_string_length(v));
    case JSON_INTEGER: {
        int n = snprintf(num, sizeof num, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        buf_append(out, num, (size_t)n);
        return 0;
    }
    case JSON_REAL: {
        char shortest[40];
        double d = json_real_value(v);
        size_t len = s_jansson_real(d, num, sizeof num), n = s_shortest(d, shortest, sizeof shortest);
        if (!len) return -1;
        if (n && n <= len)
            buf_append(out, shortest, n);
        else
            buf_append(out, num, len);
        return 0;
    }
    case JSON_TRUE:
        buf_append(out, "true", 4);
        return 0;
    case JSON_FALSE:
        buf_append(out, "false", 5);
        return 0;
    case JSON_NULL:
        buf_append(out, "null", 4);
        return 0;
    }
    return -1;
}

char *json_text(const json_t *v, size_t flags)
{
    if (flags == JSON_COMPACT && (json_is_object(v) || json_is_array(v))) {
        buf_t b;
        buf_init(&b);
        if (s_compact(&b, v, 0) == 0) return buf_steal(&b, NULL);
        buf_free(&b);
    }
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
