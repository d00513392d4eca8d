/* executor-node/zygote/pool/refusal.c — see refusal.h. */
#include <stdarg.h>
#include <stdio.h>

#include "refusal.h"

int refusal_fill(refusal_t *why, status_t status, const char *type, const char *fmt, ...)
{
    why->status = status;
    why->type = type;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why->message, sizeof why->message, fmt, ap);
    va_end(ap);
    return -1;
}
