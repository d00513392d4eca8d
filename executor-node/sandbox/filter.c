/* executor-node/sandbox/filter.c — see filter.h. The policy, in three tiers:
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
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/log.h"
#include "filter.h"

static const int s_allow[] = {
    SCMP_SYS(read),
    SCMP_SYS(write),
    SCMP_SYS(readv),
    SCMP_SYS(writev),
    SCMP_SYS(pread64),
    SCMP_SYS(close),
    SCMP_SYS(fstat),
    SCMP_SYS(lseek),
    SCMP_SYS(mmap),
    SCMP_SYS(munmap),
    SCMP_SYS(mremap),
    SCMP_SYS(mprotect),
    SCMP_SYS(brk),
    SCMP_SYS(madvise),
    SCMP_SYS(mincore),
    SCMP_SYS(rt_sigprocmask),
    SCMP_SYS(rt_sigreturn),
    SCMP_SYS(sigaltstack),
    SCMP_SYS(futex),
    SCMP_SYS(getpid),
    SCMP_SYS(gettid),
    SCMP_SYS(getppid),
    SCMP_SYS(getuid),
    SCMP_SYS(geteuid),
    SCMP_SYS(getgid),
    SCMP_SYS(getegid),
    SCMP_SYS(getresuid),
    SCMP_SYS(getresgid),
    SCMP_SYS(getpgrp),
    SCMP_SYS(getpgid),
    SCMP_SYS(getsid),
    SCMP_SYS(getrlimit),
    SCMP_SYS(clock_gettime),
    SCMP_SYS(clock_getres),
    SCMP_SYS(clock_nanosleep),
    SCMP_SYS(nanosleep),
    SCMP_SYS(gettimeofday),
    SCMP_SYS(time),
    SCMP_SYS(getrandom),
    SCMP_SYS(exit),
    SCMP_SYS(exit_group),
    SCMP_SYS(sched_yield),
    SCMP_SYS(sched_getaffinity),
    SCMP_SYS(getrusage),
    SCMP_SYS(times),
    SCMP_SYS(sysinfo),
    SCMP_SYS(uname),
    SCMP_SYS(getcwd),
    SCMP_SYS(poll),
    SCMP_SYS(ppoll),
    SCMP_SYS(select),
    SCMP_SYS(pselect6),
    SCMP_SYS(restart_syscall),
    SCMP_SYS(rseq),
    SCMP_SYS(set_robust_list),
    SCMP_SYS(membarrier),
    SCMP_SYS(getpriority),
    SCMP_SYS(sched_getparam),
    SCMP_SYS(sched_getscheduler),
    SCMP_SYS(kill),
    SCMP_SYS(tkill),
    SCMP_SYS(tgkill),
    SCMP_SYS(getdents64),
    SCMP_SYS(readlink),
    SCMP_SYS(fcntl),
    SCMP_SYS(dup),
    /* what ordinary code asks of the standard library, none of which reaches past
     * the process or what Landlock and the mount namespace let it see: subprocess makes its
     * pipes before it fails at the spawn (so it fails with the audit hook's clear
     * PermissionError, and the spawn itself still traps); os.access and shutil.which;
     * shutil.disk_usage; os.chdir; os.dup2; signal.alarm and friends */
    SCMP_SYS(pipe),
    SCMP_SYS(pipe2),
    SCMP_SYS(access),
    SCMP_SYS(faccessat),
    SCMP_SYS(faccessat2),
    SCMP_SYS(statfs),
    SCMP_SYS(fstatfs),
    SCMP_SYS(chdir),
    SCMP_SYS(fchdir),
    SCMP_SYS(dup2),
    SCMP_SYS(dup3),
    /* asyncio's selector (its loop waits on an epoll of the job's own descriptors) */
    SCMP_SYS(epoll_create),
    SCMP_SYS(epoll_create1),
    SCMP_SYS(epoll_ctl),
    SCMP_SYS(epoll_wait),
    SCMP_SYS(epoll_pwait),
    SCMP_SYS(epoll_pwait2),
    SCMP_SYS(umask),
    SCMP_SYS(alarm),
    SCMP_SYS(setitimer),
    SCMP_SYS(getitimer),
    SCMP_SYS(pause),
    SCMP_SYS(rt_sigsuspend),
    SCMP_SYS(rt_sigpending),
    SCMP_SYS(rt_sigtimedwait),
};

