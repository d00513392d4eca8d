/* executor-node/sandbox/sandbox.c — see sandbox.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <linux/capability.h>
#include <net/if.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "landlock.h"
#include "sandbox.h"

/* ---- zygote side ------------------------------------------------------------------------ */

int sandbox_probe(sandbox_t *sb, char *err, size_t errlen)
{
    if (sb->layers & LAYER_LANDLOCK) {
        int abi = landlock_abi();
        if (abi < 1) {
            snprintf(err, errlen, "layer landlock unavailable: %s (kernel ≥ 5.13 with "
                     "lsm=landlock needed; --disable-layer landlock to run without it)",
                     strerror(errno));
            return -1;
        }
        sb->landlock_abi = abi;
    }
    if (sb->layers & LAYER_SECCOMP) {
        if (prctl(PR_GET_SECCOMP, 0, 0, 0, 0) < 0) {
            snprintf(err, errlen, "layer seccomp unavailable: %s (--disable-layer seccomp to "
                     "run without it)", strerror(errno));
            return -1;
        }
    }
    if ((sb->layers & LAYER_NAMESPACES) && getpid() != 1) {
        snprintf(err, errlen, "layer namespaces: the zygote is not in its own pid namespace");
        return -1;
    }
    return 0;
}

int sandbox_neutral_host(const sandbox_t *sb, char *err, size_t errlen)
{
    if (!(sb->layers & LAYER_NAMESPACES)) return 0;
    /* our own UTS namespace: the host's name stays the host's; children cannot change it
     * (sethostname is a trapped syscall) */
    static const char host[] = "sandbox", domain[] = "(none)";
    if (sethostname(host, sizeof host - 1) < 0 || setdomainname(domain, sizeof domain - 1) < 0) {
        snprintf(err, errlen, "layer namespaces: setting the host name: %s", strerror(errno));
        return -1;
    }
    return 0;
}

/* mkdir -p inside the new root (which is mounted at /tmp until the pivot). */
static int s_mkdirs(const char *path)
{
    char buf[PATH_MAX];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(buf, 0755) < 0 && errno != EEXIST) return -1;
        *p = '/';
    }
    return mkdir(buf, 0755) < 0 && errno != EEXIST ? -1 : 0;
}

