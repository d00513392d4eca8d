/* common/pep508.c — see pep508.h. A recursive-descent reading of PEP 508's grammar without its
 * url_req branch: name, extras, version specifiers, environment marker. */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "pep508.h"

typedef struct {
    const char *s, *end;
    const char *why; /* the first reason found; NULL while the text parses */
} reader_t;

/* What pip takes for an archive to unpack and build when such a file exists. */
static const char *const s_archives[] = {".whl",  ".zip",     ".tar",    ".tar.gz", ".tgz",
                                         ".tar.bz2", ".tbz",  ".tbz2",   ".tar.xz", ".txz",
                                         ".tar.lz",  ".tlz",  ".tar.lzma", ".egg",  NULL};

/* The marker variables of PEP 508 §"Environment Markers". */
static const char *const s_marker_vars[] = {
    "python_version",   "python_full_version", "os_name",          "sys_platform",
    "platform_release", "platform_system",     "platform_version", "platform_machine",
    "platform_python_implementation",          "implementation_name",
    "implementation_version",                  "extra",            NULL};

/* strchr finds the terminator too: a NUL in the text is never one of the set. */
static int s_in(const char *set, char c)
{
    return c && strchr(set, c);
}

static int s_fail(reader_t *r, const char *why)
{
    if (!r->why) r->why = why;
    return -1;
}

static void s_space(reader_t *r)
{
    while (r->s < r->end && (*r->s == ' ' || *r->s == '\t')) r->s++;
}

static int s_peek(const reader_t *r, const char *lit)
{
    size_t n = strlen(lit);
    return (size_t)(r->end - r->s) >= n && !memcmp(r->s, lit, n);
}

/* identifier: letters and digits, with . _ - inside (PEP 508 `identifier`). */
static size_t s_identifier(reader_t *r)
{
    const char *start = r->s;
    if (r->s >= r->end || !isalnum((unsigned char)*r->s)) return 0;
    while (r->s < r->end && (isalnum((unsigned char)*r->s) || s_in("._-", *r->s))) r->s++;
    while (r->s > start + 1 && s_in("._-", r->s[-1])) r->s--; /* must end alphanumeric */
    return (size_t)(r->s - start);
}

static int s_name(reader_t *r)
{
    const char *start = r->s;
    size_t n = s_identifier(r);
    if (!n) return s_fail(r, "it does not start with a distribution name (letters, digits, . _ -)");
    for (const char *const *a = s_archives; *a; a++) {
        size_t k = strlen(*a);
        if (n > k && !strncasecmp(start + n - k, *a, k))
            return s_fail(r, "it names an archive file, not a distribution");
    }
    return 0;
}

static int s_extras(reader_t *r)
{
    s_space(r);
    if (!s_peek(r, "[")) return 0;
    r->s++;
    s_space(r);
    if (s_peek(r, "]")) return r->s++, 0;
    for (;;) {
        s_space(r);
        if (!s_identifier(r)) return s_fail(r, "an extra in [...] is not a name");
        s_space(r);
        if (s_peek(r, "]")) return r->s++, 0;
        if (!s_peek(r, ",")) return s_fail(r, "extras must be names separated by commas in [...]");
        r->s++;
    }
}

static int s_operator(reader_t *r)
{
    static const char *const ops[] = {"===", "~=", "==", "!=", "<=", ">=", "<", ">", NULL};
    for (const char *const *o = ops; *o; o++)
        if (s_peek(r, *o)) return (int)(r->s += strlen(*o), 1);
    return 0;
}

/* version_one: an operator and a version (letters, digits, - _ . * + !). */
static int s_version_one(reader_t *r)
{
    s_space(r);
    if (!s_operator(r)) return s_fail(r, "a version must follow one of == != <= >= < > ~= ===");
    s_space(r);
    const char *start = r->s;
    while (r->s < r->end && (isalnum((unsigned char)*r->s) || s_in("-_.*+!", *r->s))) r->s++;
    return r->s > start ? 0 : s_fail(r, "a version operator has no version after it");
}

