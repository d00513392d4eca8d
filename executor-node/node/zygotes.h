/* executor-node/node/zygotes.h — the node's zygote processes: one per served profile, each behind
 * its channel (zchan.h, zmsg.h), started, restarted with backoff when one dies, and recycled.
 *
 * Zygotes are started (zygotes_start) before the node creates its ZeroMQ context, and
 * restarted later by spawn.h's clone + execve, so none holds a copy of ZeroMQ's threads'
 * state. A zygote asks to be recycled (RETIRE) after --recycle-jobs jobs or --recycle-s
 * seconds, because its children share its address-space layout and hash secret: its successor
 * starts at once, and the old one serves what it holds and is closed when idle once the
 * successor is ready (idle: no job in flight and no session kept: sessions stay in the zygote
 * that made them until they end). The node above routes jobs; this module tells it what the zygotes
 * answer through hooks, and never sees the broker. Zygotes are named by a stable index. */
#ifndef SP_ZYGOTES_H
#define SP_ZYGOTES_H
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/ids.h"
#include "common/loop.h"
#include "common/profiles.h"
#include "executor-node/link/zmsg.h"
#include "metrics.h"
#include "node_conf.h"

typedef struct zygotes zygotes_t;

typedef struct {
    /* A job's Result: 1 when the job was the node's (its slot is freed), 0 when the node had
     * already answered it. */
    int (*on_result)(void *arg, const uint8_t id[ID_BYTES], const uint8_t *body, size_t len);
    /* A progress chunk of a running job (PROTOCOL.md §3), to forward as it is. */
    void (*on_progress)(void *arg, const uint8_t id[ID_BYTES], const uint8_t *chunk, size_t len);
    /* Zygote zi is gone: every job the node sent it needs its one answer now, and every
     * session it held is over. */
    void (*on_down)(void *arg, int zi);
    /* A session's news from zygote zi (ZM_SESSION: up, down, memory). */
    void (*on_session)(void *arg, int zi, const zmsg_t *msg);
    /* A dependency environment's zygote (key) is gone for good (it could not start, or
     * died): jobs waiting for it need their answer. */
    void (*on_env_down)(void *arg, const char *key, const char *why);
    /* Network egress (egress_link.h): a zygote's listening socket (taken), and its listener id
     * back (0: none); later, that listener's zygote is gone. NULL: no egress. */
    uint32_t (*on_egress_listener)(void *arg, int fd);
    void (*on_egress_gone)(void *arg, uint32_t listener);
    void *arg;
} zygotes_hooks_t;

/* exe: the snakepit-zygote binary; layers: LAYER_* bits in force. */
zygotes_t *zygotes_new(const node_conf_t *conf, const char *exe, unsigned layers,
                       exec_metrics_t *metrics);
/* Closes every channel and kills and reaps every zygote (and so their children). */
void zygotes_destroy(zygotes_t **self_p);
/* The profiles of a comma-separated list, once each. 0, or -1 with the reason in err (an
 * unknown name, or none at all). */
int zygotes_add(zygotes_t *self, const char *list, char *err, size_t errlen);
/* Spawns every zygote and waits for each one's HELLO. A zygote that cannot start (its FATAL:
 * a library the profile needs is not installed) leaves its profile unserved — logged
 * (event=profile_unserved) and listed by zygotes_unserved — and the others are served. 0, or -1
 * with the reason in err when no profile at all can be served. */
int zygotes_start(zygotes_t *self, char *err, size_t errlen);
/* The i-th profile that could not be served, and why; -1 past the last. */
int zygotes_unserved(const zygotes_t *self, int i, const char **profile, const char **reason);
/* From here on the loop watches the channels, restarts and retires; hooks get the answers. */
void zygotes_attach(zygotes_t *self, loop_t *loop, const zygotes_hooks_t *hooks);
/* SIGCHLD: reaps what exited; a zygote that died unasked is restarted later. */
void zygotes_reap(zygotes_t *self);
/* Shutting down: nothing is restarted any more. */
void zygotes_stop(zygotes_t *self);

/* The zygote a job for service goes to (a ready one; a retiring one only until its successor is
 * ready), or -1 when none serves it. *ready: whether it can take a job now. */
int zygotes_pick(const zygotes_t *self, const char *service, int *ready);
/* The zygote of a dependency environment (envs.h key), like zygotes_pick; -1 when none. */
int zygotes_env_pick(const zygotes_t *self, const char *key, int *ready);
/* Starts one for it (stopping the least recently used idle one at --max-env-zygotes): its
 * index; -1 when every environment's zygote is busy (try again later), -2 when it cannot be
 * started (logged). */
int zygotes_env_start(zygotes_t *self, const profile_t *profile, const char *key, const char *site,
                      const char *modules);
/* 0, or -1 when its channel is gone (the job is answered by on_down). */
int zygotes_send_job(zygotes_t *self, int zi, const uint8_t id[ID_BYTES], const uint8_t *body,
                     size_t len);
/* Network egress: zygote zi's listener id (0: it has none); the grant of the job whose JOB
 * follows (ZM_EGRESS); and the stop of a job past its byte cap (ZM_EGRESS_STOP). */
uint32_t zygotes_listener(const zygotes_t *self, int zi);
void zygotes_send_egress(zygotes_t *self, int zi, const uint8_t id[ID_BYTES], const char *secret);
void zygotes_egress_stop(zygotes_t *self, int zi, const uint8_t id[ID_BYTES]);
void zygotes_cancel(zygotes_t *self, int zi, const uint8_t id[ID_BYTES]);
/* Asks zygote zi to end a session (ZM_SESSION_END) with this reason. */
void zygotes_end_session(zygotes_t *self, int zi, const uint8_t id[ID_BYTES], const char *reason);

/* The services served, once each, into names (at most max): with_retiring counts a zygote
 * that is being replaced too (the broker must keep sending until its successor is ready). */
int zygotes_services(const zygotes_t *self, int with_retiring, char (*names)[65], int max);
/* The profile zygote zi serves ("" for a free index). */
const char *zygotes_profile(const zygotes_t *self, int zi);
/* JSON {package: version} zygote zi reported in its HELLO ("" when none). */
const char *zygotes_packages(const zygotes_t *self, int zi);
/* The Python version the first zygote to say HELLO reported ("" before any did). */
const char *zygotes_python(const zygotes_t *self);
/* {"python": …, "packages": {…}, "node": …, "updated_ms": …} of profile's ready zygote into
 * out (nothing when none), or of every served profile as {"profile": {…}, …} when profile is
 * NULL. */
void zygotes_profiles_json(const zygotes_t *self, const profile_t *profile, buf_t *out);

#endif
