/* executor-node/zygote/sessions/session_files.c — see session_files.h. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/buf.h"
#include "proto/job.h"
#include "session_files.h"

#define WALK_ENTRIES 8192 /* a workspace tmpfs holds 4096 inodes */
#define WALK_DEPTH   64

static int s_fail(char *err, size_t errlen, const char *what, const char *path)
{
    snprintf(err, errlen, "%s %.150s: %s", what, path, strerror(errno));
    return -1;
}

static int s_sub(int dfd, const char *name)
{
    return openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

static int s_times(int fd, const struct stat *st)
{
    struct timespec t[2] = {st->st_atim, st->st_mtim};
    return futimens(fd, t);
}

/* ---- copy -------------------------------------------------------------------------------- */

typedef struct {
    const workspace_t *ws;
    size_t budget;
    char *err;
    size_t errlen;
} copy_t;

static int s_copy_data(int from, int to, size_t size)
{
    while (size) {
        ssize_t n = copy_file_range(from, NULL, to, NULL, size, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EXDEV || errno == EINVAL || errno == EOPNOTSUPP)) {
            char b[65536]; /* tmpfs to tmpfs across mounts on older kernels: by hand */
            ssize_t r = read(from, b, sizeof b);
            if (r <= 0) return r < 0 ? -1 : 0;
            if (write(to, b, (size_t)r) != r) return -1;
            size = (size_t)r < size ? size - (size_t)r : 0;
            continue;
        }
        if (n <= 0) return n < 0 ? -1 : 0; /* a file that shrank meanwhile: what is left */
        size -= (size_t)n;
    }
    return 0;
}

static int s_copy_file(copy_t *c, int sdir, int ddir, const char *name, const struct stat *st)
{
    int from = openat(sdir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (from < 0) return s_fail(c->err, c->errlen, "fork: reading", name);
    int to = openat(ddir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                    st->st_mode & 0777);
    int rc = to < 0 || s_copy_data(from, to, (size_t)st->st_size) < 0 ||
                     fchown(to, c->ws->uid, c->ws->gid) < 0 || s_times(to, st) < 0
                 ? s_fail(c->err, c->errlen, "fork: copying", name)
                 : 0;
    close(from);
    if (to >= 0) close(to);
    return rc;
}

static int s_copy_dir(copy_t *c, int sdir, int ddir, int depth)
{
    DIR *d = fdopendir(sdir);
    if (!d) {
        close(sdir);
        return s_fail(c->err, c->errlen, "fork: listing", "a directory");
    }
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        struct stat st;
        if (!c->budget-- || depth > WALK_DEPTH) {
            snprintf(c->err, c->errlen, "fork: the workspace has too many entries or levels");
            rc = -1;
        } else if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
            continue; /* gone meanwhile */
        } else if (S_ISREG(st.st_mode)) {
            rc = s_copy_file(c, dirfd(d), ddir, e->d_name, &st);
        } else if (S_ISDIR(st.st_mode)) {
            if (mkdirat(ddir, e->d_name, (st.st_mode & 0777) | 0700) < 0 ||
                fchownat(ddir, e->d_name, c->ws->uid, c->ws->gid, AT_SYMLINK_NOFOLLOW) < 0)
                rc = s_fail(c->err, c->errlen, "fork: mkdir", e->d_name);
            int from = rc ? -1 : s_sub(dirfd(d), e->d_name), to = rc ? -1 : s_sub(ddir, e->d_name);
            if (!rc && (from < 0 || to < 0))
                rc = s_fail(c->err, c->errlen, "fork: opening", e->d_name);
            if (!rc) {
                rc = s_copy_dir(c, from, to, depth + 1);
                from = -1; /* closed by the walk */
                if (!rc && s_times(to, &st) < 0)
                    rc = s_fail(c->err, c->errlen, "fork: mtime", e->d_name);
            }
            if (from >= 0) close(from);
            if (to >= 0) close(to);
        }
    }
    closedir(d);
    return rc;
}

