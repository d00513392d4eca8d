/* mcp-frontend/compat/pep723_merge.c — see pep723_merge.h. The block is found as PEP 723's
 * reference regex finds it (a line `# /// script`, comment lines, a line `# ///`), and what the
 * regex would silently pass over — an opening line never closed, a line of another form inside,
 * a second block — is refused with the line it is on. The block's content, each line stripped of
 * "# " or "#", is TOML, of which this reads just enough: top-level `key = value` lines until the
 * first table header, the two values it needs as string tokens (with where each sits in the
 * code), any other value skipped with its brackets and strings. The rest of the TOML is the
 * executor's to check. Everything is bounded by the script's length. */
#define _GNU_SOURCE
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/pep508.h"
#include "pep723_merge.h"

/* ---- finding the block */

/* A line of the block's TOML: where it starts there, and where its text is in the code. */
typedef struct {
    size_t toml_at, code_at;
} line_map_t;

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

/* The block opened by the line at `at` (line number open_line): its end, its TOML and where
 * each TOML line comes from. 0, or -1 with err. */
static int s_block(const char *code, size_t len, size_t at, size_t open_line, pep723_meta_t *m,
                   buf_t *toml, buf_t *map, char *err, size_t errlen)
{
    size_t next, c, line_no = open_line + 1;
    m->found = 1;
    m->open_at = at;
    m->open_len = s_line(code, len, at, &next);
    for (c = next; c < len; c = next, line_no++) {
        size_t n = s_line(code, len, c, &next);
        if (s_line_is(code + c, n, "# ///")) {
            m->close_end = next;
            return 0;
        }
        if (n && code[c + n - 1] == '\r') n--;
        if (!n || code[c] != '#' || (n > 1 && code[c + 1] != ' ')) {
            snprintf(err, errlen,
                     "the script's `# /// script` block (line %zu) is not closed: line %zu is "
                     "neither `#` alone nor `# ` and text, and no `# ///` line came before it",
                     open_line, line_no);
            return -1;
        }
        size_t skip = n > 1 ? 2 : 1;
        line_map_t lm = {toml->len, c + skip};
        buf_append(map, &lm, sizeof lm);
        buf_append(toml, code + c + skip, n - skip);
        buf_append(toml, "\n", 1);
    }
    snprintf(err, errlen,
             "the script's `# /// script` block (line %zu) is not closed: it must end with a "
             "line `# ///`",
             open_line);
    return -1;
}

/* The script's one block: 0 (m->found says whether there is one), or -1 with err. */
static int s_find(const char *code, size_t len, pep723_meta_t *m, buf_t *toml, buf_t *map,
                  char *err, size_t errlen)
{
    size_t at = 0, next, line_no = 1, open_line = 0;
    while (at < len) {
        size_t n = s_line(code, len, at, &next);
        if (s_line_is(code + at, n, "# /// script")) {
            if (m->found) {
                snprintf(err, errlen,
                         "the script has two `# /// script` blocks (lines %zu and %zu); PEP 723 "
                         "allows one",
                         open_line, line_no);
                return -1;
            }
            open_line = line_no;
            if (s_block(code, len, at, line_no, m, toml, map, err, errlen) < 0) return -1;
            for (; at < m->close_end; at = next, line_no++) s_line(code, len, at, &next);
            continue;
        }
        at = next;
        line_no++;
    }
    return 0;
}

/* ---- reading TOML tokens */

