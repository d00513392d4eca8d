/* executor-node/mem/procfs.c — see procfs.h. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "procfs.h"

int procfs_open(int own_ns)
{
    /* Our mount namespace is still a copy of the host's (sandbox_seal_filesystem comes later):
     * a proc of our own pid namespace over its /proc changes nothing outside it. */
    if (own_ns && mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0) {
        log_warn("event=procfs_unavailable error=\"mount proc: %s\"", strerror(errno));
        return -1;
    }
    int fd = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) log_warn("event=procfs_unavailable error=\"open /proc: %s\"", strerror(errno));
    return fd;
}

static ssize_t s_read(int procfd, const char *path, char *buf, size_t cap)
{
    int fd = openat(procfd, path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = read(fd, buf, cap - 1);
    close(fd);
    if (n >= 0) buf[n] = '\0';
    return n;
}

int procfs_pss_kb(int procfd, pid_t pid, uint64_t *kb)
{
    char path[64], buf[2048];
    if (procfd < 0) return -1;
    snprintf(path, sizeof path, "%d/smaps_rollup", (int)pid);
    if (s_read(procfd, path, buf, sizeof buf) <= 0) return -1;
    const char *p = strstr(buf, "\nPss:");
    unsigned long long v;
    if (!p || sscanf(p + 5, "%llu", &v) != 1) return -1;
    *kb = v;
    return 0;
}

int procfs_cpu_ms(int procfd, pid_t pid, uint64_t *ms)
{
    /* The kernel's CPU clock of the process: one syscall (a session is read twice per cell),
     * and the same accounting /proc/PID/stat formats; stat when the clock cannot be had. */
    clockid_t clock;
    struct timespec ts;
    if (clock_getcpuclockid(pid, &clock) == 0 && clock_gettime(clock, &ts) == 0) {
        *ms = (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
        return 0;
    }
    char path[64], buf[1024];
    if (procfd < 0) return -1;
    snprintf(path, sizeof path, "%d/stat", (int)pid);
    if (s_read(procfd, path, buf, sizeof buf) <= 0) return -1;
    /* after comm's last ')': state, then fields 4..13, then utime and stime (proc(5)) */
    const char *p = strrchr(buf, ')');
    unsigned long long utime, stime;
    if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime,
                     &stime) != 2)
        return -1;
    static long hz;
    if (!hz) hz = sysconf(_SC_CLK_TCK);
    *ms = (utime + stime) * 1000u / (unsigned long long)(hz > 0 ? hz : 100);
    return 0;
}

/* The kernel's own list (CONFIG_PROC_CHILDREN): one read, where walking /proc reads every
 * process's stat; -1 when the kernel has none. The zygote is one thread, so its one task's list
 * is all its children. */
static long s_children_list(int procfd, pid_t parent, pid_t *out, size_t cap)
{
    char path[64], buf[8192];
    snprintf(path, sizeof path, "%d/task/%d/children", (int)parent, (int)parent);
    ssize_t len = s_read(procfd, path, buf, sizeof buf);
    if (len < 0 || (size_t)len >= sizeof buf - 1) return -1; /* none, or too many for one read */
    size_t n = 0;
    for (char *p = buf, *end; n < cap; p = end) {
        long pid = strtol(p, &end, 10);
        if (end == p) break;
        if (pid > 0) out[n++] = (pid_t)pid;
    }
    return (long)n;
}

size_t procfs_children(int procfd, pid_t parent, pid_t *out, size_t cap)
{
    if (procfd < 0) return 0;
    long listed = s_children_list(procfd, parent, out, cap);
    if (listed >= 0) return (size_t)listed;
    int dfd = openat(procfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
    if (!d) {
        if (dfd >= 0) close(dfd);
        return 0;
    }
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < cap) {
        char *end, path[64], buf[512];
        long pid = strtol(e->d_name, &end, 10);
        if (*end || pid <= 0) continue;
        snprintf(path, sizeof path, "%ld/stat", pid);
        if (s_read(procfd, path, buf, sizeof buf) <= 0) continue;
        /* "pid (comm) state ppid ...": comm may hold anything, so after its last ')' */
        const char *close_paren = strrchr(buf, ')');
        int ppid;
        char state;
        if (close_paren && sscanf(close_paren + 1, " %c %d", &state, &ppid) == 2 && ppid == parent)
            out[n++] = (pid_t)pid;
    }
    closedir(d);
    return n;
}
