/* tests/fuzz/fuzz_envelope.c — libFuzzer target for what decides a 2026-07-28 request's fate
 * before any handler sees it: the era and envelope of a message (mcp-frontend/rpc/envelope.c,
 * admit.c) and the request headers checked against its body, Base64 sentinels included
 * (reqheaders.c), and tool arguments mirrored into Mcp-Param-* headers (paramheaders.c). The input
 * is "<MCP-Protocol-Version>\n<Mcp-Method>\n<Mcp-Name>\n<Mcp-Param-Region>\n<Mcp-Param-N>\n<body>"
 * (a header line "-" is an absent header); every tools/call is held against a tool that mirrors
 * region (string), n (integer) and on (boolean, whose header never comes), and the body's params
 * are also scanned as if they were an inputSchema. Whatever the input, admission must decide
 * without crashing, leaking or reading out of bounds; a refusal must carry a 4xx status and a
 * JSON-RPC error code the revision defines, with the request's id when it had one; an admitted
 * modern request must hold a well-formed envelope of a version we serve. */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "mcp-frontend/rpc/admit.h"
#include "mcp-frontend/rpc/loglevel.h"
#include "mcp-frontend/rpc/paramheaders.h"
#include "mcp-frontend/rpc/reqheaders.h"

/* The next line of the input as a NUL-terminated header value (NULL for "-"). */
static char *s_line(const uint8_t **p, const uint8_t *end)
{
    const uint8_t *nl = memchr(*p, '\n', (size_t)(end - *p));
    size_t n = nl ? (size_t)(nl - *p) : (size_t)(end - *p);
    char *v = malloc(n + 1);
    memcpy(v, *p, n);
    v[n] = '\0';
    *p = nl ? nl + 1 : end;
    if (!strcmp(v, "-") || memchr(v, '\0', n)) {
        free(v);
        return NULL;
    }
    return v;
}

static const char s_mirroring[] = "{\"type\":\"object\",\"properties\":{"
                                  "\"region\":{\"type\":\"string\",\"x-mcp-header\":\"Region\"},"
                                  "\"n\":{\"type\":\"integer\",\"x-mcp-header\":\"N\"},"
                                  "\"on\":{\"type\":\"boolean\",\"x-mcp-header\":\"On\"}}}";

static char *s_params[2]; /* the Mcp-Param-Region and Mcp-Param-N headers of this input */

static const char *s_lookup(void *ctx, const char *name)
{
    (void)ctx;
    if (!strcasecmp(name, "Mcp-Param-Region")) return s_params[0];
    if (!strcasecmp(name, "Mcp-Param-N")) return s_params[1];
    return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static paramheaders_t *mirrors;
    char err[300];
    if (!mirrors) {
        json_t *schema = json_loads(s_mirroring, 0, NULL);
        mirrors = paramheaders_scan(schema, err, sizeof err);
        json_decref(schema);
        assert(paramheaders_count(mirrors) == 3);
    }
    const uint8_t *p = data, *end = data + size;
    char *pv = s_line(&p, end), *method = s_line(&p, end), *name = s_line(&p, end);
    s_params[0] = s_line(&p, end);
    s_params[1] = s_line(&p, end);
    reqheaders_t h = {pv, method, name, mirrors, s_lookup, NULL};
    rpc_msg_t m;
    if (rpc_parse((const char *)p, (size_t)(end - p), &m) == 0) {
        paramheaders_t *scanned = paramheaders_scan(m.params, err, sizeof err);
        assert(!scanned || !err[0]);
        paramheaders_destroy(&scanned);
        admit_stats_t stats = {0};
        admission_t a;
        for (int http = 0; http < 2; http++) {
            admit_t era = admit_message(&stats, &m, http ? &h : NULL, "fuzz", &a);
            if (era == ADMIT_REFUSED) {
                json_t *err = json_object_get(a.error, "error");
                int code = (int)json_integer_value(json_object_get(err, "code"));
                assert(a.status == 400);
                assert(code == RPC_INVALID_PARAMS || code == RPC_HEADER_MISMATCH ||
                       code == RPC_UNSUPPORTED_VERSION);
                if (m.id) assert(json_equal(json_object_get(a.error, "id"), m.id));
                json_decref(a.error);
            } else if (era == ADMIT_MODERN && a.env.version) {
                assert(envelope_modern_supported(a.env.version));
                assert(json_is_object(a.env.caps));
                assert(a.env.log_level >= 0 && a.env.log_level <= LOGLEVEL_NONE);
            }
        }
    }
    rpc_msg_clear(&m);
    /* header values alone, sentinel or not */
    for (int sentinel = 0; sentinel < 2; sentinel++) {
        buf_t b;
        buf_init(&b);
        if (name && reqheaders_value(name, sentinel, &b) == 0) assert(b.len <= strlen(name));
        buf_free(&b);
    }
    free(pv), free(method), free(name), free(s_params[0]), free(s_params[1]);
    return 0;
}
