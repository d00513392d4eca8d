/* mcp-frontend/tools/units.h — "memory_limit" as users of the older sandbox servers write it: MB as
 * an integer, or a string with a unit, "256m", "1g", "512M", "1024k", "300mb", "2GiB". */
#ifndef SP_FE_UNITS_H
#define SP_FE_UNITS_H
#include <jansson.h>

/* 0 with the size in MB (rounded up), or -1 when v is not a positive size up to 4 TiB. */
int parse_memory_mb(const json_t *v, long *mb);

#endif
