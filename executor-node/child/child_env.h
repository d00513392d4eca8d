/* executor-node/child/child_env.h — what every child of one zygote shares, from its fork
 * (child.h) through its life as a session's process (session_child.h), which child.c hands it
 * to: the layers compiled once in the zygote, the profile, the pages to pre-fault. */
#ifndef SP_CHILD_ENV_H
#define SP_CHILD_ENV_H
#include <sys/types.h>

#include "common/profiles.h"
#include "executor-node/mem/pretouch.h"
#include "executor-node/sandbox/sandbox.h"

typedef struct {
    const sandbox_t *sb; /* the layers, compiled once in the zygote */
    const profile_t *profile;
    const pretouch_t *touch; /* the pages a job makes private, to pre-fault */
    pid_t zygote;            /* the parent a child must still have once PDEATHSIG is set */
} child_env_t;

#endif
