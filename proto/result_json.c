/* proto/result_json.c — see result_json.h. */
#include <string.h>

#include "common/buf.h"
#include "result_json.h"

/* Length of the valid UTF-8 sequence at p (RFC 3629: no overlongs, no surrogates, ≤ U+10FFFF),
 * or 0 when it is not one. */
static size_t s_utf8_len(const unsigned char *p, size_t left)
{
    unsigned char c = p[0];
    if (c < 0x80) return 1;
    size_t   n;
    uint32_t cp;
    if (c >= 0xc2 && c <= 0xdf) n = 2, cp = c & 0x1f;
    else if (c >= 0xe0 && c <= 0xef) n = 3, cp = c & 0x0f;
    else if (c >= 0xf0 && c <= 0xf4) n = 4, cp = c & 0x07;
    else return 0;
    if (left < n) return 0;
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80) return 0;
        cp = cp << 6 | (p[i] & 0x3f);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
        (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return n;
}

json_t *json_utf8_string(const char *data, size_t len)
{
    const unsigned char *p = (const unsigned char *)data;
    size_t               i = 0;
    while (i < len) { /* fast path: already valid (NUL is valid: jansson keeps it as \u0000) */
        size_t n = s_utf8_len(p + i, len - i);
        if (!n) break;
        i += n;
    }
    if (i == len) return json_stringn(data ? data : "", len);
    buf_t b;
    buf_init(&b);
    buf_append(&b, data, i);
    while (i < len) {
        size_t n = s_utf8_len(p + i, len - i);
        if (n) {
            buf_append(&b, p + i, n);
            i += n;
        } else {
            buf_append(&b, "\xef\xbf\xbd", 3); /* U+FFFD for each byte that is not UTF-8 */
            i++;
        }
    }
    json_t *s = json_stringn((const char *)b.data, b.len);
    buf_free(&b);
    return s;
}

static json_t *s_opt_string(const char *s)
{
    return s ? json_string(s) : json_null();
}

json_t *result_to_json(const result_t *res, const char *execution_id)
{
    json_t *vars = NULL;
    if (res->variables) vars = json_loads(res->variables, JSON_DECODE_ANY, NULL);
    if (!json_is_object(vars)) {
        json_decref(vars);
        vars = json_object();
    }
    json_t *error = json_null();
    if (res->error.present)
        error = json_pack("{s:s, s:s, s:o, s:I}", "type", res->error.type ? res->error.type : "Error",
                          "message", res->error.message ? res->error.message : "", "traceback",
                          s_opt_string(res->error.traceback), "line", (json_int_t)res->error.line);
    json_t *o = json_pack(
        "{s:s, s:s, s:o, s:o, s:{s:b, s:b}, s:o, s:o, s:o, s:{s:f, s:f, s:f}, s:{s:I}, s:{s:o, s:I, s:o}}",
        "execution_id", execution_id ? execution_id : "", "status", status_name(res->status),
        "stdout", json_utf8_string(res->out, res->out_len), "stderr",
        json_utf8_string(res->err, res->err_len), "truncated", "stdout", res->out_truncated,
        "stderr", res->err_truncated, "result", s_opt_string(res->result), "variables", vars,
        "error", error, "timings", "queue_ms", res->queue_ms, "wall_ms", res->wall_ms, "cpu_ms",
        res->cpu_ms, "resources", "max_rss_kb", (json_int_t)res->max_rss_kb, "exit", "reason",
        s_opt_string(res->exit.reason), "signal", (json_int_t)res->exit.signal, "syscall",
        s_opt_string(res->exit.syscall));
    return o;
}
