/* executor-node/sandbox/workspace.c — see workspace.h. */
#define _GNU_SOURCE
#include <dirent.h>
#include <signal.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/log.h"
#include "workspace.h"

#define WALK_ENTRIES 4096 /* directory entries looked at when collecting or wiping */

static void s_wipe(int dfd, int depth, size_t *budget);

/* /tmp/snakepit-ws-<pid>-* of zygotes that are gone (killed before they could clean up). */
static void s_sweep_stale_roots(void)
{
    DIR *d = opendir("/tmp");
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        int pid = 0;
        if (strncmp(e->d_name, "snakepit-ws-", 12) != 0 ||
            sscanf(e->d_name + 12, "%d-", &pid) != 1 || pid <= 0 || kill(pid, 0) == 0 ||
            errno != ESRCH)
            continue;
        int fd = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        size_t budget = 1u << 20;
        if (fd < 0) continue;
        s_wipe(fd, 0, &budget); /* each job's directory, then its files */
        if (unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR) < 0)
            log_warn("event=workspace_sweep_failed dir=/tmp/%s error=\"%s\"", e->d_name,
                     strerror(errno));
    }
    closedir(d);
}

int workspace_init(workspace_t *ws, const profile_t *p, int mounts, uid_t uid, gid_t gid, char *err,
                   size_t errlen)
{
    memset(ws, 0, sizeof *ws);
    ws->mounts = mounts;
    ws->size_mb = p->workspace_mb > 0 ? p->workspace_mb : 64;
    ws->uid = uid;
    ws->gid = gid;
    if (mounts) { /* sandbox_seal_filesystem mounted a small tmpfs here for the directories */
        snprintf(ws->root, sizeof ws->root, "/work");
        return 0;
    }
    /* Without our own mount namespace the directories live on the host: under a private
     * directory only we can list (0711), removed job by job. Its name carries our pid, so
     * what a zygote that was killed left behind is swept by the next one. */
    s_sweep_stale_roots();
    char tmpl[64];
    snprintf(tmpl, sizeof tmpl, "/tmp/snakepit-ws-%d-XXXXXX", (int)getpid());
    if (!mkdtemp(tmpl) || chmod(tmpl, 0711) < 0) {
        snprintf(err, errlen, "workspace root: %s", strerror(errno));
        return -1;
    }
    snprintf(ws->root, sizeof ws->root, "%s", tmpl);
    return 0;
}

/* A random name under parent: another job cannot guess it to stat what is inside (Landlock
 * already refuses it everything else). */
static int s_random_name(const char *parent, char *dir, char *err, size_t errlen)
{
    uint8_t r[8];
    if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r) {
        snprintf(err, errlen, "workspace: getrandom: %s", strerror(errno));
        return -1;
    }
    int n = snprintf(dir, WORKSPACE_PATH_MAX, "%s/", parent);
    for (size_t i = 0; i < sizeof r && n + 2 < WORKSPACE_PATH_MAX; i++)
        n += snprintf(dir + n, (size_t)(WORKSPACE_PATH_MAX - n), "%02x", r[i]);
    return 0;
}

int workspace_mount(const workspace_t *ws, const char *dir, char *err, size_t errlen)
{
    if (mkdir(dir, 0700) < 0) {
        snprintf(err, errlen, "workspace: mkdir %s: %s", dir, strerror(errno));
        return -1;
    }
    if (ws->mounts) {
        /* Its own tmpfs: the size cap holds for the job alone (a full disk hurts only the job
         * that filled it), inodes are capped too, and unmounting wipes it in one step. */
        char opts[160];
        snprintf(opts, sizeof opts, "size=%ldm,nr_inodes=4096,mode=0700,uid=%u,gid=%u", ws->size_mb,
                 (unsigned)ws->uid, (unsigned)ws->gid);
        if (mount("snakepit-ws", dir, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, opts) < 0) {
            snprintf(err, errlen, "workspace: mount tmpfs on %s: %s", dir, strerror(errno));
            rmdir(dir);
            return -1;
        }
    } else if (chown(dir, ws->uid, ws->gid) < 0) {
        snprintf(err, errlen, "workspace: chown %s: %s", dir, strerror(errno));
        rmdir(dir);
        return -1;
    }
    return 0;
}

