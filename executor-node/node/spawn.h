/* executor-node/node/spawn.h — starting one zygote process.
 *
 * The node clones a child into fresh user, pid, net, ipc, uts and mount namespaces (the
 * namespaces layer: the only layer applied here, once per zygote; its children inherit it),
 * writes the user namespace's uid and gid maps from outside, and only then lets the child
 * execve snakepit-zygote with a scrubbed environment and its end of the channel on fd 3.
 * Between clone and execve the child makes async-signal-safe calls only: the node may
 * already run ZeroMQ's threads, whose locks a forked copy would inherit. */
#ifndef SP_SPAWN_H
#define SP_SPAWN_H
#include <stddef.h>
#include <sys/types.h>

#include "common/profiles.h"
#include "node_conf.h"

/* The snakepit-zygote binary beside the running one into exe (PATH_MAX). 0, or -1 with the
 * reason in err. */
int spawn_find_zygote(char *exe, size_t cap, char *err, size_t errlen);
/* A dependency environment a zygote serves (envs.h): its site-packages and the top-level
 * modules it adds, comma-separated. */
typedef struct {
    const char *site;
    const char *modules;
} spawn_env_t;

/* A zygote for profile (and env, or NULL), running exe with the layers (LAYER_* bits) in
 * force. Its pid and the node's end of the channel (SOCK_SEQPACKET, close-on-exec) come back;
 * 0, or -1 with the reason in err and nothing left running. egress_fd: NULL when the zygote
 * serves no job with network egress; else the node's end of the socket on which it hands over
 * its listening socket (its fd 4, emsg.h) comes back there. */
int spawn_zygote(const node_conf_t *conf, const char *exe, unsigned layers,
                 const profile_t *profile, const spawn_env_t *env, pid_t *pid, int *chan_fd,
                 int *egress_fd, char *err, size_t errlen);

#endif