int sandbox_seal_filesystem(sandbox_t *sb, const profile_t *profile, char *err, size_t errlen)
{
    sb->landlock_fd = -1;
    sb->landlock_egress_fd = -1;
    if (sb->layers & LAYER_NAMESPACES) {
        /* Our mount namespace is a copy of the host's: detach it so nothing propagates back,
         * build a new root on a tmpfs, pivot into it and drop the old root entirely. */
        const char *step = "make-rprivate";
        char        where[PATH_MAX], env_fd_path[64] = "";
        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) goto fail;
        /* the environment may live under /tmp, which the new root is about to cover: held
         * open here, bound through /proc below */
        int env_fd = sb->env_host ? open(sb->env_host, O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;
        step = "open the dependency environment";
        if (sb->env_host && env_fd < 0) goto fail;
        if (env_fd >= 0) snprintf(env_fd_path, sizeof env_fd_path, "/proc/self/fd/%d", env_fd);
        step = "tmpfs";
        if (mount("snakepit", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=64k,mode=0755") < 0)
            goto fail;
        /* the profile's read-only paths, and the CA certificates for jobs with egress */
        for (int list = 0; list < 2; list++)
        for (const char *const *p = list ? (sb->egress_port ? egress_ro_paths : NULL)
                                         : profile->ro_paths;
             p && *p; p++) {
            struct stat st;
            if (stat(*p, &st) < 0 || !S_ISDIR(st.st_mode)) continue; /* not on this host */
            snprintf(where, sizeof where, "/tmp%s", *p);
            step = "mkdir for a read-only path";
            if (s_mkdirs(where) < 0) goto fail;
            step = "bind a read-only path";
            if (mount(*p, where, NULL, MS_BIND | MS_REC, NULL) < 0) goto fail;
            if (mount(NULL, where, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                      NULL) < 0)
                goto fail;
        }
        if (sb->env_host && profile->env_site) {
            /* A dependency environment: read-only, but not noexec, since a wheel's extension
             * modules are mapped executable when the job imports them (envprofile.h). */
            snprintf(where, sizeof where, "/tmp%s", profile->env_site);
            step = "bind the dependency environment";
            int rc = s_mkdirs(where) < 0 || mount(env_fd_path, where, NULL, MS_BIND | MS_REC, NULL) < 0 ||
                     mount(NULL, where, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) < 0;
            close(env_fd);
            if (rc) goto fail;
        }
        if (profile->workspace) {
            /* Where each child's own tmpfs is mounted (workspace.c): writable by us only, and
             * listable by nobody else. */
            step = "workspace root";
            if (mkdir("/tmp/work", 0711) < 0 ||
                mount("snakepit-work", "/tmp/work", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                      "size=64k,nr_inodes=4096,mode=0711") < 0)
                goto fail;
        }
        step = "mkdir";
        if (mkdir("/tmp/.old", 0700) < 0) goto fail;
        step = "chdir";
        if (chdir("/tmp") < 0) goto fail;
        step = "pivot_root";
        if (syscall(SYS_pivot_root, ".", ".old") < 0) goto fail;
        step = "umount old root";
        if (umount2("/.old", MNT_DETACH) < 0) goto fail;
        step = "rmdir";
        if (rmdir("/.old") < 0) goto fail;
        step = "chdir /";
        if (chdir("/") < 0) goto fail;
        step = "remount read-only";
        if (mount(NULL, "/", NULL, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
            goto fail;
        goto landlock;
    fail:
        snprintf(err, errlen, "layer namespaces: sealing the filesystem failed at %s: %s", step,
                 strerror(errno));
        return -1;
    }
landlock:
    sb->landlock_egress_fd = -1;
    if (!(sb->layers & LAYER_LANDLOCK)) return 0;
    sb->landlock_fd = landlock_ruleset(sb->landlock_abi, profile, NULL, err, errlen);
    if (sb->landlock_fd >= 0 && sb->egress_port)
        sb->landlock_egress_fd = landlock_ruleset_egress(sb->landlock_abi, profile, NULL, 0,
                                                         sb->egress_port, err, errlen);
    return sb->landlock_fd < 0 || (sb->egress_port && sb->landlock_egress_fd < 0) ? -1 : 0;
}

int sandbox_egress_listener(const sandbox_t *sb, char *err, size_t errlen)
{
    /* Only inside our own network namespace: without it 127.0.0.1 would be the host's, where
     * anything could listen, and every zygote would want the same port. */
    if (!(sb->layers & LAYER_NAMESPACES)) {
        snprintf(err, errlen, "network egress needs the namespaces layer");
        return -1;
    }
    const char *step = "socket";
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s >= 0) { /* ifconfig lo up: the namespace's only device */
        struct ifreq ifr = {0};
        snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "lo");
        step = "bringing lo up";
        if (ioctl(s, SIOCGIFFLAGS, &ifr) == 0) {
            ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
            if (ioctl(s, SIOCSIFFLAGS, &ifr) == 0) step = NULL;
        }
        close(s);
    }
    int fd = step ? -1 : socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (!step && fd < 0) step = "socket";
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)sb->egress_port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int one = 1;
    if (!step && setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0) step = "SO_REUSEADDR";
    if (!step && bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0) step = "bind";
    if (!step && listen(fd, 1024) < 0) step = "listen";
    if (step) {
        snprintf(err, errlen, "network egress: %s: %s", step, strerror(errno));
        if (fd >= 0) close(fd);
        return -1;
    }
    return fd;
}

/* ---- child side ------------------------------------------------------------------------- */

int sandbox_child_prepare(const sandbox_t *sb, int keep_fd)
{
    if (setpgid(0, 0) < 0) return -errno;
    /* Every inherited fd goes: the zygote's channel to the node, other children's sockets,
     * stdin/stdout/stderr (writing to the node's log would be log injection). Only the wake
     * socket and the Landlock ruleset stay, and the ruleset is closed once applied. */
    int keep[2] = {keep_fd, sb->landlock_fd};
    if (keep[1] >= 0 && keep[1] < keep[0]) keep[0] = sb->landlock_fd, keep[1] = keep_fd;
    unsigned from = 0;
    for (int i = 0; i < 2; i++) {
        if (keep[i] < 0) continue;
        if ((unsigned)keep[i] > from && syscall(SYS_close_range, from, (unsigned)keep[i] - 1, 0) < 0)
            return -errno;
        from = (unsigned)keep[i] + 1;
    }
    if (syscall(SYS_close_range, from, ~0U, 0) < 0) return -errno;
    /* 0, 1 and 2 taken by inert descriptors (O_PATH on the root: no read, no write), so that
     * the job's first files are not opened there: SQLite refuses a database on fd 0-2 and
     * then looks for /dev/null, which the sealed root does not have. */
    for (int fd = 0; fd < 3; fd++) {
        int got = open("/", O_PATH | O_DIRECTORY);
        if (got < 0) return -errno;
        if (got != fd) { /* taken already (keep_fd): nothing below it was free */
            close(got);
            break;
        }
    }
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0) return -errno;
    signal(SIGXFSZ, SIG_IGN);
    return 0;
}

static int s_set_rlimit(int resource, rlim_t soft, rlim_t hard)
{
    struct rlimit rl = {soft, hard};
    return setrlimit(resource, &rl);
}