int session_files_copy(const workspace_t *ws, const char *src, const char *dst, char *err,
                       size_t errlen)
{
    copy_t c = {ws, WALK_ENTRIES, err, errlen};
    int to = s_sub(AT_FDCWD, dst);
    if (to < 0) return s_fail(err, errlen, "fork: opening", dst);
    int from = s_sub(AT_FDCWD, src);
    if (from < 0) {
        close(to);
        return s_fail(err, errlen, "fork: opening", src);
    }
    int rc = s_copy_dir(&c, from, to, 0); /* closes from */
    close(to);
    return rc;
}

/* ---- read --------------------------------------------------------------------------------- */

typedef struct {
    files_read_t *out;
    size_t budget;
    char *err;
    size_t errlen;
} read_t;

static void s_skip(files_read_t *out, const char *path, const char *why)
{
    if (out->n_skipped >= SNAPSHOT_MAX_FILES) return;
    out->skipped = xrealloc(out->skipped, (out->n_skipped + 1) * sizeof *out->skipped);
    files_skip_t *k = &out->skipped[out->n_skipped++];
    snprintf(k->name, sizeof k->name, "file %.200s", path);
    snprintf(k->reason, sizeof k->reason, "%s", why);
}

static int s_read_file(read_t *r, int dfd, const char *name, const char *path)
{
    files_read_t *out = r->out;
    char why[200];
    if (jobspec_check_path(path, why, sizeof why) < 0) {
        s_skip(out, path,
               "its path cannot be restored (snapshots keep paths like execute_code's files)");
        return 0;
    }
    int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        if (fd >= 0) close(fd);
        return 0;
    }
    size_t size = (size_t)st.st_size;
    if (out->n >= SNAPSHOT_MAX_FILES || size > SNAPSHOT_MAX_FILES_BYTES - out->bytes) {
        close(fd);
        snprintf(r->err, r->errlen,
                 "the workspace holds more than a snapshot keeps (at most %d "
                 "files and %u MiB)",
                 SNAPSHOT_MAX_FILES, SNAPSHOT_MAX_FILES_BYTES >> 20);
        return -1;
    }
    char *data = xmalloc(size ? size : 1);
    size_t got = 0;
    while (got < size) {
        ssize_t n = read(fd, data + got, size - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += (size_t)n;
    }
    close(fd);
    if (out->n == out->cap) {
        out->cap = out->cap ? 2 * out->cap : 16;
        out->files = xrealloc(out->files, out->cap * sizeof *out->files);
    }
    snapshot_file_t *f = &out->files[out->n++];
    memset(f, 0, sizeof *f);
    memcpy(f->path, path, strlen(path) + 1); /* checked: at most JOB_MAX_PATH bytes */
    f->data = (const uint8_t *)data;
    f->len = got;
    f->mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
    f->mode = st.st_mode & 0777;
    out->bytes += got;
    return 0;
}

static int s_read_dir(read_t *r, int dfd, const char *prefix, int depth)
{
    DIR *d = fdopendir(dfd);
    if (!d) {
        close(dfd);
        return 0;
    }
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char path[512];
        struct stat st;
        if (!r->budget--) {
            snprintf(r->err, r->errlen, "the workspace has too many entries for a snapshot");
            rc = -1;
            break;
        }
        snprintf(path, sizeof path, "%s%s%s", prefix, *prefix ? "/" : "", e->d_name);
        if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) continue;
        if (S_ISREG(st.st_mode)) {
            rc = s_read_file(r, dirfd(d), e->d_name, path);
        } else if (S_ISDIR(st.st_mode)) {
            int sub = depth + 1 < JOB_MAX_DEPTH ? s_sub(dirfd(d), e->d_name) : -1;
            if (sub >= 0)
                rc = s_read_dir(r, sub, path, depth + 1);
            else
                s_skip(r->out, path, "nested deeper than a snapshot keeps");
        }
    }
    closedir(d);
    return rc;
}

