/* proto/wire.h — ZeroMQ framing of snakepit's two channels (PROTOCOL.md §2–3):
 *
 *   client ⇄ broker    ["SPC1", cmd, service, job_id(16), route?, body?]
 *   executor ⇄ broker  ["SPW1", cmd, ...]
 *
 * Routing data lives in frames (service, job id, and a small msgpack route header with the
 * tenant and deadline) so that the broker never decodes a JobSpec or a Result. Parsing works
 * on (pointer, length) frames and knows nothing of ZeroMQ, so the fuzz target can drive it
 * directly; wire_zmq.h moves frames on and off sockets. */
#ifndef SP_WIRE_H
#define SP_WIRE_H
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/ids.h"

#define WIRE_CLIENT_TAG "SPC1"
#define WIRE_WORKER_TAG "SPW1"
#define WIRE_MAX_FRAMES 8
#define WIRE_MAX_BODY   (16u << 20) /* a JobSpec (code + files) or a Result */
#define WIRE_MAX_SERVICES 8

enum {
    /* client → broker */
    CMD_SUBMIT = 0x01,
    CMD_CANCEL = 0x02,
    CMD_PING = 0x03,     /* client heartbeat; the broker answers CMD_PONG */
    /* broker → client */
    CMD_ACCEPTED = 0x11,
    CMD_PROGRESS = 0x12,
    CMD_RESULT = 0x13,
    CMD_REJECT = 0x14,   /* final, like RESULT; the body is a Result with status rejected */
    CMD_PONG = 0x15,
};

enum {
    W_READY = 0x01,      /* executor → broker: [tag, cmd, ready-body] */
    W_CREDIT = 0x02,     /* executor → broker: [tag, cmd, uint n] */
    W_HEARTBEAT = 0x03,  /* both ways: [tag, cmd] */
    W_JOB = 0x04,        /* broker → executor: [tag, cmd, service, job_id, route, body] */
    W_RESULT = 0x05,     /* executor → broker: [tag, cmd, job_id, body] */
    W_PROGRESS = 0x06,   /* executor → broker: [tag, cmd, job_id, chunk] */
    W_CANCEL = 0x07,     /* broker → executor: [tag, cmd, job_id] */
    W_DISCONNECT = 0x08, /* both ways: [tag, cmd] */
    /* several brokers (PROTOCOL.md §3.1) */
    W_ANSWER = 0x09,     /* executor → broker: [tag, cmd, job_id, body]: a RESULT without credit */
    W_WANT = 0x0A,       /* broker → executor: [tag, cmd, uint n]: n jobs wait, no credit */
    W_RECLAIM = 0x0B,    /* executor → broker: [tag, cmd, uint n]: give back unused credit */
    W_RELEASE = 0x0C,    /* broker → executor: [tag, cmd, uint n]: n credits given back */
    W_PROBE = 0x0D,      /* broker → executor: [tag, cmd, service, job_id, route] */
    W_HELD = 0x0E,       /* executor → broker: [tag, cmd, job_id, uint state] */
    /* sessions, sent to every broker */
    W_SESSIONS = 0x0F,   /* executor → broker: [tag, cmd, sessions-body] (PROTOCOL.md §3) */
    /* drain: the executor is leaving (PROTOCOL.md §3.2); answered by RELEASE of every credit */
    W_LEAVING = 0x10,    /* executor → broker: [tag, cmd, leaving-body] */
};

#define WIRE_MAX_SESSIONS 65536 /* sessions one executor may list in READY */
#define WIRE_MAX_SESSION_CHANGES 4096 /* ids in one SESSIONS message's up or down list */
#define WIRE_MAX_REASON 240 /* bytes of a session's end reason */

#define WIRE_MAX_DRAIN_GRACE_MS (24u * 3600u * 1000u) /* LEAVING's grace_ms: a day at most */

/* HELD's state: what the executor knows of a probed job. */
enum { HELD_STATE_NONE = 0, HELD_STATE_RUNNING = 1, HELD_STATE_DONE = 2 };

typedef struct {
    const uint8_t *data;
    size_t         len;
} frame_t;

typedef struct {
    frame_t f[WIRE_MAX_FRAMES];
    int     n;
} frames_t;

/* The route header: what the broker needs to queue, bound and expire a job. */
typedef struct {
    char     tenant[65];
    uint64_t deadline_ms;  /* wall clock; 0 = none */
    uint32_t max_inflight; /* the tenant's concurrency quota; 0 = unlimited */
    uint32_t attempt;      /* set by the broker when it dispatches */
    /* Sessions: a job with `session` goes to the executor holding it (affinity); a job with
     * only `new_session` makes one, on the executor with the most free memory. */
    int      has_session;
    uint8_t  session[ID_BYTES];
    int      has_new_session;
    uint8_t  new_session[ID_BYTES];
    uint32_t resubmit;     /* 1: sent again after the first broker was lost (probe first) */
} route_t;

