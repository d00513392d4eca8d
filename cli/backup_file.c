/* cli/backup_file.c — see backup_file.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/sha256.h"
#include "backup_file.h"

static const char s_magic[] = "SNAKEPIT-BACKUP\n";

/* ---- writing ----------------------------------------------------------------------------- */

struct backup_writer {
    char path[PATH_MAX];
    char tmp[PATH_MAX + 8];
    FILE *f;
    sha256_t sum;
    uint64_t count;
    int failed; /* an fwrite failed: errno kept in err at close */
    int error;
};

static void s_put(backup_writer_t *w, const void *data, size_t len)
{
    if (w->failed) return;
    if (fwrite(data, 1, len, w->f) != len) {
        w->failed = 1;
        w->error = errno;
        return;
    }
    sha256_update(&w->sum, data, len);
}

static void s_put_u32(backup_writer_t *w, uint32_t v)
{
    uint8_t b[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v};
    s_put(w, b, 4);
}

static void s_put_u64(backup_writer_t *w, uint64_t v)
{
    s_put_u32(w, (uint32_t)(v >> 32));
    s_put_u32(w, (uint32_t)v);
}

backup_writer_t *backup_writer_open(const char *path, const char *header_json, char *err,
                                    size_t errlen)
{
    backup_writer_t *w = calloc(1, sizeof *w);
    if (!w) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    snprintf(w->path, sizeof w->path, "%s", path);
    snprintf(w->tmp, sizeof w->tmp, "%s.tmp", path);
    int fd = open(w->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    w->f = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (!w->f) {
        snprintf(err, errlen, "%s: %s", w->tmp, strerror(errno));
        if (fd >= 0) close(fd);
        free(w);
        return NULL;
    }
    sha256_init(&w->sum);
    s_put(w, s_magic, strlen(s_magic));
    s_put(w, header_json, strlen(header_json));
    s_put(w, "\n", 1);
    return w;
}

int backup_writer_add(backup_writer_t *w, const backup_record_t *r, char *err, size_t errlen)
{
    if (r->key_len > BACKUP_MAX_KEY || r->payload_len > BACKUP_MAX_PAYLOAD) {
        snprintf(err, errlen, "key %.*s: too large to back up",
                 (int)(r->key_len > 80 ? 80 : r->key_len), r->key);
        return -1;
    }
    uint8_t type = (uint8_t)r->type;
    s_put(w, "K", 1);
    s_put(w, &type, 1);
    s_put_u32(w, (uint32_t)r->key_len);
    s_put(w, r->key, r->key_len);
    s_put_u64(w, (uint64_t)r->expire_at_ms);
    s_put_u32(w, (uint32_t)r->payload_len);
    s_put(w, r->payload, r->payload_len);
    w->count++;
    if (w->failed) {
        snprintf(err, errlen, "%s: %s", w->tmp, strerror(w->error));
        return -1;
    }
    return 0;
}

uint64_t backup_writer_count(const backup_writer_t *w)
{
    return w->count;
}

int backup_writer_close(backup_writer_t **self_p, char *err, size_t errlen)
{
    backup_writer_t *w = *self_p;
    *self_p = NULL;
    uint8_t digest[32];
    s_put(w, "E", 1);
    s_put_u64(w, w->count);
    sha256_final(&w->sum, digest);
    if (!w->failed && fwrite(digest, 1, 32, w->f) != 32) w->failed = 1, w->error = errno;
    if (!w->failed && (fflush(w->f) != 0 || fsync(fileno(w->f)) != 0))
        w->failed = 1, w->error = errno;
    if (fclose(w->f) != 0 && !w->failed) w->failed = 1, w->error = errno;
    if (!w->failed && rename(w->tmp, w->path) != 0) w->failed = 1, w->error = errno;
    int rc = w->failed ? -1 : 0;
    if (rc < 0) {
        snprintf(err, errlen, "%s: %s", w->path, strerror(w->error));
        unlink(w->tmp);
    }
    free(w);
    return rc;
}

void backup_writer_abort(backup_writer_t **self_p)
{
    backup_writer_t *w = *self_p;
    if (!w) return;
    fclose(w->f);
    unlink(w->tmp);
    free(w);
    *self_p = NULL;
}

/* ---- reading ----------------------------------------------------------------------------- */

struct backup_reader {
    FILE *f;
    char path[PATH_MAX];
    sha256_t sum;
    uint64_t count;
    char *key, *payload; /* the current record's, reallocated as needed */
    size_t key_cap, payload_cap;
};

/* Exactly len bytes, hashed. -1 at a short read (a truncated file). */
static int s_get(backup_reader_t *r, void *out, size_t len)
{
    if (len && fread(out, 1, len, r->f) != len) return -1;
    sha256_update(&r->sum, out, len);
    return 0;
}

static int s_get_u32(backup_reader_t *r, uint32_t *v)
{
    uint8_t b[4];
    if (s_get(r, b, 4) < 0) return -1;
    *v = (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
    return 0;
}

static int s_get_u64(backup_reader_t *r, uint64_t *v)
{
    uint32_t hi, lo;
    if (s_get_u32(r, &hi) < 0 || s_get_u32(r, &lo) < 0) return -1;
    *v = (uint64_t)hi << 32 | lo;
    return 0;
}

/* A length-prefixed field of at most max bytes into *buf (grown to *cap). */
static int s_get_field(backup_reader_t *r, char **buf, size_t *cap, size_t *len, uint32_t max)
{
    uint32_t n;
    if (s_get_u32(r, &n) < 0 || n > max) return -1;
    if (n + 1 > *cap) {
        *buf = xrealloc(*buf, n + 1);
        *cap = n + 1;
    }
    if (s_get(r, *buf, n) < 0) return -1;
    (*buf)[n] = '\0';
    *len = n;
    return 0;
}

backup_reader_t *backup_reader_open(const char *path, char *header, size_t cap, char *err,
                                    size_t errlen)
{
    backup_reader_t *r = calloc(1, sizeof *r);
    FILE *f = r ? fopen(path, "rb") : NULL;
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, r ? strerror(errno) : "out of memory");
        free(r);
        return NULL;
    }
    r->f = f;
    snprintf(r->path, sizeof r->path, "%s", path);
    sha256_init(&r->sum);
    char magic[sizeof s_magic] = "";
    size_t n = 0;
    int ch = 0;
    if (s_get(r, magic, strlen(s_magic)) < 0 || memcmp(magic, s_magic, strlen(s_magic)) != 0) {
        snprintf(err, errlen, "%s is not a snakepit backup", path);
        backup_reader_close(&r);
        return NULL;
    }
    while (n + 1 < cap && n < BACKUP_MAX_HEADER && (ch = fgetc(f)) != EOF && ch != '\n')
        header[n++] = (char)ch;
    header[n] = '\0';
    sha256_update(&r->sum, header, n);
    if (ch != '\n') {
        snprintf(err, errlen, "%s: its header is damaged", path);
        backup_reader_close(&r);
        return NULL;
    }
    sha256_update(&r->sum, "\n", 1);
    return r;
}