/* Extended attributes: reading them answers "not supported", which shutil.copy2/copystat treat
 * as "nothing to copy" (EPERM would fail the copy); setting them stays refused. */
static const int s_enotsup[] = {
    SCMP_SYS(listxattr), SCMP_SYS(llistxattr), SCMP_SYS(flistxattr),
    SCMP_SYS(getxattr),  SCMP_SYS(lgetxattr),  SCMP_SYS(fgetxattr),
};

/* Only attacks ask for these; each one is reported by name. */
static const int s_trap[] = {
    SCMP_SYS(socket),
    SCMP_SYS(connect),
    SCMP_SYS(bind),
    SCMP_SYS(listen),
    SCMP_SYS(accept),
    SCMP_SYS(accept4),
    SCMP_SYS(sendmsg),
    SCMP_SYS(recvmsg),
    SCMP_SYS(sendmmsg),
    SCMP_SYS(recvmmsg),
    SCMP_SYS(execve),
    SCMP_SYS(execveat),
    SCMP_SYS(fork),
    SCMP_SYS(vfork),
    SCMP_SYS(ptrace),
    SCMP_SYS(process_vm_readv),
    SCMP_SYS(process_vm_writev),
    SCMP_SYS(keyctl),
    SCMP_SYS(add_key),
    SCMP_SYS(request_key),
    SCMP_SYS(bpf),
    SCMP_SYS(io_uring_setup),
    SCMP_SYS(io_uring_enter),
    SCMP_SYS(io_uring_register),
    SCMP_SYS(userfaultfd),
    SCMP_SYS(perf_event_open),
    SCMP_SYS(kexec_load),
    SCMP_SYS(kexec_file_load),
    SCMP_SYS(init_module),
    SCMP_SYS(finit_module),
    SCMP_SYS(delete_module),
    SCMP_SYS(mount),
    SCMP_SYS(umount2),
    SCMP_SYS(pivot_root),
    SCMP_SYS(chroot),
    SCMP_SYS(unshare),
    SCMP_SYS(setns),
    SCMP_SYS(open_by_handle_at),
    SCMP_SYS(name_to_handle_at),
    SCMP_SYS(personality),
    SCMP_SYS(setuid),
    SCMP_SYS(setgid),
    SCMP_SYS(setreuid),
    SCMP_SYS(setregid),
    SCMP_SYS(setresuid),
    SCMP_SYS(setresgid),
    SCMP_SYS(setgroups),
    SCMP_SYS(setfsuid),
    SCMP_SYS(setfsgid),
    SCMP_SYS(capset),
    SCMP_SYS(pidfd_open),
    SCMP_SYS(pidfd_getfd),
    SCMP_SYS(pidfd_send_signal),
    SCMP_SYS(fsopen),
    SCMP_SYS(fsmount),
    SCMP_SYS(fsconfig),
    SCMP_SYS(fspick),
    SCMP_SYS(move_mount),
    SCMP_SYS(open_tree),
    SCMP_SYS(mount_setattr),
    SCMP_SYS(quotactl),
    SCMP_SYS(swapon),
    SCMP_SYS(swapoff),
    SCMP_SYS(reboot),
    SCMP_SYS(sethostname),
    SCMP_SYS(setdomainname),
    SCMP_SYS(iopl),
    SCMP_SYS(ioperm),
    SCMP_SYS(syslog),
    SCMP_SYS(acct),
    SCMP_SYS(modify_ldt),
    SCMP_SYS(settimeofday),
    SCMP_SYS(clock_settime),
    SCMP_SYS(clock_adjtime),
    SCMP_SYS(adjtimex),
    SCMP_SYS(kcmp),
    SCMP_SYS(seccomp),
    SCMP_SYS(memfd_create),
    SCMP_SYS(memfd_secret),
    SCMP_SYS(move_pages),
    SCMP_SYS(migrate_pages),
    SCMP_SYS(mbind),
    SCMP_SYS(set_mempolicy),
    SCMP_SYS(vhangup),
    SCMP_SYS(lookup_dcookie),
    SCMP_SYS(fanotify_init),
    SCMP_SYS(inotify_init),
    SCMP_SYS(inotify_init1),
    SCMP_SYS(mknod),
    SCMP_SYS(mknodat),
    SCMP_SYS(ioprio_set),
};

