/* executor-node/zygote/sessions/session_fork_plan.c — see session_fork_plan.h. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/buf.h"
#include "executor-node/child/fork_plan.h"
#include "session_fork_plan.h"

#define MAPS_MAX (8u << 20) /* /proc/pid/maps of a very fragmented process */

static ssize_t s_read_all(int procfd, const char *path, buf_t *out, size_t max)
{
    int fd = openat(procfd, path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    char chunk[8192];
    ssize_t n;
    while ((n = read(fd, chunk, sizeof chunk)) > 0 && out->len + (size_t)n <= max)
        buf_append(out, chunk, (size_t)n);
    close(fd);
    buf_append(out, "", 1);
    out->len--;
    return n < 0 ? -1 : (ssize_t)out->len;
}

/* fdinfo's offset and flags (octal) for one descriptor. */
static void s_fdinfo(int procfd, pid_t pid, int fd, int64_t *pos, int32_t *flags)
{
    char path[64], text[1024] = "";
    snprintf(path, sizeof path, "%d/fdinfo/%d", (int)pid, fd);
    int f = openat(procfd, path, O_RDONLY | O_CLOEXEC);
    if (f >= 0) {
        ssize_t n = read(f, text, sizeof text - 1);
        text[n > 0 ? n : 0] = '\0';
        close(f);
    }
    const char *p = strstr(text, "pos:");
    *pos = p ? strtoll(p + 4, NULL, 10) : 0;
    p = strstr(text, "flags:");
    *flags = p ? (int32_t)strtol(p + 6, NULL, 8) : O_RDONLY;
}

/* One descriptor's entry: reopened when it is a file or directory that still has its path,
 * relative when it is in the session's workspace; made inert otherwise. */
static void s_fd_entry(int procfd, pid_t pid, int fd, const char *cwd, fork_plan_entry_t *e)
{
    char path[64], link[FORK_PLAN_PATH];
    struct stat st;
    memset(e, 0, sizeof *e);
    e->fd = fd;
    e->kind = FP_INERT;
    snprintf(path, sizeof path, "%d/fd/%d", (int)pid, fd);
    ssize_t n = readlinkat(procfd, path, link, sizeof link - 1);
    if (n <= 0 || fstatat(procfd, path, &st, 0) < 0) return;
    link[n] = '\0';
    if (link[0] != '/' || (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) ||
        (n > 10 && !strcmp(link + n - 10, " (deleted)")))
        return;
    size_t c = strlen(cwd);
    if (c && !strncmp(link, cwd, c) && (link[c] == '\0' || link[c] == '/'))
        snprintf(e->path, sizeof e->path, "%s", link[c] ? link + c + 1 : ".");
    else
        snprintf(e->path, sizeof e->path, "%s", link);
    s_fdinfo(procfd, pid, fd, &e->pos, &e->flags);
    e->kind = FP_REOPEN;
}

static int s_fds(int procfd, pid_t pid, const char *cwd, fork_plan_t *p, size_t room, char *err,
                 size_t errlen)
{
    char path[64];
    snprintf(path, sizeof path, "%d/fd", (int)pid);
    int dfd = openat(procfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
    if (!d) {
        if (dfd >= 0) close(dfd);
        snprintf(err, errlen, "reading the session's descriptors: %s", strerror(errno));
        return -1;
    }
    int rc = 0;
    for (struct dirent *de; rc == 0 && (de = readdir(d));) {
        char *end;
        long fd = strtol(de->d_name, &end, 10);
        if (*end || end == de->d_name || fd <= 2) continue; /* 0-2 are inert already */
        if (p->n == room) {
            snprintf(err, errlen, "the session holds too many open descriptors to fork (at most %zu)", room);
            rc = -1;
            break;
        }
        s_fd_entry(procfd, pid, (int)fd, cwd, &p->e[p->n++]);
    }
    closedir(d);
    return rc;
}

/* Linux 6.11's PROCMAP_QUERY (include/uapi/linux/fs.h, newer than this system's headers): one
 * ioctl per mapping asked for, here only the shared ones, instead of the text of every mapping
 * (a session has hundreds; their text was a tenth of an atomic cell's cost). */
struct sp_procmap_query {
    uint64_t size, query_flags, query_addr;
    uint64_t vma_start, vma_end, vma_flags, vma_page_size, vma_offset, inode;
    uint32_t dev_major, dev_minor, vma_name_size, build_id_size;
    uint64_t vma_name_addr, build_id_addr;
};
#define SP_PROCMAP_QUERY        _IOWR('f', 17, struct sp_procmap_query)
#define SP_QUERY_READABLE       0x01
#define SP_QUERY_WRITABLE       0x02
#define SP_QUERY_EXECUTABLE     0x04
#define SP_QUERY_SHARED         0x08
#define SP_QUERY_COVERING_OR_NEXT 0x10

/* The shared mappings through PROCMAP_QUERY: 1 when the kernel answered (its entries are in p),
 * 0 when it does not know the ioctl (then the text is read), -1 on an error. */
static int s_maps_query(int procfd, pid_t pid, uintptr_t skip_start, uintptr_t skip_end,
                        fork_plan_t *p, size_t room, char *err, size_t errlen)
{
    char path[64];
    snprintf(path, sizeof path, "%d/maps", (int)pid);
    int fd = openat(procfd, path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    size_t first = p->n;
    uint64_t addr = 0;
    int rc = 1;
    for (;;) {
        struct sp_procmap_query q = {.size = sizeof q,
                                     .query_flags = SP_QUERY_COVERING_OR_NEXT | SP_QUERY_SHARED,
                                     .query_addr = addr};
        if (ioctl(fd, SP_PROCMAP_QUERY, &q) < 0) {
            if (errno == ENOENT) break; /* no shared mapping past addr */
            p->n = first;               /* ENOTTY: an older kernel; anything else: read text */
            rc = 0;
            break;
        }
        if (q.vma_end <= addr) break; /* never backwards */
        addr = q.vma_end;
        if (q.vma_start < skip_end && q.vma_end > skip_start) continue;
        if (p->n == room) {
            snprintf(err, errlen, "the session holds too many shared mappings to fork");
            rc = -1;
            break;
        }
        fork_plan_entry_t *e = &p->e[p->n++];
        memset(e, 0, sizeof *e);
        e->kind = FP_PRIVATE;
        e->start = q.vma_start;
        e->len = q.vma_end - q.vma_start;
        e->prot = (q.vma_flags & SP_QUERY_READABLE ? PROT_READ : 0) |
                  (q.vma_flags & SP_QUERY_WRITABLE ? PROT_WRITE : 0) |
                  (q.vma_flags & SP_QUERY_EXECUTABLE ? PROT_EXEC : 0);
    }
    close(fd);
    return rc;
}

/* Every MAP_SHARED mapping but the job area becomes a private copy in the clone. Lines are read
 * strictly; one a file name forged (a newline in it) can only ask the clone to copy memory it
 * already has, which shares nothing. */
static int s_maps(int procfd, pid_t pid, uintptr_t skip_start, uintptr_t skip_end, fork_plan_t *p,
                  size_t room, char *err, size_t errlen)
{
    int queried = s_maps_query(procfd, pid, skip_start, skip_end, p, room, err, errlen);
    if (queried) return queried < 0 ? -1 : 0;
    char path[64];
    snprintf(path, sizeof path, "%d/maps", (int)pid);
    buf_t text;
    buf_init(&text);
    if (s_read_all(procfd, path, &text, MAPS_MAX) < 0) {
        buf_free(&text);
        snprintf(err, errlen, "reading the session's mappings: %s", strerror(errno));
        return -1;
    }
    int rc = 0;
    for (const char *line = (const char *)text.data; rc == 0 && line && *line;) {
        uint64_t start, end;
        char perms[5];
        if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %4s", &start, &end, perms) == 3 && perms[3] == 's' &&
            end > start && !(start < skip_end && end > skip_start)) {
            if (p->n == room) {
                snprintf(err, errlen, "the session holds too many shared mappings to fork");
                rc = -1;
                break;
            }
            fork_plan_entry_t *e = &p->e[p->n++];
            memset(e, 0, sizeof *e);
            e->kind = FP_PRIVATE;
            e->start = start;
            e->len = end - start;
            e->prot = (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0) |
                      (perms[2] == 'x' ? PROT_EXEC : 0);
        }
        line = strchr(line, '\n');
        if (line) line++;
    }
    buf_free(&text);
    return rc;
}

int session_fork_plan(int procfd, pid_t pid, const char *cwd, uintptr_t skip_start,
                      uintptr_t skip_end, void *plan, size_t cap, char *err, size_t errlen)
{
    fork_plan_t *p = plan;
    size_t room = fork_plan_capacity(cap);
    if (procfd < 0 || !room) {
        snprintf(err, errlen, "fork_session needs the executor's view of /proc");
        return -1;
    }
    p->magic = 0;
    p->n = 0;
    if (s_fds(procfd, pid, cwd, p, room, err, errlen) < 0 ||
        s_maps(procfd, pid, skip_start, skip_end, p, room, err, errlen) < 0)
        return -1;
    p->magic = FORK_PLAN_MAGIC;
    return 0;
}
