/* executor-node/zygote/pool/refusal.h — why a job was not started, and so the Result it is
 * answered with: made wherever a job is turned away on its way into a child (dispatch.h, and a
 * session's jobs: zygote_sessions.h, session_fork.h), answered by the zygote (zygote.c). */
#ifndef SP_REFUSAL_H
#define SP_REFUSAL_H

#include "proto/status.h"

typedef struct {
    status_t status;
    const char *type;
    char message[256];
} refusal_t;

/* Fills why (its message from fmt) and returns -1, for `return refusal_fill(...)`. */
int refusal_fill(refusal_t *why, status_t status, const char *type, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
