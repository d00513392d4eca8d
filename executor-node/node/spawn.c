/* executor-node/node/spawn.c — see spawn.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "executor-node/link/layers.h"
#include "spawn.h"

#define RUN_UID_NS 1000 /* the uid children drop to inside the user namespace */
#define ZYGOTE_BIN "snakepit-zygote"

int spawn_find_zygote(char *exe, size_t cap, char *err, size_t errlen)
{
    ssize_t len = readlink("/proc/self/exe", exe, cap - 1);
    if (len <= 0) {
        snprintf(err, errlen, "cannot find own executable");
        return -1;
    }
    exe[len] = '\0';
    /* the zygote binary sits next to ours (build/bin/, /usr/local/bin/...) */
    char *slash = strrchr(exe, '/');
    size_t dir_len = slash ? (size_t)(slash - exe) + 1 : 0;
    if (dir_len + sizeof ZYGOTE_BIN > cap) {
        snprintf(err, errlen, "executable path too long");
        return -1;
    }
    memcpy(exe + dir_len, ZYGOTE_BIN, sizeof ZYGOTE_BIN);
    if (access(exe, X_OK) < 0) {
        snprintf(err, errlen, "cannot run %s: %s", exe, strerror(errno));
        return -1;
    }
    return 0;
}

static int s_write_file(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = write(fd, text, strlen(text));
    int e = errno;
    close(fd);
    errno = e;
    return n == (ssize_t)strlen(text) ? 0 : -1;
}

/* Maps the zygote's user namespace. As root: the zygote is root inside (it must read our
 * binary and the stdlib wherever they are) and children drop to uid 1000 inside, which is
 * the unprivileged run_uid_host outside. Unprivileged: one uid maps, children keep it. */
static int s_map_ids(const node_conf_t *conf, pid_t pid, char *err, size_t errlen)
{
    char path[64], map[128];
    if (getuid() == 0) {
        snprintf(map, sizeof map, "0 0 1\n%d %ld 1\n", RUN_UID_NS, conf->run_uid_host);
        snprintf(path, sizeof path, "/proc/%d/uid_map", pid);
        if (s_write_file(path, map) < 0) goto fail;
        snprintf(map, sizeof map, "0 0 1\n%d %ld 1\n", RUN_UID_NS, conf->run_gid_host);
        snprintf(path, sizeof path, "/proc/%d/gid_map", pid);
        if (s_write_file(path, map) < 0) goto fail;
        return 0;
    }
    snprintf(path, sizeof path, "/proc/%d/setgroups", pid);
    if (s_write_file(path, "deny") < 0) goto fail;
    snprintf(map, sizeof map, "0 %d 1\n", (int)getuid());
    snprintf(path, sizeof path, "/proc/%d/uid_map", pid);
    if (s_write_file(path, map) < 0) goto fail;
    snprintf(map, sizeof map, "0 %d 1\n", (int)getgid());
    snprintf(path, sizeof path, "/proc/%d/gid_map", pid);
    if (s_write_file(path, map) < 0) goto fail;
    return 0;
fail:
    snprintf(err, errlen, "writing %s: %s", path, strerror(errno));
    return -1;
}

/* The zygote's command line (zygote_main.c reads it): built before clone, like everything
 * the child needs. */
typedef struct {
    char layers[16], slots[24], pool[24], uid[16], drop[4], cap[24], rj[24], rs[24];
    char ms[24], sp[24], si[24], smi[24], sg[24], ep[24], epool[24];
    char missing[128];
    char *argv[60];
} args_t;

/* --test-missing-module (tests only): the module named for this profile in the PROFILE:MODULE
 * list, into out; 0 when none is. */
static int s_test_missing(const node_conf_t *conf, const profile_t *profile, char *out, size_t cap)
{
    size_t plen = strlen(profile->name);
    for (const char *p = conf->test_missing_module; *p;) {
        size_t l = strcspn(p, ",");
        if (l > plen + 1 && !strncmp(p, profile->name, plen) && p[plen] == ':' &&
            l - plen - 1 < cap) {
            snprintf(out, cap, "%.*s", (int)(l - plen - 1), p + plen + 1);
            return 1;
        }
        p += l;
        if (*p == ',') p++;
    }
    return 0;
}

