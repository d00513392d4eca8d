/* executor-node/zygote/dispatch.h — a job's way into a child, inside the zygote.
 *
 * The JobSpec is decoded here and only here: checked (size, service, files), its limits
 * resolved in the one place (the profile's defaults and maxima, then the node's own caps,
 * common/limits.h), its input files written into the child's workspace, and what the child
 * runs copied into the child's area (jobcopy.h), where the child finds it decoded. The input
 * files are also kept in a private copy, to tell them from what the job writes. The decoded
 * JobSpec itself is zeroed and freed before the child is woken (scrub.h).
 *
 * CPU follows fairness: a job whose tenant already has a job running in this zygote (an extra
 * job) starts at nice JOB_EXTRA_NICE and leaves the last ready child to a tenant that has none
 * (pool_take), so that under a flood the sandbox of a tenant with one job running is ready and
 * takes the CPU before the flood's second and later ones (the broker already lets its job past
 * the flood's queue: the reserve, PROTOCOL.md §3). A tenant's only running job runs at the
 * zygote's own priority, whoever else runs. */
#ifndef SP_DISPATCH_H
#define SP_DISPATCH_H
#include <stddef.h>
#include <stdint.h>

#include "common/ids.h"
#include "common/limits.h"
#include "common/profiles.h"
#include "proto/status.h"
#include "executor-node/sandbox/workspace.h"
#include "executor-node/zygote/pool/pool.h"
#include "executor-node/zygote/pool/refusal.h"

#define DISPATCH_JOB_CAP (8u << 20) /* a JobSpec this large is refused before it reaches a child   \
                                     */

#define JOB_EXTRA_NICE 10 /* weight 110 against 1024 at nice 0 (kernel sched_prio_to_weight) */

struct zygote_sessions;

typedef struct {
    const profile_t *profile;
    pool_t *pool;
    workspace_t *ws; /* where the files go; NULL in profiles without a workspace */
    limits_t caps;   /* the node's own caps over the profile's maxima (0: none) */
    struct zygote_sessions
        *sessions; /* session jobs go there (zygote_sessions.h); NULL: none here */
} dispatch_t;

/* The job of a JOB message started in a child (or, for a session's, taken by zygote_sessions.h): 0;
 * or -1 with the refusal. proxy: the job may use the network through this proxy URL (the node
 * granted it; it runs in a child pooled for egress, pool.h), NULL when it may not. */
int dispatch_job(const dispatch_t *d, const uint8_t id[ID_BYTES], const uint8_t *body, size_t len,
                 const char *proxy, refusal_t *why);

#endif
