/* tests/fuzz/fuzz_envelope.c — libFuzzer target for what decides a 2026-07-28 request's fate
 * before any handler sees it: the era and envelope of a message (mcp-frontend/envelope.c,
 * admit.c) and the request headers checked against its body, Base64 sentinels included
 * (reqheaders.c). The input is "<MCP-Protocol-Version>\n<Mcp-Method>\n<Mcp-Name>\n<body>" (a
 * header line "-" is an absent header). Whatever the input, admission must decide without
 * crashing, leaking or reading out of bounds; a refusal must carry a 4xx status and a JSON-RPC
 * error code the revision defines, with the request's id when it had one; an admitted modern
 * request must hold a well-formed envelope of a version we serve. */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../mcp-frontend/admit.h"
#include "../../mcp-frontend/loglevel.h"
#include "../../mcp-frontend/reqheaders.h"

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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *p = data, *end = data + size;
    char *pv = s_line(&p, end), *method = s_line(&p, end), *name = s_line(&p, end);
    reqheaders_t h = {pv, method, name};
    rpc_msg_t m;
    if (rpc_parse((const char *)p, (size_t)(end - p), &m) == 0) {
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
    free(pv), free(method), free(name);
    return 0;
}