static void s_args(args_t *a, const node_conf_t *conf, unsigned layers, const profile_t *profile,
                   const spawn_env_t *env, int egress)
{
    snprintf(a->layers, sizeof a->layers, "%u", layers);
    snprintf(a->slots, sizeof a->slots, "%ld", node_conf_jobs(conf));
    /* auto: enough warm children for every slot plus one, so a burst never waits on a fork */
    snprintf(a->pool, sizeof a->pool, "%ld", conf->pool ? conf->pool : node_conf_jobs(conf) + 1);
    snprintf(a->uid, sizeof a->uid, "%d", RUN_UID_NS);
    snprintf(a->drop, sizeof a->drop, "%d", getuid() == 0 && (layers & LAYER_NAMESPACES));
    snprintf(a->cap, sizeof a->cap, "%ld", conf->output_max);
    snprintf(a->rj, sizeof a->rj, "%ld", conf->recycle_jobs);
    snprintf(a->rs, sizeof a->rs, "%ld", conf->recycle_s);
    /* sessions live in the profiles' own zygotes: a dependency environment's keeps none (the
     * node never sends it a session's job, so no child is pooled for one there) */
    long max_sessions = env ? 0 : conf->max_sessions;
    snprintf(a->ms, sizeof a->ms, "%ld", max_sessions);
    snprintf(a->sp, sizeof a->sp, "%ld", max_sessions ? conf->session_pool : 0);
    snprintf(a->si, sizeof a->si, "%ld", conf->session_idle_s);
    snprintf(a->smi, sizeof a->smi, "%ld", conf->session_max_idle_s);
    snprintf(a->sg, sizeof a->sg, "%ld", conf->session_grace_ms);
    char *argv[] = {ZYGOTE_BIN,
                    "--zygote",
                    (char *)profile->name,
                    "--layers",
                    a->layers,
                    "--slots",
                    a->slots,
                    "--pool",
                    a->pool,
                    "--run-uid",
                    a->uid,
                    "--run-gid",
                    a->uid,
                    "--drop-uid",
                    a->drop,
                    "--stream-cap",
                    a->cap,
                    "--recycle-jobs",
                    a->rj,
                    "--recycle-s",
                    a->rs,
                    "--python",
                    (char *)conf->python,
                    "--node",
                    (char *)conf->node_id,
                    "--log-level",
                    (char *)conf->log_level,
                    "--max-sessions",
                    a->ms,
                    "--session-pool",
                    a->sp,
                    "--session-idle-s",
                    a->si,
                    "--session-max-idle-s",
                    a->smi,
                    "--session-grace-ms",
                    a->sg,
                    NULL,
                    NULL,
                    NULL,
                    NULL,
                    NULL,
                    NULL,
                    NULL,
                    NULL,
                    NULL,
                    NULL,
                    NULL};
    _Static_assert(sizeof argv <= sizeof a->argv, "args_t.argv holds the zygote's command line");
    memcpy(a->argv, argv, sizeof argv);
    size_t n = 0;
    while (a->argv[n]) n++;
    if (env) { /* a dependency environment's zygote (envs.h) */
        a->argv[n++] = "--env-site";
        a->argv[n++] = (char *)env->site;
        a->argv[n++] = "--env-modules";
        a->argv[n++] = (char *)env->modules;
    } else if (s_test_missing(conf, profile, a->missing, sizeof a->missing)) {
        a->argv[n++] = "--test-missing-module";
        a->argv[n++] = a->missing;
    }
    if (egress) { /* it serves jobs with network egress (egress_link.h) */
        snprintf(a->ep, sizeof a->ep, "%ld", conf->egress_port);
        snprintf(a->epool, sizeof a->epool, "%ld", conf->egress_pool);
        a->argv[n++] = "--egress-port";
        a->argv[n++] = a->ep;
        a->argv[n++] = "--egress-pool";
        a->argv[n++] = a->epool;
    }
}

/* A scrubbed environment: nothing of the host's (tokens, paths, proxies) reaches a job.
 * BLAS and OpenMP are pinned to one thread before any of them is imported. */
typedef struct {
    char asan[512];
    char *envp[19];
} env_t;

