/* mcp-frontend/tools/pyscan.c — see pyscan.h. Two steps: the source is cut into logical statements
 * (Python's rules: newlines inside brackets and after a backslash continue a line, `;`
 * separates), with comments dropped and every string literal replaced by "" so nothing inside
 * one is read; then each statement is matched against the forms that bind names. Each step is
 * one pass over its input. */
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "pyscan.h"

/* ---- output */

static int s_ascii_ident(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] >= 0x80) return 0; /* reported names must be ASCII (jobargs.h) */
    return n > 0 && n < PYSCAN_NAME;
}

static void s_add(char list[][PYSCAN_NAME], size_t *count, const char *s, size_t n)
{
    if (!s_ascii_ident(s, n) || *count >= PYSCAN_MAX) return;
    for (size_t i = 0; i < *count; i++)
        if (strlen(list[i]) == n && !memcmp(list[i], s, n)) return;
    memcpy(list[*count], s, n);
    list[(*count)++][n] = '\0';
}

static const char *const s_keywords[] = {
    "False", "None",   "True",    "and",      "as",   "assert", "async",  "await",
    "break", "class",  "continue", "def",     "del",  "elif",   "else",   "except",
    "finally", "for",  "from",    "global",   "if",   "import", "in",     "is",
    "lambda", "nonlocal", "not",  "or",       "pass", "raise",  "return", "try",
    "while", "with",   "yield",   NULL};

static int s_keyword(const char *s, size_t n)
{
    for (const char *const *k = s_keywords; *k; k++)
        if (strlen(*k) == n && !memcmp(*k, s, n)) return 1;
    return 0;
}

static void s_name(pyscan_t *out, const char *s, size_t n)
{
    if (!s_keyword(s, n)) s_add(out->names, &out->n_names, s, n);
}

/* ---- characters */

static int s_id_start(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
           (unsigned char)c >= 0x80;
}

static int s_id_char(char c)
{
    return s_id_start(c) || (c >= '0' && c <= '9');
}

static size_t s_skip_space(const char *s, size_t n, size_t i)
{
    while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\f')) i++;
    return i;
}

/* The identifier at i (0 long when there is none). */
static size_t s_ident(const char *s, size_t n, size_t i)
{
    size_t j = i;
    if (j < n && s_id_start(s[j]))
        while (j < n && s_id_char(s[j])) j++;
    return j - i;
}

/* The word at i, as a whole identifier (callers check what precedes it). Costs the word's
 * length, not the identifier's: the loops that look for `in` or `as` stay linear. */
static int s_word_is(const char *s, size_t n, size_t i, const char *word)
{
    size_t k = strlen(word);
    return i + k <= n && !memcmp(s + i, word, k) && (i + k == n || !s_id_char(s[i + k]));
}

/* The first `c` at bracket depth 0 in [i, n), or n. */
static size_t s_find_top(const char *s, size_t n, size_t i, char c)
{
    int depth = 0;
    for (; i < n; i++) {
        if (s[i] == '(' || s[i] == '[' || s[i] == '{') depth++;
        else if ((s[i] == ')' || s[i] == ']' || s[i] == '}') && depth > 0) depth--;
        else if (s[i] == c && depth == 0) return i;
    }
    return n;
}

/* ---- targets: `a`, `a, b`, `(a, [b, *c])`; attributes and subscripts bind no name */

static void s_targets(pyscan_t *out, const char *s, size_t n)
{
    int skip_depth = 0; /* inside a subscript or a call: nothing there is a target */
    char prev = ',';
    for (size_t i = 0; i < n;) {
        char c = s[i];
        if (skip_depth) {
            if (c == '[' || c == '(' || c == '{') skip_depth++;
            else if (c == ']' || c == ')' || c == '}') skip_depth--;
            i++;
            continue;
        }
        size_t len = s_ident(s, n, i);
        if (len) {
            size_t after = s_skip_space(s, n, i + len);
            int attr = prev == '.';
            int deref = after < n && (s[after] == '.' || s[after] == '[' || s[after] == '(');
            if (!attr && !deref) s_name(out, s + i, len);
            prev = 'a';
            i += len;
            continue;
        }
        if ((c == '[' || c == '(') && (prev == 'a' || prev == ')' || prev == ']')) skip_depth = 1;
        if (c != ' ' && c != '\t') prev = c;
        i++;
    }
}

/* Every `name :=` in the statement. */
static void s_walrus(pyscan_t *out, const char *s, size_t n)
{
    for (size_t i = 0; i + 1 < n; i++) {
        if (s[i] != ':' || s[i + 1] != '=') continue;
        size_t e = i;
        while (e > 0 && (s[e - 1] == ' ' || s[e - 1] == '\t')) e--;
        size_t b = e;
        while (b > 0 && s_id_char(s[b - 1])) b--;
        if (b < e && s_id_start(s[b])) s_name(out, s + b, e - b);
    }
}