int session_files_read(const char *dir, files_read_t *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    read_t r = {out, WALK_ENTRIES, err, errlen};
    int fd = s_sub(AT_FDCWD, dir);
    if (fd < 0) return s_fail(err, errlen, "snapshot: opening", dir);
    if (s_read_dir(&r, fd, "", 0) < 0) {
        session_files_free(out);
        return -1;
    }
    return 0;
}

void session_files_free(files_read_t *files)
{
    for (size_t i = 0; i < files->n; i++) {
        explicit_bzero((void *)files->files[i].data, files->files[i].len);
        free((void *)files->files[i].data);
    }
    free(files->files);
    free(files->skipped);
    memset(files, 0, sizeof *files);
}

/* ---- restore ------------------------------------------------------------------------------ */

typedef struct {
    const workspace_t *ws;
    const snapshot_file_t *files;
    size_t n;
    size_t budget;
} sync_t;

static int s_wanted(const sync_t *s, const char *path, int as_dir)
{
    size_t len = strlen(path);
    for (size_t i = 0; i < s->n; i++) {
        const char *p = s->files[i].path;
        if (!as_dir && !strcmp(p, path)) return 1;
        if (as_dir && !strncmp(p, path, len) && p[len] == '/') return 1;
    }
    return 0;
}

/* Removes what the snapshot does not hold: files not in it, directories no file of it needs,
 * anything that is neither a file nor a directory. */
static void s_prune(sync_t *s, int dfd, const char *prefix, int depth)
{
    DIR *d = fdopendir(dfd);
    if (!d) {
        close(dfd);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d)) && s->budget--) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char path[512];
        struct stat st;
        snprintf(path, sizeof path, "%s%s%s", prefix, *prefix ? "/" : "", e->d_name);
        if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) continue;
        if (S_ISDIR(st.st_mode) && depth < WALK_DEPTH) {
            int sub = s_sub(dirfd(d), e->d_name);
            if (sub >= 0) s_prune(s, sub, path, depth + 1);
            if (!s_wanted(s, path, 1)) unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR);
        } else if (!S_ISREG(st.st_mode) || !s_wanted(s, path, 0)) {
            unlinkat(dirfd(d), e->d_name, 0);
        }
    }
    closedir(d);
}

/* The directory holding path (made as needed), opened; *name points at the last component.
 * -1 with errno when a directory cannot be made or opened, or one made here cannot be given to
 * the sandbox's user (0700 and someone else's, the session could not use it). */
static int s_parent(const workspace_t *ws, int root, char *path, char **name)
{
    int dfd = dup(root);
    *name = path;
    for (char *slash; dfd >= 0 && (slash = strchr(*name, '/')); *name = slash + 1) {
        *slash = '\0';
        if (mkdirat(dfd, *name, 0700) == 0 &&
            fchownat(dfd, *name, ws->uid, ws->gid, AT_SYMLINK_NOFOLLOW) < 0) {
            int saved = errno;
            *slash = '/';
            close(dfd);
            errno = saved;
            return -1;
        }
        int sub = s_sub(dfd, *name);
        *slash = '/';
        close(dfd);
        dfd = sub;
    }
    return dfd;
}

static int s_same(int dfd, const char *name, const snapshot_file_t *f)
{
    int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    int same = 0;
    if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (size_t)st.st_size == f->len) {
        char *b = xmalloc(f->len ? f->len : 1);
        same = read(fd, b, f->len) == (ssize_t)f->len && !memcmp(b, f->data, f->len);
        explicit_bzero(b, f->len);
        free(b);
    }
    if (fd >= 0) close(fd);
    return same;
}