typedef struct {
    uint8_t        cmd;
    char           service[65];
    const uint8_t *job_id;  /* ID_BYTES, points into the frame */
    route_t        route;   /* SUBMIT only */
    frame_t        body;    /* SUBMIT: JobSpec; PROGRESS/RESULT/REJECT: chunk or Result */
} client_msg_t;

/* A list of session ids as it came: a msgpack array of 16-byte bins, checked by the decoder
 * and read in place (wire_ids_at), so a long list costs no allocation. */
typedef struct {
    frame_t  raw; /* the array's elements, each a bin8 of 16 bytes (18 bytes) */
    uint32_t n;
} wire_ids_t;

typedef struct {
    char     node[65];
    char     services[WIRE_MAX_SERVICES][65];
    int      n_services;
    uint32_t slots;   /* jobs at once: the most credit it will ever have out */
    uint32_t reserve; /* of them, kept for tenants with nothing running (optional; ≤ slots) */
    char     python[32];
    char     layers[256]; /* comma-separated active sandbox layers */
    /* sessions (optional): free memory for placing new ones, the most it keeps, and the ids
     * of those it holds (how a restarted broker learns where they are) */
    uint32_t mem_free_mb;
    uint32_t max_sessions;
    wire_ids_t sessions;
} ready_t;

/* SESSIONS: what changed among an executor's sessions since its last READY or SESSIONS, and
 * its free memory. `down` pairs an id with why the session ended. */
typedef struct {
    uint32_t   mem_free_mb;
    uint32_t   sessions; /* held now */
    wire_ids_t up;
    frame_t    down_raw; /* array of [bin16, str] pairs, checked; read with wire_down_at */
    uint32_t   n_down;
} sessions_msg_t;

/* LEAVING: the executor drains (PROTOCOL.md §3.2): it takes no new job, lets the running ones
 * finish within grace_ms, then says DISCONNECT. */
typedef struct {
    uint32_t grace_ms; /* how long its running jobs may still take (≤ WIRE_MAX_DRAIN_GRACE_MS) */
    uint32_t running;  /* jobs running there when it said so (≤ 4096) */
    char     reason[WIRE_MAX_REASON + 1]; /* why (a signal, an operator's command); may be "" */
} leaving_t;

typedef struct {
    uint8_t        cmd;
    const uint8_t *job_id;  /* W_RESULT, W_PROGRESS, W_JOB, W_CANCEL */
    char           service[65];
    route_t        route;   /* W_JOB, W_PROBE */
    frame_t        body;    /* W_RESULT, W_ANSWER, W_PROGRESS, W_JOB */
    uint64_t       credit;  /* W_CREDIT, W_WANT, W_RECLAIM, W_RELEASE: n; W_HELD: the state */
    ready_t        ready;   /* W_READY */
    sessions_msg_t sessions; /* W_SESSIONS */
    leaving_t      leaving;  /* W_LEAVING */
} worker_msg_t;

/* Parse a message (identity frame already removed). 0, or -1 with the reason in err. */
int wire_parse_client(const frames_t *fr, client_msg_t *out, char *err, size_t errlen);
int wire_parse_worker(const frames_t *fr, worker_msg_t *out, char *err, size_t errlen);

/* Service names and tenant ids: 1–64 of [A-Za-z0-9._-]. They become Redis keys, metric
 * labels and log values, so nothing else gets in. */
int wire_name_ok(const char *s, size_t len);

void route_encode(const route_t *route, buf_t *out);
int  route_decode(const void *data, size_t len, route_t *route, char *err, size_t errlen);
/* READY; ids: the sessions held (n of them), written after the fields of ready. */
void ready_encode(const ready_t *ready, buf_t *out, const uint8_t (*ids)[ID_BYTES], size_t n);
int  ready_decode(const void *data, size_t len, ready_t *ready, char *err, size_t errlen);
/* SESSIONS: up (n_up ids) and down (n_down ids, each with its reason). */
void sessions_encode(uint32_t mem_free_mb, uint32_t held, const uint8_t (*up)[ID_BYTES],
                     size_t n_up, const uint8_t (*down)[ID_BYTES], const char *const *reasons,
                     size_t n_down, buf_t *out);
int  sessions_decode(const void *data, size_t len, sessions_msg_t *m, char *err, size_t errlen);
/* LEAVING (the reason is cut at WIRE_MAX_REASON bytes, control characters made spaces). */
void leaving_encode(const leaving_t *m, buf_t *out);
int  leaving_decode(const void *data, size_t len, leaving_t *m, char *err, size_t errlen);
/* The i-th id of a checked list (i < ids->n). */
void wire_ids_at(const wire_ids_t *ids, uint32_t i, uint8_t out[ID_BYTES]);
/* Each entry of a checked down list: its id and its reason (len bytes, not NUL-terminated). */
typedef void(wire_down_fn)(void *arg, const uint8_t id[ID_BYTES], const char *reason,
                           size_t len);
void wire_down_each(const sessions_msg_t *m, wire_down_fn *fn, void *arg);

#endif
