/* mcp-frontend/compat/pep723_merge.c — see pep723_merge.h. The block is found as pep723.c finds it
 * (a line `# /// script`, comment lines, a line `# ///`); its content, each line stripped of
 * "# " or "#", is TOML, of which this reads just enough: top-level `key = value` lines until
 * the first table header, the two values it needs as string tokens, any other value skipped
 * with its brackets and strings. Everything is bounded by the script's length. */
#define _GNU_SOURCE
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/pep508.h"
#include "pep723_merge.h"

#define RENAMED_OPENER "# /// script (merged into the block at the end)"

/* ---- finding the block */

static size_t s_line(const char *code, size_t len, size_t at, size_t *next)
{
    const char *nl = memchr(code + at, '\n', len - at);
    size_t end = nl ? (size_t)(nl - code) : len;
    *next = nl ? end + 1 : len;
    return end - at;
}

static int s_line_is(const char *line, size_t n, const char *lit)
{
    while (n && (line[n - 1] == '\r' || line[n - 1] == ' ')) n--;
    return n == strlen(lit) && !memcmp(line, lit, n);
}

/* The block's TOML into toml; 1 when there is a block. */
static int s_find(const char *code, size_t len, pep723_meta_t *m, buf_t *toml)
{
    size_t at = 0, next;
    while (at < len) {
        size_t n = s_line(code, len, at, &next);
        if (s_line_is(code + at, n, "# /// script")) {
            m->open_at = at;
            m->open_len = n;
            for (size_t c = next; c < len; c = next) {
                size_t cn = s_line(code, len, c, &next);
                if (s_line_is(code + c, cn, "# ///")) return 1;
                if (!cn || code[c] != '#') break; /* not a comment: no block here */
                size_t skip = cn > 1 && code[c + 1] == ' ' ? 2 : 1;
                buf_append(toml, code + c + skip, cn - skip);
                buf_append(toml, "\n", 1);
            }
            buf_reset(toml);
        }
        at = next;
    }
    return 0;
}

/* ---- reading TOML tokens */

typedef struct {
    const char *s;
    size_t n, i;
    char *err;
    size_t errlen;
} toml_t;

static int s_fail(toml_t *t, const char *why)
{
    snprintf(t->err, t->errlen, "the script's `# /// script` block: %s", why);
    return -1;
}

static void s_space(toml_t *t, int newlines)
{
    while (t->i < t->n) {
        char c = t->s[t->i];
        if (c == '#') {
            while (t->i < t->n && t->s[t->i] != '\n') t->i++;
        } else if (c == ' ' || c == '\t' || c == '\r' || (newlines && c == '\n')) {
            t->i++;
        } else {
            return;
        }
    }
}

/* A one-line string token at i (basic "..." or literal '...'): its length with the quotes,
 * or 0 when there is none there. */
static size_t s_string(toml_t *t)
{
    size_t i = t->i;
    char q = i < t->n ? t->s[i] : 0;
    if (q != '"' && q != '\'') return 0;
    if (i + 2 < t->n && t->s[i + 1] == q && t->s[i + 2] == q) return 0; /* multi-line */
    for (size_t j = i + 1; j < t->n && t->s[j] != '\n'; j++) {
        if (q == '"' && t->s[j] == '\\') {
            j++;
            continue;
        }
        if (t->s[j] == q) return j + 1 - i;
    }
    return 0;
}

/* Skips any value: strings (multi-line ones too), brackets, else up to the line's end. */
static void s_skip_value(toml_t *t)
{
    int depth = 0;
    while (t->i < t->n) {
        char c = t->s[t->i];
        if (c == '"' || c == '\'') {
            char q = c;
            int triple = t->i + 2 < t->n && t->s[t->i + 1] == q && t->s[t->i + 2] == q;
            t->i += triple ? 3 : 1;
            while (t->i < t->n) {
                if (q == '"' && t->s[t->i] == '\\') {
                    t->i += 2;
                    continue;
                }
                if (t->s[t->i] == q &&
                    (!triple || (t->i + 2 < t->n && t->s[t->i + 1] == q && t->s[t->i + 2] == q))) {
                    t->i += triple ? 3 : 1;
                    break;
                }
                if (!triple && t->s[t->i] == '\n') break;
                t->i++;
            }
            continue;
        }
        if (c == '[' || c == '{') depth++;
        else if ((c == ']' || c == '}') && depth > 0) depth--;
        else if ((c == '\n' || c == '#') && depth == 0) return;
        t->i++;
    }
}

static char *s_token(toml_t *t, size_t len)
{
    char *tok = xstrndup(t->s + t->i, len);
    t->i += len;
    return tok;
}

static int s_dependencies(toml_t *t, pep723_meta_t *m)
{
    if (t->i >= t->n || t->s[t->i] != '[') return s_fail(t, "`dependencies` must be an array");
    t->i++;
    for (;;) {
        s_space(t, 1);
        if (t->i < t->n && t->s[t->i] == ']') {
            t->i++;
            return 0;
        }
        size_t len = s_string(t);
        if (!len) return s_fail(t, "`dependencies` must hold one-line strings");
        if (len > PEP723_MAX_SPEC) return s_fail(t, "a dependency is too long");
        if (m->n_deps >= PEP723_MAX_DEPS) return s_fail(t, "too many dependencies");
        m->deps[m->n_deps++] = s_token(t, len);
        s_space(t, 1);
        if (t->i < t->n && t->s[t->i] == ',') t->i++;
        else if (t->i >= t->n || t->s[t->i] != ']')
            return s_fail(t, "`dependencies` is not a closed array");
    }
}

