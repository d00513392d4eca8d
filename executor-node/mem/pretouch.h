/* executor-node/mem/pretouch.h — move a job's copy-on-write faults off its critical path.
 *
 * A child forked from the zygote shares its memory copy-on-write; the first write to each page
 * costs a fault and a 4 KiB copy (~3 µs here), and a print(1) job writes ~330 of them: most of
 * its run time. At start-up the zygote runs one probe job in a forked child and reads
 * /proc/self/pagemap to learn which of the zygote's pages the job made private. Each pooled
 * child then pre-faults exactly those pages, one atomic write each, while it waits for its
 * job — no Python — so the job starts with them already its own.
 * (A dry run of Python code in each child did the same and cost 3× the faults: it touched
 * pages jobs never need.) Failures are harmless: a range the zygote has unmapped
 * since is skipped, and the job takes its own faults. */
#ifndef SP_PRETOUCH_H
#define SP_PRETOUCH_H
#include <stddef.h>
#include <stdint.h>

typedef struct {
    uintptr_t start;
    size_t    len;
} touch_range_t;

typedef struct {
    touch_range_t *ranges;
    size_t         n;
    size_t         pages;
} pretouch_t;

/* Zygote, at start, while /proc is still mounted: forks a probe that calls probe(arg) and
 * reports the pages it made private. 0, or -1 with the reason (the zygote carries on without). */
int  pretouch_record(pretouch_t *t, void (*probe)(void *arg), void *arg, char *err, size_t errlen);
/* Pooled child: pre-fault the recorded ranges. */
void pretouch_apply(const pretouch_t *t);
void pretouch_free(pretouch_t *t);

#endif
