/* common/limits.c — see limits.h. */
#include "limits.h"

static void s_fill(long *v, long def)
{
    if (*v <= 0) *v = def;
}

static void s_cap(long *v, long cap)
{
    if (cap > 0 && *v > cap) *v = cap;
}

void limits_fill(limits_t *l, const limits_t *defaults)
{
    s_fill(&l->wall_ms, defaults->wall_ms);
    s_fill(&l->cpu_ms, defaults->cpu_ms);
    s_fill(&l->memory_mb, defaults->memory_mb);
    s_fill(&l->output_bytes, defaults->output_bytes);
    s_fill(&l->nofile, defaults->nofile);
}

void limits_cap(limits_t *l, const limits_t *cap)
{
    s_cap(&l->wall_ms, cap->wall_ms);
    s_cap(&l->cpu_ms, cap->cpu_ms);
    s_cap(&l->memory_mb, cap->memory_mb);
    s_cap(&l->output_bytes, cap->output_bytes);
    s_cap(&l->nofile, cap->nofile);
}
