/* common/base64.c — see base64.h. */
#include <stdint.h>

#include "base64.h"

void base64_encode(buf_t *out, const void *data, size_t len)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const uint8_t *p = data;
    buf_reserve(out, (len + 2) / 3 * 4);
    size_t i = 0;
    for (; i + 2 < len; i += 3) {
        char q[4] = {tab[p[i] >> 2], tab[(p[i] & 3) << 4 | p[i + 1] >> 4],
                     tab[(p[i + 1] & 15) << 2 | p[i + 2] >> 6], tab[p[i + 2] & 63]};
        buf_append(out, q, 4);
    }
    if (i < len) {
        char q[4] = {tab[p[i] >> 2], 0, '=', '='};
        if (i + 1 < len) {
            q[1] = tab[(p[i] & 3) << 4 | p[i + 1] >> 4];
            q[2] = tab[(p[i + 1] & 15) << 2];
        } else {
            q[1] = tab[(p[i] & 3) << 4];
        }
        buf_append(out, q, 4);
    }
}

static int s_value(unsigned char ch)
{
    if (ch >= 'A' && ch <= 'Z') return ch - 'A';
    if (ch >= 'a' && ch <= 'z') return ch - 'a' + 26;
    if (ch >= '0' && ch <= '9') return ch - '0' + 52;
    if (ch == '+') return 62;
    if (ch == '/') return 63;
    return -1;
}

int base64_decode(buf_t *out, const char *text, size_t len)
{
    uint32_t acc = 0;
    int bits = 0, pad = 0;
    buf_reserve(out, len / 4 * 3 + 3);
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)text[i];
        if (ch == '\r' || ch == '\n') continue;
        if (ch == '=') {
            pad++;
            continue;
        }
        int v = s_value(ch);
        if (pad || v < 0) return -1; /* data after padding, or not of the alphabet */
        acc = acc << 6 | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            uint8_t b = (uint8_t)(acc >> bits);
            buf_append(out, &b, 1);
        }
    }
    return pad > 2 || bits >= 6 ? -1 : 0;
}
