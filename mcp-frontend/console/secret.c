/* mcp-frontend/console/secret.c — see secret.h. */
#include <stdint.h>
#include <string.h>
#include <sys/random.h>

#include "secret.h"

int secret_hex(char *out, size_t nbytes)
{
    static const char hex[] = "0123456789abcdef";
    uint8_t raw[64];
    out[0] = '\0';
    if (nbytes > sizeof raw || getrandom(raw, nbytes, 0) != (ssize_t)nbytes) return -1;
    for (size_t i = 0; i < nbytes; i++) {
        out[2 * i] = hex[raw[i] >> 4];
        out[2 * i + 1] = hex[raw[i] & 15];
    }
    out[2 * nbytes] = '\0';
    memset(raw, 0, sizeof raw);
    return 0;
}

int secret_api_key(char out[SECRET_API_KEY_LEN + 1])
{
    memcpy(out, "sp_", 3);
    if (secret_hex(out + 3, 32) < 0) {
        out[0] = '\0';
        return -1;
    }
    return 0;
}

int secret_equal(const void *a, const void *b, size_t n)
{
    const volatile uint8_t *x = a, *y = b;
    uint8_t d = 0;
    for (size_t i = 0; i < n; i++) d |= (uint8_t)(x[i] ^ y[i]);
    return d == 0;
}
