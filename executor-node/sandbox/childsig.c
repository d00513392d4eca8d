/* executor-node/sandbox/childsig.c — see childsig.h. Only async-signal-safe work in the handlers:
 * raw syscalls and stores into the job area. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "childsig.h"

static area_t *s_area;
static pid_t s_self;                   /* getpid() as the child sees it: 1 in its own namespace */
static char s_altstack[64 * 1024];     /* for a crash that is a stack overflow */

/* struct sigaction as rt_sigaction(2) takes it on x86-64 (glibc's differs). */
struct kernel_sigaction {
    void (*handler)(int);
    unsigned long flags;
    void (*restorer)(void);
    uint64_t mask;
};

/* ---- signals a job sends itself ---------------------------------------------------------- */

static int s_default_is_ignore(int sig)
{
    return sig == SIGCHLD || sig == SIGCONT || sig == SIGURG || sig == SIGWINCH;
}

static int s_default_is_stop(int sig)
{
    return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

/* What the kernel does for an ordinary process; the syscall's return value. */
static long s_deliver_to_self(int sig, void *uctx)
{
    if (sig < 0 || sig > 64) return -EINVAL;
    if (sig == 0) return 0;
    struct kernel_sigaction old;
    if (syscall(SYS_rt_sigaction, sig, NULL, &old, sizeof old.mask) < 0) return -EINVAL;
    if (old.handler == SIG_IGN) return 0;
    if (old.handler == SIG_DFL) {
        /* a stopped job would only wait for its deadline: stop signals continue at once */
        if (s_default_is_ignore(sig) || s_default_is_stop(sig)) return 0;
        area_hdr(s_area)->self_signal = sig;
        syscall(SYS_exit_group, 128 + sig);
    }
    siginfo_t si;
    memset(&si, 0, sizeof si);
    si.si_signo = sig;
    si.si_code = SI_USER;
    si.si_pid = s_self;
    si.si_uid = getuid();
    if (old.flags & SA_SIGINFO)
        ((void (*)(int, siginfo_t *, void *))(void *)old.handler)(sig, &si, uctx);
    else
        old.handler(sig);
    return 0;
}

/* SIGSYS from a SECCOMP_RET_TRAP rule, with the syscall not executed. kill, tkill and tgkill
 * reach here only when aimed at this process (filter.c's prologue traps those to anyone else
 * as attacks, and they are told apart here by the same test). */
static void s_on_sigsys(int sig, siginfo_t *info, void *uctx)
{
    (void)sig;
    greg_t *r = ((ucontext_t *)uctx)->uc_mcontext.gregs;
    int nr = info->si_syscall;
    if (nr == __NR_kill || nr == __NR_tkill || nr == __NR_tgkill) {
        int target = (int)r[REG_RDI];
        int signo = (int)(nr == __NR_tgkill ? r[REG_RDX] : r[REG_RSI]);
        if (target == s_self || (nr == __NR_kill && target == 0)) {
            r[REG_RAX] = s_deliver_to_self(signo, uctx);
            return;
        }
    }
    area_hdr(s_area)->trap_syscall = nr;
    syscall(SYS_exit_group, 159);
}

/* ---- CPU and crashes ---------------------------------------------------------------------- */

static void s_on_xcpu(int sig)
{
    (void)sig;
    area_hdr(s_area)->limit_hit = LIMIT_CPU;
    syscall(SYS_exit_group, 128 + SIGXCPU);
}

/* The largest probe mapping RLIMIT_AS still allows, in MB (PROT_NONE and unbacked, but it
 * counts towards the address space like any allocation). */
static int s_headroom_mb(void)
{
    static const int probes[] = {1024, 256, 64, 16, 4, 1};
    for (size_t i = 0; i < sizeof probes / sizeof probes[0]; i++) {
        size_t len = (size_t)probes[i] << 20;
        void *p = (void *)syscall(SYS_mmap, NULL, len, PROT_NONE,
                                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p != MAP_FAILED) {
            syscall(SYS_munmap, p, len);
            return probes[i];
        }
    }
    return 0;
}

static void s_on_crash(int sig)
{
    area_hdr_t *h = area_hdr(s_area);
    h->crash_signal = sig;
    h->crash_headroom_mb = s_headroom_mb();
    /* the fault repeats on return, now with the default action: the kernel forces it, so it
     * ends even a pid 1 */
    struct kernel_sigaction dfl = {SIG_DFL, 0, NULL, 0};
    syscall(SYS_rt_sigaction, sig, &dfl, NULL, sizeof dfl.mask);
}

static int s_handle(int sig, void (*fn)(int), void (*fn_info)(int, siginfo_t *, void *), int flags)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    if (fn_info)
        sa.sa_sigaction = fn_info;
    else
        sa.sa_handler = fn;
    sa.sa_flags = flags | (fn_info ? SA_SIGINFO : 0);
    sigemptyset(&sa.sa_mask);
    return sigaction(sig, &sa, NULL);
}

void childsig_moved(area_t *area)
{
    s_area = area;
    s_self = getpid();
}

int childsig_enter(area_t *area)
{
    s_area = area;
    s_self = getpid();
    stack_t ss = {.ss_sp = s_altstack, .ss_size = sizeof s_altstack, .ss_flags = 0};
    if (sigaltstack(&ss, NULL) < 0) return -1;
    static const int crashes[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE};
    for (size_t i = 0; i < sizeof crashes / sizeof crashes[0]; i++)
        if (s_handle(crashes[i], s_on_crash, NULL, SA_ONSTACK | SA_NODEFER) < 0) return -1;
    if (s_handle(SIGXCPU, s_on_xcpu, NULL, 0) < 0) return -1;
    return s_handle(SIGSYS, NULL, s_on_sigsys, SA_ONSTACK);
}
