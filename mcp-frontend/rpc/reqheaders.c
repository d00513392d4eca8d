/* mcp-frontend/rpc/reqheaders.c — see reqheaders.h. */
#include <stdio.h>
#include <string.h>

#include "common/base64.h"
#include "reqheaders.h"

#define SENTINEL_HEAD "=?base64?"
#define SENTINEL_TAIL "?="

/* RFC 9110 §5.5: field values are visible ASCII, SP and HTAB; anything else (CR, LF, NUL,
 * other controls, bytes ≥ 0x80) is refused rather than guessed at. */
static int s_chars_ok(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (!(ch == ' ' || ch == '\t' || (ch >= 0x21 && ch <= 0x7e))) return 0;
    }
    return 1;
}

int reqheaders_value(const char *raw, int sentinel, buf_t *out)
{
    size_t len = strlen(raw);
    while (len && (raw[len - 1] == ' ' || raw[len - 1] == '\t')) len--;
    while (len && (*raw == ' ' || *raw == '\t')) raw++, len--;
    if (!s_chars_ok(raw, len)) return -1;
    size_t hl = strlen(SENTINEL_HEAD), tl = strlen(SENTINEL_TAIL);
    if (!sentinel || len < hl + tl || memcmp(raw, SENTINEL_HEAD, hl) != 0 ||
        memcmp(raw + len - tl, SENTINEL_TAIL, tl) != 0) {
        buf_append(out, raw, len);
        return 0;
    }
    const char *b64 = raw + hl;
    size_t n = len - hl - tl;
    if (n % 4 != 0 || memchr(b64, '\r', n) || memchr(b64, '\n', n)) return -1; /* unpadded */
    return base64_decode(out, b64, n);
}

static int s_fail(char *why, size_t whylen, const char *what)
{
    snprintf(why, whylen, "Header mismatch: %s", what);
    return -1;
}

/* Does the header (raw) say the same as the body value? -1 with why when not. */
static int s_same(const char *header, const char *raw, int sentinel, const char *body, char *why,
                  size_t whylen)
{
    buf_t v;
    buf_init(&v);
    int rc = reqheaders_value(raw, sentinel, &v);
    if (rc < 0) {
        buf_free(&v);
        char what[160];
        snprintf(what, sizeof what,
                 "the %s header holds characters a header value may not, or malformed Base64",
                 header);
        return s_fail(why, whylen, what);
    }
    int same = body && v.len == strlen(body) && memcmp(v.data, body, v.len) == 0;
    if (!same) {
        char msg[300];
        snprintf(msg, sizeof msg,
                 "Header mismatch: %s header value '%.80s' does not match body "
                 "value '%.80s'",
                 header, v.len ? (const char *)v.data : "", body ? body : "");
        snprintf(why, whylen, "%s", msg);
    }
    buf_free(&v);
    return same ? 0 : -1;
}

int reqheaders_mismatch(const reqheaders_t *h, const char *method, const char *claimed, char *why,
                        size_t whylen)
{
    if (h->protocol_version &&
        s_same("MCP-Protocol-Version", h->protocol_version, 0, claimed, why, whylen) < 0)
        return -1;
    if (h->method && s_same("Mcp-Method", h->method, 0, method, why, whylen) < 0) return -1;
    return 0;
}

/* Which body value Mcp-Name mirrors, for the methods that have one. */
static const char *s_name_field(const char *method)
{
    static const struct {
        const char *method, *field;
    } rows[] = {{"tools/call", "name"},
                {"prompts/get", "name"},
                {"resources/read", "uri"},
                {"tasks/get", "taskId"},
                {"tasks/update", "taskId"},
                {"tasks/cancel", "taskId"},
                {NULL, NULL}};
    for (int i = 0; rows[i].method; i++)
        if (strcmp(method, rows[i].method) == 0) return rows[i].field;
    return NULL;
}

int reqheaders_required(const reqheaders_t *h, const char *method, const json_t *params, char *why,
                        size_t whylen)
{
    if (!h->protocol_version)
        return s_fail(why, whylen, "the MCP-Protocol-Version header is required");
    if (!h->method) return s_fail(why, whylen, "the Mcp-Method header is required");
    const char *field = s_name_field(method);
    if (!field) return 0;
    const char *body = json_string_value(json_object_get(params, field));
    if (!h->name) {
        if (!body) return 0; /* nothing to mirror: the method itself will refuse the params */
        return s_fail(why, whylen, "the Mcp-Name header is required for this method");
    }
    return s_same("Mcp-Name", h->name, 1, body, why, whylen);
}