int workspace_make(const workspace_t *ws, char *dir, char *err, size_t errlen)
{
    if (s_random_name(ws->root, dir, err, errlen) < 0) return -1;
    return workspace_mount(ws, dir, err, errlen);
}

int workspace_make_lineage(const workspace_t *ws, char *base, char *dir, char *err, size_t errlen)
{
    if (s_random_name(ws->root, base, err, errlen) < 0) return -1;
    /* Only traversable by the session's uid: its own directories below are what it may list. */
    if (mkdir(base, 0711) < 0) {
        snprintf(err, errlen, "workspace: mkdir %s: %s", base, strerror(errno));
        return -1;
    }
    if (snprintf(dir, WORKSPACE_PATH_MAX, "%s/w", base) >= WORKSPACE_PATH_MAX ||
        workspace_mount(ws, dir, err, errlen) < 0) {
        rmdir(base);
        return -1;
    }
    return 0;
}

/* Removes everything under dfd without following a symlink; closes dfd. */
static void s_wipe(int dfd, int depth, size_t *budget)
{
    DIR *d = fdopendir(dfd);
    if (!d) {
        close(dfd);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d)) && (*budget)-- > 0) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        struct stat st;
        if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) continue;
        if (S_ISDIR(st.st_mode) && depth < 64) {
            int sub = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub >= 0) s_wipe(sub, depth + 1, budget);
            unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR);
        } else {
            unlinkat(dirfd(d), e->d_name, 0);
        }
    }
    closedir(d);
}

void workspace_remove_tree(const workspace_t *ws, const char *dir)
{
    (void)ws;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    size_t budget = 1u << 20;
    if (fd >= 0) s_wipe(fd, 0, &budget);
    if (rmdir(dir) < 0 && errno != ENOENT)
        log_warn("event=workspace_rmdir_failed dir=%s error=\"%s\"", dir, strerror(errno));
}

void workspace_remove(const workspace_t *ws, const char *dir)
{
    if (!dir[0]) return;
    if (ws->mounts) {
        if (umount2(dir, MNT_DETACH) < 0)
            log_warn("event=workspace_umount_failed dir=%s error=\"%s\"", dir, strerror(errno));
    } else {
        int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        size_t budget = 1u << 20;
        if (fd >= 0) s_wipe(fd, 0, &budget);
    }
    if (rmdir(dir) < 0)
        log_warn("event=workspace_rmdir_failed dir=%s error=\"%s\"", dir, strerror(errno));
}

int workspace_check_files(const jobspec_t *job, char *err, size_t errlen)
{
    for (size_t i = 0; i < job->n_files; i++) {
        const char *a = job->files[i].path;
        if (jobspec_check_path(a, err, errlen) < 0) return -1;
        for (size_t k = 0; k < i; k++) {
            const char *b = job->files[k].path;
            size_t la = strlen(a), lb = strlen(b);
            if (!strcmp(a, b)) return snprintf(err, errlen, "file '%.100s' is given twice", a), -1;
            /* "data" and "data/x.csv": one would have to be a file and a directory */
            if ((la < lb && !strncmp(a, b, la) && b[la] == '/') ||
                (lb < la && !strncmp(a, b, lb) && a[lb] == '/'))
                return snprintf(err, errlen, "'%.100s' cannot be both a file and a directory",
                                la < lb ? a : b),
                       -1;
        }
    }
    return 0;
}

static int s_write_all(int fd, const char *data, size_t len)
{
    while (len) {
        ssize_t n = write(fd, data, len);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return -1;
        data += n;
        len -= (size_t)n;
    }
    return 0;
}

