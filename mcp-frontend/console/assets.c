/* mcp-frontend/console/assets.c — the page's files (console/assets/), compiled in by the
 * Makefile as byte arrays (console_assets.h, generated): the binary serves the console alone,
 * with nothing fetched at run time and nothing to install beside it. Each file's ETag is its
 * content's hash, so a browser keeps a file until a new build changes it. */
#include <stdio.h>
#include <string.h>

#include "common/sha256.h"
#include "request.h"

#include "console_assets.h" /* CONSOLE_ASSET_ROWS: {name, data, len} per file */

typedef struct {
    const char *name;
    const unsigned char *data;
    size_t len;
} asset_bytes_t;

static const asset_bytes_t s_bytes[] = {CONSOLE_ASSET_ROWS};
#define N_ASSETS (sizeof s_bytes / sizeof s_bytes[0])

static console_asset_t s_assets[N_ASSETS];
static int s_ready;

/* The media type by extension: only the kinds the folder holds are served. */
static const char *s_ctype(const char *name)
{
    static const struct {
        const char *ext, *ctype;
    } types[] = {
        {".html", "text/html; charset=utf-8"},
        {".css", "text/css; charset=utf-8"},
        {".js", "text/javascript; charset=utf-8"},
        {".svg", "image/svg+xml"},
        {".png", "image/png"},
    };
    const char *dot = strrchr(name, '.');
    for (size_t i = 0; dot && i < sizeof types / sizeof types[0]; i++)
        if (!strcmp(dot, types[i].ext)) return types[i].ctype;
    return NULL;
}

static void s_index(void)
{
    for (size_t i = 0; i < N_ASSETS; i++) {
        console_asset_t *a = &s_assets[i];
        char hex[65];
        a->name = s_bytes[i].name;
        a->ctype = s_ctype(a->name);
        a->data = s_bytes[i].data;
        a->len = s_bytes[i].len;
        sha256_hex(a->data, a->len, hex);
        snprintf(a->etag, sizeof a->etag, "\"%.16s\"", hex);
    }
    s_ready = 1;
}

const console_asset_t *console_asset(const char *name)
{
    if (!s_ready) s_index();
    for (size_t i = 0; i < N_ASSETS; i++)
        if (s_assets[i].ctype && !strcmp(s_assets[i].name, name)) return &s_assets[i];
    return NULL;
}