static int s_versions(reader_t *r)
{
    s_space(r);
    int paren = s_peek(r, "(");
    if (paren) r->s++;
    s_space(r);
    if (!paren && (r->s >= r->end || *r->s == ';')) return 0; /* no specifier at all */
    if (!paren && *r->s == '@')
        return s_fail(r, "a direct reference (name @ URL) is not a requirement a sandbox may ask for");
    for (;;) {
        if (s_version_one(r) < 0) return -1;
        s_space(r);
        if (!s_peek(r, ",")) break;
        r->s++;
    }
    if (paren) {
        if (!s_peek(r, ")")) return s_fail(r, "a '(' before the versions is not closed");
        r->s++;
    }
    return 0;
}

/* marker_var: an environment variable of PEP 508 or a quoted value. */
static int s_marker_var(reader_t *r)
{
    s_space(r);
    if (s_peek(r, "'") || s_peek(r, "\"")) {
        char q = *r->s++;
        while (r->s < r->end && *r->s != q) {
            unsigned char c = (unsigned char)*r->s++;
            if (c < 0x20 || c > 0x7e || c == '\\') return s_fail(r, "a marker's quoted value holds a character it may not");
        }
        if (r->s >= r->end) return s_fail(r, "a marker's quoted value is not closed");
        r->s++;
        return 0;
    }
    for (const char *const *v = s_marker_vars; *v; v++) {
        size_t n = strlen(*v);
        if (s_peek(r, *v) && (r->s + n == r->end || !(isalnum((unsigned char)r->s[n]) || r->s[n] == '_')))
            return (int)(r->s += n, 0);
    }
    return s_fail(r, "a marker compares something that is neither a PEP 508 variable nor a quoted value");
}

static int s_word(reader_t *r, const char *w)
{
    s_space(r);
    size_t n = strlen(w);
    if (!s_peek(r, w) || (r->s + n < r->end && isalnum((unsigned char)r->s[n]))) return 0;
    r->s += n;
    return 1;
}

static int s_marker_or(reader_t *r, int depth);

static int s_marker_atom(reader_t *r, int depth)
{
    s_space(r);
    if (s_peek(r, "(")) {
        if (depth > 16) return s_fail(r, "a marker nests too deeply");
        r->s++;
        if (s_marker_or(r, depth + 1) < 0) return -1;
        s_space(r);
        if (!s_peek(r, ")")) return s_fail(r, "a '(' in the marker is not closed");
        r->s++;
        return 0;
    }
    if (s_marker_var(r) < 0) return -1;
    s_space(r);
    if (!s_operator(r) && !s_word(r, "in") && !(s_word(r, "not") && s_word(r, "in")))
        return s_fail(r, "a marker needs a comparison (== != <= >= < > ~= === in, not in)");
    return s_marker_var(r);
}

static int s_marker_and(reader_t *r, int depth)
{
    if (s_marker_atom(r, depth) < 0) return -1;
    while (s_word(r, "and"))
        if (s_marker_atom(r, depth) < 0) return -1;
    return 0;
}

static int s_marker_or(reader_t *r, int depth)
{
    if (s_marker_and(r, depth) < 0) return -1;
    while (s_word(r, "or"))
        if (s_marker_and(r, depth) < 0) return -1;
    return 0;
}

int pep508_check(const char *s, size_t len, char *err, size_t errlen)
{
    reader_t r = {s, s + len, NULL};
    if (!len || len > PEP508_MAX) {
        snprintf(err, errlen, "a requirement is 1 to %d characters", PEP508_MAX);
        return -1;
    }
    s_space(&r);
    if (s_name(&r) == 0 && s_extras(&r) == 0 && s_versions(&r) == 0) {
        s_space(&r);
        if (r.s < r.end && *r.s == ';') {
            r.s++;
            s_marker_or(&r, 0);
            s_space(&r);
        }
        if (!r.why && r.s < r.end) s_fail(&r, "it holds more than a name, extras, versions and a marker");
    }
    if (!r.why) return 0;
    /* the quote goes into answers and log lines: printable ASCII only, and no double quote */
    char quote[61];
    size_t q = len > 60 ? 60 : len;
    for (size_t i = 0; i < q; i++)
        quote[i] = (unsigned char)s[i] >= 0x20 && (unsigned char)s[i] < 0x7f && s[i] != '"' ? s[i] : '?';
    quote[q] = '\0';
    snprintf(err, errlen, "'%s%s' is not a plain PEP 508 requirement (like pandas>=2): %s", quote,
             len > 60 ? "..." : "", r.why);
    return -1;
}