/* ---- imports */

/* `a.b.c [as d]` at i: the module, and the name it binds. Returns where it ended. */
static size_t s_dotted(const char *s, size_t n, size_t i, size_t *len)
{
    size_t start = i;
    for (;;) {
        size_t k = s_ident(s, n, i);
        if (!k) break;
        i += k;
        size_t j = s_skip_space(s, n, i);
        if (j < n && s[j] == '.') {
            i = s_skip_space(s, n, j + 1);
            continue;
        }
        break;
    }
    *len = i - start;
    return i;
}

static void s_import(pyscan_t *out, const char *s, size_t n, size_t i)
{
    while (i < n) {
        i = s_skip_space(s, n, i);
        size_t len;
        size_t start = i;
        i = s_dotted(s, n, i, &len);
        if (!len) return;
        s_add(out->modules, &out->n_modules, s + start, len);
        size_t j = s_skip_space(s, n, i);
        if (s_word_is(s, n, j, "as")) {
            j = s_skip_space(s, n, j + 2);
            size_t k = s_ident(s, n, j);
            s_name(out, s + j, k);
            i = j + k;
        } else {
            s_name(out, s + start, s_ident(s, n, start)); /* `import a.b` binds a */
        }
        i = s_skip_space(s, n, i);
        if (i >= n || s[i] != ',') return;
        i++;
    }
}

static void s_from(pyscan_t *out, const char *s, size_t n, size_t i)
{
    i = s_skip_space(s, n, i);
    if (i < n && s[i] == '.') return; /* relative: there is no package in the sandbox */
    size_t len, start = i;
    i = s_dotted(s, n, i, &len);
    if (!len) return;
    s_add(out->modules, &out->n_modules, s + start, len);
    i = s_skip_space(s, n, i);
    if (!s_word_is(s, n, i, "import")) return;
    for (i += 6; i < n;) {
        while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '(' || s[i] == ',')) i++;
        size_t k = s_ident(s, n, i);
        if (!k) return;
        size_t name = i, name_len = k;
        i = s_skip_space(s, n, i + k);
        if (s_word_is(s, n, i, "as")) {
            i = s_skip_space(s, n, i + 2);
            name = i;
            name_len = s_ident(s, n, i);
            i += name_len;
        }
        s_name(out, s + name, name_len);
    }
}

/* ---- statements */

static void s_statement(pyscan_t *out, const char *s, size_t n, int nesting);

/* The statement after a compound header's colon (`if x: y = 1`). */
static void s_body(pyscan_t *out, const char *s, size_t n, size_t i, int nesting)
{
    size_t colon = s_find_top(s, n, i, ':');
    if (colon < n && nesting < 8) s_statement(out, s + colon + 1, n - colon - 1, nesting + 1);
}

static void s_for(pyscan_t *out, const char *s, size_t n, size_t i, int nesting)
{
    size_t end = i;
    while (end < n && !(s_word_is(s, n, end, "in") && (end == 0 || !s_id_char(s[end - 1]))))
        end++;
    s_targets(out, s + i, end - i);
    s_body(out, s, n, end, nesting);
}

static void s_with(pyscan_t *out, const char *s, size_t n, size_t i, int nesting)
{
    size_t colon = s_find_top(s, n, i, ':');
    for (size_t k = i; k < colon; k++)
        if (s_word_is(s, n, k, "as") && (k == 0 || !s_id_char(s[k - 1]))) {
            size_t t = s_skip_space(s, n, k + 2);
            size_t end = s_find_top(s, colon, t, ',');
            s_targets(out, s + t, end - t);
            k = end;
        }
    s_body(out, s, n, i, nesting);
}

/* `t1 = t2 = value`, `t: ann = value`, `t += value`: every segment before the last `=`. */
static void s_assignment(pyscan_t *out, const char *s, size_t n)
{
    size_t seg = 0;
    int depth = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '(' || c == '[' || c == '{') depth++;
        else if ((c == ')' || c == ']' || c == '}') && depth > 0) depth--;
        if (c != '=' || depth) continue;
        char before = i ? s[i - 1] : ' ', after = i + 1 < n ? s[i + 1] : ' ';
        if (after == '=' || before == '=' || before == '!' || before == ':') {
            if (after == '=') i++;
            continue; /* ==, !=, :=, and the second half of == */
        }
        if ((before == '<' || before == '>') && !(i >= 2 && s[i - 2] == before))
            continue; /* <=, >= (but <<= and >>= assign) */
        size_t end = s_find_top(s, i, seg, ':'); /* an annotation ends the target */
        s_targets(out, s + seg, end - seg);
        seg = i + 1;
    }
}