/* One checked file: its directories, then the file, each opened beneath the last without
 * following a link (the directory is fresh and the child has run no code yet, but a path is
 * never trusted to stay a path). */
static int s_put_one(const workspace_t *ws, int root, const job_file_t *f, int replace, char *err,
                     size_t errlen)
{
    char path[JOB_MAX_PATH + 1];
    snprintf(path, sizeof path, "%s", f->path);
    int dfd = dup(root), rc = -1;
    char *name = path;
    for (char *slash; dfd >= 0 && (slash = strchr(name, '/')); name = slash + 1) {
        *slash = '\0';
        if (mkdirat(dfd, name, 0700) == 0 &&
            fchownat(dfd, name, ws->uid, ws->gid, AT_SYMLINK_NOFOLLOW) < 0)
            goto fail;
        int sub = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        close(dfd);
        dfd = sub;
    }
    if (dfd < 0) goto fail;
    int fd =
        openat(dfd, name,
               O_WRONLY | O_CREAT | (replace ? O_TRUNC : O_EXCL) | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) goto fail;
    rc = s_write_all(fd, f->data, f->len) < 0 || fchown(fd, ws->uid, ws->gid) < 0 ? -1 : 0;
    close(fd);
    if (rc == 0) {
        close(dfd);
        return 0;
    }
fail:
    snprintf(err, errlen, "writing input file '%.100s': %s", f->path, strerror(errno));
    if (dfd >= 0) close(dfd);
    return -1;
}

int workspace_put(const workspace_t *ws, const char *dir, const jobspec_t *job, int replace,
                  char *err, size_t errlen)
{
    if (!job->n_files) return 0;
    int root = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (root < 0) {
        snprintf(err, errlen, "workspace %s: %s", dir, strerror(errno));
        return -1;
    }
    int rc = 0;
    for (size_t i = 0; i < job->n_files && rc == 0; i++)
        rc = s_put_one(ws, root, &job->files[i], replace, err, errlen);
    close(root);
    return rc;
}

/* ---- collection ------------------------------------------------------------------------ */

typedef struct {
    const jobspec_t *inputs;
    int64_t since_ns; /* only files modified at or after this (a session's cell); 0: all */
    int64_t now_ns;   /* the file-time clock as the collection began */
    const workspace_marks_t *seen; /* what the previous collection returned in its last tick */
    workspace_marks_t *marks;      /* what this one returns in its own last tick */
    result_t *res;
    size_t cap;    /* slots in res->files */
    size_t bytes;  /* returned so far */
    size_t budget; /* directory entries left to look at */
} collect_t;

static int s_unchanged_input(const collect_t *c, const char *path, const char *data, size_t len)
{
    for (size_t i = 0; c->inputs && i < c->inputs->n_files; i++) {
        const job_file_t *f = &c->inputs->files[i];
        if (f->path && !strcmp(f->path, path)) return f->len == len && !memcmp(f->data, data, len);
    }
    return 0;
}

