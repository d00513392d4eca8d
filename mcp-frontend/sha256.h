/* mcp-frontend/sha256.h — SHA-256 (FIPS 180-4), for API keys: Redis stores only the hash of
 * a key (`sp:key:<hex>`), so a dump of Redis does not hand out working keys. Small enough to
 * carry here rather than link a TLS library's internals for it. */
#ifndef SP_FE_SHA256_H
#define SP_FE_SHA256_H
#include <stddef.h>
#include <stdint.h>

#define SHA256_BYTES 32
#define SHA256_HEX   64

void sha256(const void *data, size_t len, uint8_t out[SHA256_BYTES]);
void sha256_hex(const void *data, size_t len, char out[SHA256_HEX + 1]);

#endif