typedef struct {
    const char *s;
    size_t n, i;
    const line_map_t *map; /* the TOML's lines in the code */
    size_t n_map;
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

/* Where the TOML at offset i is in the code (its line's text starts at code_at). */
static size_t s_code_at(const toml_t *t, size_t i)
{
    size_t k = 0;
    if (!t->n_map) return PEP723_NOT_IN_BLOCK; /* no TOML, no token: not reached */
    while (k + 1 < t->n_map && t->map[k + 1].toml_at <= i) k++;
    return t->map[k].code_at + (i - t->map[k].toml_at);
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
        m->dep_at[m->n_deps] = s_code_at(t, t->i);
        m->dep_len[m->n_deps] = len;
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
        if (m->requires_python) return s_fail(t, "`requires-python` is given twice");
        if (!len || len > PEP723_MAX_SPEC)
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
    buf_t toml, map;
    buf_init(&toml);
    buf_init(&map);
    int rc = s_find(code, len, m, &toml, &map, err, errlen);
    toml_t t = {(const char *)toml.data,      toml.len, 0,     (const line_map_t *)map.data,
                map.len / sizeof(line_map_t), err,      errlen};
    while (rc == 0 && m->found) {
        s_space(&t, 1);
        if (t.i >= t.n || t.s[t.i] == '[') break; /* a table: no top-level keys after it */
        rc = s_key_value(&t, m);
    }
    buf_free(&toml);
    buf_free(&map);
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

/* spec as a TOML string: a literal one when it holds a double quote (a marker's value) and no
 * single one, so that every reader of the block — common/pep723.c's included — reads it whole;
 * else a basic one, escaped. */
static char *s_quote(const char *spec, size_t len)
{
    buf_t tok;
    buf_init(&tok);
    int literal = memchr(spec, '"', len) && !memchr(spec, '\'', len);
    buf_puts(&tok, literal ? "'" : "\"");
    for (size_t i = 0; i < len; i++) { /* printable ASCII only, pep508_check said */
        if (!literal && (spec[i] == '"' || spec[i] == '\\')) buf_puts(&tok, "\\");
        buf_append(&tok, &spec[i], 1);
    }
    buf_puts(&tok, literal ? "'" : "\"");
    return buf_steal(&tok, NULL);
}

int pep723_add(pep723_meta_t *m, const char *spec, size_t len, char *err, size_t errlen)
{
    if (!len || len > PEP723_MAX_EXTRA) {
        snprintf(err, errlen, "a dependency must be a PEP 508 specifier of 1-%d characters",
                 PEP723_MAX_EXTRA);
        return -1;
    }
    if (pep508_check(spec, len, err, errlen) < 0) return -1;
    char *t = s_quote(spec, len);
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
    m->dep_at[m->n_deps] = PEP723_NOT_IN_BLOCK;
    m->dep_len[m->n_deps] = 0;
    m->deps[m->n_deps++] = t;
    return 0;
}

/* code[from, to) into b, each of the block's dependencies in that range as m has it now. The
 * block's tokens come in the order of their offsets. */
static void s_rewrite(buf_t *b, const char *code, size_t from, size_t to, const pep723_meta_t *m)
{
    size_t at = from;
    for (size_t i = 0; i < m->n_deps; i++) {
        size_t d = m->dep_at[i];
        if (d == PEP723_NOT_IN_BLOCK || d < at || d + m->dep_len[i] > to) continue;
        buf_append(b, code + at, d - at);
        buf_puts(b, m->deps[i]);
        at = d + m->dep_len[i];
    }
    buf_append(b, code + at, to - at);
}

char *pep723_write(const char *code, size_t len, const pep723_meta_t *m, size_t *out_len)
{
    buf_t b;
    buf_init(&b);
    s_rewrite(&b, code, 0, len, m);
    return buf_steal(&b, out_len);
}

char *pep723_block(const char *code, size_t len, const pep723_meta_t *m, size_t *out_len)
{
    if (!m->found || m->close_end > len || m->open_at > m->close_end) return NULL;
    buf_t b;
    buf_init(&b);
    s_rewrite(&b, code, m->open_at, m->close_end, m);
    return buf_steal(&b, out_len);
}

void pep723_unquote(const char *tok, char *out, size_t cap)
{
    size_t n = strlen(tok), o = 0;
    int basic = n >= 2 && tok[0] == '"';
    for (size_t i = 1; i + 1 < n && o + 1 < cap; i++) {
        if (basic && tok[i] == '\\' && i + 2 < n && (tok[i + 1] == '"' || tok[i + 1] == '\\')) i++;
        out[o++] = tok[i];
    }
    if (cap) out[o] = '\0';
}

void pep723_meta_clear(pep723_meta_t *m)
{
    for (size_t i = 0; i < m->n_deps; i++) free(m->deps[i]);
    free(m->requires_python);
    memset(m, 0, sizeof *m);
}
