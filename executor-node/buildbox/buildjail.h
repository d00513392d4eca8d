/* executor-node/buildjail.h — the walls around a dependency build (buildbox.h): a build runs
 * pip, and pip runs code of the packages it installs or builds, so it is treated as a job:
 *
 *   namespaces  its own mount, pid, ipc and uts namespaces (a user namespace too when the node
 *               is not root), and a network namespace with no device unless the package source
 *               is an index URL;
 *   filesystem  an empty read-only root holding the host's /usr (and its /lib, /bin links),
 *               the few /etc files name resolution and TLS read, /dev/null & co, the package
 *               source read-only at /source and the build's own directory at /build, nothing
 *               else: the host's home, state and configuration directories do not exist there;
 *   identity    the node's unprivileged run uid/gid when the node is root, no supplementary
 *               groups; no capabilities, none to regain (empty bounding set), no_new_privs;
 *   seccomp     what only an escape needs (ptrace, mount, namespaces, bpf, keyctl, io_uring,
 *               modules, kexec…) fails with EPERM; sockets other than AF_UNIX too without an
 *               index; rlimits on CPU, file size, address space, files and cores.
 * Its working directory is an empty read-only directory. */
#ifndef SP_BUILDJAIL_H
#define SP_BUILDJAIL_H
#include <sys/types.h>

typedef struct {
    const char *root_dir;  /* an empty host directory to mount the jail's root on */
    const char *build_dir; /* the host directory seen as /build, writable by uid */
    const char *source;    /* a host directory seen as /source; NULL for an index URL */
    uid_t uid;             /* the identity the build runs as, when the caller is root */
    gid_t gid;
    long cpu_s;            /* RLIMIT_CPU */
} buildjail_t;

/* In a child process about to become the build: enters every wall above and execs argv[0]
 * with argv and envp. Returns only on failure, with the step that failed in err (the caller
 * logs it and exits). */
int buildjail_exec(const buildjail_t *jail, char *const argv[], char *const envp[], char *err,
                   size_t errlen);

#endif
