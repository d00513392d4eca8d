/* tests/fuzz/fuzz_console.c — libFuzzer target for the console's readers of what a browser (or
 * anyone) sends: the Cookie header and urlencoded form bodies (mcp-frontend/console/form.c).
 * Whatever the input, a value found fits its buffer, is NUL-terminated, and a cookie's holds
 * only cookie octets. The input is read both as a header (up to its first NUL) and as a body. */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mcp-frontend/console/form.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1), out[70];
    memcpy(text, data, size);
    text[size] = '\0';
    static const char *const names[] = {"sp_console", "key", "a", ""};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        int rc = form_cookie(text, names[i], out, sizeof out);
        assert(rc >= -1 && rc <= 1);
        if (rc == 1) {
            assert(strlen(out) < sizeof out);
            for (const char *p = out; *p; p++) assert(*p > 0x20 && *p < 0x7f && *p != ';');
        }
        rc = form_field(text, size, names[i], out, sizeof out);
        assert(rc >= -1 && rc <= 1);
        if (rc == 1) assert(strlen(out) < sizeof out);
    }
    free(text);
    return 0;
}