/* Workspace profiles: what file work in the job's own directory needs. Where it may happen
 * is Landlock's and the mount namespace's to decide (only the workspace is writable); the
 * link and symlink calls stay refused, so nothing in the workspace can point elsewhere. */
static const int s_workspace_allow[] = {
    /* seen under strace in numpy/pandas/matplotlib/pathlib jobs, plus their *at forms */
    SCMP_SYS(mkdir),     SCMP_SYS(mkdirat), SCMP_SYS(unlink),    SCMP_SYS(unlinkat),
    SCMP_SYS(rmdir),     SCMP_SYS(rename),  SCMP_SYS(renameat),  SCMP_SYS(renameat2),
    SCMP_SYS(ftruncate), SCMP_SYS(fsync),   SCMP_SYS(fdatasync), SCMP_SYS(pwrite64),
    /* shutil.copy's copymode and copy2's copystat, tarfile's extraction, os.truncate, sqlite's
     * and filelock's locks, shutil's fast copies. Landlock does not govern chmod,
     * utimensat or flock; the mount namespace does: everything but the job's own directory is
     * a read-only mount, and no other workspace can be named (random names, /work unlistable) */
    SCMP_SYS(chmod),     SCMP_SYS(fchmod),  SCMP_SYS(fchmodat),  SCMP_SYS(utimensat),
    SCMP_SYS(truncate),  SCMP_SYS(flock),   SCMP_SYS(sendfile),  SCMP_SYS(copy_file_range),
    SCMP_SYS(fallocate),
};

/* The SIGSYS handler is what reports a trapped syscall: replacing it is itself an attack,
 * trapped like the others (the syscall does not run, so the handler that answers is still
 * ours, and it ends the job naming rt_sigaction). The kernel reads
 * rt_sigaction's signal as an int (the low 32 bits of the register) while libseccomp compares
 * all 64: a rule "== SIGSYS → kill, != SIGSYS → allow" let SIGSYS | 1 << 32 through, and the
 * kernel installed the handler (libseccomp issue #383). So the 64-bit argument is partitioned,
 * with no overlap and no gap a high bit could slip into: signals 0–30, 32–64 pass; SIGSYS
 * passes only without a new action (reading the disposition, as importing _signal does for
 * every signal); SIGSYS with one, or any value with a high bit set (no legitimate caller sets
 * one), traps; 65 to 2^32 - 1 fall to the default EPERM (the kernel's EINVAL anyway). The
 * action (a1) is a pointer: any non-NULL value is a set. */
static int s_sigaction_rules(scmp_filter_ctx ctx)
{
    const int sys = SCMP_SYS(rt_sigaction);
    int rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, sys, 1, SCMP_A0_64(SCMP_CMP_LT, SIGSYS));
    if (rc == 0) /* 32..63 */
        rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, sys, 1,
                              SCMP_A0_64(SCMP_CMP_MASKED_EQ, ~(uint64_t)0x1f, 32));
    if (rc == 0) rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, sys, 1, SCMP_A0_64(SCMP_CMP_EQ, 64));
    if (rc == 0)
        rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, sys, 2, SCMP_A0_64(SCMP_CMP_EQ, SIGSYS),
                              SCMP_A1_64(SCMP_CMP_EQ, 0));
    if (rc == 0)
        rc = seccomp_rule_add(ctx, SCMP_ACT_TRAP, sys, 2, SCMP_A0_64(SCMP_CMP_EQ, SIGSYS),
                              SCMP_A1_64(SCMP_CMP_NE, 0));
    if (rc == 0)
        rc = seccomp_rule_add(ctx, SCMP_ACT_TRAP, sys, 1, SCMP_A0_64(SCMP_CMP_GT, 0xffffffffULL));
    return rc;
}

/* A pair of connected AF_UNIX sockets, and sending and receiving on what the job holds: what
 * asyncio's event loop wakes itself with (its self-pipe is a socketpair). Such a pair reaches
 * nothing but itself. socket() stays trapped, so no socket can be made that could be bound or
 * connected anywhere; sendto with an address (which could name a listening datagram socket)
 * traps; another family for the pair traps. Both comparisons are exact on all 64 bits and
 * partition the value (see rt_sigaction above). sendmsg and recvmsg, which can carry
 * descriptors, stay trapped. */
