/* cli/run/runfiles.c — see runfiles.h. Base64 is libsodium's (already under libzmq), constant-time
 * and strict about padding and alphabet. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/buf.h"
#include "runfiles.h"

#define B64 sodium_base64_VARIANT_ORIGINAL

void runfiles_add(runfiles_t *f, const char *path, const void *data, size_t len)
{
    f->items = xrealloc(f->items, (f->n + 1) * sizeof *f->items);
    job_file_t *jf = &f->items[f->n++];
    jf->path = xstrdup(path);
    jf->data = xmalloc(len + 1);
    if (len) memcpy(jf->data, data, len);
    jf->data[len] = '\0';
    jf->len = len;
}

void runfiles_clear(runfiles_t *f)
{
    for (size_t i = 0; i < f->n; i++) {
        free(f->items[i].path);
        free(f->items[i].data);
    }
    free(f->items);
    f->items = NULL;
    f->n = 0;
}

/* One input file, read whole up to the workspace's limit for an input. */
static int s_read_one(runfiles_t *f, const char *path, char *err, size_t errlen)
{
    const char *slash = strrchr(path, '/'), *name = slash ? slash + 1 : path;
    for (size_t i = 0; i < f->n; i++)
        if (strcmp(f->items[i].path, name) == 0) {
            snprintf(err, errlen, "--file-in: two files named '%s'", name);
            return -1;
        }
    if (jobspec_check_path(name, err, errlen) < 0) return -1;
    FILE *in = fopen(path, "rb");
    if (!in) {
        snprintf(err, errlen, "--file-in %s: %s", path, strerror(errno));
        return -1;
    }
    buf_t b;
    buf_init(&b);
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, in)) > 0 && b.len <= JOB_MAX_FILE)
        buf_append(&b, chunk, n);
    int failed = ferror(in);
    fclose(in);
    int rc = -1;
    if (failed)
        snprintf(err, errlen, "--file-in %s: read error", path);
    else if (b.len > JOB_MAX_FILE)
        snprintf(err, errlen, "--file-in %s: larger than %u bytes, the limit for an input file",
                 path, JOB_MAX_FILE);
    else
        runfiles_add(f, name, b.data, b.len), rc = 0;
    buf_free(&b);
    return rc;
}

int runfiles_read(runfiles_t *f, const char *paths, char *err, size_t errlen)
{
    char *list = xstrdup(paths), *save = NULL;
    int rc = 0;
    for (char *p = strtok_r(list, ",", &save); p && rc == 0; p = strtok_r(NULL, ",", &save)) {
        if (f->n >= JOB_MAX_FILES) {
            snprintf(err, errlen, "--file-in: more than %u files", JOB_MAX_FILES);
            rc = -1;
        } else {
            rc = s_read_one(f, p, err, errlen);
        }
    }
    free(list);
    return rc;
}

char *runfiles_base64(const void *data, size_t len)
{
    size_t cap = sodium_base64_ENCODED_LEN(len, B64);
    char *out = xmalloc(cap);
    sodium_bin2base64(out, cap, data, len, B64);
    return out;
}

/* A file's content as JSON: its text when it is UTF-8 without a NUL (jansson refuses other
 * bytes), else base64. */
static json_t *s_content(const job_file_t *jf, const char **encoding)
{
    json_t *text = memchr(jf->data, 0, jf->len) ? NULL : json_stringn(jf->data, jf->len);
    *encoding = text ? "utf-8" : "base64";
    if (text) return text;
    char *b64 = runfiles_base64(jf->data, jf->len);
    json_t *s = json_string(b64);
    free(b64);
    return s;
}

json_t *runfiles_argument(const runfiles_t *f)
{
    json_t *files = json_object();
    for (size_t i = 0; i < f->n; i++) {
        const char *encoding;
        json_t *content = s_content(&f->items[i], &encoding);
        json_object_set_new(
            files, f->items[i].path,
            strcmp(encoding, "utf-8") == 0
                ? content
                : json_pack("{s:o, s:s}", "content", content, "encoding", encoding));
    }
    return files;
}

json_t *runfiles_describe(const runfiles_t *f)
{
    json_t *list = json_array();
    for (size_t i = 0; i < f->n; i++) {
        const char *encoding;
        json_t *content = s_content(&f->items[i], &encoding);
        json_array_append_new(list, json_pack("{s:s, s:I, s:s, s:o}", "path", f->items[i].path,
                                              "bytes", (json_int_t)f->items[i].len, "encoding",
                                              encoding, "content", content));
    }
    return list;
}

/* Decodes base64 text into f as path. -1 when it is not base64. */
static int s_add_base64(runfiles_t *f, const char *path, const char *text, size_t len)
{
    size_t cap = len / 4 * 3 + 3, got = 0;
    char *bin = xmalloc(cap);
    int rc = sodium_base642bin((unsigned char *)bin, cap, text, len, "\r\n", &got, NULL, B64);
    if (rc == 0) runfiles_add(f, path, bin, got);
    free(bin);
    return rc == 0 ? 0 : -1;
}

