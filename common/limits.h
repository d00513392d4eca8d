/* common/limits.h — the resource limits of one job, and the one place they are resolved.
 *
 * Every component that builds or runs a job (front-end, CLI, executor, bench) resolves a call's
 * limits the same way: a limit the call leaves at 0 takes the profile's default, then each cap
 * that applies (a tenant's quota, the profile's maximum) lowers it. The executor resolves
 * again against its own profile table, so a submitter that skips this cannot raise a limit. */
#ifndef SP_LIMITS_H
#define SP_LIMITS_H

typedef struct {
    long wall_ms;      /* wall-clock limit */
    long cpu_ms;       /* CPU time limit */
    long memory_mb;    /* address space the code may add on top of the interpreter */
    long output_bytes; /* per stream (stdout, stderr) */
    long nofile;       /* open file descriptors */
} limits_t;

/* Each limit that is 0 (or negative) takes its value from defaults. */
void limits_fill(limits_t *l, const limits_t *defaults);
/* Each limit above its cap is lowered to it; a cap of 0 leaves that limit alone. */
void limits_cap(limits_t *l, const limits_t *cap);

#endif