/* Every `name(` not after `.`, `def` or `class`, and every `.__name__`, in the statement. */
static void s_uses(pyscan_t *out, const char *s, size_t n)
{
    char prev = ' ';
    size_t prev_word = 0, prev_word_len = 0;
    for (size_t i = 0; i < n;) {
        size_t len = s_ident(s, n, i);
        if (!len) {
            if (s[i] != ' ' && s[i] != '\t') prev = s[i], prev_word_len = 0;
            i++;
            continue;
        }
        size_t after = s_skip_space(s, n, i + len);
        int attr = prev == '.';
        int def = prev_word_len == 3 && !memcmp(s + prev_word, "def", 3);
        int cls = prev_word_len == 5 && !memcmp(s + prev_word, "class", 5);
        if (attr && len > 4 && !memcmp(s + i, "__", 2) && !memcmp(s + i + len - 2, "__", 2))
            s_add(out->dunders, &out->n_dunders, s + i, len);
        else if (!attr && !def && !cls && after < n && s[after] == '(' && !s_keyword(s + i, len))
            s_add(out->calls, &out->n_calls, s + i, len);
        prev = 'a';
        prev_word = i;
        prev_word_len = len;
        i += len;
    }
}

static void s_statement(pyscan_t *out, const char *s, size_t n, int nesting)
{
    if (!nesting) s_uses(out, s, n);
    s_walrus(out, s, n);
    size_t i = s_skip_space(s, n, 0);
    if (i < n && s[i] == '@') return; /* a decorator: the def below binds */
    if (s_word_is(s, n, i, "async")) i = s_skip_space(s, n, i + 5);
    size_t w = s_ident(s, n, i);
    size_t next = s_skip_space(s, n, i + w);
    if (s_word_is(s, n, i, "def") || s_word_is(s, n, i, "class")) {
        s_name(out, s + next, s_ident(s, n, next));
    } else if (s_word_is(s, n, i, "import")) {
        s_import(out, s, n, next);
    } else if (s_word_is(s, n, i, "from")) {
        s_from(out, s, n, next);
    } else if (s_word_is(s, n, i, "for")) {
        s_for(out, s, n, next, nesting);
    } else if (s_word_is(s, n, i, "with")) {
        s_with(out, s, n, next, nesting);
    } else if (s_word_is(s, n, i, "if") || s_word_is(s, n, i, "elif") ||
               s_word_is(s, n, i, "while") || s_word_is(s, n, i, "else") ||
               s_word_is(s, n, i, "try") || s_word_is(s, n, i, "finally") ||
               s_word_is(s, n, i, "except")) {
        s_body(out, s, n, next, nesting);
    } else if (!w || !s_keyword(s + i, w)) {
        s_assignment(out, s + i, n - i);
    }
}

/* ---- logical statements, strings and comments neutralised */

/* Past the string literal whose opening quote is at i. */
static size_t s_skip_string(const char *code, size_t len, size_t i)
{
    char q = code[i];
    int triple = i + 2 < len && code[i + 1] == q && code[i + 2] == q;
    i += triple ? 3 : 1;
    while (i < len) {
        char c = code[i];
        if (c == '\\') {
            i += 2; /* an escaped character never ends a string, raw or not */
            continue;
        }
        if (c == '\n' && !triple) return i; /* unterminated: the line ends it */
        if (c == q && (!triple || (i + 2 < len && code[i + 1] == q && code[i + 2] == q)))
            return i + (triple ? 3 : 1);
        i++;
    }
    return len;
}

void pyscan(const char *code, size_t len, pyscan_t *out)
{
    memset(out, 0, sizeof *out);
    buf_t stmt;
    buf_init(&stmt);
    int depth = 0;
    for (size_t i = 0; i <= len;) {
        char c = i < len ? code[i] : '\n';
        int end = i == len || ((c == '\n' || c == ';') && depth == 0);
        if (end) {
            s_statement(out, (const char *)stmt.data, stmt.len, 0);
            buf_reset(&stmt);
            i++;
            continue;
        }
        if (c == '#') {
            while (i < len && code[i] != '\n') i++;
        } else if (c == '"' || c == '\'') {
            i = s_skip_string(code, len, i);
            buf_append(&stmt, "\"\"", 2);
        } else if (c == '\\' && i + 1 < len && (code[i + 1] == '\n' || code[i + 1] == '\r')) {
            buf_append(&stmt, " ", 1); /* a continued line (backslash, then LF or CR LF) */
            i += code[i + 1] == '\r' && i + 2 < len && code[i + 2] == '\n' ? 3 : 2;
        } else {
            if (c == '(' || c == '[' || c == '{') depth++;
            else if ((c == ')' || c == ']' || c == '}') && depth > 0) depth--;
            buf_append(&stmt, c == '\n' || c == '\r' ? " " : &code[i], 1);
            i++;
        }
    }
    buf_free(&stmt);
}