int runfiles_from_tool_result(runfiles_t *figures, runfiles_t *files, json_t *call_result,
                              char *err, size_t errlen)
{
    size_t i, n_fig = 0;
    json_t *block, *file;
    json_array_foreach(json_object_get(call_result, "content"), i, block)
    {
        const char *type = json_string_value(json_object_get(block, "type"));
        json_t *data = json_object_get(block, "data");
        if (!type || strcmp(type, "image") != 0 || !json_is_string(data)) continue;
        const char *mime = json_string_value(json_object_get(block, "mimeType"));
        const char *slash = mime ? strchr(mime, '/') : NULL;
        char name[64];
        snprintf(name, sizeof name, "figure-%zu.%.16s", ++n_fig, slash ? slash + 1 : "png");
        if (s_add_base64(figures, name, json_string_value(data), json_string_length(data)) < 0) {
            snprintf(err, errlen, "image %zu of the answer is not base64", n_fig);
            return -1;
        }
    }
    json_t *structured = json_object_get(call_result, "structuredContent");
    json_array_foreach(json_object_get(structured, "files"), i, file)
    {
        const char *path = json_string_value(json_object_get(file, "path"));
        const char *encoding = json_string_value(json_object_get(file, "encoding"));
        json_t *content = json_object_get(file, "content");
        if (!path || !json_is_string(content)) continue;
        if (encoding && strcmp(encoding, "base64") == 0) {
            if (s_add_base64(files, path, json_string_value(content), json_string_length(content)) <
                0) {
                snprintf(err, errlen, "file '%.200s' of the answer is not base64", path);
                return -1;
            }
        } else {
            runfiles_add(files, path, json_string_value(content), json_string_length(content));
        }
    }
    return 0;
}

void runfiles_from_result(runfiles_t *figures, runfiles_t *files, const result_t *res)
{
    for (size_t i = 0; i < res->n_images; i++) {
        const char *mime = res->images[i].mime, *slash = mime ? strchr(mime, '/') : NULL;
        char name[64];
        snprintf(name, sizeof name, "figure-%zu.%.16s", i + 1, slash ? slash + 1 : "png");
        runfiles_add(figures, name, res->images[i].data, res->images[i].len);
    }
    for (size_t i = 0; i < res->n_files; i++)
        runfiles_add(files, res->files[i].path, res->files[i].data, res->files[i].len);
}

/* ---- saving ------------------------------------------------------------------------------ */

/* Creates dir and its missing parents (the user's own path). */
static int s_mkdirs(const char *dir, char *err, size_t errlen)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s", dir);
    for (char *p = path + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(path, 0755) < 0 && errno != EEXIST) break;
        *p = '/';
    }
    if (mkdir(path, 0755) < 0 && errno != EEXIST) {
        snprintf(err, errlen, "--out %s: %s", dir, strerror(errno));
        return -1;
    }
    return 0;
}

static int s_write_all(int fd, const char *data, size_t len)
{
    for (size_t off = 0; off < len;) {
        ssize_t n = write(fd, data + off, len - off);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return -1;
        off += (size_t)n;
    }
    return 0;
}

/* Writes one file under the directory dir_fd, creating its parent directories, following no
 * link on the way. */
static int s_save_one(int dir_fd, const job_file_t *jf, const char *dir, char *err, size_t errlen)
{
    if (jobspec_check_path(jf->path, err, errlen) < 0) return -1;
    char rel[JOB_MAX_PATH + 1];
    snprintf(rel, sizeof rel, "%s", jf->path);
    int fd = dup(dir_fd), rc = -1;
    char *name = rel;
    for (char *slash; fd >= 0 && (slash = strchr(name, '/')); name = slash + 1) {
        *slash = '\0';
        int next = mkdirat(fd, name, 0755) == 0 || errno == EEXIST
                       ? openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                       : -1;
        close(fd);
        fd = next;
    }
    if (fd >= 0) {
        int out = openat(fd, name, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
        rc = out >= 0 && s_write_all(out, jf->data, jf->len) == 0 ? 0 : -1;
        if (out >= 0 && close(out) < 0) rc = -1;
    }
    if (rc < 0) snprintf(err, errlen, "--out: writing %s/%s: %s", dir, jf->path, strerror(errno));
    if (fd >= 0) close(fd);
    return rc;
}

int runfiles_save(const runfiles_t *f, const char *dir, json_t *saved, char *err, size_t errlen)
{
    if (!f->n) return 0;
    if (s_mkdirs(dir, err, errlen) < 0) return -1;
    int dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir_fd < 0) {
        snprintf(err, errlen, "--out %s: %s", dir, strerror(errno));
        return -1;
    }
    int rc = 0;
    for (size_t i = 0; i < f->n && rc == 0; i++) {
        rc = s_save_one(dir_fd, &f->items[i], dir, err, errlen);
        if (rc == 0) {
            char path[PATH_MAX + JOB_MAX_PATH + 2];
            snprintf(path, sizeof path, "%s/%s", dir, f->items[i].path);
            json_array_append_new(saved, json_string(path));
        }
    }
    close(dir_fd);
    return rc;
}
