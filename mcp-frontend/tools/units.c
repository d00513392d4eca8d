/* mcp-frontend/tools/units.c — sizes as users write them (see units.h). */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>

#include "units.h"

int parse_memory_mb(const json_t *v, long *mb)
{
    if (json_is_integer(v)) {
        json_int_t n = json_integer_value(v);
        if (n <= 0 || n > (1 << 22)) return -1;
        *mb = (long)n;
        return 0;
    }
    if (json_is_real(v)) {
        double d = json_real_value(v);
        if (!(d > 0 && d <= (1 << 22)) || d != floor(d)) return -1;
        *mb = (long)d;
        return 0;
    }
    const char *s = json_string_value(v);
    if (!s) return -1;
    char *end;
    double n = strtod(s, &end);
    if (end == s || !(n > 0)) return -1;
    while (*end == ' ') end++;
    double scale;
    switch (tolower((unsigned char)*end)) {
    case '\0':
        scale = 1;
        break;
    case 'k':
        scale = 1.0 / 1024;
        end++;
        break;
    case 'm':
        scale = 1;
        end++;
        break;
    case 'g':
        scale = 1024;
        end++;
        break;
    default:
        return -1;
    }
    if (tolower((unsigned char)*end) == 'i') end++;
    if (tolower((unsigned char)*end) == 'b') end++;
    if (*end) return -1;
    double v_mb = ceil(n * scale);
    if (v_mb < 1 || v_mb > (1 << 22)) return -1;
    *mb = (long)v_mb;
    return 0;
}
