/* mcp-frontend/console/form.h — the console's readers of what a browser sends besides JSON: the
 * Cookie request header (RFC 6265 §4.2.1: name=value pairs joined by "; ") and bodies of
 * application/x-www-form-urlencoded (WHATWG URL §5.1: name=value pairs joined by '&', '+' a
 * space, %XX a byte). Hostile input: every length is capped by the caller's buffer, nothing is
 * allocated, and anything malformed is "not there" rather than half read. Pure; fuzzed by
 * tests/fuzz/fuzz_console.c. */
#ifndef SP_FE_CONSOLE_FORM_H
#define SP_FE_CONSOLE_FORM_H
#include <stddef.h>

/* The value of the cookie called name in a Cookie header (NULL: none) into out (cap bytes,
 * NUL-terminated): 1. 0 when it is not there; -1 when the header is malformed, the value does
 * not fit, or the name comes twice (another site of the domain may set a cookie of the same
 * name, RFC 6265 §8.6: which one is ours cannot be told, so neither is taken). */
int form_cookie(const char *header, const char *name, char *out, size_t cap);

/* The decoded value of the field called name in a urlencoded body of len bytes into out (cap
 * bytes, NUL-terminated): 1. 0 when it is not there; -1 when a percent escape is broken, the
 * value decodes to a NUL byte or does not fit, or the field comes twice. */
int form_field(const char *body, size_t len, const char *name, char *out, size_t cap);

#endif
