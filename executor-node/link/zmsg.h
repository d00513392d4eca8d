/* executor-node/link/zmsg.h — the messages between the node and its zygotes, and their one codec.
 *
 * zchan.h moves typed byte strings over a socketpair; this module says what each type holds
 * (PROTOCOL.md §7). One row per type in zmsg.c's table names it and its encoder and decoder,
 * so a new message is a row, a struct here and a handler at the receiving end. HELLO, STATS
 * and PROGRESS are msgpack maps; JOB and RESULT carry a JobSpec (§4) and a Result (§5)
 * untouched, because the node decodes neither (the zygote decodes the JobSpec once, at
 * dispatch); FATAL and SESSION_END carry text; CANCEL and RETIRE carry nothing; SESSION is a
 * map.
 *
 * The node reads what a zygote sends as hostile input (the zygote's children run tenants'
 * code, and a zygote is only as trustworthy as its address space): every decoder is
 * bounds-checked, caps each string, and refuses trailing bytes. A decoded message's pointers
 * point into the payload and live as long as it does. */
#ifndef SP_ZMSG_H
#define SP_ZMSG_H
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/ids.h"
#include "proto/status.h"
#include "zchan.h"

typedef enum {
    ZM_HELLO = 1,    /* zygote → node: ready to serve (zmsg_hello_t) */
    ZM_FATAL = 2,    /* zygote → node: text; the zygote cannot serve and exits */
    ZM_JOB = 3,      /* node → zygote: id + JobSpec */
    ZM_CANCEL = 4,   /* node → zygote: id */
    ZM_RESULT = 5,   /* zygote → node: id + Result */
    ZM_PROGRESS = 6, /* zygote → node: id + progress chunk (zmsg_progress_t) */
    ZM_RETIRE = 7,   /* zygote → node: recycle me; send no more jobs once my successor is up */
    ZM_STATS = 8,    /* zygote → node: [id +] counters for the node's metrics (zmsg_stats_t) */
    ZM_SESSION = 9,  /* zygote → node: a session began, ended, or was measured (zmsg_session_t) */
    ZM_SESSION_END = 10, /* node → zygote: id (a session's); text: why it must end */
    ZM_EGRESS = 11,      /* node → zygote: id (a job's, sent just before its JOB); text: the
                            secret the job's proxy credentials carry (emsg.h) */
    ZM_EGRESS_STOP = 12, /* node → zygote: id; the job went past its network byte cap */
} zmsg_type_t;

typedef enum { ZS_UP = 1, ZS_DOWN, ZS_MEMORY } zygote_session_event_t;

/* A session's news, keyed by the message's id (the session's). */
typedef struct {
    zygote_session_event_t event;
    char tenant[65];        /* up */
    int64_t idle_timeout_s; /* up */
    int64_t memory_mb;      /* up: its limit */
    uint64_t memory_kb;     /* up, memory: in use (Pss) */
    char reason[241];       /* down: why it ended */
    int64_t retention_s;    /* up: how long it may stay hibernated (proto/job.h); 0: never */
} zmsg_session_t;

typedef struct {
    char profile[65];
    char python[32];      /* "3.11.2" */
    char layers[128];     /* the zygote's active layers, comma-separated */
    const char *packages; /* JSON {package: version}, packages_len bytes, not NUL-terminated */
    size_t packages_len;
    uint64_t base_vm; /* the zygote's address space after warm-up */
    int64_t landlock_abi;
} zmsg_hello_t;

typedef struct {
    int job;         /* 1: a job finished, the fields down to kind are set; 0: pool news */
    status_t status; /* ST_INTERNAL_ERROR when the zygote named an unknown one */
    double wall_ms;
    double cpu_ms;
    int64_t max_rss_kb;
    char syscall[64]; /* security_violation: the syscall or audit event; "" otherwise */
    int64_t kind;     /* JOB_EXEC, JOB_VALIDATE, or a session job's kind (proto/job.h) */
    int session;      /* the job ran in a session (a cell, when kind is JOB_EXEC) */
    int lowered;      /* it ran at JOB_EXTRA_NICE: its tenant had another job running */
    uint64_t forks;   /* children forked since the previous STATS */
    uint64_t pool;    /* idle children now */
} zmsg_stats_t;

typedef struct {
    const char *stream; /* "stdout" or "stderr" with data; NULL: {state: "running"} */
    const uint8_t *data;
    size_t len;
} zmsg_progress_t;

typedef struct {
    zmsg_type_t type;
    const uint8_t *id;      /* ID_BYTES; NULL when sending one that names no job */
    const uint8_t *payload; /* as sent: JOB, RESULT and FATAL are given this way */
    size_t len;
    union { /* by type */
        zmsg_hello_t hello;
        zmsg_stats_t stats;
        zmsg_progress_t progress;
        zmsg_session_t session;
    };
} zmsg_t;

typedef void(zmsg_fn)(void *arg, const zmsg_t *msg);

/* "HELLO" …; "?" for a type no row knows. */
const char *zmsg_name(uint8_t type);
/* The payload of m (for the types with an encoder) appended to out. */
void zmsg_encode(const zmsg_t *m, buf_t *out);
/* One received message into m (whose pointers then point into payload and id). 0, or -1
 * with the reason in err. */
int zmsg_decode(uint8_t type, const uint8_t id[ID_BYTES], const uint8_t *payload, size_t len,
                zmsg_t *m, char *err, size_t errlen);

/* Encodes (or takes the payload of) m and queues it on chan; every buffer that held it is
 * zeroed (scrub.h). 0, or -1 when the peer is gone. */
int zmsg_send(zchan_t *chan, const zmsg_t *m);
/* Reads what chan has and calls fn per decoded message; a malformed one is logged and
 * dropped. 0, or -1 when the channel is closed or broken (the caller closes it). */
int zmsg_read(zchan_t *chan, zmsg_fn *fn, void *arg);

#endif
