/* mcp-frontend/state/gcra.c — see gcra.h. */
#include <math.h>

#include "gcra.h"

int gcra_step(double *tat_ms, double now_ms, double rate, long burst, long *retry_after_ms)
{
    double period = 1000.0 / rate;
    double tat = *tat_ms < now_ms ? now_ms : *tat_ms;
    double allow_at = tat + period - (double)burst * period;
    if (allow_at > now_ms) {
        *retry_after_ms = (long)ceil(allow_at - now_ms);
        return 0;
    }
    *tat_ms = tat + period;
    return 1;
}
