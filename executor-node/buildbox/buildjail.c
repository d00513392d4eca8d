/* executor-node/buildjail.c — see buildjail.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <linux/capability.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "buildjail.h"

/* Fails with the step and errno in err; every step below reports through it. */
#define STEP(what, call)                                                                          \
    do {                                                                                          \
        if ((call) < 0) {                                                                         \
            snprintf(err, errlen, "build jail: %s: %s", what, strerror(errno));                   \
            return -1;                                                                            \
        }                                                                                         \
    } while (0)

static int s_write(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = write(fd, text, strlen(text));
    int e = errno;
    close(fd);
    errno = e;
    return n == (ssize_t)strlen(text) ? 0 : -1;
}

/* An unprivileged caller: a user namespace mapping only itself, as its root (to mount). */
static int s_map_self(uid_t uid, gid_t gid)
{
    char map[64];
    if (s_write("/proc/self/setgroups", "deny") < 0) return -1;
    snprintf(map, sizeof map, "0 %u 1\n", (unsigned)uid);
    if (s_write("/proc/self/uid_map", map) < 0) return -1;
    snprintf(map, sizeof map, "0 %u 1\n", (unsigned)gid);
    return s_write("/proc/self/gid_map", map);
}

/* src bound at dst; read-only unless writable; never suid or device files; exec as asked. */
static int s_bind(const char *src, const char *dst, int writable, int exec)
{
    if (mount(src, dst, NULL, MS_BIND | MS_REC, NULL) < 0) return -1;
    unsigned long flags = MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NODEV;
    if (!writable) flags |= MS_RDONLY;
    if (!exec) flags |= MS_NOEXEC;
    return mount(NULL, dst, NULL, flags, NULL);
}

/* A host file (a device, an /etc file) bound on an empty file of the same name: the bind
 * keeps the device usable (the root's nodev is the root's own mount's). */
