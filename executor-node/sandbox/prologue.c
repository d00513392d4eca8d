/* executor-node/sandbox/prologue.c — see prologue.h. Classic BPF jumps are relative and forward
 * only, so the program is written with named labels and patched once every label is placed. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <sys/syscall.h>

#include "prologue.h"

enum {
    L_SHARED, L_ALLOW, L_TRAP, L_SIGARG, L_SIGNO, L_SIGNO3, L_SIGZERO, L_CLONE, L_RECV,
    L_WAKE_WRITE, L_WAKE_ARG0, L_WAKE_ARG2, L_WAKE_FCNTL, L_SOCKET, L_INET, L_EACCES,
    L_EGRESS_FD, L_SETSOCKOPT, L_SOLSOCKET, L_TCP, L_EPERM, L__COUNT
};

#define MAX_INSNS 160

typedef struct {
    struct sock_filter insn[MAX_INSNS];
    int jt[MAX_INSNS], jf[MAX_INSNS]; /* label of each branch, -1: the next instruction */
    size_t n;
    int at[L__COUNT]; /* where each label is placed */
} asm_t;

static void s_emit(asm_t *a, uint16_t code, uint32_t k, int jt, int jf)
{
    if (a->n == MAX_INSNS) return; /* s_patch refuses a program this long */
    a->insn[a->n] = (struct sock_filter){code, 0, 0, k};
    a->jt[a->n] = jt;
    a->jf[a->n] = jf;
    a->n++;
}

static void s_load(asm_t *a, uint32_t offset)
{
    s_emit(a, BPF_LD | BPF_W | BPF_ABS, offset, -1, -1);
}

/* if A == k goto yes, else goto no (-1: the next instruction) */
static void s_if(asm_t *a, uint32_t k, int yes, int no)
{
    s_emit(a, BPF_JMP | BPF_JEQ | BPF_K, k, yes, no);
}

static void s_goto(asm_t *a, int label)
{
    s_emit(a, BPF_JMP | BPF_JA, 0, label, -1);
}

static void s_ret(asm_t *a, uint32_t action)
{
    s_emit(a, BPF_RET | BPF_K, action, -1, -1);
}

static void s_place(asm_t *a, int label)
{
    a->at[label] = (int)a->n;
}

/* The 64-bit value at offset equals v (both halves; x86-64 is little-endian), else goto no. */
static void s_if64(asm_t *a, uint32_t offset, uint64_t v, int no)
{
    s_load(a, offset);
    s_if(a, (uint32_t)v, -1, no);
    s_load(a, offset + 4);
    s_if(a, (uint32_t)(v >> 32), -1, no);
}

#define NR   offsetof(struct seccomp_data, nr)
#define ARCH offsetof(struct seccomp_data, arch)
#define IP   offsetof(struct seccomp_data, instruction_pointer)
#define ARG0 offsetof(struct seccomp_data, args[0])
#define ARG1 offsetof(struct seccomp_data, args[1])
#define ARG2 offsetof(struct seccomp_data, args[2])

/* What could put bytes on the wake socket, or give it a second descriptor, by the argument
 * that names it: the first, or splice's third (its fd_out). */
static const int s_wake_arg0[] = {__NR_writev,   __NR_pwrite64, __NR_pwritev, __NR_pwritev2,
                                  __NR_sendto,   __NR_sendmsg,  __NR_sendmmsg, __NR_sendfile,
                                  __NR_dup,      __NR_dup2,     __NR_dup3};
/* Constants of the egress rules (linux/in.h, asm-generic/socket.h, linux/tcp.h), spelt out so
 * that this file needs no socket header: what the kernel compares is the number. */
#define P_AF_INET           2
#define P_AF_INET6          10
#define P_SOCK_STREAM       1
#define P_SOCK_FLAGS        (04000 | 02000000) /* SOCK_NONBLOCK | SOCK_CLOEXEC */
#define P_IPPROTO_IP        0
#define P_IPPROTO_TCP       6
#define P_IPPROTO_IPV6      41
#define P_SOL_SOCKET        1
#define P_SO_ATTACH_FILTER  26
#define P_SO_ATTACH_BPF     50
#define P_SO_ATTACH_RP_CBPF 51
#define P_SO_ATTACH_RP_EBPF 52
#define P_TCP_ULP           31

