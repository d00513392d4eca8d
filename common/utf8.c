/* common/utf8.c — see utf8.h. The decoder follows the Unicode Standard's table of
 * well-formed byte sequences (Table 3-7), so overlongs, surrogates and code points past
 * U+10FFFF are rejected. */
#include <string.h>

#include "utf8.h"

/* Length of the valid sequence at s (1..4), or 0 when the bytes there are not one; *bad is
 * then the length of the maximal invalid subpart to replace. */
static size_t s_seq(const unsigned char *s, size_t len, size_t *bad)
{
    unsigned char c = s[0];
    *bad = 1;
    if (c >= 0x01 && c < 0x80) return 1;
    size_t n;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF)
        n = 2;
    else if (c == 0xE0)
        n = 3, lo = 0xA0;
    else if (c == 0xED)
        n = 3, hi = 0x9F;
    else if (c >= 0xE1 && c <= 0xEF)
        n = 3;
    else if (c == 0xF0)
        n = 4, lo = 0x90;
    else if (c == 0xF4)
        n = 4, hi = 0x8F;
    else if (c >= 0xF1 && c <= 0xF3)
        n = 4;
    else
        return 0; /* NUL, continuation bytes, C0, C1, F5..FF */
    for (size_t i = 1; i < n; i++) {
        if (i >= len) return 0;
        unsigned char b = s[i];
        if (b < (i == 1 ? lo : 0x80) || b > (i == 1 ? hi : 0xBF)) return 0;
        *bad = i + 1;
    }
    return n;
}

int utf8_valid(const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0, bad;
    while (i < len) {
        size_t n = s_seq(p + i, len - i, &bad);
        if (!n) return 0;
        i += n;
    }
    return 1;
}

void utf8_sanitize(buf_t *out, const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0, run = 0, bad;
    buf_reserve(out, len);
    while (i < len) {
        size_t n = s_seq(p + i, len - i, &bad);
        if (n) {
            i += n;
            run += n;
            continue;
        }
        buf_append(out, s + i - run, run);
        buf_append(out, "\xEF\xBF\xBD", 3);
        i += bad;
        run = 0;
    }
    buf_append(out, s + i - run, run);
}

size_t utf8_prefix(const char *s, size_t len, size_t max)
{
    if (len <= max) return len;
    size_t end = max;
    /* step back over continuation bytes to the start of the sequence that crosses max */
    while (end > 0 && ((unsigned char)s[end] & 0xC0) == 0x80) end--;
    return end;
}