static int s_bind_file(const char *root, const char *path, int read_only)
{
    struct stat st;
    char where[PATH_MAX];
    if (stat(path, &st) < 0) return 0; /* not on this host */
    snprintf(where, sizeof where, "%s%s", root, path);
    int fd = open(where, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return -1;
    close(fd);
    if (S_ISDIR(st.st_mode)) return -1;
    if (mount(path, where, NULL, MS_BIND, NULL) < 0) return -1;
    return read_only ? mount(NULL, where, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID, NULL) : 0;
}

static int s_bind_dir(const char *root, const char *path, int exec)
{
    struct stat st;
    char where[PATH_MAX];
    if (lstat(path, &st) < 0) return 0;
    snprintf(where, sizeof where, "%s%s", root, path);
    if (S_ISLNK(st.st_mode)) { /* merged /usr: /lib -> usr/lib, kept as the same link */
        char target[PATH_MAX];
        ssize_t n = readlink(path, target, sizeof target - 1);
        if (n < 0) return -1;
        target[n] = '\0';
        return symlink(target, where);
    }
    if (!S_ISDIR(st.st_mode)) return 0;
    if (mkdir(where, 0755) < 0 && errno != EEXIST) return -1;
    return s_bind(path, where, 0, exec);
}

/* The jail's root: a small tmpfs holding what a Python build reads, then pivoted into. */
static int s_root(const buildjail_t *j, char *err, size_t errlen)
{
    const char *r = j->root_dir;
    char p[PATH_MAX];
    STEP("make mounts private", mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL));
    STEP("tmpfs root", mount("buildjail", r, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0755"));
    static const char *const dirs[] = {"/usr", "/etc", "/dev", "/proc", "/source", "/build",
                                       "/empty", "/.old", NULL};
    for (const char *const *d = dirs; *d; d++) {
        snprintf(p, sizeof p, "%s%s", r, *d);
        STEP("mkdir", mkdir(p, 0755));
    }
    snprintf(p, sizeof p, "%s/usr", r);
    STEP("bind /usr", s_bind("/usr", p, 0, 1));
    static const char *const top[] = {"/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin", NULL};
    for (const char *const *d = top; *d; d++) STEP(*d, s_bind_dir(r, *d, 1));
    /* name resolution and TLS for an index; Python's own site configuration */
    static const char *const etc_dirs[] = {"/etc/ssl", "/etc/ca-certificates", "/etc/python3",
                                           "/etc/python3.11", NULL};
    for (const char *const *d = etc_dirs; *d; d++) STEP(*d, s_bind_dir(r, *d, 0));
    static const char *const etc_files[] = {"/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf",
                                            "/etc/host.conf", "/etc/gai.conf", NULL};
    for (const char *const *f = etc_files; *f; f++) STEP(*f, s_bind_file(r, *f, 1));
    static const char *const devs[] = {"/dev/null", "/dev/zero", "/dev/urandom", "/dev/random", NULL};
    for (const char *const *d = devs; *d; d++) STEP(*d, s_bind_file(r, *d, 0));
    if (j->source) {
        snprintf(p, sizeof p, "%s/source", r);
        STEP("bind the package source", s_bind(j->source, p, 0, 0));
    }
    snprintf(p, sizeof p, "%s/build", r);
    STEP("bind the build directory", s_bind(j->build_dir, p, 1, 0));
    snprintf(p, sizeof p, "%s/tmp", r);
    STEP("/tmp", symlink("/build/tmp", p));
    snprintf(p, sizeof p, "%s/proc", r);
    /* a /proc of the jail's own pid namespace; where the host forbids it (a container that
     * masks parts of its /proc), the build goes on without one */
    if (mount("proc", p, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0) rmdir(p);
    STEP("chdir", chdir(r));
    STEP("pivot_root", (int)syscall(SYS_pivot_root, ".", ".old"));
    STEP("umount the host's root", umount2("/.old", MNT_DETACH));
    STEP("rmdir", rmdir("/.old"));
    STEP("remount the root read-only", mount(NULL, "/", NULL, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL));
    return 0;
}

/* No capability now or after exec: an empty bounding set, then the uid (root: the run uid,
 * which clears the rest) or, as a user namespace's root, an empty capability set. */
static int s_drop(const buildjail_t *j, int as_root, char *err, size_t errlen)
{
    for (int cap = 0; cap <= CAP_LAST_CAP; cap++)
        if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL)
            STEP("drop the bounding set", -1);
    if (as_root) {
        STEP("setgroups", setgroups(0, NULL));
        STEP("setresgid", setresgid(j->gid, j->gid, j->gid));
        STEP("setresuid", setresuid(j->uid, j->uid, j->uid));
    }
    struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct data[2] = {{0}};
    STEP("capset", (int)syscall(SYS_capset, &hdr, data));
    STEP("no_new_privs", prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0));
    return 0;
}

static int s_limit(int what, rlim_t n)
{
    struct rlimit rl = {n, n};
    return setrlimit(what, &rl);
}

/* What a package build never needs and an escape does: EPERM, so pip reports it. */
static const int s_denied[] = {
    SCMP_SYS(ptrace),          SCMP_SYS(process_vm_readv), SCMP_SYS(process_vm_writev),
    SCMP_SYS(mount),           SCMP_SYS(umount2),          SCMP_SYS(pivot_root),
    SCMP_SYS(chroot),          SCMP_SYS(unshare),          SCMP_SYS(setns),
    SCMP_SYS(keyctl),          SCMP_SYS(add_key),          SCMP_SYS(request_key),
    SCMP_SYS(bpf),             SCMP_SYS(perf_event_open),  SCMP_SYS(userfaultfd),
    SCMP_SYS(io_uring_setup),  SCMP_SYS(io_uring_enter),   SCMP_SYS(io_uring_register),
    SCMP_SYS(kexec_load),      SCMP_SYS(kexec_file_load),  SCMP_SYS(init_module),
    SCMP_SYS(finit_module),    SCMP_SYS(delete_module),    SCMP_SYS(reboot),
    SCMP_SYS(swapon),          SCMP_SYS(swapoff),          SCMP_SYS(acct),
    SCMP_SYS(quotactl),        SCMP_SYS(open_by_handle_at), SCMP_SYS(name_to_handle_at),
    SCMP_SYS(syslog),          SCMP_SYS(iopl),             SCMP_SYS(ioperm),
    SCMP_SYS(fanotify_init),   SCMP_SYS(fsopen),           SCMP_SYS(fsmount),
    SCMP_SYS(fsconfig),        SCMP_SYS(move_mount),       SCMP_SYS(open_tree),
    SCMP_SYS(mount_setattr),   SCMP_SYS(pidfd_getfd),      SCMP_SYS(settimeofday),
    SCMP_SYS(clock_settime),   SCMP_SYS(clock_adjtime),    SCMP_SYS(adjtimex),
    SCMP_SYS(sethostname),     SCMP_SYS(setdomainname),    SCMP_SYS(vhangup),
    SCMP_SYS(lookup_dcookie),  SCMP_SYS(personality),
};

static int s_seccomp(const buildjail_t *j, char *err, size_t errlen)
{
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    if (!ctx) STEP("seccomp_init", -1);
    int rc = 0;
    for (size_t i = 0; i < sizeof s_denied / sizeof s_denied[0] && rc == 0; i++)
        rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), s_denied[i], 0);
    /* a namespace made by clone is as good as one made by unshare */
    static const unsigned long ns_flags[] = {CLONE_NEWNS,  CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET,
                                             CLONE_NEWIPC, CLONE_NEWUTS,  CLONE_NEWCGROUP};
    for (size_t i = 0; i < sizeof ns_flags / sizeof ns_flags[0] && rc == 0; i++)
        rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
                              SCMP_A0(SCMP_CMP_MASKED_EQ, ns_flags[i], ns_flags[i]));
    /* clone3 passes its flags in memory seccomp cannot read: ENOSYS makes glibc use clone */
    if (rc == 0) rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
    if (rc == 0 && j->source) /* no index: nothing to connect to but local sockets */
        rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(socket), 1,
                              SCMP_A0(SCMP_CMP_NE, AF_UNIX));
    if (rc == 0) rc = seccomp_load(ctx);
    seccomp_release(ctx);
    if (rc < 0) {
        snprintf(err, errlen, "build jail: seccomp: %s", strerror(-rc));
        return -1;
    }
    return 0;
}

