/* executor-node/area/jobarea.h — the memory one job's child shares with its zygote.
 *
 * The zygote maps one area per pre-forked child (MAP_SHARED | MAP_ANONYMOUS) before forking
 * it. It writes the job in (decoded, jobcopy.h), wakes the child, and after reaping it reads back
 * what the child wrote: output, the runner's meta (msgpack), and the sandbox's own reports (the
 * seccomp-trapped syscall, a blocked audit event). Output goes in as the code prints, so a
 * job killed for time or memory still returns what it printed before.
 *
 * Everything the child writes is hostile: the zygote reads it only after wait4, clamps every
 * length to the capacities it set itself, and decodes meta with the bounds-checked reader. */
#ifndef SP_JOBAREA_H
#define SP_JOBAREA_H
#include <stddef.h>
#include <stdint.h>

#define JOBAREA_HEADER     4096u
#define JOBAREA_META_CAP   (8u << 20)

/* phase: IDLE while the pooled child prepares, READY once it waits for its wake byte (sandbox
 * locked, interpreter warmed), then RUNNING → STARTED → STOPPED → FINISHED. */
enum {
    AREA_IDLE = 0, AREA_READY = 5, AREA_RUNNING = 1, AREA_STARTED = 2, AREA_STOPPED = 3,
    AREA_FINISHED = 4
};
enum { LIMIT_NONE = 0, LIMIT_OUTPUT = 1, LIMIT_CPU = 2 };

/* The refusals of the Python layer's audit hook while a job runs, one slot per operation and
 * target (repeats counted), for the Result's security_events. The child fills them, so the
 * zygote reads them as it reads everything else here: clamped, terminated, hostile. */
#define AREA_EVENTS 8
typedef struct {
    char              operation[48]; /* the audit event */
    char              target[108];   /* its path, command, family or pid; "" when none */
    volatile uint32_t count;
} area_event_t;

typedef struct {
    /* zygote → child, written before the wake byte */
    uint32_t job_len;         /* bytes of the job's copy (jobcopy.h) at area_job() */
    uint32_t job_cap;
    uint32_t stream_cap;      /* capacity of each output stream */
    uint32_t out_limit;       /* this job's output_bytes, ≤ stream_cap */
    char     egress_proxy[128]; /* a job with network egress: its proxy URL, credentials
                                 * included (http://job:SECRET@127.0.0.1:PORT); "" none */
    /* child → zygote */
    volatile uint32_t phase;  /* AREA_* */
    volatile uint32_t out_len;
    volatile uint32_t err_len;
    volatile uint32_t out_trunc;
    volatile uint32_t err_trunc;
    volatile uint32_t limit_hit;        /* LIMIT_* */
    volatile uint32_t meta_len;
    volatile int32_t  trap_syscall;     /* seccomp SIGSYS: syscall number, -1 when none */
    volatile uint32_t audit_blocked;    /* count of blocked audit events (attacks) */
    char              audit_event[128]; /* the first one, with its path or attribute */
    volatile uint32_t audit_denied;     /* paths refused (PermissionError the code may catch) */
    char              denied_event[128]; /* the first one */
    volatile uint32_t n_events;         /* slots of events in use (≤ AREA_EVENTS) */
    volatile uint32_t events_dropped;   /* refusals of further operations, not kept */
    area_event_t      events[AREA_EVENTS];
    volatile int32_t  self_signal;      /* the code sent itself this fatal signal (childsig.h) */
    volatile int32_t  crash_signal;     /* a fault the crash handler saw (childsig.h) */
    volatile int32_t  crash_headroom_mb; /* address space still free under RLIMIT_AS then */
    volatile uint64_t cpu_forked_ns;    /* CLOCK_PROCESS_CPUTIME_ID at the same milestones, for */
    volatile uint64_t cpu_locked_ns;    /* profiling where a child's CPU goes (debug log) */
    volatile uint64_t cpu_wake_ns;
    volatile uint64_t cpu_finish_ns;
    volatile uint64_t forked_ns;        /* CLOCK_MONOTONIC: pool-time milestones of the child */
    volatile uint64_t locked_ns;
    volatile uint64_t wake_ns;          /* the child read its wake byte */
    volatile uint64_t code_start_ns;    /* around the user's code */
    volatile uint64_t code_end_ns;
    volatile uint64_t finish_ns;        /* the runner's result is written */
    volatile uint64_t self_cpu_us;      /* the child's own getrusage at finish: lets the zygote */
    volatile uint64_t self_maxrss_kb;   /* answer before the exit teardown (pool.h) */
} area_hdr_t;

typedef struct {
    uint8_t *base;
    size_t   size;
    uint32_t job_cap;
    uint32_t stream_cap;
} area_t;

int  area_map(area_t *a, uint32_t job_cap, uint32_t stream_cap); /* 0 or -errno */
/* Zygote: the same in a memfd (*fd, close-on-exec), for an area handed to a session's clone
 * over its socket. The zygote's own mapping is MADV_DONTFORK: no child it forks later inherits
 * another's area. 0 or -errno. */
int  area_map_memfd(area_t *a, uint32_t job_cap, uint32_t stream_cap, int *fd);
/* A session's clone: maps the area the zygote handed it. 0 or -errno. */
int  area_attach(area_t *a, int fd, uint32_t job_cap, uint32_t stream_cap);
/* Zygote, before a session's next job: a clean header (what the last job left is the
 * tenant's own, but counters and phases must start over). */
void area_reset(area_t *a, uint32_t job_len, uint32_t out_limit);
void area_unmap(area_t *a);
/* Child: the job's meta (msgpack, outcome.h reads it). 0, or -1 when over JOBAREA_META_CAP. */
int  area_put_meta(area_t *a, const void *meta, size_t len);
/* Child: a meta of its own where the runner could not write one — {status} and, when type is
 * not NULL, {error: {type, message}}. */
void area_report(area_t *a, const char *status, const char *type, const char *message);

_Static_assert(sizeof(area_hdr_t) <= JOBAREA_HEADER, "the area's header outgrew its page");

static inline area_hdr_t *area_hdr(const area_t *a) { return (area_hdr_t *)(void *)a->base; }
static inline uint8_t *area_job(const area_t *a) { return a->base + JOBAREA_HEADER; }
static inline uint8_t *area_out(const area_t *a) { return area_job(a) + a->job_cap; }
static inline uint8_t *area_err(const area_t *a) { return area_out(a) + a->stream_cap; }
static inline uint8_t *area_meta(const area_t *a) { return area_err(a) + a->stream_cap; }

#endif
