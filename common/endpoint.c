/* common/endpoint.c — see endpoint.h. */
#include <string.h>

#include "endpoint.h"

int endpoint_is_local(const char *ep)
{
    if (strncmp(ep, "ipc://", 6) == 0 || strncmp(ep, "inproc://", 9) == 0) return 1;
    if (strncmp(ep, "tcp://", 6) != 0) return 0;
    const char *h = ep + 6;
    return strncmp(h, "127.", 4) == 0 || strncmp(h, "localhost:", 10) == 0 ||
           strncmp(h, "[::1]:", 6) == 0;
}
