/* common/ids.c — UUIDv7 generation and parsing. Randomness comes from getrandom(2); a
 * monotonic counter in rand_a keeps ids from one process ordered within a millisecond. */
#define _GNU_SOURCE
#include <string.h>
#include <sys/random.h>

#include "clock.h"
#include "ids.h"

void id_new(uint8_t out[ID_BYTES])
{
    static uint64_t last_ms;
    static uint16_t seq;
    uint64_t        ms = clock_wall_ms();
    if (getrandom(out, ID_BYTES, 0) != ID_BYTES) {
        /* getrandom on Linux ≥ 3.17 does not fail for 16 bytes once the pool is ready; if it
         * ever does, fall back to a counter so ids stay unique, if guessable. */
        static uint64_t fallback;
        fallback++;
        memcpy(out + 8, &fallback, sizeof fallback);
    }
    if (ms == last_ms) {
        seq = (uint16_t)((seq + 1) & 0x0fff);
    } else {
        last_ms = ms;
        seq = (uint16_t)(out[6] & 0x07); /* random start, room to count up */
    }
    for (int i = 0; i < 6; i++) out[i] = (uint8_t)(ms >> (40 - 8 * i));
    out[6] = (uint8_t)(0x70 | ((seq >> 8) & 0x0f));
    out[7] = (uint8_t)(seq & 0xff);
    out[8] = (uint8_t)(0x80 | (out[8] & 0x3f));
}

void id_format(const uint8_t id[ID_BYTES], char out[ID_STR_LEN + 1])
{
    static const char hex[] = "0123456789abcdef";
    int               j = 0;
    for (int i = 0; i < ID_BYTES; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10) out[j++] = '-';
        out[j++] = hex[id[i] >> 4];
        out[j++] = hex[id[i] & 15];
    }
    out[j] = '\0';
}

static int s_hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

int id_parse(const char *s, uint8_t out[ID_BYTES])
{
    if (!s || strlen(s) != ID_STR_LEN) return -1;
    int j = 0;
    for (int i = 0; i < ID_STR_LEN;) {
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (s[i] != '-') return -1;
            i++;
            continue;
        }
        int hi = s_hexval(s[i]), lo = s_hexval(s[i + 1]);
        if (hi < 0 || lo < 0) return -1;
        out[j++] = (uint8_t)(hi << 4 | lo);
        i += 2;
    }
    return 0;
}