/* pid 1 of the jail's pid namespace: everything from the mounts to the exec. */
static int s_enter(const buildjail_t *j, int as_root, char *const argv[], char *const envp[],
                   char *err, size_t errlen)
{
    STEP("PDEATHSIG", prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0));
    if (s_root(j, err, errlen) < 0) return -1;
    STEP("sethostname", sethostname("build", 5));
    STEP("RLIMIT_CPU", s_limit(RLIMIT_CPU, (rlim_t)j->cpu_s));
    STEP("RLIMIT_FSIZE", s_limit(RLIMIT_FSIZE, (rlim_t)4 << 30));
#if !defined(__SANITIZE_ADDRESS__)
    /* (not under AddressSanitizer, whose shadow memory alone is terabytes of address space:
     * this process could not even reach its exec) */
    STEP("RLIMIT_AS", s_limit(RLIMIT_AS, (rlim_t)8 << 30));
#endif
    STEP("RLIMIT_NOFILE", s_limit(RLIMIT_NOFILE, 4096));
    STEP("RLIMIT_CORE", s_limit(RLIMIT_CORE, 0));
    if (s_drop(j, as_root, err, errlen) < 0 || s_seccomp(j, err, errlen) < 0) return -1;
    STEP("chdir /empty", chdir("/empty"));
    execve(argv[0], argv, envp);
    STEP("execve", -1);
    return -1;
}

int buildjail_exec(const buildjail_t *j, char *const argv[], char *const envp[], char *err,
                   size_t errlen)
{
    int as_root = geteuid() == 0;
    uid_t uid = getuid();
    gid_t gid = getgid();
    int flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | (j->source ? CLONE_NEWNET : 0);
    STEP("unshare", unshare(flags | (as_root ? 0 : CLONE_NEWUSER)));
    if (!as_root) STEP("map the user namespace", s_map_self(uid, gid));
    /* the new pid namespace takes our next child as its pid 1 */
    pid_t pid = fork();
    STEP("fork", pid);
    if (pid == 0) {
        s_enter(j, as_root, argv, envp, err, errlen);
        fprintf(stderr, "%s\n", err);
        _exit(127);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) STEP("waitpid", -1);
    _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
}
