/* common/pep723.c — see pep723.h. The block is the PEP 723 reference regex's: a line
 * `# /// script`, comment lines (`#` alone or `# ` and text), a line `# ///`. Inside, the
 * `dependencies = [...]` array's quoted strings are read, possibly over several lines; a
 * name is the leading [A-Za-z0-9._-] run of each (PEP 508). */
#include <string.h>

#include "pep440.h"
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
    pep440_normalise(s, n, out, PEP723_NAME);
}

/* The walk both entry points share: names (normalised) and/or the requirement strings. */
static int s_walk(const char *code, size_t len, char names[][PEP723_NAME], char reqs[][PEP723_REQ],
                  int max)
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
                char name[PEP723_NAME];
                size_t n_req = (size_t)(q - c - 1);
                s_name(c + 1, n_req, name);
                if (name[0] && n_req < PEP723_REQ) {
                    if (names) memcpy(names[count], name, sizeof name);
                    if (reqs) {
                        memcpy(reqs[count], c + 1, n_req);
                        reqs[count][n_req] = '\0';
                    }
                    count++;
                }
            }
            c = q;
        }
    }
    return found ? count : -1;
}

int pep723_dependencies(const char *code, size_t len, char names[][PEP723_NAME], int max)
{
    return s_walk(code, len, names, NULL, max);
}

int pep723_requirements(const char *code, size_t len, char reqs[][PEP723_REQ], int max)
{
    return s_walk(code, len, NULL, reqs, max);
}
