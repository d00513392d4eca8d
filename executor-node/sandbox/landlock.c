/* executor-node/sandbox/landlock.c — see landlock.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "landlock.h"

/* Landlock constants newer than Debian 12's kernel headers (ABI 4: network, 5: ioctl on
 * devices, 6: scopes). The running kernel tells which it knows; we ask for no more. */
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
#define SP_LANDLOCK_ACCESS_FS_IOCTL_DEV        (1ULL << 15)
#define SP_LANDLOCK_ACCESS_NET_BIND_TCP        (1ULL << 0)
#define SP_LANDLOCK_ACCESS_NET_CONNECT_TCP     (1ULL << 1)
#define SP_LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#define SP_LANDLOCK_SCOPE_SIGNAL               (1ULL << 1)
#define SP_LANDLOCK_RULE_NET_PORT              2
#ifndef LANDLOCK_CREATE_RULESET_VERSION
#define LANDLOCK_CREATE_RULESET_VERSION (1U << 0)
#endif

struct sp_ruleset_attr { /* struct landlock_ruleset_attr as of ABI 6 */
    uint64_t handled_access_fs;
    uint64_t handled_access_net;
    uint64_t scoped;
};

struct sp_net_port_attr { /* struct landlock_net_port_attr (ABI 4) */
    uint64_t allowed_access;
    uint64_t port;
};

int landlock_abi(void)
{
    long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
    return abi < 0 ? (int)-1 : (int)abi;
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

int landlock_ruleset(int abi, const profile_t *profile, const char *workspace, char *err,
                     size_t errlen)
{
    return landlock_ruleset_dirs(abi, profile, &workspace, workspace ? 1 : 0, err, errlen);
}

int landlock_ruleset_dirs(int abi, const profile_t *profile, const char *const *dirs, size_t n,
                          char *err, size_t errlen)
{
    return landlock_ruleset_egress(abi, profile, dirs, n, 0, err, errlen);
}

/* An egress child's: connect to the port; and read the CA certificates TLS verifies with. */
static int s_egress_rules(int fd, int abi, int port, char *err, size_t errlen)
{
    if (abi >= 4) {
        struct sp_net_port_attr rule = {SP_LANDLOCK_ACCESS_NET_CONNECT_TCP, (uint64_t)port};
        if (syscall(SYS_landlock_add_rule, fd, SP_LANDLOCK_RULE_NET_PORT, &rule, 0) < 0) {
            snprintf(err, errlen, "layer landlock: the egress port rule: %s", strerror(errno));
            return -1;
        }
    }
    int rc = 0;
    for (const char *const *p = egress_ro_paths; *p && rc == 0; p++)
        rc = s_add_rule(fd, *p, LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR, err,
                        errlen);
    return rc;
}

int landlock_ruleset_egress(int abi, const profile_t *profile, const char *const *dirs, size_t n,
                            int egress_port, char *err, size_t errlen)
{
    uint64_t fs =
        LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_READ_FILE |
        LANDLOCK_ACCESS_FS_READ_DIR | LANDLOCK_ACCESS_FS_REMOVE_DIR |
        LANDLOCK_ACCESS_FS_REMOVE_FILE | LANDLOCK_ACCESS_FS_MAKE_CHAR |
        LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG | LANDLOCK_ACCESS_FS_MAKE_SOCK |
        LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_BLOCK | LANDLOCK_ACCESS_FS_MAKE_SYM;
    struct sp_ruleset_attr attr = {0};
    size_t size = sizeof attr.handled_access_fs;
    if (abi >= 2) fs |= LANDLOCK_ACCESS_FS_REFER;
    if (abi >= 3) fs |= LANDLOCK_ACCESS_FS_TRUNCATE;
    if (abi >= 5) fs |= SP_LANDLOCK_ACCESS_FS_IOCTL_DEV;
    attr.handled_access_fs = fs;
    if (abi >= 4) {
        attr.handled_access_net =
            SP_LANDLOCK_ACCESS_NET_BIND_TCP | SP_LANDLOCK_ACCESS_NET_CONNECT_TCP;
        size = offsetof(struct sp_ruleset_attr, scoped);
    }
    if (abi >= 6) {
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
    int rc = egress_port > 0 ? s_egress_rules(fd, abi, egress_port, err, errlen) : 0;
    for (const char *const *p = profile->ro_paths; p && *p && rc == 0; p++)
        rc = s_add_rule(fd, *p, LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR, err,
                        errlen);
    uint64_t rw = LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR |
                  LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REMOVE_FILE |
                  LANDLOCK_ACCESS_FS_REMOVE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG |
                  LANDLOCK_ACCESS_FS_MAKE_DIR;
    if (abi >= 2) rw |= LANDLOCK_ACCESS_FS_REFER; /* rename within it */
    if (abi >= 3) rw |= LANDLOCK_ACCESS_FS_TRUNCATE;
    /* A rule on a directory also covers a tmpfs mounted beneath it: Landlock walks the path
     * up through mount points (checked on this kernel; a session's workspace is such a mount
     * below its directory). */
    for (size_t i = 0; rc == 0 && i < n; i++) {
        int dir = open(dirs[i], O_PATH | O_CLOEXEC | O_DIRECTORY);
        if (dir < 0) {
            snprintf(err, errlen, "layer landlock: workspace %s: %s", dirs[i], strerror(errno));
            rc = -1;
        } else {
            close(dir);
            rc = s_add_rule(fd, dirs[i], rw, err, errlen);
        }
    }
    if (rc < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

int landlock_enter(int ruleset, int nnp_first)
{
    if (nnp_first) prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    int rc = (int)syscall(SYS_landlock_restrict_self, ruleset, 0);
    close(ruleset);
    return rc;
}
