/* broker/ratelog.h — at most ten log lines a second for one kind of event. A peer can send
 * malformed messages as fast as the network carries them; the log must not become its
 * amplifier. What is held back is summed up in one `event=log_suppressed` line once the
 * second is over: at the next line of the kind, or at ratelog_flush, which the broker calls
 * every heartbeat so the sum appears even when nothing more comes. */
#ifndef SP_RATELOG_H
#define SP_RATELOG_H
#include <stdint.h>

typedef struct {
    const char *kind;   /* named in the summary line */
    uint64_t window_ms; /* monotonic start of the current second */
    unsigned count;     /* lines in it so far */
    uint64_t suppressed;
} ratelog_t;

/* 1 when a line of this kind may be logged now; 0 when it is counted instead. */
int ratelog_allow(ratelog_t *self);
/* Logs the sum of what was held back, once its second is over. */
void ratelog_flush(ratelog_t *self);

#endif
