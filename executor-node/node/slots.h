/* executor-node/node/slots.h — the node's jobs between its brokers and its zygotes: which job runs
 * in which slot, for which broker, and who hears its answer.
 *
 * A JOB from broker b is first checked against the claims (claims.h: never run a job twice)
 * and the credit b holds (credits.h: never more jobs than slots across brokers); then it takes a
 * free slot and goes to its profile's ready zygote. When the zygote answers, the slot is free:
 * the Result goes back to b — as RESULT (returning the slot's credit to b) or as ANSWER when the
 * slot goes to a broker that is waiting for credit — and, as ANSWER, to every other broker that
 * probed for the job or sent it again meanwhile. A zygote that dies has every job it held
 * answered at once (`internal_error`).
 *
 * A job on a session goes to the zygote holding it (slots_set_sessions below).
 *
 * A job whose dependencies its profile's packages do not meet, on a node with a
 * package source, holds its slot and credit while its environment is built or its zygote
 * started (envs.h), then goes to that zygote — or is answered without running: the build
 * failed, it was cancelled, the environment's zygote could not be had.
 *
 * A job whose JobSpec carries egress rules (its tenant's) is granted the network as it goes to
 * its zygote, when the node runs its egress process and the zygote has a listener
 * (egress_link.h); its Result waits in its slot for the account of its connections, and a job
 * past its byte cap is stopped. */
#ifndef SP_EXEC_SLOTS_H
#define SP_EXEC_SLOTS_H
#include <stdint.h>

#include "broker_link.h"
#include "egress_link.h"
#include "envs.h"
#include "metrics.h"
#include "node_conf.h"
#include "zygotes.h"

typedef struct slots slots_t;

slots_t *slots_new(const node_conf_t *conf, zygotes_t *zygotes, exec_metrics_t *metrics,
                   const char *layers);

/* What slots asks of the brokers' links (broker_link.h) and of the zygotes (zygotes.h):
 * slots_new wires those modules' own verbs; tests/unit give fakes of the same shape (their own
 * objects behind the link and zygotes pointers) to slots_new_io. */
typedef struct {
    int (*link_up)(const broker_link_t *link);
    void (*send_result)(broker_link_t *link, const uint8_t id[ID_BYTES], const void *body,
                        size_t len, int credit);
    void (*send_simple)(broker_link_t *link, const uint8_t id[ID_BYTES], status_t status,
                        const char *type, const char *message);
    void (*send_progress)(broker_link_t *link, const uint8_t id[ID_BYTES], const void *chunk,
                          size_t len);
    void (*send_sessions)(broker_link_t *link, const void *body, size_t len);
    void (*send_credit)(broker_link_t *link, uint32_t n);
    void (*send_reclaim)(broker_link_t *link, uint32_t n);
    void (*send_held)(broker_link_t *link, const uint8_t id[ID_BYTES], unsigned state);
    int (*pick)(const zygotes_t *zygotes, const char *service, int *ready);
    int (*env_pick)(const zygotes_t *zygotes, const char *key, int *ready);
    int (*env_start)(zygotes_t *zygotes, const profile_t *profile, const char *key,
                     const char *site, const char *modules);
    int (*send_job)(zygotes_t *zygotes, int zi, const uint8_t id[ID_BYTES], const uint8_t *body,
                    size_t len);
    void (*cancel)(zygotes_t *zygotes, int zi, const uint8_t id[ID_BYTES]);
    void (*end_session)(zygotes_t *zygotes, int zi, const uint8_t id[ID_BYTES], const char *reason);
    int (*services)(const zygotes_t *zygotes, int with_retiring, char (*names)[65], int max);
    const char *(*packages)(const zygotes_t *zygotes, int zi);
    const char *(*python)(const zygotes_t *zygotes);
    const char *(*profile)(const zygotes_t *zygotes, int zi);
    /* network egress (NULL: none): a zygote's listener id, a job's grant, a job's stop */
    uint32_t (*egress_listener)(const zygotes_t *zygotes, int zi);
    void (*send_egress)(zygotes_t *zygotes, int zi, const uint8_t id[ID_BYTES], const char *secret);
    void (*egress_stop)(zygotes_t *zygotes, int zi, const uint8_t id[ID_BYTES]);
    void (*send_leaving)(broker_link_t *link, const leaving_t *m);
} slots_io_t;

