/* common/sha256.h — SHA-256 (FIPS 180-4), for API keys stored as their hash (sp:key:{hex})
 * and code digests in records, and HMAC-SHA256. Small and dependency-free. */
#ifndef SP_SHA256_H
#define SP_SHA256_H
#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint32_t h[8];
    uint64_t bytes;
    uint8_t  block[64];
    size_t   fill;
} sha256_t;

void sha256_init(sha256_t *s);
void sha256_update(sha256_t *s, const void *data, size_t len);
void sha256_final(sha256_t *s, uint8_t out[32]);
/* One call: hex digest of data, 64 chars + NUL. */
void sha256_hex(const void *data, size_t len, char out[65]);
/* HMAC-SHA256 (RFC 2104): what integrity-protects state a client carries back (the
 * front-end's MRTR requestState). */
void sha256_hmac(const void *key, size_t key_len, const void *data, size_t len, uint8_t out[32]);

#endif
