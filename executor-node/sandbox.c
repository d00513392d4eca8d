/* executor-node/sandbox.c — see sandbox.h. The filter policy, in three tiers:
 *   allow   what CPython needs to compute once the job is in memory;
 *   EPERM   what Python can report as a clean exception (path opens for writing, stat,
 *           threads, and everything not listed);
 *   TRAP    what only an attack asks for (sockets, exec, fork, ptrace, bpf, io_uring, …):
 *           the SIGSYS handler records the syscall in the job area and ends the process,
 *           and the zygote reports security_violation naming it. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/landlock.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <limits.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../common/buf.h"
#include "../common/log.h"
#include "sandbox.h"

/* Landlock constants newer than Debian 12's kernel headers (ABI 4: network, 5: ioctl on
 * devices, 6: scopes). The running kernel tells which it knows; we ask for no more. */
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
#define SP_LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)
#define SP_LANDLOCK_ACCESS_NET_BIND_TCP (1ULL << 0)
#define SP_LANDLOCK_ACCESS_NET_CONNECT_TCP (1ULL << 1)
#define SP_LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#define SP_LANDLOCK_SCOPE_SIGNAL (1ULL << 1)
#ifndef LANDLOCK_CREATE_RULESET_VERSION
#define LANDLOCK_CREATE_RULESET_VERSION (1U << 0)
#endif

struct sp_ruleset_attr { /* struct landlock_ruleset_attr as of ABI 6 */
    uint64_t handled_access_fs;
    uint64_t handled_access_net;
    uint64_t scoped;
};

/* ---- zygote side ------------------------------------------------------------------------ */

static long s_landlock_abi(void)
{
    return syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
}