slots_t *slots_new_io(const node_conf_t *conf, const slots_io_t *io, zygotes_t *zygotes,
                      exec_metrics_t *metrics, const char *layers);
void slots_destroy(slots_t **self_p);

/* The hooks the links and the zygotes call (their arg is this slots_t). */
broker_link_hooks_t slots_link_hooks(slots_t *self);
zygotes_hooks_t slots_zygote_hooks(slots_t *self);
/* The links, once made; index i is link i of the hooks. */
void slots_set_links(slots_t *self, broker_link_t **links, int n);
/* The node's dependency environments (NULL, the default: none). */
void slots_set_envs(slots_t *self, envs_t *envs);
/* The hooks the egress link calls, and the link (NULL, the default: no job has network). */
egress_link_hooks_t slots_egress_hooks(slots_t *self);
void slots_set_egress(slots_t *self, egress_link_t *egress);
/* Moves the jobs that wait for an environment on: when a build ends, and every 50 ms (an
 * environment's zygote was starting, or every one was busy). */
void slots_dispatch_waiting(slots_t *self);
/* Once a second: forgets expired claims. */
void slots_tick(slots_t *self);

/* Sessions: the node's book of them (owned by slots from here on). A session's job
 * takes a slot and its broker's credit like any job, goes to the zygote holding the session,
 * and marks the session busy until its answer. Every broker hears where the sessions are
 * (READY's list, SESSIONS), so whichever broker a front-end uses routes a cell here. */
typedef struct node_sessions node_sessions_t;
void slots_set_sessions(slots_t *self, node_sessions_t *sessions);
/* Every SESSION_TICK_MS: idle expiry, eviction, and SESSIONS with the free memory. */
void slots_session_tick(slots_t *self);
/* MemAvailable from /proc/meminfo, in MB; -1 when it cannot be read. */
long slots_mem_available_mb(void);

/* Hibernation (hibernate.h): sessions the node frees are checkpointed to Redis first, and idle
 * ones are checkpointed now and then. The io a hibernate_t needs to reach the zygotes and the
 * sessions' waiting jobs, and then the one made with it (owned by the caller). */
typedef struct hibernate hibernate_t;
struct hibernate_io_s;
void slots_hibernate_io(slots_t *self, void *io /* hibernate_io_t */);
void slots_set_hibernate(slots_t *self, hibernate_t *hibernate);
/* The node leaves: each session is checkpointed and freed once idle (a running cell finishes
 * first), so that its next cell resumes it elsewhere. 1 while some are left. */
int slots_sessions_leave(slots_t *self);
/* Draining (PROTOCOL.md §3.2): the node is leaving. Every broker that is up hears LEAVING (and
 * one that comes up again meanwhile hears it after its READY) and gives back the credit it
 * holds; no credit is granted any more and each job that ends is answered with ANSWER, so no
 * new job comes, while the running ones finish and are answered as usual. The node has drained
 * when no job runs, none can be on its way (no broker holds credit) and the drain hook (below)
 * has nothing left to do. */
void slots_drain(slots_t *self, const char *reason, uint32_t grace_ms);
int slots_draining(const slots_t *self);
int slots_drained(const slots_t *self);
long slots_running(const slots_t *self); /* jobs holding a slot */

/* The drain hook: where a node's live sessions are checkpointed before it leaves. With
 * hibernation (slots_set_hibernate) it is set: each session is checkpointed to Redis and freed
 * once idle, and resumes on another executor at its next call. Without it nothing is set: a
 * draining node keeps its sessions until it exits, and they end with it. begin is called once
 * when the drain starts, with the node's book of sessions (NULL when it keeps none); while busy
 * says 1 the drain waits for it (within the grace, which bounds it like any job). */
typedef struct {
    void (*begin)(void *arg, node_sessions_t *sessions);
    int (*busy)(void *arg);
    void *arg;
} slots_drain_hook_t;
void slots_set_drain_hook(slots_t *self, const slots_drain_hook_t *hook);

#endif