static int s_key_value(toml_t *t, pep723_meta_t *m)
{
    size_t k = t->i;
    while (t->i < t->n && (isalnum((unsigned char)t->s[t->i]) || t->s[t->i] == '_' ||
                           t->s[t->i] == '-'))
        t->i++;
    size_t klen = t->i - k;
    s_space(t, 0);
    if (!klen || t->i >= t->n || t->s[t->i] != '=') {
        s_skip_value(t); /* a dotted or quoted key: not one of ours */
        return 0;
    }
    t->i++;
    s_space(t, 0);
    if (klen == 12 && !memcmp(t->s + k, "dependencies", 12)) {
        if (m->n_deps) return s_fail(t, "`dependencies` is given twice");
        return s_dependencies(t, m);
    }
    if (klen == 15 && !memcmp(t->s + k, "requires-python", 15)) {
        size_t len = s_string(t);
        if (!len || len > PEP723_MAX_SPEC || m->requires_python)
            return s_fail(t, "`requires-python` must be one short string");
        m->requires_python = s_token(t, len);
        return 0;
    }
    s_skip_value(t);
    return 0;
}

int pep723_read(const char *code, size_t len, pep723_meta_t *m, char *err, size_t errlen)
{
    memset(m, 0, sizeof *m);
    buf_t toml;
    buf_init(&toml);
    m->found = s_find(code, len, m, &toml);
    toml_t t = {(const char *)toml.data, toml.len, 0, err, errlen};
    int rc = 0;
    while (m->found && rc == 0) {
        s_space(&t, 1);
        if (t.i >= t.n || t.s[t.i] == '[') break; /* a table: no top-level keys after it */
        rc = s_key_value(&t, m);
    }
    buf_free(&toml);
    if (rc < 0) pep723_meta_clear(m);
    return rc;
}

/* ---- merging and writing */

/* PEP 503: the leading name, lowercased, runs of -_. as one '-'. */
static void s_norm(const char *tok, char *out, size_t outlen)
{
    size_t o = 0;
    int sep = 0;
    for (const char *p = tok + 1; *p && o + 1 < outlen; p++) {
        if (*p == '-' || *p == '_' || *p == '.') {
            sep = 1;
            continue;
        }
        if (!isalnum((unsigned char)*p)) break;
        if (sep && o) {
            if (o + 2 >= outlen) break; /* room for the separator and a character */
            out[o++] = '-';
        }
        sep = 0;
        out[o++] = (char)tolower((unsigned char)*p);
    }
    out[o] = '\0';
}

int pep723_add(pep723_meta_t *m, const char *spec, size_t len, char *err, size_t errlen)
{
    if (!len || len > PEP723_MAX_EXTRA) {
        snprintf(err, errlen, "a dependency must be a PEP 508 specifier of 1-%d characters",
                 PEP723_MAX_EXTRA);
        return -1;
    }
    if (pep508_check(spec, len, err, errlen) < 0) return -1;
    buf_t tok;
    buf_init(&tok);
    buf_puts(&tok, "\"");
    for (size_t i = 0; i < len; i++) { /* printable ASCII only, pep508_check said */
        if (spec[i] == '"' || spec[i] == '\\') buf_puts(&tok, "\\");
        buf_append(&tok, &spec[i], 1);
    }
    buf_puts(&tok, "\"");
    char *t = buf_steal(&tok, NULL);
    char name[128], other[128];
    s_norm(t, name, sizeof name);
    for (size_t i = 0; i < m->n_deps; i++) {
        s_norm(m->deps[i], other, sizeof other);
        if (!strcmp(name, other)) { /* the extra wins, where the script had it */
            free(m->deps[i]);
            m->deps[i] = t;
            return 0;
        }
    }
    if (m->n_deps >= PEP723_MAX_DEPS) {
        free(t);
        snprintf(err, errlen, "at most %d dependencies", PEP723_MAX_DEPS);
        return -1;
    }
    m->deps[m->n_deps++] = t;
    return 0;
}

char *pep723_block(const pep723_meta_t *m)
{
    buf_t b;
    buf_init(&b);
    buf_puts(&b, "# /// script\n");
    if (m->requires_python) buf_printf(&b, "# requires-python = %s\n", m->requires_python);
    buf_puts(&b, m->n_deps ? "# dependencies = [\n" : "# dependencies = []\n");
    for (size_t i = 0; i < m->n_deps; i++) buf_printf(&b, "#   %s,\n", m->deps[i]);
    if (m->n_deps) buf_puts(&b, "# ]\n");
    buf_puts(&b, "# ///\n");
    return buf_steal(&b, NULL);
}

char *pep723_write(const char *code, size_t len, const pep723_meta_t *m, size_t *out_len)
{
    buf_t b;
    buf_init(&b);
    if (m->found) {
        buf_append(&b, code, m->open_at);
        buf_puts(&b, RENAMED_OPENER);
        buf_append(&b, code + m->open_at + m->open_len, len - m->open_at - m->open_len);
    } else {
        buf_append(&b, code, len);
    }
    if (b.len && b.data[b.len - 1] != '\n') buf_puts(&b, "\n");
    char *block = pep723_block(m);
    buf_puts(&b, block);
    free(block);
    return buf_steal(&b, out_len);
}

void pep723_meta_clear(pep723_meta_t *m)
{
    for (size_t i = 0; i < m->n_deps; i++) free(m->deps[i]);
    free(m->requires_python);
    memset(m, 0, sizeof *m);
}
