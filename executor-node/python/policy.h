/* executor-node/python/policy.h — the Python layer's rules: what the audit hook (audit.h) does with
 * each event, as one pure function of the event's name and arguments, so that the whole policy
 * reads (and is tested) in one place.
 *
 * The Python layer refuses operations, not the modules ordinary code imports: a
 * process, a socket, a path outside what the job may touch, and what only an escape asks for.
 * Two kinds of refusal:
 *   DENY   a path outside the job's workspace (or, for reading, its profile's read-only
 *          paths): PermissionError, which the code may catch — a library probing /tmp, or
 *          linecache looking for a source, is ordinary. The job is a security_violation only
 *          when that error is what ends it.
 *   BLOCK  a process, a socket, ctypes, a frame walk, marshal, a forbidden unpickle…:
 *          PermissionError too, and the job is a security_violation whether or not the code
 *          catches it (an attacker would).
 * The OS layers (seccomp, Landlock, the mount namespace) stop the same things on their own;
 * this layer exists for its clear messages and as defence in depth.
 *
 * A job the node granted network egress (egress set) may make TCP sockets and connect them,
 * and its HTTP clients may run: the egress process judges every destination. Names are
 * resolved there, never here: asking the C library for one is refused (DENY) with the way that
 * works. A job without egress is refused the network as before (BLOCK), with a message that
 * names the destination and where an operator grants egress. */
#ifndef SP_POLICY_H
#define SP_POLICY_H
#include "common/profiles.h"

typedef enum { POLICY_ALLOW = 0, POLICY_DENY, POLICY_BLOCK } verdict_t;

typedef struct {
    const profile_t *profile;
    const char *workspace; /* the child's directory (its cwd); "" when the profile has none */
    long self;             /* the child's pid as it sees it */
    const char *tenant;    /* the job's tenant, for the messages; NULL unknown */
    int egress;            /* the job may use the network (the node granted it) */
} policy_t;

/* One audited event, its arguments as the hook could read them (NULL: unknown or absent). */
typedef struct {
    const char *event;
    const char *path;  /* the first argument as a path (or the attribute name, the module; a
                        * network event's destination: a URL, host:port, or the host) */
    const char *path2; /* a second path (os.rename's destination) */
    const char *mode;  /* open's mode; pickle.find_class's name */
    long flags;        /* open's flags */
    long num;          /* os.kill's and os.killpg's pid; socket.__new__'s family */
    int num_set;       /* num was an int */
    int fd;            /* the first argument is a file descriptor (already checked when opened);
                        * socket.__new__: the socket wraps a descriptor the process holds */
    int dir_fd;        /* relative paths are relative to a descriptor (dir_fd=), not the cwd */
    int dir_fd_ws;     /* and that descriptor is a directory in the job's workspace */
} event_t;

/* The verdict; *why (when not ALLOW) says why in a few words, for the PermissionError. */
verdict_t policy_judge(const policy_t *p, const event_t *e, const char **why);
/* Unpickling may name module (audit event pickle.find_class): the profile's data modules, and
 * of builtins only plain types. name NULL checks the module alone. 1 when allowed. */
int policy_unpickle(const profile_t *profile, const char *module, const char *name);

#endif
