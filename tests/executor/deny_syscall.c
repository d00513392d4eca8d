/* tests/executor/deny_syscall.c — run a command as if the kernel lacked one syscall.
 *
 *   deny_syscall NR ERRNO -- COMMAND [ARGS...]
 *
 * Installs a seccomp filter that fails syscall NR with ERRNO (e.g. landlock_create_ruleset →
 * ENOSYS, as on a kernel without Landlock) and execs COMMAND, which inherits the filter. The
 * executor's fail-closed tests use it. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 5 || strcmp(argv[3], "--") != 0) {
        fprintf(stderr, "usage: %s NR ERRNO -- COMMAND [ARGS...]\n", argv[0]);
        return 64;
    }
    unsigned nr = (unsigned)atoi(argv[1]), err = (unsigned)atoi(argv[2]);
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nr, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (err & SECCOMP_RET_DATA)),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {sizeof f / sizeof f[0], f};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0) {
        perror("deny_syscall: seccomp");
        return 1;
    }
    execv(argv[4], argv + 4);
    perror("deny_syscall: execv");
    return 127;
}
