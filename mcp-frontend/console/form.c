/* mcp-frontend/console/form.c — see form.h. */
#include <string.h>

#include "form.h"

/* RFC 6265 §4.1.1: a cookie-octet is any visible ASCII but '"', ',', ';' and '\'. */
static int s_cookie_octet(unsigned char c)
{
    return c == 0x21 || (c >= 0x23 && c <= 0x2B) || (c >= 0x2D && c <= 0x3A) ||
           (c >= 0x3C && c <= 0x5B) || (c >= 0x5D && c <= 0x7E);
}

int form_cookie(const char *header, const char *name, char *out, size_t cap)
{
    size_t nl = strlen(name);
    int found = 0;
    if (!header || !cap) return 0;
    out[0] = '\0';
    for (const char *p = header; *p;) {
        while (*p == ' ' || *p == '\t') p++;
        const char *eq = p;
        while (*eq && *eq != '=' && *eq != ';') eq++;
        const char *v = *eq == '=' ? eq + 1 : eq, *end = v;
        while (*end && *end != ';') end++;
        const char *vend = end;
        while (vend > v && (vend[-1] == ' ' || vend[-1] == '\t')) vend--;
        if (*eq == '=' && (size_t)(eq - p) == nl && !strncmp(p, name, nl)) {
            if (found++) return -1;
            const char *a = v, *b = vend;
            if (b - a >= 2 && *a == '"' && b[-1] == '"') a++, b--; /* a quoted value */
            if ((size_t)(b - a) >= cap) return -1;
            for (const char *q = a; q < b; q++)
                if (!s_cookie_octet((unsigned char)*q)) return -1;
            memcpy(out, a, (size_t)(b - a));
            out[b - a] = '\0';
        }
        p = *end ? end + 1 : end;
    }
    return found;
}

static int s_hex(unsigned char c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

/* Decodes [a, b) into out: its length, or -1 (a broken escape, a NUL, no room). */
static long s_decode(const char *a, const char *b, char *out, size_t cap)
{
    size_t n = 0;
    for (const char *q = a; q < b; q++) {
        int c = (unsigned char)*q;
        if (c == '+') {
            c = ' ';
        } else if (c == '%') {
            if (b - q < 3 || s_hex((unsigned char)q[1]) < 0 || s_hex((unsigned char)q[2]) < 0)
                return -1;
            c = s_hex((unsigned char)q[1]) * 16 + s_hex((unsigned char)q[2]);
            q += 2;
        }
        if (c == 0 || n + 1 >= cap) return -1;
        out[n++] = (char)c;
    }
    out[n] = '\0';
    return (long)n;
}

int form_field(const char *body, size_t len, const char *name, char *out, size_t cap)
{
    char key[64];
    int found = 0;
    if (!cap) return 0;
    out[0] = '\0';
    for (const char *p = body, *end = body + len; p < end;) {
        const char *amp = memchr(p, '&', (size_t)(end - p));
        if (!amp) amp = end;
        const char *eq = memchr(p, '=', (size_t)(amp - p));
        const char *kend = eq ? eq : amp;
        /* a name longer than any we ask for is not ours; a broken one is the body's fault */
        long kl = kend - p < (long)sizeof key ? s_decode(p, kend, key, sizeof key) : -2;
        if (kl == -1) return -1;
        if (kl >= 0 && !strcmp(key, name)) {
            if (found++ || s_decode(eq ? eq + 1 : amp, amp, out, cap) < 0) {
                out[0] = '\0';
                return -1;
            }
        }
        p = amp + 1;
    }
    return found;
}
