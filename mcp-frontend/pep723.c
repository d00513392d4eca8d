/* mcp-frontend/pep723.c — see pep723.h. The block is the PEP 723 reference regex's: a line
 * `# /// script`, comment lines (`#` alone or `# ` and text), a line `# ///`. Inside, the
 * `dependencies = [...]` array's quoted strings are read, possibly over several lines; a
 * name is the leading [A-Za-z0-9._-] run of each (PEP 508). */
#include <ctype.h>
#include <string.h>

#include "pep723.h"

/* The next line [*p, end) and advance past it. */
static size_t s_line(const char **p, const char *end, const char **line)
{
    *line = *p;
    const char *nl = memchr(*p, '\n', (size_t)(end - *p));
    size_t n = nl ? (size_t)(nl - *p) : (size_t)(end - *p);
    *p = nl ? nl + 1 : end;
    return n;
}

static int s_is(const char *line, size_t n, const char *lit)
{
    size_t k = strlen(lit);
    while (n && (line[n - 1] == '\r' || line[n - 1] == ' ')) n--;
    return n == k && memcmp(line, lit, k) == 0;
}

static void s_name(const char *s, size_t n, char out[PEP723_NAME])
{
    size_t o = 0;
    int sep = 0;
    for (size_t i = 0; i < n && o + 1 < PEP723_NAME; i++) {
        char c = s[i];
        if (c == '-' || c == '_' || c == '.') {
            sep = 1;
            continue;
        }
        if (!isalnum((unsigned char)c)) break;
        if (sep && o) {
            if (o + 2 >= PEP723_NAME) break; /* room for the separator and a character */
            out[o++] = '-';
        }
        sep = 0;
        out[o++] = (char)tolower((unsigned char)c);
    }
    out[o] = '\0';
}

int pep723_dependencies(const char *code, size_t len, char names[][PEP723_NAME], int max)
{
    const char *p = code, *end = code + len, *line;
    size_t n;
    int in_block = 0, in_deps = 0, count = 0, found = 0;
    while (p < end) {
        n = s_line(&p, end, &line);
        if (!in_block) {
            if (s_is(line, n, "# /// script")) in_block = found = 1;
            continue;
        }
        if (s_is(line, n, "# ///")) break;
        if (!n || line[0] != '#') return -1; /* not a comment line: not a valid block */
        const char *c = line + 1, *ce = line + n;
        if (!in_deps) {
            while (c < ce && (*c == ' ' || *c == '\t')) c++;
            if ((size_t)(ce - c) < 12 || memcmp(c, "dependencies", 12) != 0) continue;
            c += 12;
            while (c < ce && (*c == ' ' || *c == '\t')) c++;
            if (c >= ce || *c++ != '=') continue;
            while (c < ce && (*c == ' ' || *c == '\t')) c++;
            if (c >= ce || *c++ != '[') continue;
            in_deps = 1;
        }
        for (; c < ce && in_deps; c++) {
            if (*c == ']') in_deps = 0;
            if (*c != '"' && *c != '\'') continue;
            const char *q = memchr(c + 1, *c, (size_t)(ce - c - 1));
            if (!q) break;
            if (count < max) {
                s_name(c + 1, (size_t)(q - c - 1), names[count]);
                if (names[count][0]) count++;
            }
            c = q;
        }
    }
    return found ? count : -1;
}