static void s_env(env_t *e)
{
    snprintf(e->asan, sizeof e->asan, "ASAN_OPTIONS=");
    char *asan_env = getenv("ASAN_OPTIONS");
    if (asan_env) strncat(e->asan, asan_env, sizeof e->asan - strlen(e->asan) - 1);
#if defined(__SANITIZE_ADDRESS__)
    /* A job past its memory limit must see MemoryError, as in a normal build, not an ASan
     * out-of-memory report. */
    strncat(e->asan, asan_env ? ":allocator_may_return_null=1" : "allocator_may_return_null=1",
            sizeof e->asan - strlen(e->asan) - 1);
    asan_env = e->asan;
#endif
    /* USER and LOGNAME answer getpass.getuser() without a passwd lookup (glibc's NSS would open
     * a socket to nscd, which seccomp traps) */
    char *envp[] = {"PATH=/usr/bin:/bin", "LANG=C.UTF-8", "LC_ALL=C.UTF-8", "TZ=UTC",
                    "HOME=/nonexistent", "USER=sandbox", "LOGNAME=sandbox", "OPENBLAS_NUM_THREADS=1", "OMP_NUM_THREADS=1",
                    "MKL_NUM_THREADS=1", "NUMEXPR_NUM_THREADS=1", "MPLBACKEND=Agg",
                    /* resolve every symbol in the zygote, once: lazy binding would write each
                     * child's GOT on first call (a copy-on-write fault and a symbol lookup) */
                    "LD_BIND_NOW=1",
                    /* malloc's large blocks (a session's 200 MB bytes or DataFrame buffers, its
                     * heap as it grows) madvised MADV_HUGEPAGE: with the host's THP on
                     * "madvise", a fork of that session copies one entry per 2 MiB instead of
                     * 512 (fork_session of 200 MB: 6.5 → 2.3 ms through MCP, bench/README.md);
                     * one-off jobs measured the same (numpy madvises its arrays itself) */
                    "GLIBC_TUNABLES=glibc.malloc.hugetlb=1", asan_env ? e->asan : NULL, NULL};
    memcpy(e->envp, envp, sizeof envp);
}

int spawn_zygote(const node_conf_t *conf, const char *exe, unsigned layers,
                 const profile_t *profile, const spawn_env_t *env, pid_t *pid_out, int *chan_fd,
                 int *egress_fd, char *err, size_t errlen)
{
    int sv[2], sync[2], ev[2] = {-1, -1};
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
        snprintf(err, errlen, "socketpair/pipe: %s", strerror(errno));
        return -1;
    }
    if (pipe2(sync, O_CLOEXEC) < 0 ||
        (egress_fd && socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ev) < 0)) {
        snprintf(err, errlen, "socketpair/pipe: %s", strerror(errno));
        close(sv[0]), close(sv[1]);
        return -1;
    }
    args_t a;
    env_t e;
    s_args(&a, conf, layers, profile, env, egress_fd != NULL);
    s_env(&e);
    long flags = SIGCHLD;
    if (layers & LAYER_NAMESPACES)
        flags |=
            CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWNS;
    pid_t pid = (pid_t)syscall(SYS_clone, flags, NULL, NULL, NULL, NULL);
    if (pid < 0) {
        snprintf(err, errlen,
                 "layer namespaces: clone into new namespaces failed: %s "
                 "(user namespaces disabled? --disable-layer namespaces to run without them)",
                 strerror(errno));
        close(sv[0]), close(sv[1]), close(sync[0]), close(sync[1]);
        if (ev[0] >= 0) close(ev[0]), close(ev[1]);
        return -1;
    }
    if (pid == 0) {
        char b;
        close(sync[1]);
        if (read(sync[0], &b, 1) != 1) _exit(127); /* the node failed to map our ids */
        /* the egress socket out of the way of fd 3 first, then both in place (dup2 clears
         * FD_CLOEXEC) */
        int egress = ev[1] >= 0 ? fcntl(ev[1], F_DUPFD_CLOEXEC, 16) : -1;
        if (ev[1] >= 0 && egress < 0) _exit(127);
        if (dup2(sv[1], 3) < 0) _exit(127);
        if (egress >= 0 && dup2(egress, 4) < 0) _exit(127);
        execve(exe, a.argv, e.envp);
        _exit(127);
    }
    close(sv[1]);
    close(sync[0]);
    if (ev[1] >= 0) close(ev[1]);
    int rc = 0;
    if ((layers & LAYER_NAMESPACES) && s_map_ids(conf, pid, err, errlen) < 0) rc = -1;
    if (rc == 0 && write(sync[1], "g", 1) != 1) {
        snprintf(err, errlen, "starting zygote: %s", strerror(errno));
        rc = -1;
    }
    close(sync[1]);
    if (rc < 0) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        close(sv[0]);
        if (ev[0] >= 0) close(ev[0]);
        return -1;
    }
    *pid_out = pid;
    *chan_fd = sv[0];
    if (egress_fd) *egress_fd = ev[0];
    return 0;
}
