/* mcp-frontend/render/rich.c — see rich.h. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "common/base64.h"
#include "common/utf8.h"
#include "mcp-frontend/rpc/jsonrpc.h"
#include "rich.h"

#define EXEC_BASE "sandbox://executions/"

static size_t s_link_bytes = RICH_LINK_BYTES_DEFAULT;

void rich_set_link_bytes(size_t bytes)
{
    s_link_bytes = bytes;
}

int rich_is_link(const result_file_t *f)
{
    return f->len > s_link_bytes;
}

/* ---- names --------------------------------------------------------------------------------- */

static const struct {
    const char *ext, *mime;
} s_types[] = {
    {".csv", "text/csv"},        {".tsv", "text/tab-separated-values"},
    {".txt", "text/plain"},      {".log", "text/plain"},
    {".md", "text/markdown"},    {".html", "text/html"},
    {".htm", "text/html"},       {".json", "application/json"},
    {".xml", "application/xml"}, {".yaml", "application/yaml"},
    {".yml", "application/yaml"}, {".py", "text/x-python"},
    {".png", "image/png"},       {".jpg", "image/jpeg"},
    {".jpeg", "image/jpeg"},     {".gif", "image/gif"},
    {".webp", "image/webp"},     {".svg", "image/svg+xml"},
    {".bmp", "image/bmp"},       {".tif", "image/tiff"},
    {".tiff", "image/tiff"},     {".pdf", "application/pdf"},
    {".zip", "application/zip"}, {".gz", "application/gzip"},
    {".xlsx", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"},
    {".db", "application/vnd.sqlite3"}, {".sqlite", "application/vnd.sqlite3"},
};

const char *rich_mime_of(const char *path)
{
    const char *dot = strrchr(path, '.');
    for (size_t i = 0; dot && i < sizeof s_types / sizeof s_types[0]; i++)
        if (!strcasecmp(dot, s_types[i].ext)) return s_types[i].mime;
    return "application/octet-stream";
}

/* RFC 3986: unreserved characters and "/" as they are, every other byte %XX. */
void rich_file_uri(buf_t *out, const char *id, const char *path)
{
    buf_printf(out, EXEC_BASE "%s/files/", id);
    for (const unsigned char *c = (const unsigned char *)path; *c; c++) {
        if ((*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') ||
            strchr("-._~/", *c))
            buf_append(out, c, 1);
        else
            buf_printf(out, "%%%02X", *c);
    }
}

static int s_hex(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
         : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

int rich_uri_path(const char *tail, buf_t *out)
{
    for (const char *c = tail; *c; c++) {
        if (*c != '%') {
            buf_append(out, c, 1);
            continue;
        }
        int hi = s_hex(c[1]), lo = hi < 0 ? -1 : s_hex(c[2]);
        if (lo < 0) return -1;
        char b = (char)(hi << 4 | lo);
        if (!b) return -1;
        buf_append(out, &b, 1);
        c += 2;
    }
    return out->len ? 0 : -1;
}

/* ---- outputs ------------------------------------------------------------------------------- */

static int s_is_text(const char *mime)
{
    return !strncmp(mime, "text/", 5) || !strcmp(mime, "image/svg+xml");
}

/* An output's data for JSON: text as text, JSON as itself, anything else base64 (*b64 set). */
static json_t *s_data(const result_output_t *o, int *b64)
{
    *b64 = 0;
    if (!strcmp(o->mime, "application/json")) {
        json_t *v = json_loadb(o->data, o->len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, NULL);
        if (v) return v;
    }
    if (s_is_text(o->mime) || !strcmp(o->mime, "application/json")) return json_bytes(o->data, o->len);
    buf_t b;
    buf_init(&b);
    base64_encode(&b, o->data, o->len);
    json_t *v = json_stringn((const char *)b.data, b.len);
    buf_free(&b);
    *b64 = 1;
    return v;
}

json_t *rich_outputs(const result_t *res)
{
    json_t *list = json_array();
    for (size_t i = 0; i < res->n_outputs; i++) {
        const result_output_t *o = &res->outputs[i];
        int b64;
        json_t *entry = json_pack("{s:o,s:I,s:o,s:o}", "kind", json_str_safe(o->kind), "index",
                                  (json_int_t)o->index, "mimeType", json_str_safe(o->mime),
                                  "data", s_data(o, &b64));
        if (b64) json_object_set_new(entry, "encoding", json_string("base64"));
        json_array_append_new(list, entry);
    }
    return list;
}

static const char *s_ext(const char *mime)
{
    static const struct {
        const char *mime, *ext;
    } exts[] = {{"text/html", "html"}, {"application/json", "json"}, {"text/markdown", "md"},
                {"text/latex", "tex"}, {"image/svg+xml", "svg"}, {"text/plain", "txt"}};
    for (size_t i = 0; i < sizeof exts / sizeof exts[0]; i++)
        if (!strcmp(mime, exts[i].mime)) return exts[i].ext;
    return "bin";
}

static json_t *s_output_block(const char *id, const result_output_t *o, int richer)
{
    if (!strcmp(o->mime, "image/png")) {
        buf_t b;
        buf_init(&b);
        base64_encode(&b, o->data, o->len);
        json_t *block = json_pack("{s:s,s:s%,s:s}", "type", "image", "data", (const char *)b.data,
                                  b.len, "mimeType", "image/png");
        buf_free(&b);
        return block;
    }
    if (!strcmp(o->mime, "text/plain")) /* alone only: the richer ones say it better, and the */
        return !richer && strcmp(o->kind, "result") /* result's repr is in the summary already */
                   ? json_pack("{s:s,s:o}", "type", "text", "text", json_bytes(o->data, o->len))
                   : NULL;
    char uri[160];
    snprintf(uri, sizeof uri, EXEC_BASE "%s/outputs/%u.%s", id, o->index, s_ext(o->mime));
    return json_pack("{s:s,s:{s:s,s:s,s:o}}", "type", "resource", "resource", "uri", uri,
                     "mimeType", o->mime, "text", json_bytes(o->data, o->len));
}

/* ---- files --------------------------------------------------------------------------------- */

/* Files the code wrote: text as text, anything else (or with a NUL) base64, and past the link
 * threshold neither but a uri. */
json_t *rich_files(const char *id, const result_t *res)
{
    json_t *files = json_array();
    for (size_t i = 0; i < res->n_files; i++) {
        const result_file_t *f = &res->files[i];
        json_t *entry = json_pack("{s:o,s:I}", "path", json_str_safe(f->path), "bytes",
                                  (json_int_t)f->len);
        if (rich_is_link(f)) {
            buf_t u;
            buf_init(&u);
            rich_file_uri(&u, id, f->path);
            json_object_set_new(entry, "encoding", json_null());
            json_object_set_new(entry, "content", json_null());
            json_object_set_new(entry, "uri", json_stringn((const char *)u.data, u.len));
            json_object_set_new(entry, "mimeType", json_string(rich_mime_of(f->path)));
            buf_free(&u);
        } else {
            int text = utf8_valid(f->data, f->len) && !memchr(f->data, 0, f->len);
            buf_t b;
            buf_init(&b);
            if (!text) base64_encode(&b, f->data, f->len);
            json_object_set_new(entry, "encoding", json_string(text ? "utf-8" : "base64"));
            json_object_set_new(entry, "content", text ? json_stringn(f->data, f->len)
                                                       : json_stringn((const char *)b.data, b.len));
            buf_free(&b);
        }
        json_array_append_new(files, entry);
    }
    return files;
}

void rich_blocks(json_t *content, const char *id, const result_t *res)
{
    for (size_t i = 0; i < res->n_outputs; i++) {
        const result_output_t *o = &res->outputs[i];
        int richer = 0; /* the same output has a representation besides text/plain */
        for (size_t k = 0; k < res->n_outputs; k++)
            richer |= res->outputs[k].index == o->index && strcmp(res->outputs[k].mime, "text/plain");
        json_t *block = s_output_block(id, o, richer);
        if (block) json_array_append_new(content, block);
    }
    for (size_t i = 0; i < res->n_files; i++) {
        const result_file_t *f = &res->files[i];
        if (!rich_is_link(f)) continue;
        buf_t u;
        buf_init(&u);
        rich_file_uri(&u, id, f->path);
        json_array_append_new(content,
                              json_pack("{s:s,s:s%,s:o,s:s,s:I}", "type", "resource_link", "uri",
                                        (const char *)u.data, u.len, "name", json_str_safe(f->path),
                                        "mimeType", rich_mime_of(f->path), "size", (json_int_t)f->len));
        buf_free(&u);
    }
}

void rich_add_unkept(json_t *call_result, const json_t *unkept)
{
    if (!json_array_size(unkept)) return;
    json_t *files = json_object_get(json_object_get(call_result, "structuredContent"), "files");
    buf_t text;
    buf_init(&text);
    size_t i;
    json_t *u;
    json_array_foreach(unkept, i, u)
    {
        const char *path = json_string_value(json_object_get(u, "path"));
        json_int_t bytes = json_integer_value(json_object_get(u, "bytes"));
        const char *note = json_string_value(json_object_get(u, "note"));
        if (json_is_array(files))
            json_array_append_new(files, json_pack("{s:s,s:I,s:n,s:n,s:s}", "path", path, "bytes",
                                                   bytes, "encoding", "content", "note", note));
        buf_printf(&text, "%sfile %s (%lld bytes) %s", i ? "\n" : "", path, (long long)bytes, note);
    }
    json_t *content = json_object_get(call_result, "content");
    if (json_is_array(content))
        json_array_append_new(content, json_pack("{s:s,s:s%}", "type", "text", "text",
                                                 (const char *)text.data, text.len));
    buf_free(&text);
}