int sandbox_probe(sandbox_t *sb, char *err, size_t errlen)
{
    if (sb->layers & LAYER_LANDLOCK) {
        long abi = s_landlock_abi();
        if (abi < 1) {
            snprintf(err, errlen, "layer landlock unavailable: %s (kernel ≥ 5.13 with "
                     "lsm=landlock needed; --disable-layer landlock to run without it)",
                     strerror(errno));
            return -1;
        }
        sb->landlock_abi = (int)abi;
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

static const int s_allow[] = {
    SCMP_SYS(read), SCMP_SYS(write), SCMP_SYS(readv), SCMP_SYS(writev), SCMP_SYS(pread64),
    SCMP_SYS(close), SCMP_SYS(fstat), SCMP_SYS(lseek), SCMP_SYS(mmap), SCMP_SYS(munmap),
    SCMP_SYS(mremap), SCMP_SYS(mprotect), SCMP_SYS(brk), SCMP_SYS(madvise), SCMP_SYS(mincore),
    SCMP_SYS(rt_sigprocmask), SCMP_SYS(rt_sigreturn), SCMP_SYS(sigaltstack),
    SCMP_SYS(futex), SCMP_SYS(getpid), SCMP_SYS(gettid), SCMP_SYS(getppid), SCMP_SYS(getuid),
    SCMP_SYS(geteuid), SCMP_SYS(getgid), SCMP_SYS(getegid), SCMP_SYS(getresuid),
    SCMP_SYS(getresgid), SCMP_SYS(getpgrp), SCMP_SYS(getpgid), SCMP_SYS(getsid),
    SCMP_SYS(getrlimit), SCMP_SYS(clock_gettime), SCMP_SYS(clock_getres),
    SCMP_SYS(clock_nanosleep), SCMP_SYS(nanosleep), SCMP_SYS(gettimeofday), SCMP_SYS(time),
    SCMP_SYS(getrandom), SCMP_SYS(exit), SCMP_SYS(exit_group), SCMP_SYS(sched_yield),
    SCMP_SYS(sched_getaffinity), SCMP_SYS(getrusage), SCMP_SYS(times), SCMP_SYS(sysinfo),
    SCMP_SYS(uname), SCMP_SYS(getcwd), SCMP_SYS(poll), SCMP_SYS(ppoll), SCMP_SYS(select),
    SCMP_SYS(pselect6), SCMP_SYS(restart_syscall), SCMP_SYS(rseq), SCMP_SYS(set_robust_list),
    SCMP_SYS(membarrier), SCMP_SYS(getpriority), SCMP_SYS(sched_getparam),
    SCMP_SYS(sched_getscheduler), SCMP_SYS(kill), SCMP_SYS(tkill), SCMP_SYS(tgkill),
    SCMP_SYS(getdents64), SCMP_SYS(readlink), SCMP_SYS(fcntl), SCMP_SYS(dup),
};

/* Only attacks ask for these; each one is reported by name. */
static const int s_trap[] = {
    SCMP_SYS(socket), SCMP_SYS(socketpair), SCMP_SYS(connect), SCMP_SYS(bind), SCMP_SYS(listen),
    SCMP_SYS(accept), SCMP_SYS(accept4), SCMP_SYS(sendto), SCMP_SYS(recvfrom), SCMP_SYS(sendmsg),
    SCMP_SYS(recvmsg), SCMP_SYS(sendmmsg), SCMP_SYS(recvmmsg), SCMP_SYS(execve),
    SCMP_SYS(execveat), SCMP_SYS(fork), SCMP_SYS(vfork), SCMP_SYS(ptrace),
    SCMP_SYS(process_vm_readv), SCMP_SYS(process_vm_writev), SCMP_SYS(keyctl), SCMP_SYS(add_key),
    SCMP_SYS(request_key), SCMP_SYS(bpf), SCMP_SYS(io_uring_setup), SCMP_SYS(io_uring_enter),
    SCMP_SYS(io_uring_register), SCMP_SYS(userfaultfd), SCMP_SYS(perf_event_open),
    SCMP_SYS(kexec_load), SCMP_SYS(kexec_file_load), SCMP_SYS(init_module),
    SCMP_SYS(finit_module), SCMP_SYS(delete_module), SCMP_SYS(mount), SCMP_SYS(umount2),
    SCMP_SYS(pivot_root), SCMP_SYS(chroot), SCMP_SYS(unshare), SCMP_SYS(setns),
    SCMP_SYS(open_by_handle_at), SCMP_SYS(name_to_handle_at), SCMP_SYS(personality),
    SCMP_SYS(setuid), SCMP_SYS(setgid), SCMP_SYS(setreuid), SCMP_SYS(setregid),
    SCMP_SYS(setresuid), SCMP_SYS(setresgid), SCMP_SYS(setgroups), SCMP_SYS(setfsuid),
    SCMP_SYS(setfsgid), SCMP_SYS(capset), SCMP_SYS(pidfd_open), SCMP_SYS(pidfd_getfd),
    SCMP_SYS(pidfd_send_signal), SCMP_SYS(fsopen), SCMP_SYS(fsmount), SCMP_SYS(fsconfig),
    SCMP_SYS(fspick), SCMP_SYS(move_mount), SCMP_SYS(open_tree), SCMP_SYS(mount_setattr),
    SCMP_SYS(quotactl), SCMP_SYS(swapon), SCMP_SYS(swapoff), SCMP_SYS(reboot),
    SCMP_SYS(sethostname), SCMP_SYS(setdomainname), SCMP_SYS(iopl), SCMP_SYS(ioperm),
    SCMP_SYS(syslog), SCMP_SYS(acct), SCMP_SYS(modify_ldt), SCMP_SYS(settimeofday),
    SCMP_SYS(clock_settime), SCMP_SYS(clock_adjtime), SCMP_SYS(adjtimex), SCMP_SYS(kcmp),
    SCMP_SYS(seccomp), SCMP_SYS(memfd_create), SCMP_SYS(memfd_secret), SCMP_SYS(move_pages),
    SCMP_SYS(migrate_pages), SCMP_SYS(mbind), SCMP_SYS(set_mempolicy), SCMP_SYS(vhangup),
    SCMP_SYS(lookup_dcookie), SCMP_SYS(fanotify_init), SCMP_SYS(inotify_init),
    SCMP_SYS(inotify_init1), SCMP_SYS(mknod), SCMP_SYS(mknodat), SCMP_SYS(ioprio_set),
};

/* Workspace profiles: what file work in the job's own directory needs. Where it may happen
 * is Landlock's and the mount namespace's to decide (only the workspace is writable); the
 * link and symlink calls stay refused, so nothing in the workspace can point elsewhere. */
static const int s_workspace_allow[] = {
    /* seen under strace in numpy/pandas/matplotlib/pathlib jobs, plus their *at forms */
    SCMP_SYS(mkdir), SCMP_SYS(mkdirat), SCMP_SYS(unlink), SCMP_SYS(unlinkat), SCMP_SYS(rmdir),
    SCMP_SYS(rename), SCMP_SYS(renameat), SCMP_SYS(renameat2), SCMP_SYS(ftruncate),
    SCMP_SYS(fsync), SCMP_SYS(fdatasync), SCMP_SYS(pwrite64),
};

int sandbox_compile(sandbox_t *sb, const profile_t *profile, char *err, size_t errlen)
{
    if (!(sb->layers & LAYER_SECCOMP)) return 0;
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ERRNO(EPERM));
    if (!ctx) {
        snprintf(err, errlen, "seccomp_init failed");
        return -1;
    }
    int rc = 0;
    for (size_t i = 0; i < sizeof s_allow / sizeof s_allow[0] && rc == 0; i++)
        rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, s_allow[i], 0);
    for (size_t i = 0; i < sizeof s_trap / sizeof s_trap[0] && rc == 0; i++)
        rc = seccomp_rule_add(ctx, SCMP_ACT_TRAP, s_trap[i], 0);
    /* Threads fail cleanly ("can't start new thread"); a new process is an attack. glibc tries
     * clone3 first and falls back to clone on ENOSYS, where the flags can be inspected.
     * (Thread clones fall through to the default EPERM: libseccomp refuses a rule whose
     * action is the default's.) */
    if (rc == 0)
        rc = seccomp_rule_add(ctx, SCMP_ACT_TRAP, SCMP_SYS(clone), 1,
                              SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0));
    if (rc == 0) rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
    /* The SIGSYS handler is what reports a trapped syscall: replacing it is itself an attack,
     * and killing outright is the only answer that cannot be intercepted. */
    if (rc == 0)
        rc = seccomp_rule_add(ctx, SCMP_ACT_KILL_PROCESS, SCMP_SYS(rt_sigaction), 1,
                              SCMP_A0(SCMP_CMP_EQ, SIGSYS));
    if (rc == 0)
        rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(rt_sigaction), 1,
                              SCMP_A0(SCMP_CMP_NE, SIGSYS));
    /* Reading files is Landlock's and the mount namespace's to restrict; here only the
     * read-only forms pass, so nothing can be created, written or truncated. */
    /* (O_TMPFILE includes O_DIRECTORY's bit; only its own bit is a write.) */
    const uint64_t wflags = O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | O_APPEND | (O_TMPFILE & ~O_DIRECTORY);
    if (rc == 0 && !profile->workspace)
        rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(openat), 1,
                              SCMP_A2(SCMP_CMP_MASKED_EQ, wflags, 0));
    /* A workspace job writes files, so every open passes here and Landlock decides where. */
    if (rc == 0 && profile->workspace) rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(openat), 0);
    for (size_t i = 0; profile->workspace && i < sizeof s_workspace_allow / sizeof s_workspace_allow[0] && rc == 0; i++)
        rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, s_workspace_allow[i], 0);
    /* stat: metadata of what the mount namespace lets the job see (an empty root plus the
     * profile's read-only paths); zoneinfo needs it to find its files. */
    if (rc == 0) rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(newfstatat), 0);
    if (rc == 0) rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOTTY), SCMP_SYS(ioctl), 0);
    /* prlimit64 on this process only: the job's limits are set after the filter is loaded
     * (sandbox_child_limits). Without CAP_SYS_RESOURCE a process can only lower its limits,
     * so user code gains nothing from it. */
    if (rc == 0)
        rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(prlimit64), 1,
                              SCMP_A0(SCMP_CMP_EQ, 0));
    if (rc != 0) {
        snprintf(err, errlen, "seccomp rule: %s", strerror(-rc));
        seccomp_release(ctx);
        return -1;
    }
    /* libseccomp 2.5 exports BPF only to an fd: round-trip it through a memfd. */
    int fd = memfd_create("seccomp-bpf", MFD_CLOEXEC);
    if (fd < 0 || seccomp_export_bpf(ctx, fd) < 0) {
        snprintf(err, errlen, "seccomp export: %s", strerror(errno));
        if (fd >= 0) close(fd);
        seccomp_release(ctx);
        return -1;
    }
    seccomp_release(ctx);
    off_t size = lseek(fd, 0, SEEK_END);
    if (size <= 0 || size % (off_t)sizeof(struct sock_filter) != 0) {
        snprintf(err, errlen, "seccomp export produced %ld bytes", (long)size);
        close(fd);
        return -1;
    }
    struct sock_filter *prog = xmalloc((size_t)size);
    if (pread(fd, prog, (size_t)size, 0) != size) {
        snprintf(err, errlen, "seccomp read back: %s", strerror(errno));
        free(prog);
        close(fd);
        return -1;
    }
    close(fd);
    sb->filter.filter = prog;
    sb->filter.len = (unsigned short)(size / (off_t)sizeof(struct sock_filter));
    log_debug("event=seccomp_compiled instructions=%u", sb->filter.len);
    return 0;
}