static int s_socketpair_rules(scmp_filter_ctx ctx)
{
    const int pair = SCMP_SYS(socketpair), to = SCMP_SYS(sendto);
    int rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, pair, 1, SCMP_A0_64(SCMP_CMP_EQ, AF_UNIX));
    if (rc == 0)
        rc = seccomp_rule_add(ctx, SCMP_ACT_TRAP, pair, 1, SCMP_A0_64(SCMP_CMP_NE, AF_UNIX));
    if (rc == 0) rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, to, 1, SCMP_A4_64(SCMP_CMP_EQ, 0));
    if (rc == 0) rc = seccomp_rule_add(ctx, SCMP_ACT_TRAP, to, 1, SCMP_A4_64(SCMP_CMP_NE, 0));
    if (rc == 0) rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(recvfrom), 0);
    return rc;
}

/* ioctl: "not a terminal" (ENOTTY, what isatty() and the io module expect), except the three
 * that act on the job's own descriptors: FIONBIO (os.set_blocking), FIOCLEX and FIONCLEX
 * (os.set_inheritable). libseccomp lets an unconditional rule override conditional ones, so
 * the ENOTTY rules partition the rest (64-bit values; the few between FIONBIO and FIONCLEX,
 * old terminal requests, fall to the default EPERM, which callers read the same way). */
static int s_ioctl_rules(scmp_filter_ctx ctx)
{
    const int sys = SCMP_SYS(ioctl);
    const uint64_t own[] = {FIONBIO, FIONCLEX, FIOCLEX};
    int rc = 0;
    for (size_t i = 0; i < sizeof own / sizeof own[0] && rc == 0; i++)
        rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, sys, 1, SCMP_A1_64(SCMP_CMP_EQ, own[i]));
    if (rc == 0)
        rc =
            seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOTTY), sys, 1, SCMP_A1_64(SCMP_CMP_LT, FIONBIO));
    if (rc == 0)
        rc =
            seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOTTY), sys, 1, SCMP_A1_64(SCMP_CMP_GT, FIOCLEX));
    return rc;
}

/* The profile's rules; 0, or a negative errno from libseccomp. */
static int s_rules(scmp_filter_ctx ctx, const profile_t *profile)
{
    int rc = 0;
    for (size_t i = 0; i < sizeof s_allow / sizeof s_allow[0] && rc == 0; i++)
        rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, s_allow[i], 0);
    for (size_t i = 0; i < sizeof s_trap / sizeof s_trap[0] && rc == 0; i++)
        rc = seccomp_rule_add(ctx, SCMP_ACT_TRAP, s_trap[i], 0);
    for (size_t i = 0; i < sizeof s_enotsup / sizeof s_enotsup[0] && rc == 0; i++)
        rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOTSUP), s_enotsup[i], 0);
    /* Threads fail cleanly ("can't start new thread"); a new process is an attack. glibc tries
     * clone3 first and falls back to clone on ENOSYS, where the flags can be inspected.
     * (Thread clones fall through to the default EPERM: libseccomp refuses a rule whose
     * action is the default's.) */
    if (rc == 0)
        rc = seccomp_rule_add(ctx, SCMP_ACT_TRAP, SCMP_SYS(clone), 1,
                              SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0));
    if (rc == 0) rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
    if (rc == 0) rc = s_sigaction_rules(ctx);
    if (rc == 0) rc = s_socketpair_rules(ctx);
    /* Reading files is Landlock's and the mount namespace's to restrict; here only the
     * read-only forms pass, so nothing can be created, written or truncated. */
    /* (O_TMPFILE includes O_DIRECTORY's bit; only its own bit is a write.) */
    const uint64_t wflags =
        O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | O_APPEND | (O_TMPFILE & ~O_DIRECTORY);
    if (rc == 0 && !profile->workspace)
        rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(openat), 1,
                              SCMP_A2(SCMP_CMP_MASKED_EQ, wflags, 0));
    /* A workspace job writes files, so every open passes here and Landlock decides where. */
    if (rc == 0 && profile->workspace)
        rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(openat), 0);
    for (size_t i = 0; profile->workspace &&
                       i < sizeof s_workspace_allow / sizeof s_workspace_allow[0] && rc == 0;
         i++)
        rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, s_workspace_allow[i], 0);
    /* stat: metadata of what the mount namespace lets the job see (an empty root plus the
     * profile's read-only paths); zoneinfo needs it to find its files. */
    if (rc == 0) rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(newfstatat), 0);
    if (rc == 0) rc = s_ioctl_rules(ctx);
    /* prlimit64 on this process only: the job's limits are set after the filter is loaded
     * (sandbox_child_limits). Without CAP_SYS_RESOURCE a process can only lower its limits,
     * so user code gains nothing from it. RLIMIT_NPROC may only be read: a session's child
     * keeps its hard limit (the zygote raises the soft one from outside for a fork_session,
     * zygote_sessions.h), and this is what stops its code from raising the soft one itself. The
     * resource is an unsigned int to the kernel: compared on its low 32 bits, as the kernel reads
     * it (a 64-bit "!= RLIMIT_NPROC" let RLIMIT_NPROC | 1 << 32 through, the rt_sigaction lesson
     * above). */
    if (rc == 0)
        rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(prlimit64), 2, SCMP_A0(SCMP_CMP_EQ, 0),
                              SCMP_A1_32(SCMP_CMP_NE, RLIMIT_NPROC));
    if (rc == 0)
        rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(prlimit64), 3, SCMP_A0(SCMP_CMP_EQ, 0),
                              SCMP_A1_32(SCMP_CMP_EQ, RLIMIT_NPROC), SCMP_A2(SCMP_CMP_EQ, 0));
    return rc;
}

