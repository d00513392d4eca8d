/* executor-node/sandbox/prologue.h — the few BPF instructions each child puts in front of the
 * profile's shared seccomp program (filter.h), for the rules that depend on the child itself.
 *
 * Every child: kill, tkill and tgkill to anyone but itself (its pid, or 0 for its own process
 * group) trap as attacks; to itself, signal 0 passes and any other traps too, to be delivered by
 * childsig.c as the kernel would to an ordinary process (a job is pid 1 of its own pid
 * namespace, which the kernel would spare its own default-action signals). A session's child
 * (zygote_sessions.h) also gets the rules its own C loop needs between cells, and nothing more:
 *   - clone with exactly CLONE_PARENT | SIGCHLD, and only from the one `syscall` instruction
 *     of session_child.c's fork (the instruction pointer is part of what seccomp sees): the
 *     fork_session clone. The same call from anywhere else — user code through ctypes, say —
 *     falls through to the shared program, which traps it as the process creation it is. And
 *     RLIMIT_NPROC is 0 except while the zygote lets that one fork happen;
 *   - recvmsg on its wake socket only, which is how the zygote hands it the descriptors of its
 *     clone (a socket, a job area, Landlock rulesets);
 *   - landlock_restrict_self, which can only narrow what the caller may do.
 * And every child: its wake socket is written only from wake_send's one `syscall` instruction
 * (child/wake.h), so that a done byte is always the C code's, after the job: write to it from
 * anywhere else, writev, pwrite, send*, sendfile and splice into it, and dup/dup2/dup3 or
 * fcntl(F_DUPFD*) of it (which would give another descriptor the same socket) trap as attacks.
 * A child pooled for jobs with network egress (egress.h of the node: its zygote's network
 * namespace holds only loopback and the egress process's listening socket) also gets the calls
 * a TCP client makes, which the shared program traps for every other child:
 *   - socket(AF_INET or AF_INET6, SOCK_STREAM [| SOCK_NONBLOCK | SOCK_CLOEXEC], 0 or TCP); an
 *     inet socket of another type (a resolver's UDP) fails with EACCES, as ordinary code can
 *     report; any other family goes on to the shared program, which traps it;
 *   - connect (Landlock lets it reach only the proxy's port), getsockname, getpeername,
 *     getsockopt, shutdown — on any descriptor but the wake socket;
 *   - setsockopt at SOL_SOCKET, IPPROTO_TCP, IPPROTO_IP and IPPROTO_IPV6, but for attaching
 *     BPF programs (SO_ATTACH_FILTER, SO_ATTACH_BPF, the reuseport ones) and TCP_ULP (kernel
 *     TLS, a past source of kernel bugs), which fail with EPERM, like any other level.
 * bind, listen, accept, sendmsg and recvmsg stay trapped: a job never serves.
 * Whatever these rules do not allow goes on to the shared program. */
#ifndef SP_PROLOGUE_H
#define SP_PROLOGUE_H
#include <linux/filter.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct {
    pid_t self;    /* signals may go here (and to 0) */
    int session;   /* the session rules below apply */
    uint64_t site; /* the address the fork's clone returns to */
    uint64_t wake_site; /* the address wake_send's write returns to */
    int wake_fd;   /* the only fd recvmsg may read, and written from wake_site only */
    int egress;    /* the TCP client's calls pass (see above) */
} prologue_t;

/* The prologue into out (cap instructions); it ends by falling through to whatever follows
 * it. Returns its length, or 0 when cap is too small. */
size_t prologue_build(const prologue_t *p, struct sock_filter *out, size_t cap);

#endif
