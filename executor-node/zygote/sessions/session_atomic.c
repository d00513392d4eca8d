/* executor-node/zygote/sessions/session_atomic.c — see session_atomic.h. The trees here were made
 * by the tenant's code: every component is opened beneath its parent with O_NOFOLLOW, only
 * regular files and directories are kept or made (anything else in the workspace is removed on
 * rollback), and walks are bounded (entries, depth). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "session_atomic.h"
#include "session_files.h"

#define WALK_ENTRIES 8192 /* a workspace tmpfs holds 4096 inodes */
#define WALK_DEPTH   64

static int s_sub(int dfd, const char *name)
{
    return openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

static int s_fail(char *err, size_t errlen, const char *what, const char *name)
{
    snprintf(err, errlen, "atomic cell: %s %.150s: %s", what, name, strerror(errno));
    return -1;
}

/* 1 when dir holds nothing (or cannot be read: then it is copied, which says why). */
static int s_empty(const char *dir)
{
    int fd = s_sub(AT_FDCWD, dir);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0) close(fd);
        return 0;
    }
    struct dirent *e;
    int empty = 1;
    while (empty && (e = readdir(d))) empty = !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..");
    closedir(d);
    return empty;
}

int session_atomic_save_files(const workspace_t *ws, zygote_session_t *z, char *err, size_t errlen)
{
    z->backup_dir[0] = '\0';
    z->files_kept = 0;
    if (!ws || !z->cwd[0]) return 0;
    z->files_kept = 1;
    if (s_empty(z->cwd)) return 0; /* rollback empties it */
    if (workspace_make(ws, z->backup_dir, err, errlen) < 0) {
        z->backup_dir[0] = '\0';
        z->files_kept = 0;
        return -1;
    }
    if (session_files_copy(ws, z->cwd, z->backup_dir, err, errlen) < 0) {
        session_atomic_drop_files(ws, z);
        return -1;
    }
    return 0;
}

void session_atomic_drop_files(const workspace_t *ws, zygote_session_t *z)
{
    if (ws && z->backup_dir[0]) workspace_remove(ws, z->backup_dir);
    z->backup_dir[0] = '\0';
    z->files_kept = 0;
}

/* ---- putting the files back ------------------------------------------------------------- */

typedef struct {
    const workspace_t *ws;
    size_t seen; /* entries looked at, all walks together */
    int full;    /* more than WALK_ENTRIES: the walks stopped */
    char *err;
    size_t errlen;
    int rc;
} sync_t;

/* One more entry looked at: 0 while within the bound. */
static int s_over(sync_t *s)
{
    if (++s->seen > WALK_ENTRIES) s->full = 1;
    return s->full;
}

/* Removes name (beneath dfd) and, a directory, everything under it. */
static void s_remove(sync_t *s, int dfd, const char *name, int depth)
{
    struct stat st;
    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) return;
    if (S_ISDIR(st.st_mode) && depth < WALK_DEPTH) {
        int sub = s_sub(dfd, name);
        DIR *d = sub >= 0 ? fdopendir(sub) : NULL;
        if (!d && sub >= 0) close(sub);
        struct dirent *e;
        while (d && (e = readdir(d)) && !s_over(s))
            if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
                s_remove(s, dirfd(d), e->d_name, depth + 1);
        if (d) closedir(d);
        unlinkat(dfd, name, AT_REMOVEDIR);
    } else {
        unlinkat(dfd, name, 0);
    }
}

/* What to (beneath dst) holds that from (beneath src) does not, as the same kind: removed. */
static void s_prune(sync_t *s, int src, int dst, int depth)
{
    int walk = dup(dst);
    DIR *d = walk >= 0 ? fdopendir(walk) : NULL;
    if (!d) {
        if (walk >= 0) close(walk);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d)) && !s_over(s)) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        struct stat have, want;
        if (fstatat(dst, e->d_name, &have, AT_SYMLINK_NOFOLLOW) < 0) continue;
        int keep = src >= 0 && fstatat(src, e->d_name, &want, AT_SYMLINK_NOFOLLOW) == 0 &&
                   ((S_ISREG(have.st_mode) && S_ISREG(want.st_mode)) ||
                    (S_ISDIR(have.st_mode) && S_ISDIR(want.st_mode)));
        if (!keep) {
            s_remove(s, dst, e->d_name, depth);
        } else if (S_ISDIR(have.st_mode) && depth < WALK_DEPTH) {
            int a = s_sub(src, e->d_name), b = s_sub(dst, e->d_name);
            if (a >= 0 && b >= 0) s_prune(s, a, b, depth + 1);
            if (a >= 0) close(a);
            if (b >= 0) close(b);
        }
    }
    closedir(d);
}

/* size bytes from from into to, in the kernel: no copy of a tenant's bytes passes through the
 * zygote's memory, which every later child inherits. */
static int s_copy_bytes(int from, int to, off_t size)
{
    for (off_t left = size; left > 0;) {
        ssize_t n = sendfile(to, from, NULL, left < (1 << 30) ? (size_t)left : (size_t)1 << 30);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return n < 0 ? -1 : 0; /* shorter than it was: what is there */
        left -= n;
    }
    return 0;
}