/* The compiled program into out. libseccomp 2.5 exports BPF only to an fd: round-trip it
 * through a memfd. */
static int s_export(scmp_filter_ctx ctx, struct sock_fprog *out, char *err, size_t errlen)
{
    int fd = memfd_create("seccomp-bpf", MFD_CLOEXEC);
    if (fd < 0 || seccomp_export_bpf(ctx, fd) < 0) {
        snprintf(err, errlen, "seccomp export: %s", strerror(errno));
        if (fd >= 0) close(fd);
        return -1;
    }
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
    out->filter = prog;
    out->len = (unsigned short)(size / (off_t)sizeof(struct sock_filter));
    log_debug("event=seccomp_compiled instructions=%u", out->len);
    return 0;
}

int filter_compile(const profile_t *profile, struct sock_fprog *out, char *err, size_t errlen)
{
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ERRNO(EPERM));
    if (!ctx) {
        snprintf(err, errlen, "seccomp_init failed");
        return -1;
    }
    /* A binary tree of syscall numbers instead of libseccomp's linear chain: as it loads a
     * filter the kernel runs it once per syscall number of each arch (its action cache), with
     * interrupts off, so every child paid the whole chain ~900 times (measured: 60 us less
     * per child). Same rules, same actions. */
    int rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
    if (rc == 0) rc = s_rules(ctx, profile);
    if (rc != 0) snprintf(err, errlen, "seccomp rule: %s", strerror(-rc));
    if (rc == 0) rc = s_export(ctx, out, err, errlen);
    seccomp_release(ctx);
    return rc == 0 ? 0 : -1;
}

/* The per-child program: a prologue for the rules that name the child itself (prologue.h),
 * then the shared program compiled once in the zygote. The pid is known only after fork, so
 * the prologue is built here; prepending is safe because classic BPF jumps are relative, and
 * one program instead of two stacked filters halves the cost of installing it (the kernel
 * JIT-compiles every filter and flushes every CPU's TLB when it seals the image). */
static int s_load(const struct sock_fprog *shared, const prologue_t *mine)
{
    prologue_t p = *mine;
    p.self = getpid();
    struct sock_filter prog[BPF_MAXINSNS];
    size_t n_pre = prologue_build(&p, prog, BPF_MAXINSNS);
    if (!n_pre || n_pre + shared->len > BPF_MAXINSNS) {
        errno = E2BIG;
        return -1;
    }
    memcpy(prog + n_pre, shared->filter, shared->len * sizeof *prog);
    struct sock_fprog fprog = {(unsigned short)(n_pre + shared->len), prog};
    return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fprog, 0, 0);
}

int filter_enter(const struct sock_fprog *shared, const prologue_t *mine)
{
    return s_load(shared, mine);
}

const char *filter_syscall_name(int nr, char *buf, size_t cap)
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
