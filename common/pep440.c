/* common/pep440.c — see pep440.h. */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pep440.h"

#define MAX_PARTS 8

void pep440_normalise(const char *name, size_t len, char *out, size_t cap)
{
    size_t o = 0;
    int sep = 0;
    for (size_t i = 0; i < len && cap; i++) {
        char c = name[i];
        if (c == '-' || c == '_' || c == '.') {
            sep = 1;
            continue;
        }
        if (!isalnum((unsigned char)c)) break; /* the name ends here (a version, extras…) */
        if (o + (sep && o ? 2 : 1) >= cap) break; /* room for the separator and the character */
        if (sep && o) out[o++] = '-';
        sep = 0;
        out[o++] = (char)tolower((unsigned char)c);
    }
    if (cap) out[o] = '\0';
}

/* The installed version of name in the packages JSON (flat, as runner.versions() writes it:
 * no escapes in names or versions), into out; 0 when absent. */
static int s_installed(const char *packages, const char *name, char *out, size_t cap)
{
    char key[160];
    snprintf(key, sizeof key, "\"%s\":", name);
    const char *at = packages ? strstr(packages, key) : NULL;
    if (!at) return 0;
    at += strlen(key);
    while (*at == ' ') at++;
    if (*at++ != '"') return 0;
    size_t n = strcspn(at, "\"");
    if (!n || n >= cap) return 0;
    memcpy(out, at, n);
    out[n] = '\0';
    return 1;
}

/* The release numbers of a version ("1.24.2" → 1, 24, 2); how many. */
static int s_release(const char *v, long parts[MAX_PARTS])
{
    int n = 0;
    while (*v == ' ') v++;
    while (n < MAX_PARTS && isdigit((unsigned char)*v)) {
        parts[n++] = strtol(v, (char **)&v, 10);
        if (*v != '.' || !isdigit((unsigned char)v[1])) break;
        v++;
    }
    return n;
}

static int s_cmp(const long *a, int na, const long *b, int nb)
{
    for (int i = 0; i < (na > nb ? na : nb); i++) {
        long x = i < na ? a[i] : 0, y = i < nb ? b[i] : 0;
        if (x != y) return x < y ? -1 : 1;
    }
    return 0;
}

/* One specifier ("<2", "~=1.4", "==2.*") against the installed version; -1 when unreadable. */
static int s_spec_ok(const char *have, const char *spec)
{
    static const char *const ops[] = {"===", "~=", "==", "!=", "<=", ">=", "<", ">", NULL};
    while (*spec == ' ') spec++;
    const char *op = NULL;
    for (const char *const *o = ops; *o && !op; o++)
        if (!strncmp(spec, *o, strlen(*o))) op = *o;
    if (!op) return -1;
    const char *want = spec + strlen(op);
    while (*want == ' ') want++;
    long h[MAX_PARTS], w[MAX_PARTS];
    int nh = s_release(have, h), nw = s_release(want, w);
    if (!nw) return -1;
    size_t wl = strcspn(want, " ");
    if ((!strcmp(op, "==") || !strcmp(op, "!=")) && wl >= 2 && !strncmp(want + wl - 2, ".*", 2)) {
        int prefix = s_cmp(h, nh < nw ? nh : nw, w, nw) == 0 && nh >= nw;
        return !strcmp(op, "==") ? prefix : !prefix;
    }
    int c = s_cmp(h, nh, w, nw);
    if (!strcmp(op, "===")) return !strncmp(have, want, wl) && strlen(have) == wl;
    if (!strcmp(op, "~=")) {
        int keep = nw > 1 ? nw - 1 : 1;
        return c >= 0 && s_cmp(h, nh < keep ? nh : keep, w, keep) == 0;
    }
    if (!strcmp(op, "==")) return c == 0;
    if (!strcmp(op, "!=")) return c != 0;
    if (!strcmp(op, "<=")) return c <= 0;
    if (!strcmp(op, ">=")) return c >= 0;
    if (!strcmp(op, "<")) return c < 0;
    return c > 0;
}

static int s_met(const char *packages, const char *req)
{
    while (*req == ' ') req++;
    size_t n = 0;
    while (req[n] && (isalnum((unsigned char)req[n]) || strchr("-_.", req[n]))) n++;
    char name[128], have[64], specs[256];
    pep440_normalise(req, n, name, sizeof name);
    if (!name[0] || !s_installed(packages, name, have, sizeof have)) return 0;
    const char *rest = req + n;
    if (*rest == '[') { /* extras: the profile's package either has them or the job finds out */
        const char *close = strchr(rest, ']');
        if (!close) return 0;
        rest = close + 1;
    }
    snprintf(specs, sizeof specs, "%.*s", (int)strcspn(rest, ";"), rest); /* markers ignored */
    char *spec = specs;
    while (*spec == ' ') spec++;
    if (*spec == '(') spec++; /* the old "name (specs)" form */
    for (char *save = NULL, *s = strtok_r(spec, ",)", &save); s; s = strtok_r(NULL, ",)", &save)) {
        while (*s == ' ') s++;
        if (!*s) continue;
        if (s_spec_ok(have, s) != 1) return 0;
    }
    return 1;
}

int pep440_all_met(const char *packages, char *const *reqs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!s_met(packages, reqs[i])) return 0;
    return 1;
}