/* Relative offsets from the labels; 0 when the program does not fit. */
static size_t s_patch(asm_t *a, struct sock_filter *out, size_t cap)
{
    s_place(a, L_SHARED);
    if (a->n >= MAX_INSNS || a->n > cap) return 0;
    for (size_t i = 0; i < a->n; i++) {
        struct sock_filter f = a->insn[i];
        if (BPF_CLASS(f.code) == BPF_JMP && BPF_OP(f.code) == BPF_JA) {
            f.k = (uint32_t)(a->at[a->jt[i]] - (int)i - 1);
        } else if (BPF_CLASS(f.code) == BPF_JMP) {
            int jt = a->jt[i] < 0 ? 0 : a->at[a->jt[i]] - (int)i - 1;
            int jf = a->jf[i] < 0 ? 0 : a->at[a->jf[i]] - (int)i - 1;
            if (jt < 0 || jt > 255 || jf < 0 || jf > 255) return 0;
            f.jt = (uint8_t)jt;
            f.jf = (uint8_t)jf;
        }
        out[i] = f;
    }
    return a->n;
}

/* The egress child's socket rules (prologue.h), compared on the low 32 bits of each argument:
 * the kernel reads family, type, protocol, level and option name as ints. */
static void s_egress(asm_t *a, const prologue_t *p)
{
    /* a socket call on the wake socket goes to the shared program, as in any other child */
    s_place(a, L_EGRESS_FD);
    s_load(a, ARG0);
    s_if(a, (uint32_t)p->wake_fd, L_SHARED, L_ALLOW);
    s_place(a, L_SOCKET);
    s_load(a, ARG0);
    s_if(a, P_AF_INET, L_INET, -1);
    s_if(a, P_AF_INET6, L_INET, L_SHARED); /* another family: the shared program traps it */
    s_place(a, L_INET);
    s_load(a, ARG1);
    s_emit(a, BPF_ALU | BPF_AND | BPF_K, ~(uint32_t)P_SOCK_FLAGS, -1, -1);
    s_if(a, P_SOCK_STREAM, -1, L_EACCES);
    s_load(a, ARG2);
    s_if(a, P_IPPROTO_IP, L_ALLOW, -1);
    s_if(a, P_IPPROTO_TCP, L_ALLOW, L_EACCES);
    s_place(a, L_SETSOCKOPT);
    s_load(a, ARG0);
    s_if(a, (uint32_t)p->wake_fd, L_SHARED, -1);
    s_load(a, ARG1);
    s_if(a, P_SOL_SOCKET, L_SOLSOCKET, -1);
    s_if(a, P_IPPROTO_TCP, L_TCP, -1);
    s_if(a, P_IPPROTO_IP, L_ALLOW, -1);
    s_if(a, P_IPPROTO_IPV6, L_ALLOW, L_EPERM);
    s_place(a, L_SOLSOCKET);
    s_load(a, ARG2);
    s_if(a, P_SO_ATTACH_FILTER, L_EPERM, -1);
    s_if(a, P_SO_ATTACH_BPF, L_EPERM, -1);
    s_if(a, P_SO_ATTACH_RP_CBPF, L_EPERM, -1);
    s_if(a, P_SO_ATTACH_RP_EBPF, L_EPERM, L_ALLOW);
    s_place(a, L_TCP);
    s_load(a, ARG2);
    s_if(a, P_TCP_ULP, L_EPERM, L_ALLOW);
    s_place(a, L_EACCES);
    s_ret(a, SECCOMP_RET_ERRNO | 13); /* EACCES */
    s_place(a, L_EPERM);
    s_ret(a, SECCOMP_RET_ERRNO | 1); /* EPERM */
}