/* name as it was (beneath src) into dst, rewritten in its own inode: a descriptor the backup
 * holds on it (reopened at the fork) reads what it read then. */
static int s_put_file(sync_t *s, int src, int dst, const char *name, const struct stat *want)
{
    int from = openat(src, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    int to = openat(dst, name, O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
    struct stat have;
    int rc = 0;
    if (from < 0 || to < 0 || fstat(to, &have) < 0 || !S_ISREG(have.st_mode))
        rc = s_fail(s->err, s->errlen, "putting back", name);
    else if (ftruncate(to, 0) < 0 || s_copy_bytes(from, to, want->st_size) < 0)
        rc = s_fail(s->err, s->errlen, "rewriting", name);
    struct timespec t[2] = {want->st_atim, want->st_mtim};
    if (rc == 0 && (fchown(to, s->ws->uid, s->ws->gid) < 0 ||
                    fchmod(to, want->st_mode & 07777) < 0 || futimens(to, t) < 0))
        rc = s_fail(s->err, s->errlen, "mode and mtime of", name);
    if (from >= 0) close(from);
    if (to >= 0) close(to);
    return rc;
}

/* Everything beneath src, into dst. */
static void s_put(sync_t *s, int src, int dst, int depth)
{
    int walk = dup(src);
    DIR *d = walk >= 0 ? fdopendir(walk) : NULL;
    if (!d) {
        if (walk >= 0) close(walk);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d)) && !s_over(s)) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        struct stat want;
        if (fstatat(src, e->d_name, &want, AT_SYMLINK_NOFOLLOW) < 0) continue;
        if (S_ISREG(want.st_mode)) {
            if (s_put_file(s, src, dst, e->d_name, &want) < 0) s->rc = -1;
        } else if (S_ISDIR(want.st_mode) && depth < WALK_DEPTH) {
            if (mkdirat(dst, e->d_name, 0700) == 0 &&
                fchownat(dst, e->d_name, s->ws->uid, s->ws->gid, AT_SYMLINK_NOFOLLOW) < 0)
                s->rc = s_fail(s->err, s->errlen, "chown", e->d_name);
            int a = s_sub(src, e->d_name), b = s_sub(dst, e->d_name);
            if (a >= 0 && b >= 0) {
                s_put(s, a, b, depth + 1);
                struct timespec t[2] = {want.st_atim, want.st_mtim};
                if (fchmod(b, want.st_mode & 07777) < 0 || futimens(b, t) < 0)
                    s->rc = s_fail(s->err, s->errlen, "mode and mtime of", e->d_name);
            } else {
                s->rc = s_fail(s->err, s->errlen, "opening", e->d_name);
            }
            if (a >= 0) close(a);
            if (b >= 0) close(b);
        }
    }
    closedir(d);
}

int session_atomic_restore_files(const workspace_t *ws, zygote_session_t *z, char *err,
                                 size_t errlen)
{
    if (!ws || !z->files_kept) return 0;
    sync_t s = {ws, 0, 0, err, errlen, 0};
    int dst = s_sub(AT_FDCWD, z->cwd);
    int src = z->backup_dir[0] ? s_sub(AT_FDCWD, z->backup_dir) : -1;
    if (dst < 0 || (z->backup_dir[0] && src < 0)) {
        s.rc = s_fail(err, errlen, "opening", dst < 0 ? z->cwd : z->backup_dir);
    } else {
        s_prune(&s, src, dst, 0); /* src -1: the workspace was empty */
        if (src >= 0) s_put(&s, src, dst, 0);
        if (s.full) {
            snprintf(err, errlen, "atomic cell: the workspace has too many entries to put back");
            s.rc = -1;
        }
    }
    if (src >= 0) close(src);
    if (dst >= 0) close(dst);
    session_atomic_drop_files(ws, z);
    return s.rc;
}

/* ---- the process -------------------------------------------------------------------------- */

/* c stops being a session's process: killed (unless reaped already), and nothing of the
 * session's (its directories) is the pool's to remove when it is released. */
static void s_let_go(pool_t *pool, child_t *c, int reaped)
{
    c->session = NULL;
    c->ws_dir[0] = c->ws_base[0] = '\0';
    c->answered = 1;
    if (!reaped && c->pid > 0) pool_discard(pool, c);
}

void session_atomic_commit(pool_t *pool, zygote_session_t *z)
{
    child_t *b = z->backup;
    z->backup = NULL;
    z->atomic = 0;
    if (b) s_let_go(pool, b, 0);
}

int session_atomic_rollback(pool_t *pool, zygote_session_t *z, int reaped)
{
    child_t *b = z->backup, *c = z->child;
    z->backup = NULL;
    z->atomic = 0;
    if (!b) return -1;
    s_let_go(pool, c, reaped);
    z->child = b;
    b->session = z;
    snprintf(b->ws_dir, sizeof b->ws_dir, "%s", z->cwd);
    return 0;
}
