/* proto/status.c — see status.h. */
#include <string.h>

#include "status.h"

static const char *s_names[ST__COUNT] = {
    "ok",           "error",        "syntax_error",       "timeout",   "cpu_limit", "memory_limit",
    "output_limit", "security_violation", "cancelled", "rejected",  "lost",      "internal_error",
    "egress_limit",
};

const char *status_name(status_t s)
{
    return (unsigned)s < ST__COUNT ? s_names[s] : "internal_error";
}

int status_parse_n(const char *name, unsigned len, status_t *out)
{
    for (int i = 0; i < ST__COUNT; i++)
        if (strlen(s_names[i]) == len && memcmp(s_names[i], name, len) == 0) {
            *out = (status_t)i;
            return 0;
        }
    return -1;
}

int status_parse(const char *name, status_t *out)
{
    return status_parse_n(name, (unsigned)strlen(name), out);
}
