/* tests/fuzz/fuzz_compat.c — libFuzzer target for the drop-in endpoints' readers of code from
 * the network (mcp-frontend/tools/pyscan.c, mcp-frontend/compat/pep723_merge.c, common/pep508.c).
 * Whatever the input, pyscan must stay within its bounds and report only ASCII identifiers (names
 * bound, called, double-underscore attributes of that form), and the
 * PEP 723 merge must keep every byte of the code before the block and every line's number, whether
 * it reads the block or refuses it. The input's first line, when it has one, is an extra
 * dependency. */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/pep508.h"
#include "mcp-frontend/compat/pep723_merge.h"
#include "mcp-frontend/tools/pyscan.h"

static void s_check_names(char names[][PYSCAN_NAME], size_t count)
{
    for (size_t i = 0; i < count; i++) {
        size_t n = strlen(names[i]);
        assert(n > 0 && n < PYSCAN_NAME);
        for (size_t k = 0; k < n; k++) assert((unsigned char)names[i][k] < 0x80);
    }
}

static void s_check_scan(const char *code, size_t len)
{
    static pyscan_t scan;
    pyscan(code, len, &scan);
    assert(scan.n_names <= PYSCAN_MAX && scan.n_modules <= PYSCAN_MAX);
    assert(scan.n_calls <= PYSCAN_MAX && scan.n_dunders <= PYSCAN_MAX);
    s_check_names(scan.names, scan.n_names);
    s_check_names(scan.calls, scan.n_calls);
    s_check_names(scan.dunders, scan.n_dunders);
    for (size_t i = 0; i < scan.n_dunders; i++) {
        size_t n = strlen(scan.dunders[i]);
        assert(n > 4 && !memcmp(scan.dunders[i], "__", 2) &&
               !memcmp(scan.dunders[i] + n - 2, "__", 2));
    }
}

/* A requirement the check accepts starts with a name and holds no control character: nothing
 * pip could read as an option, a path or a second line. */
static void s_check_requirement(const char *req, size_t len)
{
    char err[300];
    if (pep508_check(req, len, err, sizeof err) < 0) {
        assert(err[0]);
        return;
    }
    size_t i = 0;
    while (i < len && (req[i] == ' ' || req[i] == '\t')) i++;
    assert(i < len && ((req[i] >= 'a' && req[i] <= 'z') || (req[i] >= 'A' && req[i] <= 'Z') ||
                       (req[i] >= '0' && req[i] <= '9')));
    for (; i < len; i++) assert(req[i] == '\t' || ((unsigned char)req[i] >= 0x20 && (unsigned char)req[i] < 0x7f));
}

static size_t s_lines(const char *s, size_t len)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++) n += s[i] == '\n';
    return n;
}

/* The merge rewrites only dependency strings inside the block, each on its own line: the code
 * before the block is kept byte for byte, every line keeps its number, and the block alone is
 * the block's lines. */
static void s_check_merge(const char *extra, size_t extra_len, const char *code, size_t len)
{
    pep723_meta_t m;
    char err[300];
    if (pep723_read(code, len, &m, err, sizeof err) < 0) {
        assert(err[0]);
        return;
    }
    if (extra_len) pep723_add(&m, extra, extra_len, err, sizeof err);
    size_t out_len, block_len = 0;
    char *out = pep723_write(code, len, &m, &out_len);
    assert(s_lines(out, out_len) == s_lines(code, len));
    char *block = pep723_block(code, len, &m, &block_len);
    if (m.found) {
        assert(m.open_at + m.open_len <= m.close_end && m.close_end <= len);
        assert(!memcmp(out, code, m.open_at));
        assert(block && block_len >= m.open_len && !memcmp(block, code + m.open_at, m.open_len));
        assert(s_lines(block, block_len) == s_lines(code + m.open_at, m.close_end - m.open_at));
    } else {
        assert(!block);
        assert(out_len == len && !memcmp(out, code, len));
    }
    for (size_t i = 0; i < m.n_deps; i++) {
        char text[PEP723_MAX_SPEC];
        pep723_unquote(m.deps[i], text, sizeof text);
        assert(strlen(text) < sizeof text);
    }
    free(out);
    free(block);
    pep723_meta_clear(&m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    s_check_scan(text, size);
    const char *nl = memchr(text, '\n', size);
    size_t first = nl ? (size_t)(nl - text) : 0;
    const char *code = nl ? nl + 1 : text;
    if (first) s_check_requirement(text, first);
    s_check_merge(text, first, code, size - (size_t)(code - text));
    return 0;
}
