/* mcp-frontend/console/secret.h — what must not be guessed: API keys (`sp_` and 64 hex digits,
 * 256 bits from getrandom, the shape `snakepit tenant` makes) for a tenant that rotates its key
 * in the console, the console's sign-in and CSRF tokens, and comparing secrets in constant
 * time. */
#ifndef SP_SECRET_H
#define SP_SECRET_H
#include <stddef.h>

#define SECRET_API_KEY_LEN 67 /* "sp_" + 64 hex digits */

/* nbytes random bytes as 2 * nbytes hex digits and a NUL into out: 0, or -1 when getrandom
 * failed (then nothing guessable is left in out: it is emptied). */
int secret_hex(char *out, size_t nbytes);
/* A new API key into out (SECRET_API_KEY_LEN + 1 bytes): 0, or -1 as secret_hex. */
int secret_api_key(char out[SECRET_API_KEY_LEN + 1]);
/* 1 when the n bytes at a and b are the same; the time taken does not depend on where they
 * differ (a CSRF token compared with a request's must not leak its prefix). */
int secret_equal(const void *a, const void *b, size_t n);

#endif
