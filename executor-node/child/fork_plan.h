/* executor-node/child/fork_plan.h — what a fork_session clone must redo so that it shares
 * nothing with the session it came from.
 *
 * clone(2) without CLONE_FILES or CLONE_VM still leaves two things shared: every open file
 * description (a file opened before the fork is one file, one offset, one set of writes; a
 * directory descriptor lists the parent's directory; a socketpair is a live channel) and every
 * MAP_SHARED mapping (an anonymous shared mmap is one piece of memory; a shared file mapping
 * writes the parent's file). The zygote reads the session's /proc before it asks for the fork
 * (zygote/sessions/session_fork_plan.c) and writes this plan into the clone's own job area; the
 * clone applies it before it answers 'R':
 *   FP_REOPEN   a file or directory: opened again with the same flags and offset — in the
 *               clone's own copy of the workspace when it was in the session's (path relative
 *               to the clone's working directory), else at the same absolute (read-only) path
 *   FP_INERT    anything else (sockets, pipes, event and memory descriptors, deleted files):
 *               the number now holds an inert O_PATH descriptor of the root, so the code gets
 *               an error instead of a channel
 *   FP_PRIVATE  a shared mapping: replaced in place by a private copy of its contents, same
 *               address and protection (writes stay in the clone; a shared file mapping no
 *               longer writes through to the clone's copy of the file)
 * An entry that cannot be applied falls back to FP_INERT (descriptors) or ends the clone
 * (mappings): a clone that would share memory with its parent must not run. */
#ifndef SP_FORK_PLAN_H
#define SP_FORK_PLAN_H
#include <stddef.h>
#include <stdint.h>

#define FORK_PLAN_MAGIC 0x53504650u /* "SPFP" */
#define FORK_PLAN_PATH  512

typedef enum { FP_REOPEN = 1, FP_INERT = 2, FP_PRIVATE = 3 } fork_plan_kind_t;

typedef struct {
    uint32_t kind;
    int32_t fd;      /* FP_REOPEN, FP_INERT */
    int32_t flags;   /* FP_REOPEN: the open flags (access mode, O_APPEND, O_NONBLOCK, …) */
    int32_t prot;    /* FP_PRIVATE: PROT_* */
    int64_t pos;     /* FP_REOPEN: the offset */
    uint64_t start;  /* FP_PRIVATE: the mapping */
    uint64_t len;
    char path[FORK_PLAN_PATH]; /* FP_REOPEN: relative to the clone's cwd, or absolute */
} fork_plan_entry_t;

typedef struct {
    uint32_t magic;
    uint32_t n;
    fork_plan_entry_t e[];
} fork_plan_t;

/* How many entries fit in cap bytes. */
static inline size_t fork_plan_capacity(size_t cap)
{
    return cap < sizeof(fork_plan_t) ? 0 : (cap - sizeof(fork_plan_t)) / sizeof(fork_plan_entry_t);
}

/* In the clone, in its own directory and Landlock domain: applies the plan at plan (cap bytes
 * of its job area), leaving keep_fd (its own wake socket, at the parent's number) alone, and
 * clears it. 0, or -1 when a mapping could not be made private (the clone must then exit). */
int fork_plan_apply(void *plan, size_t cap, int keep_fd);

#endif
