/* tests/fuzz/fuzz_jsonrpc.c — libFuzzer target for the front-end's JSON-RPC request parser
 * (mcp-frontend/rpc/jsonrpc.c): the first code hostile bytes from an MCP client meet, over HTTP
 * and stdio alike. Whatever the input, rpc_parse must classify it without crashing, leaking
 * or reading out of bounds, and whatever it accepts must hold the shape it promises; the
 * error it builds for a refusal must serialize, and what it accepts must serialize back
 * (json_text) to the same value, reals exactly. */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"
#include "mcp-frontend/rpc/jsonrpc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    rpc_msg_t m;
    int rc = rpc_parse((const char *)data, size, &m);
    if (rc == 0) {
        assert(m.kind == RPC_REQUEST || m.kind == RPC_NOTIFICATION || m.kind == RPC_RESPONSE);
        assert(json_is_object(m.msg));
        if (m.kind != RPC_RESPONSE) assert(m.method && *m.method);
        if (m.kind == RPC_REQUEST) assert(json_is_string(m.id) || json_is_integer(m.id));
        if (m.params) assert(json_is_object(m.params));
        /* what the front-end writes back reads back as the same value: reals exactly */
        char *text = json_text(m.msg, JSON_COMPACT);
        json_t *back = text ? json_loads(text, 0, NULL) : NULL;
        assert(back && json_equal(back, m.msg));
        json_decref(back);
        free(text);
    } else {
        assert(m.kind == RPC_INVALID);
        assert(m.code == RPC_PARSE_ERROR || m.code == RPC_INVALID_REQUEST);
        json_t *err =
            rpc_error(m.id, m.code, "refused", json_pack("{s:o}", "detail", json_str_safe(m.why)));
        size_t len;
        char *text = rpc_dump(err, &len);
        assert(text && len > 0 && utf8_valid(text, len));
        free(text);
        json_decref(err);
    }
    rpc_msg_clear(&m);
    /* the sanitizer must always produce valid UTF-8 */
    buf_t b;
    buf_init(&b);
    utf8_sanitize(&b, (const char *)data, size);
    assert(utf8_valid((const char *)b.data, b.len));
    size_t cut = utf8_prefix((const char *)data, size, size / 2);
    assert(cut <= size);
    buf_free(&b);
    return 0;
}