size_t prologue_build(const prologue_t *p, struct sock_filter *out, size_t cap)
{
    asm_t a;
    memset(&a, 0, sizeof a);
    s_load(&a, ARCH);
    s_if(&a, AUDIT_ARCH_X86_64, -1, L_SHARED); /* another ABI: the shared program decides */
    s_load(&a, NR);
    if (p->session) {
        s_if(&a, __NR_clone, L_CLONE, -1);
        s_if(&a, __NR_recvmsg, L_RECV, -1);
        s_if(&a, __NR_landlock_restrict_self, L_ALLOW, -1);
    }
    s_if(&a, __NR_write, L_WAKE_WRITE, -1);
    for (size_t i = 0; i < sizeof s_wake_arg0 / sizeof s_wake_arg0[0]; i++)
        s_if(&a, (uint32_t)s_wake_arg0[i], L_WAKE_ARG0, -1);
    s_if(&a, __NR_splice, L_WAKE_ARG2, -1);
    s_if(&a, __NR_fcntl, L_WAKE_FCNTL, -1);
    if (p->egress) {
        s_if(&a, __NR_socket, L_SOCKET, -1);
        s_if(&a, __NR_connect, L_EGRESS_FD, -1);
        s_if(&a, __NR_getsockname, L_EGRESS_FD, -1);
        s_if(&a, __NR_getpeername, L_EGRESS_FD, -1);
        s_if(&a, __NR_getsockopt, L_EGRESS_FD, -1);
        s_if(&a, __NR_shutdown, L_EGRESS_FD, -1);
        s_if(&a, __NR_setsockopt, L_SETSOCKOPT, -1);
    }
    s_if(&a, __NR_kill, L_SIGARG, -1);
    s_if(&a, __NR_tkill, L_SIGARG, -1);
    s_if(&a, __NR_tgkill, L_SIGARG, L_SHARED); /* not a signal: the shared program */
    if (p->egress) s_egress(&a, p);
    /* the wake socket (32-bit loads: the kernel's int view of a descriptor) */
    s_place(&a, L_WAKE_WRITE);
    s_load(&a, ARG0);
    s_if(&a, (uint32_t)p->wake_fd, -1, L_SHARED);
    s_if64(&a, IP, p->wake_site, L_TRAP);
    s_goto(&a, L_ALLOW);
    s_place(&a, L_WAKE_ARG0);
    s_load(&a, ARG0);
    s_if(&a, (uint32_t)p->wake_fd, L_TRAP, L_SHARED);
    s_place(&a, L_WAKE_ARG2);
    s_load(&a, ARG2);
    s_if(&a, (uint32_t)p->wake_fd, L_TRAP, L_SHARED);
    s_place(&a, L_WAKE_FCNTL);
    s_load(&a, ARG0);
    s_if(&a, (uint32_t)p->wake_fd, -1, L_SHARED);
    s_load(&a, ARG1);
    s_if(&a, F_DUPFD, L_TRAP, -1);
    s_if(&a, F_DUPFD_CLOEXEC, L_TRAP, L_SHARED);
    if (p->session) {
        s_place(&a, L_CLONE);
        s_if64(&a, IP, p->site, L_SHARED);
        s_if64(&a, ARG0, CLONE_PARENT | SIGCHLD, L_SHARED);
        s_goto(&a, L_ALLOW);
        s_place(&a, L_RECV);
        s_if64(&a, ARG0, (uint64_t)(uint32_t)p->wake_fd, L_SHARED);
        s_goto(&a, L_ALLOW);
    }
    /* 32-bit loads (the low half on x86-64): exactly the kernel's int view of pid and signal */
    s_place(&a, L_SIGARG);
    s_load(&a, ARG0);
    s_if(&a, (uint32_t)p->self, L_SIGNO, -1);
    s_if(&a, 0, L_SIGNO, L_TRAP); /* to anyone else: an attack */
    s_place(&a, L_SIGNO);         /* to itself: which signal? */
    s_load(&a, NR);
    s_if(&a, __NR_tgkill, L_SIGNO3, -1);
    s_load(&a, ARG1);
    s_goto(&a, L_SIGZERO);
    s_place(&a, L_SIGNO3);
    s_load(&a, ARG2);
    s_place(&a, L_SIGZERO);
    /* 0 (a liveness probe) passes; any other traps and childsig.c delivers it as the kernel
     * would to an ordinary process (a pid 1 would ignore it) */
    s_if(&a, 0, L_ALLOW, L_TRAP);
    s_place(&a, L_ALLOW);
    s_ret(&a, SECCOMP_RET_ALLOW); /* signal 0 to itself, or a session's own call */
    s_place(&a, L_TRAP);
    s_ret(&a, SECCOMP_RET_TRAP);
    return s_patch(&a, out, cap);
}