void sandbox_free(sandbox_t *sb)
{
    free(sb->filter.filter);
    sb->filter.filter = NULL;
    sb->filter.len = 0;
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

static int s_landlock_ruleset(sandbox_t *sb, const profile_t *profile, char *err, size_t errlen);

int sandbox_seal_filesystem(sandbox_t *sb, const profile_t *profile, char *err, size_t errlen)
{
    sb->landlock_fd = -1;
    if (sb->layers & LAYER_NAMESPACES) {
        /* Our mount namespace is a copy of the host's: detach it so nothing propagates back,
         * build a new root on a tmpfs, pivot into it and drop the old root entirely. */
        const char *step = "make-rprivate";
        char        where[PATH_MAX];
        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) goto fail;
        step = "tmpfs";
        if (mount("snakepit", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=64k,mode=0755") < 0)
            goto fail;
        for (const char *const *p = profile->ro_paths; p && *p; p++) {
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
    return (sb->layers & LAYER_LANDLOCK) ? s_landlock_ruleset(sb, profile, err, errlen) : 0;
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
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0) return -errno;
    signal(SIGXFSZ, SIG_IGN);
    return 0;
}

static area_t *s_trap_area;

/* SIGSYS from a SECCOMP_RET_TRAP rule: record the syscall, end the process. Runs on the
 * offending thread with the syscall not executed; only async-signal-safe work here. */
static void s_on_sigsys(int sig, siginfo_t *info, void *ctx)
{
    (void)sig, (void)ctx;
    if (s_trap_area) area_hdr(s_trap_area)->trap_syscall = info->si_syscall;
    syscall(SYS_exit_group, 159);
}

static int s_set_rlimit(int resource, rlim_t soft, rlim_t hard)
{
    struct rlimit rl = {soft, hard};
    return setrlimit(resource, &rl);
}

/* Limits every job gets, whatever it asked for. */
static int s_static_rlimits(const sandbox_t *sb)
{
    int rc = 0;
    rc |= s_set_rlimit(RLIMIT_NPROC, 0, 0); /* no fork, no threads (seccomp also refuses) */
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
    rlim_t cpu_s = (rlim_t)((used_ms + l->cpu_ms + 999) / 1000);
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

static int s_add_rule(int fd, const char *path, uint64_t access, char *err, size_t errlen)
{
    int dir = open(path, O_PATH | O_CLOEXEC | O_DIRECTORY);
    if (dir < 0) return 0; /* not on this host (or not in our mount view) */
    struct landlock_path_beneath_attr rule = {.allowed_access = access, .parent_fd = dir};
    long rc = syscall(SYS_landlock_add_rule, fd, LANDLOCK_RULE_PATH_BENEATH, &rule, 0);
    close(dir);
    if (rc < 0) {
        snprintf(err, errlen, "layer landlock: rule for %s: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

int sandbox_landlock_ruleset(const sandbox_t *sb, const profile_t *profile, const char *workspace,
                             char *err, size_t errlen)
{
    uint64_t fs = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE |
                  LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR |
                  LANDLOCK_ACCESS_FS_REMOVE_DIR | LANDLOCK_ACCESS_FS_REMOVE_FILE |
                  LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_DIR |
                  LANDLOCK_ACCESS_FS_MAKE_REG | LANDLOCK_ACCESS_FS_MAKE_SOCK |
                  LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_BLOCK |
                  LANDLOCK_ACCESS_FS_MAKE_SYM;
    struct sp_ruleset_attr attr = {0};
    size_t                 size = sizeof attr.handled_access_fs;
    if (sb->landlock_abi >= 2) fs |= LANDLOCK_ACCESS_FS_REFER;
    if (sb->landlock_abi >= 3) fs |= LANDLOCK_ACCESS_FS_TRUNCATE;
    if (sb->landlock_abi >= 5) fs |= SP_LANDLOCK_ACCESS_FS_IOCTL_DEV;
    attr.handled_access_fs = fs;
    if (sb->landlock_abi >= 4) {
        attr.handled_access_net = SP_LANDLOCK_ACCESS_NET_BIND_TCP | SP_LANDLOCK_ACCESS_NET_CONNECT_TCP;
        size = offsetof(struct sp_ruleset_attr, scoped);
    }
    if (sb->landlock_abi >= 6) {
        /* No signals to processes outside this job's domain: not the zygote, not another
         * tenant's job. */
        attr.scoped = SP_LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | SP_LANDLOCK_SCOPE_SIGNAL;
        size = sizeof attr;
    }
    int fd = (int)syscall(SYS_landlock_create_ruleset, &attr, size, 0);
    if (fd < 0) {
        snprintf(err, errlen, "layer landlock: creating the ruleset: %s", strerror(errno));
        return -1;
    }
    /* Everything handled is denied everywhere, except reading the profile's read-only paths
     * and, for a workspace child, making and changing regular files and directories in its
     * own directory (no links, devices, fifos or sockets). */
    int rc = 0;
    for (const char *const *p = profile->ro_paths; p && *p && rc == 0; p++)
        rc = s_add_rule(fd, *p, LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR, err, errlen);
    if (rc == 0 && workspace) {
        uint64_t rw = LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR |
                      LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REMOVE_FILE |
                      LANDLOCK_ACCESS_FS_REMOVE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG |
                      LANDLOCK_ACCESS_FS_MAKE_DIR;
        if (sb->landlock_abi >= 2) rw |= LANDLOCK_ACCESS_FS_REFER; /* rename within it */
        if (sb->landlock_abi >= 3) rw |= LANDLOCK_ACCESS_FS_TRUNCATE;
        int dir = open(workspace, O_PATH | O_CLOEXEC | O_DIRECTORY);
        if (dir < 0) {
            snprintf(err, errlen, "layer landlock: workspace %s: %s", workspace, strerror(errno));
            rc = -1;
        } else {
            close(dir);
            rc = s_add_rule(fd, workspace, rw, err, errlen);
        }
    }
    if (rc < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static int s_landlock_ruleset(sandbox_t *sb, const profile_t *profile, char *err, size_t errlen)
{
    int fd = sandbox_landlock_ruleset(sb, profile, NULL, err, errlen);
    if (fd < 0) return -1;
    sb->landlock_fd = fd;
    return 0;
}

static int s_landlock(const sandbox_t *sb)
{
    int rc = (int)syscall(SYS_landlock_restrict_self, sb->landlock_fd, 0);
    close(sb->landlock_fd);
    return rc;
}

static int s_drop_uid(const sandbox_t *sb)
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

/* The per-child program: seven instructions that keep kill, tkill and tgkill to this process,
 * then the shared program compiled once in the zygote. The pid is known only after fork, so
 * the prologue is built here; prepending is safe because classic BPF jumps are relative, and
 * one program instead of two stacked filters halves the cost of installing it (the kernel
 * JIT-compiles every filter and flushes every CPU's TLB when it seals the image). */
static int s_load_filter(const sandbox_t *sb)
{
    uint32_t           self = (uint32_t)getpid();
    struct sock_filter pre[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 0, 10), /* else: the shared program */
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_kill, 3, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_tkill, 2, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_tgkill, 1, 0),
        BPF_JUMP(BPF_JMP | BPF_JA, 5, 0, 0),                        /* not a signal: shared program */
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, self, 1, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW), /* to itself (or its own group) */
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),  /* to anyone else: an attack */
    };
    size_t n_pre = sizeof pre / sizeof pre[0];
    size_t n = n_pre + sb->filter.len;
    if (n > BPF_MAXINSNS) {
        errno = E2BIG;
        return -1;
    }
    struct sock_filter prog[BPF_MAXINSNS];
    memcpy(prog, pre, sizeof pre);
    memcpy(prog + n_pre, sb->filter.filter, sb->filter.len * sizeof *prog);
    struct sock_fprog fprog = {(unsigned short)n, prog};
    return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fprog, 0, 0);
}

int sandbox_child_lock(const sandbox_t *sb, area_t *area, char *err, size_t errlen)
{
    const char *layer = NULL;
    if ((sb->layers & LAYER_RLIMITS) && s_static_rlimits(sb) < 0) layer = "rlimits";
    /* Landlock needs no_new_privs or CAP_SYS_ADMIN in our namespace; an unprivileged node
     * without namespaces has neither until nnp is set, so set it first there (nnp only
     * affects execve, which is trapped anyway). */
    if (!layer && (sb->layers & LAYER_LANDLOCK)) {
        if (!(sb->layers & LAYER_NAMESPACES) && geteuid() != 0)
            prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
        if (s_landlock(sb) < 0) layer = "landlock";
    }
    if (!layer && (sb->layers & LAYER_UID) && s_drop_uid(sb) < 0) layer = "uid";
    /* seccomp without CAP_SYS_ADMIN requires nnp, so the filter brings it along. */
    if (!layer && (sb->layers & (LAYER_NNP | LAYER_SECCOMP)) &&
        prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        layer = "nnp";
    if (!layer && (sb->layers & LAYER_SECCOMP)) {
        s_trap_area = area;
        struct sigaction sa = {0};
        sa.sa_sigaction = s_on_sigsys;
        sa.sa_flags = SA_SIGINFO;
        sigemptyset(&sa.sa_mask);
        if (sigaction(SIGSYS, &sa, NULL) < 0 || s_load_filter(sb) < 0) layer = "seccomp";
    }
    if (layer) {
        snprintf(err, errlen, "entering layer %s: %s", layer, strerror(errno));
        return -1;
    }
    return 0;
}

const char *sandbox_syscall_name(int nr, char *buf, size_t cap)
{
    char *name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);
    if (name) {
        snprintf(buf, cap, "%s", name);
        free(name);
    } else {
        snprintf(buf, cap, "syscall_%d", nr);
    }
    return buf;
}