/* Limits every job gets, whatever it asked for. */
int sandbox_enter_rlimits(const sandbox_t *sb)
{
    int rc = 0;
    /* No fork, no threads (seccomp also refuses). A session's child keeps the hard limit it
     * inherited, so that the zygote can let its one fork_session clone through (zygote_sessions.h);
     * its own code cannot raise the soft limit (seccomp refuses writes to RLIMIT_NPROC). */
    struct rlimit nproc = {0, 0};
    if (sb->session && getrlimit(RLIMIT_NPROC, &nproc) == 0) nproc.rlim_cur = 0;
    rc |= s_set_rlimit(RLIMIT_NPROC, 0, sb->session ? nproc.rlim_max : 0);
    rc |= s_set_rlimit(RLIMIT_CORE, 0, 0);
    /* No file may grow, except in a workspace, up to its size (its tmpfs caps the total).
     * Past it write() fails with EFBIG, a clean OSError: SIGXFSZ is ignored (prepare). */
    rc |= s_set_rlimit(RLIMIT_FSIZE, (rlim_t)sb->fsize_max, (rlim_t)sb->fsize_max);
    rc |= s_set_rlimit(RLIMIT_MEMLOCK, 0, 0);
    rc |= s_set_rlimit(RLIMIT_MSGQUEUE, 0, 0);
    return rc ? -1 : 0;
}

int sandbox_child_limits(const sandbox_t *sb, const limits_t *l, const area_t *area, char *err,
                         size_t errlen)
{
    if (!(sb->layers & LAYER_RLIMITS)) return 0;
    /* RLIMIT_CPU counts the whole process; the pool's warm-up already used some. */
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    long   used_ms = (long)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000 +
                   (long)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000;
    /* A job has one thread, so it cannot use more CPU than wall time: when the CPU limit is
     * not below the wall deadline (a call that gives only a timeout), the deadline is what ends
     * a busy loop, as `timeout`, and the CPU limit backs it up a second later. Equal, the two
     * fired within a millisecond of each other and the status was whichever won. */
    long cpu_ms = l->wall_ms > 0 && l->cpu_ms >= l->wall_ms ? l->wall_ms + 1000 : l->cpu_ms;
    rlim_t cpu_s = (rlim_t)((used_ms + cpu_ms + 999) / 1000);
    if (cpu_s < 1) cpu_s = 1;
    int rc = 0;
    /* The address space limit counts what the interpreter already maps (in ASan builds that
     * includes the shadow reserved at exec), plus the job area; the memory limit is what the
     * code may add on top. */
    rlim_t as = (rlim_t)sb->base_vm + (rlim_t)area->size + (rlim_t)l->memory_mb * 1024 * 1024;
    rc |= s_set_rlimit(RLIMIT_AS, as, as);
    rc |= s_set_rlimit(RLIMIT_CPU, cpu_s, cpu_s + 1); /* SIGXCPU first, SIGKILL a second later */
    rc |= s_set_rlimit(RLIMIT_NOFILE, (rlim_t)l->nofile, (rlim_t)l->nofile);
    if (rc) {
        snprintf(err, errlen, "entering layer rlimits: %s", strerror(errno));
        return -1;
    }
    return 0;
}

int sandbox_session_limits(const sandbox_t *sb, const limits_t *l, const area_t *area, char *err,
                           size_t errlen)
{
    if (!(sb->layers & LAYER_RLIMITS)) return 0;
    rlim_t as = (rlim_t)sb->base_vm + (rlim_t)area->size + (rlim_t)l->memory_mb * 1024 * 1024;
    int rc = s_set_rlimit(RLIMIT_AS, as, as);
    rc |= s_set_rlimit(RLIMIT_NOFILE, (rlim_t)l->nofile, (rlim_t)l->nofile);
    if (rc) {
        snprintf(err, errlen, "entering layer rlimits: %s", strerror(errno));
        return -1;
    }
    return 0;
}

int sandbox_cell_cpu(const sandbox_t *sb, long cpu_ms)
{
    if (!(sb->layers & LAYER_RLIMITS)) return 0;
    struct rusage ru;
    struct rlimit rl;
    if (getrusage(RUSAGE_SELF, &ru) < 0 || getrlimit(RLIMIT_CPU, &rl) < 0) return -1;
    long used_ms = (long)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000 +
                   (long)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000;
    rlim_t soft = (rlim_t)((used_ms + cpu_ms + 999) / 1000);
    if (rl.rlim_max != RLIM_INFINITY && soft > rl.rlim_max) soft = rl.rlim_max;
    return s_set_rlimit(RLIMIT_CPU, soft, rl.rlim_max);
}

int sandbox_enter_uid(const sandbox_t *sb)
{
    if (sb->drop_uid) {
        if (setgroups(0, NULL) < 0 && errno != EPERM) return -1;
        if (setresgid(sb->run_gid, sb->run_gid, sb->run_gid) < 0) return -1;
        if (setresuid(sb->run_uid, sb->run_uid, sb->run_uid) < 0) return -1;
    }
    /* Whatever uid we run as, no capability survives (an unprivileged node maps only one
     * uid, so its children stay "root" of their namespace: strip what that would grant). */
    struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct   data[2] = {{0}};
    return (int)syscall(SYS_capset, &hdr, data);
}

int sandbox_enter_nnp(void)
{
    return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
}