static int s_put(const sync_t *s, int root, const snapshot_file_t *f, char *err, size_t errlen)
{
    char path[sizeof f->path], *name;
    snprintf(path, sizeof path, "%s", f->path);
    int dfd = s_parent(s->ws, root, path, &name);
    if (dfd < 0) return s_fail(err, errlen, "restore: directory of", f->path);
    int rc = 0, fd = -1;
    if (!s_same(dfd, name, f)) {
        fd = openat(dfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
        size_t off = 0;
        while (fd >= 0 && off < f->len) {
            ssize_t n = write(fd, f->data + off, f->len - off);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) break;
            off += (size_t)n;
        }
        if (fd < 0 || off < f->len) rc = s_fail(err, errlen, "restore: writing", f->path);
    } else {
        fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    }
    struct timespec t[2] = {{0, UTIME_OMIT},
                            {(time_t)(f->mtime_ns / 1000000000), (long)(f->mtime_ns % 1000000000)}};
    if (rc == 0 && (fd < 0 || fchown(fd, s->ws->uid, s->ws->gid) < 0 ||
                    fchmod(fd, (f->mode & 0777) | 0600) < 0 || futimens(fd, t) < 0))
        rc = s_fail(err, errlen, "restore: setting mode and mtime of", f->path);
    if (fd >= 0) close(fd);
    close(dfd);
    return rc;
}

int session_files_restore(const workspace_t *ws, const char *dir, const snapshot_file_t *files,
                          size_t n, char *err, size_t errlen)
{
    sync_t s = {ws, files, n, WALK_ENTRIES};
    int root = s_sub(AT_FDCWD, dir);
    if (root < 0) return s_fail(err, errlen, "restore: opening", dir);
    int walk = dup(root);
    if (walk >= 0) s_prune(&s, walk, "", 0);
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) rc = s_put(&s, root, &files[i], err, errlen);
    close(root);
    return rc;
}

/* ---- list --------------------------------------------------------------------------------- */

/* Names are the tenant's bytes: only valid UTF-8 without control characters is listed (JSON
 * would not carry the rest), with quotes and backslashes escaped. */
static int s_listable(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        int n = *p < 0x80             ? 0
                : (*p & 0xe0) == 0xc0 ? 1
                : (*p & 0xf0) == 0xe0 ? 2
                : (*p & 0xf8) == 0xf0 ? 3
                                      : -1;
        if (n < 0 || (n == 0 && *p < 0x20)) return 0;
        for (int i = 1; i <= n; i++)
            if ((p[i] & 0xc0) != 0x80) return 0;
        p += n + 1;
    }
    return 1;
}

static void s_json_str(buf_t *b, const char *s)
{
    buf_puts(b, "\"");
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') buf_append(b, "\\", 1);
        buf_append(b, s, 1);
    }
    buf_puts(b, "\"");
}

static void s_list_dir(int dfd, const char *prefix, int depth, buf_t *b, int *first, size_t *budget)
{
    DIR *d = fdopendir(dfd);
    if (!d) {
        close(dfd);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d)) && (*budget)--) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char path[512];
        struct stat st;
        if (snprintf(path, sizeof path, "%s%s%s", prefix, *prefix ? "/" : "", e->d_name) >=
                (int)sizeof path ||
            fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !s_listable(path))
            continue;
        if (S_ISDIR(st.st_mode) && depth < WALK_DEPTH) {
            int sub = s_sub(dirfd(d), e->d_name);
            if (sub >= 0) s_list_dir(sub, path, depth + 1, b, first, budget);
        } else if (S_ISREG(st.st_mode)) {
            buf_puts(b, *first ? "{\"path\":" : ",{\"path\":");
            *first = 0;
            s_json_str(b, path);
            buf_printf(b, ",\"size\":%lld,\"mtime_ns\":%lld}", (long long)st.st_size,
                       (long long)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec);
        }
    }
    closedir(d);
}

void session_files_list(const char *dir, buf_t *out)
{
    int first = 1;
    size_t budget = WALK_ENTRIES;
    buf_puts(out, "[");
    int fd = s_sub(AT_FDCWD, dir);
    if (fd >= 0) s_list_dir(fd, "", 0, out, &first, &budget);
    buf_puts(out, "]");
}