int64_t workspace_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME_COARSE, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* A file as it stood: its path, modification time and size (FNV-1a). */
static uint64_t s_mark(const char *path, const struct stat *st)
{
    uint64_t h = 1469598103934665603ull;
    int64_t parts[2] = {(int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec,
                        (int64_t)st->st_size};
    for (const char *p = path; *p; p++) h = (h ^ (uint8_t)*p) * 1099511628211ull;
    for (size_t i = 0; i < sizeof parts; i++)
        h = (h ^ ((const uint8_t *)parts)[i]) * 1099511628211ull;
    return h;
}

static int s_marked(const workspace_marks_t *m, uint64_t key)
{
    for (size_t i = 0; m && i < m->n; i++)
        if (m->mark[i].key == key) return 1;
    return 0;
}

/* Marks keep what a later cell, starting at or after now, could take for its own. */
static void s_mark_add(workspace_marks_t *m, uint64_t key, int64_t mtime, int64_t now)
{
    if (mtime < now || s_marked(m, key) || m->n == WORKSPACE_MARKS) return;
    m->mark[m->n].key = key;
    m->mark[m->n++].mtime = mtime;
}

static void s_take_file(collect_t *c, int dfd, const char *name, const char *path)
{
    int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) return;
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) { /* fifos, devices: never read */
        close(fd);
        return;
    }
    size_t size = (size_t)st.st_size;
    int64_t mtime = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
    uint64_t key = c->marks ? s_mark(path, &st) : 0;
    if (mtime < c->since_ns || (c->seen && s_marked(c->seen, key))) {
        close(fd); /* a session's file that this cell did not touch */
        return;
    }
    if (c->res->n_files >= WORKSPACE_OUT_FILES || size > WORKSPACE_OUT_BYTES - c->bytes) {
        c->res->files_truncated = 1;
        close(fd);
        return;
    }
    char *data = xmalloc(size + 1);
    size_t got = 0;
    while (got < size) { /* a file that shrank meanwhile returns what is left */
        ssize_t n = read(fd, data + got, size - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += (size_t)n;
    }
    close(fd);
    if (s_unchanged_input(c, path, data, got)) {
        explicit_bzero(data, got); /* scrub.h: no tenant bytes left in freed memory */
        free(data);
        return;
    }
    if (c->res->n_files == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 8;
        c->res->files = xrealloc(c->res->files, c->cap * sizeof *c->res->files);
    }
    result_file_t *f = &c->res->files[c->res->n_files++];
    f->path = xstrdup(path);
    f->data = data;
    f->len = got;
    c->bytes += got;
    if (c->marks) /* the next cell may share this one's time */
        s_mark_add(c->marks, key, mtime, c->now_ns);
}

static void s_walk(collect_t *c, int dfd, const char *prefix, int depth)
{
    DIR *d = fdopendir(dfd);
    if (!d) {
        close(dfd);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        if (!c->budget--) {
            c->res->files_truncated = 1;
            break;
        }
        char path[JOB_MAX_PATH + 1];
        if (snprintf(path, sizeof path, "%s%s%s", prefix, *prefix ? "/" : "", e->d_name) >=
            (int)sizeof path) {
            c->res->files_truncated = 1; /* a name too long to return */
            continue;
        }
        struct stat st;
        if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) continue;
        if (S_ISDIR(st.st_mode)) {
            if (depth + 1 >= WORKSPACE_DEPTH) {
                c->res->files_truncated = 1;
                continue;
            }
            int sub = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub >= 0) s_walk(c, sub, path, depth + 1);
        } else if (S_ISREG(st.st_mode)) {
            s_take_file(c, dirfd(d), e->d_name, path);
        }
    }
    closedir(d);
}

static int s_by_path(const void *a, const void *b)
{
    return strcmp(((const result_file_t *)a)->path, ((const result_file_t *)b)->path);
}

void workspace_collect(const char *dir, const jobspec_t *inputs, int64_t since_ns,
                       workspace_marks_t *marks, result_t *res)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return;
    int64_t now = workspace_now_ns();
    workspace_marks_t seen = marks ? *marks : (workspace_marks_t){0};
    if (marks) { /* the earlier marks a later cell may still meet, then this cell's own */
        marks->n = 0;
        for (size_t i = 0; i < seen.n; i++)
            s_mark_add(marks, seen.mark[i].key, seen.mark[i].mtime, now);
    }
    collect_t c = {.inputs = inputs,
                   .since_ns = since_ns,
                   .now_ns = now,
                   .seen = marks ? &seen : NULL,
                   .marks = marks,
                   .res = res,
                   .cap = res->n_files,
                   .budget = WALK_ENTRIES};
    s_walk(&c, fd, "", 0);
    if (res->n_files > 1) qsort(res->files, res->n_files, sizeof *res->files, s_by_path);
}
