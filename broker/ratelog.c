/* broker/ratelog.c — see ratelog.h. */
#include "common/clock.h"
#include "common/log.h"
#include "ratelog.h"

#define RATELOG_LINES 10 /* a second */

void ratelog_flush(ratelog_t *r)
{
    uint64_t now = clock_mono_ms();
    if (now - r->window_ms < 1000) return;
    if (r->suppressed)
        log_warn("event=log_suppressed kind=%s lines=%llu", r->kind,
                 (unsigned long long)r->suppressed);
    r->window_ms = now;
    r->count = 0;
    r->suppressed = 0;
}

int ratelog_allow(ratelog_t *r)
{
    ratelog_flush(r);
    if (r->count++ < RATELOG_LINES) return 1;
    r->suppressed++;
    return 0;
}
