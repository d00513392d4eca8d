/* mcp-frontend/exchange.h — one HTTP request's way through the front-end (see http.c for
 * why answers are parked and connections resumed). Internal to the HTTP transport. */
#ifndef SP_FE_EXCHANGE_H
#define SP_FE_EXCHANGE_H
#include <microhttpd.h>
#include <stdint.h>

#include "../common/buf.h"
#include "fe.h"
#include "http.h"
#include "mcp.h"

typedef struct exchange exchange_t;

struct http {
    fe_t *fe;
    http_conf_t conf;
    metrics_render_fn *render; /* GET /metrics */
    void *render_arg;
    http_stats_t stats;
    struct MHD_Daemon *daemon;
    int epoll_fd;
    int loopback; /* bound to a loopback address */
    int kick;     /* a connection was resumed: run MHD before waiting */
    uint64_t keepalive_timer;
    exchange_t *all; /* every exchange alive (shutdown must resume them) */
};

typedef enum {
    EX_BODY,      /* receiving the request body */
    EX_AUTH,      /* suspended: waiting for Redis to say who the key belongs to */
    EX_CALL,      /* suspended: the MCP call is in flight */
    EX_READY,     /* the answer is parked: queue it at the next handler call */
    EX_STREAMING, /* an SSE response is queued and open */
    EX_DONE,      /* a response was queued */
} exchange_state_t;

struct exchange {
    http_t *http;
    struct MHD_Connection *conn;
    exchange_state_t state;
    int method; /* 'P'OST, 'G'ET, 'D'ELETE, 'O'PTIONS, '?' other */
    buf_t body;
    int too_big;
    int suspended;
    int accept_json, accept_sse;
    uint64_t start_us;
    tenant_t *tenant;
    session_t *session; /* held */
    int new_session;    /* the answer carries Mcp-Session-Id */
    call_t *call;       /* the call in flight, until its final answer */
    /* a parked plain answer */
    unsigned status;
    char *answer; /* JSON text, or NULL for an empty body */
    size_t answer_len;
    long retry_after_s; /* > 0: add Retry-After */
    int www_authenticate;
    /* an SSE answer */
    int sse;        /* the answer is (or will be) an event stream */
    int get_stream; /* the session's GET stream */
    buf_t sse_out;  /* events not yet handed to MHD */
    size_t sse_off;
    int sse_final; /* end the stream once sse_out is drained */
    uint64_t last_write_ms;
    int headers_checked;
    int auth_pending; /* a key lookup is in flight */
    int orphaned;     /* MHD is done with it; the lookup's callback frees it */
    exchange_t *next, **prev;
};

enum MHD_Result exchange_access(void *cls, struct MHD_Connection *conn, const char *url,
                                const char *method, const char *version, const char *upload_data,
                                size_t *upload_data_size, void **con_cls);
void exchange_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                        enum MHD_RequestTerminationCode toe);
void exchange_keepalive(loop_t *loop, void *arg);
void exchange_free(exchange_t *ex);
void exchange_close_streams(http_t *self);

/* mcp.c's emitter and the session notify sink for HTTP */
void exchange_emit(void *ctx, call_t *call, json_t *msg, int final);
void exchange_notify(void *ctx, session_t *s, json_t *msg);
void exchange_notify_end(void *ctx);

/* exchange_mcp.c: the /mcp endpoint proper; exchange.c: plumbing and responses */
enum MHD_Result exchange_mcp(exchange_t *ex, const char *url);
enum MHD_Result exchange_queue_json(exchange_t *ex, unsigned status, json_t *msg);
enum MHD_Result exchange_queue_parked(exchange_t *ex);
void exchange_park(exchange_t *ex, unsigned status, json_t *msg);
void exchange_resume(exchange_t *ex);
void exchange_suspend(exchange_t *ex);
enum MHD_Result exchange_start_sse(exchange_t *ex);
/* An HTTP-level refusal with a JSON-RPC error body (id null), counted and logged. */
enum MHD_Result exchange_refuse(exchange_t *ex, unsigned status, int code, http_refusal_t reason,
                                const char *message);

#endif