/* The trailer: the count and the checksum of everything before it. */
static int s_trailer(backup_reader_t *r, char *err, size_t errlen)
{
    uint64_t count;
    uint8_t want[32], got[32];
    if (s_get_u64(r, &count) < 0 || fread(got, 1, 32, r->f) != 32) {
        snprintf(err, errlen, "%s is truncated", r->path);
        return -1;
    }
    sha256_final(&r->sum, want);
    if (count != r->count || memcmp(want, got, 32) != 0 || fgetc(r->f) != EOF) {
        snprintf(err, errlen, "%s is damaged (its checksum or key count does not match)", r->path);
        return -1;
    }
    return 0;
}

int backup_reader_next(backup_reader_t *r, backup_record_t *rec, char *err, size_t errlen)
{
    uint8_t tag, type;
    uint64_t expire;
    if (fread(&tag, 1, 1, r->f) != 1) {
        snprintf(err, errlen, "%s is truncated", r->path);
        return -1;
    }
    sha256_update(&r->sum, &tag, 1);
    if (tag == 'E') return s_trailer(r, err, errlen) < 0 ? -1 : 0;
    if (tag != 'K' || s_get(r, &type, 1) < 0 ||
        s_get_field(r, &r->key, &r->key_cap, &rec->key_len, BACKUP_MAX_KEY) < 0 ||
        s_get_u64(r, &expire) < 0 ||
        s_get_field(r, &r->payload, &r->payload_cap, &rec->payload_len, BACKUP_MAX_PAYLOAD) < 0) {
        snprintf(err, errlen, "%s is damaged or truncated after %llu keys", r->path,
                 (unsigned long long)r->count);
        return -1;
    }
    rec->type = (char)type;
    rec->key = r->key;
    rec->payload = r->payload;
    rec->expire_at_ms = (int64_t)expire;
    r->count++;
    return 1;
}

void backup_reader_close(backup_reader_t **self_p)
{
    backup_reader_t *r = *self_p;
    if (!r) return;
    if (r->f) fclose(r->f);
    free(r->key);
    free(r->payload);
    free(r);
    *self_p = NULL;
}
